#!/usr/bin/env bash
# Regenerate docs/images/ from a running stack that holds the demo grid, and write
# docs/images/README.md with the commands behind them.
#
#   scripts/tools/ui_screenshots.sh grid    # run the demo grid (4 small cells) and register
#                                           # the deployments (the run form needs `adhoc`)
#   scripts/tools/ui_screenshots.sh shots   # the screenshots and plots, then the README
#   scripts/tools/ui_screenshots.sh names   # two lone runs and a cached re-run, `breadth
#                                           # deploy`, then `names-shots`: the screenshots of
#                                           # how they are told apart
#                                           # (docs/guide/mlflow-and-prefect-names.md)
#
# Needs: the client environment of `breadth stack up` in this shell (BREADTH_HOME and the
# BREADTH_*_PORT variables of that stack), Chromium (/usr/bin/chromium or $CHROMIUM) and
# playwright-core where node finds it ($NODE_PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."
BREADTH=${BREADTH:-.venv/bin/breadth}
PYTHON=${PYTHON:-.venv/bin/python}
GRID_ID=ui-demo
NAMES_EXPERIMENT=ui-names
# Small runs: the views, not a result.
SMALL=(--set data.num_train=200 --set data.num_eval=12 --set sft.epochs=1 --set rl.max_steps=4
  --set rl.save_steps=2 --set rl.num_generations=4 --set rl.prompts_per_step=2
  --set rollout.num_samples=8 --set evaluation.bootstrap_samples=50
  --set tracking.log_models=false --set tracking.experiment=$NAMES_EXPERIMENT)
GRID_COMMAND=("$BREADTH" grid --preset default --format free_form
  --reward correctness --reward correctness+batch --seed 0 --seed 1 --grid-id "$GRID_ID"
  --set data.num_train=600 --set data.num_eval=32 --set sft.epochs=4
  --set rl.max_steps=8 --set rl.save_steps=4 --set rl.num_generations=8
  --set rl.prompts_per_step=4 --set rollout.num_samples=8 --set evaluation.bootstrap_samples=200
  --set tracking.log_models=false)

case "${1:-}" in
grid)
  "${GRID_COMMAND[@]}"
  "$BREADTH" deploy
  ;;
shots)
  eval "$("$BREADTH" stack up 2>/dev/null | sed -n 's/^ *export \([A-Z_]*=http[^ ]*\)$/export \1/p')"
  out=docs/images
  # Where to point the browser: the grid's experiment, the adhoc deployment, the grid's
  # summary artifact and the grid flow run that published it.
  read -r experiment deployment artifact flow_run < <("$PYTHON" - "$GRID_ID" <<'EOF'
import json, os, sys, urllib.request
from mlflow import MlflowClient

grid_id = sys.argv[1]
api = os.environ["PREFECT_API_URL"]
def post(path, body):
    request = urllib.request.Request(f"{api}{path}", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.load(response)
run = MlflowClient().search_runs(
    [e.experiment_id for e in MlflowClient().search_experiments()],
    f"tags.`grid.id` = '{grid_id}'", max_results=1)[0]
deployment = [d for d in post("/deployments/filter", {}) if d["name"] == "adhoc"][0]
artifact = post("/artifacts/filter", {"artifacts": {"key": {"any_": ["breadth-grid"]}},
                                      "sort": "CREATED_DESC", "limit": 1})[0]
print(run.info.experiment_id, deployment["id"], artifact["id"], artifact["flow_run_id"])
EOF
)
  mlflow=$MLFLOW_TRACKING_URI
  prefect=${PREFECT_API_URL%/api}
  # The grid's finished cell runs only (its summary run has no curve, and would take a colour).
  cells="searchFilter=$("$PYTHON" -c 'import urllib.parse; print(urllib.parse.quote(
    "tags.`grid.cell` LIKE '"'%'"' AND attributes.status = '"'FINISHED'"'"))')"
  node scripts/tools/ui_screenshot.js mlflow "$mlflow/#/experiments/$experiment/runs?compareRunsMode=CHART&$cells" \
    "$out/mlflow-grid-pass-at-k.png" pass_at_k
  node scripts/tools/ui_screenshot.js form "$prefect/deployments/deployment/$deployment/run" \
    "$out/prefect-run-form.png" "NAME[:key=val]"
  node scripts/tools/ui_screenshot.js artifact "$prefect/artifacts/artifact/$artifact" \
    "$out/prefect-grid-artifact.png"
  node scripts/tools/ui_screenshot.js form "$prefect/deployments/deployment/$deployment/run" \
    "$out/prefect-run-form-preset.png" "Start from this preset"
  node scripts/tools/ui_screenshot.js artifact "$prefect/runs/flow-run/$flow_run" \
    "$out/prefect-flow-run-artifacts.png" Artifacts
  plots=$(mktemp -d)
  "$BREADTH" compare --grid "$GRID_ID" --out "$plots" > /dev/null
  cp "$plots/pass_at_k_by_format.png" "$out/grid-pass-at-k-by-format.png"
  cp "$plots/pass_at_1_cost_vs_pass_at_k_gain.png" "$out/grid-cost-vs-gain.png"
  rm -rf "$plots"
  cat > "$out/README.md" <<EOF
