"""What only the `mlflow` package does for a run: log a policy as an MLflow model. Everything else a run writes goes over REST (`breadth.tracking.rest`);
these import mlflow, transformers and pandas when called, never at import.
"""

from __future__ import annotations

import logging
from pathlib import Path

from breadth.models.tiny import MODEL_LOADING
from breadth.tracking.runs import RunHandle


def log_transformers_model(run: RunHandle, model_dir: Path, name: str = "model") -> str:
    """Log a saved policy as an MLflow model (loadable back with `mlflow.transformers`), linked
    to `run` as its output and named after it in the Logged Models table.

    pip requirements are given explicitly: inferring them imports torchvision, which is absent.

    The LoggedModel is created here (with the run as its source and the run's params) and the
    flavour only saves and uploads into it; then it is linked to the run as an output. Logging
    inside the run instead makes MLflow copy the run's step-0 metrics onto the model by reading
    the whole history of every metric (one request per key, ~45 per training run, about 0.7 s
    of the MLflow server's CPU per pipeline run, which on a small machine comes out of
    training). Deviation: the model's own metric columns stay empty; they are on its run.
    """
    import mlflow
    import torch
    import transformers
    from mlflow.entities import LoggedModelOutput
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with MODEL_LOADING:  # it runs in the uploads thread, beside a stage loading a model
        model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    mlflow.set_tracking_uri(run.tracking_uri)
    client = run.client
    params = client.get_run(run.run_id).data.params
    logged = mlflow.initialize_logged_model(
        name=name, source_run_id=run.run_id, experiment_id=run.experiment_id,
        params={key: str(value) for key, value in params.items()},
    )
    # MLflow looks the model up on the hub by its folder's path, which always fails for a saved
    # folder: two warnings on every logged model that no user can act on.
    logging.getLogger("mlflow.transformers").addFilter(_hub_card_lookup_of_a_folder)
    info = mlflow.transformers.log_model(
        transformers_model={"model": model, "tokenizer": tokenizer},
        name=name,
        task="text-generation",
        model_id=logged.model_id,
        pip_requirements=[
            f"torch=={torch.__version__.split('+')[0]}",
            f"transformers=={transformers.__version__}",
        ],
    )
    client.log_outputs(run.run_id, [LoggedModelOutput(logged.model_id, step=0)])
    return info.model_uri


def _hub_card_lookup_of_a_folder(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return not message.startswith(("The model card could not be retrieved from the hub",
                                   "Unable to find license information for this model"))

