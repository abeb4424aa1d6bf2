# syntax=docker/dockerfile:1
#
# breadth GPU worker: CUDA 12.8 runtime, Python 3.12, and two separate environments, because
# vLLM's fastapi pin conflicts with Prefect's (docs/design/versions.md):
#
#   /opt/venv   the pipeline: breadth + Prefect + MLflow + TRL (torch CUDA build). Default CMD:
#               a Prefect process worker polling the `breadth-gpu` work pool.
#   /opt/vllm   vLLM 0.31.0 + the breadth library (installed --no-deps, no Prefect), serving the
#               OpenAI-compatible API via /usr/local/bin/vllm-entrypoint.sh.
#
# Build from the repository root (the build context):
#
#   docker build -f docker/gpu-worker.Dockerfile -t breadth-gpu .
#
# Run the worker:      docker run --gpus all --env-file ... breadth-gpu
# Run a vLLM server:   docker run --gpus all -p 8000:8000 -e BREADTH_VLLM_MODEL=... \
#                        --entrypoint vllm-entrypoint.sh breadth-gpu
FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app

# Python 3.12 is Ubuntu 24.04's own. python3.12-dev and build-essential are there because
# Triton (used by vLLM and torch.compile) compiles small C launchers at run time.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        python3.12 python3.12-venv python3.12-dev build-essential ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# Non-root runtime user (Ubuntu 24.04 images ship a default `ubuntu` user with uid 1000).
RUN groupadd --gid 10001 breadth \
    && useradd --uid 10001 --gid breadth --create-home --shell /bin/bash breadth

# vLLM's environment first: it is the largest layer and changes least often.
RUN python3.12 -m venv /opt/vllm \
    && /opt/vllm/bin/pip install vllm==0.31.0

# The pipeline's environment: torch's default Linux wheel is the CUDA build.
RUN python3.12 -m venv /opt/venv \
    && pip install torch==2.13.0

WORKDIR /app

COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The library goes into both environments: with its dependencies into the pipeline's (editable,
# so the package resolves to /app/src/breadth and code that locates the project from the package
# finds /app), without them (so without Prefect) into vLLM's.
COPY src ./src
COPY flows ./flows
COPY tasks ./tasks
RUN /opt/vllm/bin/pip install --no-deps /app \
    && rm -rf build src/*.egg-info \
    && pip install --no-deps -e . \
    && python -c "import breadth" \
    && /opt/vllm/bin/python -c "import breadth"
COPY prefect.yaml ./
COPY --chmod=0755 docker/vllm-entrypoint.sh /usr/local/bin/vllm-entrypoint.sh
# Directories that compose mounts named volumes on: a new volume takes the ownership of the
# directory it is mounted over, so they must exist, owned by the runtime user.
RUN chown breadth:breadth /app \
    && mkdir -p /home/breadth/.cache/huggingface /models \
    && chown -R breadth:breadth /home/breadth/.cache /models

# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001

# vLLM's OpenAI-compatible server, when started with vllm-entrypoint.sh.
EXPOSE 8000

CMD ["prefect", "worker", "start", "--pool", "breadth-gpu", "--type", "process"]