# docs/images

Written by \`scripts/tools/ui_screenshots.sh shots\` (headless Chromium through
\`scripts/tools/ui_screenshot.js\`), against the local stack (\`breadth stack up\`) after
\`scripts/tools/ui_screenshots.sh grid\`, which ran the demo grid

\`\`\`
breadth ${GRID_COMMAND[*]:1}
\`\`\`

(2 objectives x 2 seeds of the tiny default model, 32 evaluation problems of 8 samples each:
a demonstration of the views, not a result) and
\`breadth deploy\`.

| image | what it shows |
| --- | --- |
| mlflow-grid-pass-at-k.png | MLflow chart view of the grid's experiment, charts filtered to \`pass_at_k\`: runs named \`format·objective·seed\` |
| prefect-run-form.png | the \`breadth-pipeline/adhoc\` custom-run form at the reward spec, its syntax in code spans |
| prefect-run-form-preset.png | the same form's first field: the preset, one drop-down starting on \`default\` (\`scripts/tools/ui_screenshots.sh names\`) |
| prefect-grid-artifact.png | the grid summary artifact (\`breadth-grid\`), full page |
| prefect-flow-run-artifacts.png | the grid flow run's Artifacts tab |
| grid-pass-at-k-by-format.png, grid-cost-vs-gain.png | \`breadth compare --grid $GRID_ID\` plots |

Written by \`scripts/tools/ui_screenshots.sh names\` (after \`breadth stack up\`): two lone runs of the
small pipeline in experiment \`$NAMES_EXPERIMENT\` (\`breadth run --preset default ${SMALL[*]}\`,
then the same with \`--set data.source=synthetic:countdown\`), the first again (every stage
from the cache), and \`breadth deploy\`.

| image | what it shows |
| --- | --- |
| mlflow-experiment-opens-on-runs.png | the experiment as breadth links it (\`?workflowType=machine_learning\`) in a fresh browser: its runs table, the two lone runs and the cached re-run told apart by name (Run Name column widened) |
| mlflow-run-datasets.png | the countdown run's page: its train and eval sets as dataset inputs |
| prefect-flow-run-breadth-log.png | the countdown run's Prefect flow run, named like its MLflow run: breadth's config summary, each stage's cache miss and headline, the result |
EOF
  ;;
names)
  "$BREADTH" run --preset default "${SMALL[@]}"
  "$BREADTH" run --preset default "${SMALL[@]}" --set data.source=synthetic:countdown
  "$BREADTH" run --preset default "${SMALL[@]}"  # the first again: every stage cached
  "$BREADTH" deploy
  exec "$0" names-shots
  ;;
names-shots)
  eval "$("$BREADTH" stack up 2>/dev/null | sed -n 's/^ *export \([A-Z_]*=http[^ ]*\)$/export \1/p')"
  out=docs/images
  read -r experiment run flow_run deployment < <("$PYTHON" - "$NAMES_EXPERIMENT" <<'EOF'
import json, os, sys, urllib.request
from mlflow import MlflowClient

api = os.environ["PREFECT_API_URL"]
request = urllib.request.Request(f"{api}/deployments/filter", b"{}",
                                 {"Content-Type": "application/json"})
with urllib.request.urlopen(request) as response:
    deployment = [d for d in json.load(response) if d["name"] == "adhoc"][0]
experiment = MlflowClient().get_experiment_by_name(sys.argv[1]).experiment_id
# The countdown run: computed here (its log has every stage's miss and headline), its data
# source in its name and datasets.
first = MlflowClient().search_runs([experiment], "tags.`data.source` = 'synthetic:countdown'",
                                   order_by=["attributes.start_time DESC"], max_results=1)[0]
print(experiment, first.info.run_id, first.data.tags["prefect.flow_run_id"], deployment["id"])
EOF
)
  mlflow=$MLFLOW_TRACKING_URI
  prefect=${PREFECT_API_URL%/api}
  # The experiment as breadth links it (no tab named), in a browser that never chose a mode.
  node scripts/tools/ui_screenshot.js page "$mlflow/#/experiments/$experiment?workflowType=machine_learning" \
    "$out/mlflow-experiment-opens-on-runs.png" "·cached"
  node scripts/tools/ui_screenshot.js page "$mlflow/#/experiments/$experiment/runs/$run?workflowType=machine_learning" \
    "$out/mlflow-run-datasets.png" "Datasets"
  node scripts/tools/ui_screenshot.js artifact "$prefect/runs/flow-run/$flow_run" \
    "$out/prefect-flow-run-breadth-log.png"
  node scripts/tools/ui_screenshot.js dropdown "$prefect/deployments/deployment/$deployment/run" \
    "$out/prefect-run-form-preset.png" "Start from this preset"
  ;;
*)
  sed -n '2,15p' "$0"
  exit 2
  ;;
esac
