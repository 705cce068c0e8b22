"""BM25 words and scoring, and a folder index's persisted BM25 index (bm25s) with, in the same chunk order, a matrix
of the chunk vectors for exact dense search over pre-filtered subsets. The folder's is rebuilt from the store whenever
the store has changed since it was built, written to a temporary folder and swapped in, so a crash never leaves a
half-written index in place; a database index scores the same words in SQL (store.postgres)."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any

import bm25s
import numpy as np

from pagegraph.store.manifest import IndexParams
from pagegraph.text.words import TOKENIZER, indexed_words, query_words

BM25_DIR = "bm25"
_STATE_FILE = "state.json"
_IDS_FILE = "chunk_ids.json"
_VECTORS_FILE = "vectors.npy"


def idf(method: str, holding: int, chunks: int) -> float:
    """A word's inverse document frequency as bm25s computes it for `method` (lucene, robertson or atire: the
    variants whose score is zero for a chunk without the word), `holding` of `chunks` chunks holding it."""
    if method == "lucene":
        return math.log(1 + (chunks - holding + 0.5) / (holding + 0.5))
    if method == "robertson":
        return math.log(max((chunks - holding + 0.5) / (holding + 0.5), 1.0))
    if method == "atire":
        return math.log(chunks / holding)
    raise ValueError(f"BM25 method {method!r} has no scoring outside bm25s")


def top_rows(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The rows of the k best positive scores, best first; `mask` (True per row to keep) restricts them first. Every
    row scoring at least the k-th best is a candidate and ties go to the lower row, so results do not depend on k."""
    if not len(scores):
        return []
    if mask is not None:
        scores = np.where(mask, scores, 0.0)
    k = min(k, len(scores))
    kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
    candidates = np.flatnonzero(scores >= kth)
    top = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    return [(int(i), float(scores[i])) for i in top if scores[i] > 0]


class BM25Index:
    def __init__(self, folder: Path, params: IndexParams) -> None:
        """The BM25 index of the index folder `folder`, kept in its bm25/ subfolder."""
        self._folder = folder / BM25_DIR
        self._params = params

    def _built_state(self) -> dict[str, Any] | None:
        """What its last build recorded (generation, tokenizer); None when it was never built."""
        state = self._folder / _STATE_FILE
        return json.loads(state.read_text()) if state.exists() else None

    def built_generation(self) -> int | None:
        """The store generation it was built at; None when it was not built, or built with another tokenizer (an
        older pagegraph's), which the next writer rebuilds."""
        built = self._built_state()
        if built is None or not (self._folder / _VECTORS_FILE).exists():
            return None
        return int(built["generation"]) if built.get("tokenizer") == TOKENIZER else None

    def built_by_another_tokenizer(self) -> bool:
        """Whether an older pagegraph built it, splitting text into words another way."""
        built = self._built_state()
        return built is not None and built.get("tokenizer") != TOKENIZER

    def build(self, chunk_ids: list[str], texts: list[str], vectors: np.ndarray, generation: int) -> None:
        retriever = bm25s.BM25(method=self._params.bm25_method, k1=self._params.bm25_k1, b=self._params.bm25_b)
        # bm25s cannot index an empty corpus; an empty index is a folder with no chunk ids.
        parent = self._folder.parent
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".bm25-", dir=parent))
        try:
            if texts:
                retriever.index([indexed_words(text) for text in texts], show_progress=False)
                retriever.save(str(tmp))
            (tmp / _IDS_FILE).write_text(json.dumps(chunk_ids))
            np.save(tmp / _VECTORS_FILE, vectors.astype(np.float32))
            (tmp / _STATE_FILE).write_text(
                json.dumps({"generation": generation, "chunks": len(chunk_ids), "tokenizer": TOKENIZER})
            )
            old = parent / f".{BM25_DIR}-old"
            shutil.rmtree(old, ignore_errors=True)
            if self._folder.exists():
                self._folder.rename(old)
            tmp.rename(self._folder)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.__dict__.pop("_loaded", None)
        self.__dict__.pop("vectors", None)

    @cached_property
    def _loaded(self) -> tuple[bm25s.BM25 | None, list[str]]:
        ids = json.loads((self._folder / _IDS_FILE).read_text())
        if not ids:
            return None, []
        return bm25s.BM25.load(str(self._folder), mmap=True), ids

    @property
    def chunk_ids(self) -> list[str]:
        return self._loaded[1]

    @property
    def has_vectors(self) -> bool:
        return (self._folder / _VECTORS_FILE).exists()

    @cached_property
    def vectors(self) -> np.ndarray:
        """Chunk vectors in `chunk_ids` order, memory-mapped."""
        return np.asarray(np.load(self._folder / _VECTORS_FILE, mmap_mode="r"))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk, in the order of `chunk_ids`."""
        retriever, ids = self._loaded
        if retriever is None:
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in query_words(query) if t in retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(ids), dtype=np.float32)
        return np.asarray(retriever.get_scores(tokens))

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        """How many chunks hold each of `words` (BM25 words) that some chunk holds."""
        retriever, _ = self._loaded
        if retriever is None:
            return {}
        held = [word for word in dict.fromkeys(words) if word in retriever.vocab_dict]
        return {word: int(np.count_nonzero(retriever.get_scores([word]))) for word in held}
