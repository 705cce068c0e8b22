"""The persisted BM25 index (bm25s) and, in the same chunk order, a matrix of the chunk vectors for exact dense
search over pre-filtered subsets. Rebuilt from the store whenever the store has changed since it was built, written
to a temporary folder and swapped in, so a crash never leaves a half-written index in place."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from functools import cached_property
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from pagegraph.indexing.manifest import IndexParams

BM25_DIR = "bm25"
_STATE_FILE = "state.json"
_IDS_FILE = "chunk_ids.json"
_VECTORS_FILE = "vectors.npy"
_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-cased words without English stopwords; single characters are kept only when they are digits."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())]


class BM25Index:
    def __init__(self, folder: Path, params: IndexParams, *, at: Path | None = None) -> None:
        """The BM25 index of the index folder `folder`, kept in its bm25/ subfolder (or at `at`, e.g. a private
        copy a reader builds while a writer holds the index)."""
        self._folder = at or folder / BM25_DIR
        self._params = params

    def built_generation(self) -> int | None:
        state = self._folder / _STATE_FILE
        if not state.exists() or not (self._folder / _VECTORS_FILE).exists():
            return None
        return int(json.loads(state.read_text())["generation"])

    def build(self, chunk_ids: list[str], texts: list[str], vectors: np.ndarray, generation: int) -> None:
        retriever = bm25s.BM25(method=self._params.bm25_method, k1=self._params.bm25_k1, b=self._params.bm25_b)
        # bm25s cannot index an empty corpus; an empty index is a folder with no chunk ids.
        parent = self._folder.parent
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".bm25-", dir=parent))
        try:
            if texts:
                retriever.index([tokenize(text) for text in texts], show_progress=False)
                retriever.save(str(tmp))
            (tmp / _IDS_FILE).write_text(json.dumps(chunk_ids))
            np.save(tmp / _VECTORS_FILE, vectors.astype(np.float32))
            (tmp / _STATE_FILE).write_text(json.dumps({"generation": generation, "chunks": len(chunk_ids)}))
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
        return np.load(self._folder / _VECTORS_FILE, mmap_mode="r")

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk, in the order of `chunk_ids`."""
        retriever, ids = self._loaded
        if retriever is None:
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in tokenize(query) if t in retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(ids), dtype=np.float32)
        return retriever.get_scores(tokens)

    def holds(self, word: str) -> bool:
        """Whether some chunk holds `word` (a BM25 word: lower case, not a stopword)."""
        retriever, _ = self._loaded
        return retriever is not None and word in retriever.vocab_dict

    def chunks_holding(self, word: str) -> int:
        """How many chunks hold `word`."""
        return int(np.count_nonzero(self._loaded[0].get_scores([word]))) if self.holds(word) else 0

    def search(
        self, query: str, k: int, mask: np.ndarray | None = None, scores: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """Top-k chunk ids with positive scores; `mask` (True per chunk to keep) restricts the search before ranking.
        `scores`: the query's `scores`, when already computed."""
        scores = self.scores(query) if scores is None else scores
        if not len(scores):
            return []
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        k = min(k, len(scores))
        kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
        # Every chunk scoring at least the k-th best, ties broken by index order, so that results do not depend on k.
        candidates = np.flatnonzero(scores >= kth)
        top = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        return [(self.chunk_ids[i], float(scores[i])) for i in top if scores[i] > 0]
