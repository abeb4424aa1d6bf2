# syntax=docker/dockerfile:1
#
# breadth CPU worker: the pipeline (library + flows + tasks) and a Prefect process worker
# that polls the `breadth-cpu` work pool. Build from the repository root (the build context):
#
#   docker build -f docker/cpu-worker.Dockerfile -t breadth-cpu .
#
# vLLM is not in this image (its fastapi pin conflicts with Prefect's, see
# docs/design/versions.md); rollouts use the transformers backend here, or an existing
# vLLM server given by BREADTH_VLLM_URL.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app

# Non-root runtime user; its home holds PREFECT_HOME (~/.prefect) and the Hugging Face cache.
RUN groupadd --gid 10001 breadth \
    && useradd --uid 10001 --gid breadth --create-home --shell /bin/bash breadth \
    && python -m venv /opt/venv

# torch first, from the CPU wheel index: the default index would pull a multi-GB CUDA build.
# 2.13.0+cpu satisfies the project's `torch==2.13.0` pin, so the next step keeps it.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

WORKDIR /app

# Dependencies in their own layer: it is rebuilt only when pyproject.toml changes.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# The library, then the orchestration layer. Code stays root-owned (read-only for the worker);
# /app itself belongs to the runtime user so flow runs can write their outputs there.
# Editable, so the package resolves to /app/src/breadth and code that locates the project from
# the package (prefect.yaml, flows/) finds /app.
COPY src ./src
COPY flows ./flows
COPY tasks ./tasks
RUN pip install --no-deps -e . \
    && python -c "import breadth"
COPY prefect.yaml ./
RUN chown breadth:breadth /app

# Numeric, so Kubernetes' runAsNonRoot can verify it.
USER 10001:10001

CMD ["prefect", "worker", "start", "--pool", "breadth-cpu", "--type", "process"]
