"""A tiny causal LM created from scratch: character tokenizer + small Qwen-style config.

Nothing can be downloaded from a model hub here, so the default pipeline builds its own model.
The tokenizer is a real `PreTrainedTokenizerFast` (a BPE model with no merges = one token per
character), so transformers, TRL, MLflow and vLLM all load it like any hub tokenizer.
"""

from __future__ import annotations

import string
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

    from breadth.config import ModelConfig

# transformers' from_pretrained builds a model on the meta device through process-wide state:
# two loads at once in two threads (a rollout, and the background MLflow model upload) failed
# with "Cannot copy out of meta tensor", and every later load in the process failed too. Every
# from_pretrained of a model in breadth holds this lock.
MODEL_LOADING = threading.Lock()

SPECIAL_TOKENS = ["<pad>", "<eos>", "<unk>"]
# Printable ASCII without the whitespace other than space: prompts and targets are ASCII.
CHARACTERS = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"] + ["\n"]


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """One token per character; unknown characters map to <unk> instead of failing.

    >>> tok = build_char_tokenizer()
    >>> tok.decode(tok("12+7=")["input_ids"])
    '12+7='
    """
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS + CHARACTERS)}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    # Fuse joins character tokens back without inserting spaces.
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )
    tokenizer.model_max_length = 4096
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
    return model.to(device), tokenizer
