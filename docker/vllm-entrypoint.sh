#!/usr/bin/env bash
# Start vLLM's OpenAI-compatible server from its own environment (/opt/vllm), which has no
# Prefect in it (the two pin conflicting fastapi versions). The pipeline reaches this server
# through BREADTH_VLLM_URL (for example http://vllm:8000).
#
#   BREADTH_VLLM_MODEL  required: a model directory (mounted into the container) or a hub name
#   BREADTH_VLLM_SEED   engine seed, default 0 (the pipeline still sends a seed per request)
#   BREADTH_VLLM_DTYPE  default auto; use float32 for float32 checkpoints you want served as is
#
# Any arguments are passed on to the server, e.g. --tensor-parallel-size 2 --max-model-len 4096.
set -euo pipefail

: "${BREADTH_VLLM_MODEL:?set BREADTH_VLLM_MODEL to a model directory or a hub model name}"

exec /opt/vllm/bin/python -m vllm.entrypoints.openai.api_server \
    --model "${BREADTH_VLLM_MODEL}" \
    --host 0.0.0.0 \
    --port 8000 \
    --seed "${BREADTH_VLLM_SEED:-0}" \
    --dtype "${BREADTH_VLLM_DTYPE:-auto}" \
    "$@"
