"""A tiny causal LM created from scratch: character tokenizer + small Qwen-style config.

Nothing can be downloaded from a model hub here, so the default pipeline builds its own model.
The tokenizer is a real `PreTrainedTokenizerFast` (a BPE model with no merges = one token per
character), so transformers, TRL, MLflow and vLLM all load it like any hub tokenizer.
"""

from __future__ import annotations

import string
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from breadth.config import ModelConfig

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

# transformers' from_pretrained builds a model on the meta device through process-wide state:
# two loads at once in two threads (a rollout, and the background MLflow model upload) failed
# with "Cannot copy out of meta tensor", and every later load in the process failed too. Every
# from_pretrained of a model in breadth holds this lock.
MODEL_LOADING = threading.Lock()

SPECIAL_TOKENS = ["<pad>", "<eos>", "<unk>"]
# Printable ASCII without the whitespace other than space: prompts and targets are ASCII.
CHARACTERS = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"] + ["\n"]
# Characters real data sets hold (GSM8K's prompts, AQuA's options) that have an ASCII spelling
# meaning the same: the tokenizer reads them as that spelling. Without it each became <unk>,
# silently. Characters without one (degree sign, square root, superscripts, vulgar fractions,
# whose ASCII forms read differently next to digits) stay <unk>, and the run reports them with
# counts (breadth.preflight.checks).
ASCII_SPELLINGS = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",  # quotes, prime
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u2026": "...",  # ellipsis
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2212": "-",  # hyphens, minus
    "\u2014": "--", "\u2015": "--",  # em dash, horizontal bar
    "\u00d7": "*", "\u00f7": "/",  # multiplication and division signs
    "\u00a0": " ", "\u2002": " ", "\u2003": " ", "\u2007": " ", "\u2009": " ", "\u202f": " ",
    "\t": " ", "\r\n": "\n", "\r": "\n",
}


def build_char_backend() -> Tokenizer:
    """The `tokenizers` model under `build_char_tokenizer` (a BPE with no merges: one token
    per character, as `ASCII_SPELLINGS` spells it), without importing transformers.

    >>> build_char_backend().normalizer.normalize_str("3\u20134\u2026")
    '3-4...'
    """
    from tokenizers import Tokenizer, decoders, models, normalizers

    vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    backend.normalizer = normalizers.Sequence(
        [normalizers.Replace(char, spelling) for char, spelling in ASCII_SPELLINGS.items()]
    )
    # Fuse joins character tokens back without inserting spaces.
    backend.decoder = decoders.Fuse()
    return backend


def build_char_tokenizer(max_length: int | None = None) -> PreTrainedTokenizerFast:
    """One token per character; characters with an ASCII spelling read as it
    (`ASCII_SPELLINGS`); other unknown characters map to <unk> instead of failing.
    `max_length`: the model's context, as `model_max_length` (default: ModelConfig's).

    >>> tok = build_char_tokenizer()
    >>> tok.decode(tok("12+7=")["input_ids"]), tok.decode(tok("it\u2019s 3\u20134\u2026")["input_ids"])
    ('12+7=', "it's 3-4...")
    """
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=build_char_backend(),
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )
    # The model's context, not a larger number: transformers warns past it, and SFT reads it.
    tokenizer.model_max_length = max_length or ModelConfig().max_length
    return tokenizer


def build_tiny_model(
    config: ModelConfig, tokenizer: PreTrainedTokenizerFast, seed: int
) -> PreTrainedModel:
    """A randomly initialised Qwen-style causal LM sized by `config` (seeded).

    Qwen3 (Qwen2 plus q/k norms) rather than Qwen2: for model_type "qwen2", transformers 5
    overrides the saved tokenizer class with Qwen2Tokenizer, whose byte-level pre-tokenizer
    silently drops our character vocabulary's spaces; "qwen3" keeps the saved class. vLLM serves
    both architectures.
    """
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    model_config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        head_dim=config.hidden_size // config.num_heads,
        max_position_embeddings=config.max_length,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        torch_dtype="float32",
    )
    with MODEL_LOADING:  # model construction shares from_pretrained's process-wide state
        model = Qwen3ForCausalLM(model_config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def load_policy(
    name_or_path: str | Path, *, device: str = "cpu"
) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """Load a causal LM and its tokenizer by hub name or local path (the same call for both)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(name_or_path))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    with MODEL_LOADING:
        model = AutoModelForCausalLM.from_pretrained(str(name_or_path), dtype="float32")
    # A tiny model saved before its tokenizer knew the context said 4096 where the model has 96.
    context = model_context(model.config)
    if context is not None and tokenizer.model_max_length > context:
        tokenizer.model_max_length = context
    return model.to(device), tokenizer


def inference_device() -> str:
    """Where a stage that samples from a model runs it: "cuda" where torch sees a CUDA device,
    else "cpu". Training needs no such choice: TRL's Trainer places the model itself."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def model_context(config: Any) -> int | None:
    """The positions a model config allows (`max_position_embeddings`, or GPT-2's
    `n_positions`), or None if it names none.

    >>> from types import SimpleNamespace
    >>> model_context(SimpleNamespace(max_position_embeddings=96)), model_context(object())
    (96, None)
    """
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
