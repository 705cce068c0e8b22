"""Document profiles: what each document is, as a question can find it without a model. Built from the store in
step with the chunk catalog: a BM25 index over each document's label, title, summary, topics, opening words and
section titles, and each document's centroid (the normalised mean of its chunk vectors: summed from a folder
index's vector matrix, or stored at commit in a database index)."""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache

import bm25s
import numpy as np

from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.chunk_text import document_label
from pagegraph.store.records import RecordStore
from pagegraph.text.words import indexed_words, query_words

_SECTION_LEVELS = 2
_PROFILE_WORDS = 600


class DocumentProfiles:
    def __init__(
        self,
        store: RecordStore,
        chunk_document_ids: np.ndarray,
        leave_out: frozenset[str] = frozenset(),
        *,
        previous: DocumentProfiles | None = None,
        changed: Collection[str] = (),
    ) -> None:
        """`chunk_document_ids`: every chunk's document id, in the catalog's order; `chunk_rows` keeps each chunk's
        document row in that order (-1: a chunk of no profiled document). `leave_out`: documents not to route to
        (committed after the search indexes were built). `previous`: profiles of an earlier state of the store,
        whose words are kept for the documents not in `changed` whose summary is the same (a summary is written
        after its document's commit). The centroids come next (`set_centroids`)."""
        documents = [doc for doc in store.documents() if doc.id not in leave_out]
        self.summaries = store.summaries()
        known = (
            {
                doc_id: words
                for doc_id, words in previous.words.items()
                if doc_id not in changed and self.summaries.get(doc_id) == previous.summaries.get(doc_id)
            }
            if previous is not None
            else {}
        )
        unknown = {doc.id for doc in documents if doc.id not in known}
        reading = None if previous is None else unknown  # all of the store's, or those of the documents not carried
        titles = store.section_titles(_SECTION_LEVELS, reading) if unknown else {}
        self.documents = documents
        self.ids = [doc.id for doc in documents]
        self.names = [doc.name for doc in documents]
        self.row_of = {doc_id: row for row, doc_id in enumerate(self.ids)}
        self.row_named = {name: row for row, name in enumerate(self.names)}
        self._chunk_counts = np.array([doc.n_chunks for doc in documents], dtype=np.int64)
        self.words: dict[str, list[str]] = {}  # each profile's BM25 words
        for doc in documents:
            if doc.id in known:
                self.words[doc.id] = known[doc.id]
                continue
            summary = self.summaries.get(doc.id)
            parts = [document_label(doc.name, doc.title), doc.title, *titles.get(doc.id, [])]
            if summary is not None:
                parts[2:2] = [summary.document_type, summary.summary, ", ".join(summary.key_topics), summary.opening]
            self.words[doc.id] = indexed_words(" ".join(" ".join(parts).split()[:_PROFILE_WORDS]))
        self._bm25: bm25s.BM25 | None = None
        if any(self.words.values()):
            self._bm25 = bm25s.BM25()
            self._bm25.index([self.words[doc_id] for doc_id in self.ids], show_progress=False)
        self.chunk_rows = self._rows_of(chunk_document_ids)
        self.centroids = np.zeros((len(self.ids), 0), dtype=np.float32)
        self._allowed = lru_cache(maxsize=64)(self._compute_allowed)

    def _rows_of(self, document_ids: np.ndarray) -> np.ndarray:
        """The document row of each of `document_ids` (-1: none); one lookup per run, as a document's chunks lie
        together in the catalog."""
        if not len(document_ids):
            return np.zeros(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, document_ids[1:] != document_ids[:-1]])
        rows = np.array([self.row_of.get(document_ids[start], -1) for start in starts], dtype=np.int64)
        return np.repeat(rows, np.diff(np.r_[starts, len(document_ids)]))

    def chunks_of(self, name: str) -> int:
        """How many chunks the document named `name` holds (0: none profiled)."""
        row = self.row_named.get(name)
        return 0 if row is None else int(self._chunk_counts[row])

    def chunks_around_a_chunk(self, flt: RetrievalFilter | None) -> float:
        """How many chunks the document of an average chunk holds, over the documents the filter allows (the mean
        of their lengths weighted by their chunks; 0: no chunk): a few long reports among many short notes count
        for the text they hold."""
        counts = self._chunk_counts[self.allowed(flt)]
        total = int(counts.sum())
        return float((counts * counts).sum() / total) if total else 0.0

    def set_centroids(self, centroids: np.ndarray) -> None:
        """Each document's centroid, in `ids` order."""
        self.centroids = centroids.astype(np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    def allowed(self, flt: RetrievalFilter | None) -> np.ndarray:
        """True for the documents the filter lets be searched, in `ids` order."""
        if flt is None:
            return np.ones(len(self.ids), dtype=bool)
        return self._allowed(flt.model_dump_json())

    def _compute_allowed(self, flt_json: str) -> np.ndarray:
        flt = RetrievalFilter.model_validate_json(flt_json)
        return np.array([flt.selects(doc) for doc in self.documents], dtype=bool)

    def lexical(self, query: str) -> np.ndarray:
        """BM25 score of every document's profile, in `ids` order."""
        if self._bm25 is None:
            return np.zeros(len(self.ids), dtype=np.float32)
        tokens = [t for t in query_words(query) if t in self._bm25.vocab_dict]
        return self._bm25.get_scores(tokens) if tokens else np.zeros(len(self.ids), dtype=np.float32)

    def similarity(self, vector: np.ndarray) -> np.ndarray:
        """Cosine similarity of every document's centroid to a (normalised) query vector, in `ids` order."""
        return np.asarray(self.centroids @ vector)


def chunk_centroids(rows: np.ndarray, chunk_vectors: np.ndarray, documents: int) -> np.ndarray:
    """Each document's centroid (the normalised sum of its chunks' vectors) from every chunk's document row (-1:
    none) and vector, in one order."""
    sums = np.zeros((documents, chunk_vectors.shape[1] if chunk_vectors.ndim == 2 else 0), dtype=np.float32)
    if len(rows) and (rows < 0).any():  # chunks of documents removed since BM25 was built: left out
        kept = np.flatnonzero(rows >= 0)
        np.add.at(sums, rows[kept], chunk_vectors[kept])
    elif len(rows):
        # A document's chunks lie in runs (the store lists them together): one pass over the (memory-mapped)
        # vectors sums each run, then runs are added to their documents.
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        np.add.at(sums, rows[starts], np.add.reduceat(chunk_vectors, starts, axis=0))
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0)
