"""Search in a database index, in SQL: dense search over the HNSW index (or exactly, within a filter), keyword
search over each chunk's BM25 words scored with bm25s's formulas, the documents holding a word, and the centroids
routing reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from pagegraph.state.documents import (
    Chunk,
    DocumentRecord,
)
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.chunk_text import document_label, search_text
from pagegraph.store.filters import sql_where
from pagegraph.store.postgres.connection import Connections
from pagegraph.store.profiles import chunk_centroids
from pagegraph.text.words import TOKENIZER, indexed_words

# HNSW candidates a filtered search looks at (pgvector's ceiling); a filter that still leaves fewer than k is answered
# by an exact scan of the rows it allows.
_FILTERED_EF_SEARCH = 1000
# Keyword search and routing: a posting per BM25 word and chunk, with the chunk's length beside its count so that
# scoring reads the primary key's index alone, keyed by word, then document: a search within named documents (a
# routed question's) reads only their postings, not each word's whole list; every chunk's length and words with
# their counts in one row (the scores of given chunks, e.g. the dense hits, read those rows alone); how many chunks
# hold each word, and how many chunks and words there are in all (kept by every commit and removal: counting costs
# in proportion to the library); each document's centroid.
SEARCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_words (
    word TEXT NOT NULL, chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, count INTEGER NOT NULL,
    length INTEGER NOT NULL, document_id TEXT NOT NULL,
    PRIMARY KEY (word, document_id, chunk_id) INCLUDE (count, length));
CREATE INDEX IF NOT EXISTS chunk_words_chunk ON chunk_words (chunk_id);
CREATE TABLE IF NOT EXISTS word_chunks (word TEXT PRIMARY KEY, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_terms (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, length INTEGER NOT NULL, words TEXT[] NOT NULL,
    counts INTEGER[] NOT NULL);
CREATE TABLE IF NOT EXISTS search_totals (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), chunks BIGINT NOT NULL, words BIGINT NOT NULL);
INSERT INTO search_totals VALUES (TRUE, 0, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS document_centroids (
    document_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, centroid vector({dimension}) NOT NULL);
"""
# meta 'search': what the search tables hold; another value (or none: an index from before they existed) means a
# writer fills them again from the stored chunks before it commits anything.
SEARCH_RECIPE = f"bm25-words-4/{TOKENIZER}"
# The recipe before keyword search indexed stems: its tables hold today's words less the stems, in the same shape, so
# a reader searches them as they are (a question's stems find nothing there) until a writer fills them again.
_RECIPE_WITHOUT_STEMS = "bm25-words-4/nfkc-casefold-words-unspaced-bigrams-v2"
# The documents holding a word, as a loose index scan: from each document to the next one's first posting.
_DOCUMENTS_HOLDING = """WITH RECURSIVE holding(document_id) AS (
    (SELECT document_id FROM chunk_words WHERE word = %(word)s ORDER BY document_id LIMIT 1)
    UNION ALL
    SELECT (SELECT w.document_id FROM chunk_words w WHERE w.word = %(word)s AND w.document_id > h.document_id
            ORDER BY w.document_id LIMIT 1)
    FROM holding h WHERE h.document_id IS NOT NULL)
SELECT document_id FROM holding WHERE document_id IS NOT NULL"""
# Adds a row's chunks to a word's count (rows in word order: concurrent writers lock the counts in one order).
_ADD_WORD_CHUNKS = "ON CONFLICT (word) DO UPDATE SET chunks = word_chunks.chunks + EXCLUDED.chunks"
# The term-frequency part of each BM25 variant's score (bm25s's formulas), over a posting `p`; in float8, as bm25s
# computes it (PostgreSQL would otherwise work in numeric, which made unfiltered keyword search ~3x slower).
TERM_SCORE = {
    "lucene": "p.count / (%(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s) + p.count)",
    "robertson": "p.count / (%(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s) + p.count)",
    "atire": "p.count * (%(k1)s + 1) / (p.count + %(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s))",
}


@dataclass(frozen=True)
class KeywordScoring:
    """How BM25 scores a posting: the variant, its parameters and the index's average chunk length in words."""

    method: str
    k1: float
    b: float
    average_length: float

    def term_score(self) -> str:
        """The SQL for a posting `p`'s term-frequency part."""
        return TERM_SCORE[self.method] % {
            "k1": f"{float(self.k1)!r}::float8",
            "b": f"{float(self.b)!r}::float8",
            "average": f"{float(self.average_length)!r}::float8",
        }


class PostgresSearch:
    """Dense and keyword search over the records of one index, through the connections `db` its records share."""

    def __init__(self, db: Connections) -> None:
        self._db = db

    def nearest(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter | None, generation: int, *, exact: bool = False
    ) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the k nearest chunks the filter lets through, nearest first, among
        the documents committed up to `generation` (what the caller's catalog holds): by the HNSW index, or by an
        exact scan of the rows the filter allows when `exact` or when the HNSW finds fewer than k."""
        where, args = sql_where(flt)
        allowed = (
            "FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE d.generation <= %s {'AND ' + where if where else ''}"
        )
        embedding = vector.astype(np.float32)
        found: list[tuple[str, float]] = []
        if not exact:
            # the HNSW returns at most ef_search rows, often one or two fewer than that: asked for k with ef_search k,
            # it fell back to the exact scan (1 s at 200k chunks) for a third of the questions
            ef_search = _FILTERED_EF_SEARCH if where else max(40, min(2 * k, _FILTERED_EF_SEARCH))
            with self._db.connection(reading=True) as conn:
                self._db.set_ef_search(conn, ef_search)
                found = conn.execute(
                    f"SELECT c.id, c.embedding <=> %s AS distance {allowed} ORDER BY c.embedding <=> %s LIMIT %s",
                    (embedding, generation, *args, embedding, k),
                ).fetchall()
        if len(found) < k:
            # every allowed row's distance first (a materialized CTE is computed whole), so no index orders them
            with self._db.connection(reading=True) as conn:
                found = conn.execute(
                    f"""WITH scored AS MATERIALIZED (SELECT c.id, c.embedding <=> %s AS distance {allowed})
                       SELECT id, distance FROM scored ORDER BY distance LIMIT %s""",
                    (embedding, generation, *args, k),
                ).fetchall()
        return [(chunk_id, float(distance)) for chunk_id, distance in found]

    # -- keyword search and routing, in SQL ------------------------------------------------------------------------
    def search_ready(self) -> bool:
        """Whether the search tables hold every committed chunk's words as today's recipe makes them (an index from
        before they existed, or of another recipe, does not until a writer fills them: `fill_search`)."""
        return self._recipe() == SEARCH_RECIPE

    def search_readable(self) -> bool:
        """Whether a reader can search the tables as they are: today's recipe, or the one before stems."""
        return self._recipe() in (SEARCH_RECIPE, _RECIPE_WITHOUT_STEMS)

    def _recipe(self) -> str | None:
        rows = self._db.rows("SELECT value FROM meta WHERE key = 'search'")
        return rows[0]["value"] if rows else None

    def search_totals(self) -> tuple[int, int]:
        """How many chunks the keyword search holds, and their summed length in words."""
        row = self._db.rows("SELECT chunks AS n, words AS total FROM search_totals")[0]
        return int(row["n"]), int(row["total"])

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        """How many chunks hold each of `words` that some chunk holds."""
        rows = self._db.rows(
            "SELECT word, chunks AS n FROM word_chunks WHERE word = ANY(%s) AND chunks > 0", (list(set(words)),)
        )
        return {row["word"]: int(row["n"]) for row in rows}

    def keyword_search(
        self,
        weights: dict[str, float],
        scoring: KeywordScoring,
        limit: int,
        flt: RetrievalFilter | None,
        generation: int,
    ) -> list[tuple[str, float]]:
        """The `limit` best chunks by BM25 that the filter lets through (of the documents committed up to
        `generation` when it restricts anything), with positive scores, best first: the sum over the weighted words a
        chunk holds of the word's weight (its idf times how often the query says it) times the term-frequency part."""
        where, args = sql_where(flt)
        if where:
            # chunks only for a page range: a lookup per posting, half a search within a few documents' time
            joined = "JOIN documents d ON d.id = p.document_id"
            joined += " JOIN chunks c ON c.id = p.chunk_id" if flt is not None and flt.pages is not None else ""
            restrict, restrict_args = f"{joined} WHERE d.generation <= %s AND {where}", [generation, *args]
        else:
            restrict, restrict_args = "", []
        # named documents: only their postings of each word are read
        keys = (
            ("CROSS JOIN (SELECT id AS document_id FROM documents WHERE name = ANY(%s)) k", [list(flt.documents)])
            if flt is not None and flt.documents is not None
            else ("", [])
        )
        return self._score_rows(
            weights,
            scoring,
            keys=keys,
            match="AND w.document_id = k.document_id" if keys[0] else "",
            restrict=(restrict, restrict_args),
            order=("ORDER BY score DESC LIMIT %s", [limit]),
        )

    def keyword_scores_of(
        self, weights: dict[str, float], scoring: KeywordScoring, chunk_ids: list[str]
    ) -> dict[str, float]:
        """The BM25 scores of those of `chunk_ids` that hold a weighted word, from each chunk's one row of words (a
        probe of the postings per word and chunk cost 3-4 times as much at 200k chunks)."""
        term = scoring.term_score()
        query = f"""SELECT p.chunk_id, SUM(q.weight * {term}) AS score
            FROM (SELECT t.chunk_id, w.word, w.count, t.length FROM chunk_terms t
                  CROSS JOIN LATERAL unnest(t.words, t.counts) AS w(word, count) WHERE t.chunk_id = ANY(%s)) p
            JOIN unnest(%s::text[], %s::float8[]) AS q(word, weight) ON q.word = p.word
            GROUP BY p.chunk_id HAVING SUM(q.weight * {term}) > 0"""
        with self._db.connection(reading=True) as conn:
            found = conn.execute(query, (list(chunk_ids), list(weights), list(weights.values()))).fetchall()
        return {chunk_id: float(score) for chunk_id, score in found}

    def _score_rows(
        self,
        weights: dict[str, float],
        scoring: KeywordScoring,
        *,
        keys: tuple[str, list[Any]] = ("", []),
        match: str = "",
        restrict: tuple[str, list[Any]] = ("", []),
        order: tuple[str, list[Any]] = ("", []),
    ) -> list[tuple[str, float]]:
        """Chunk ids and BM25 scores: each weighted word's postings (one index scan per word, or per word and row of
        `keys` — a join of `k` — on the postings the `match` condition on `w` and `k` keeps), joined and filtered by
        `restrict`, summed per chunk, kept when positive and ordered by `order`; each a piece of SQL and its
        arguments."""
        term = scoring.term_score()
        query = f"""SELECT p.chunk_id, SUM(q.weight * {term}) AS score
            FROM unnest(%s::text[], %s::float8[]) AS q(word, weight) {keys[0]}
            CROSS JOIN LATERAL (
                SELECT chunk_id, count, length, document_id FROM chunk_words w WHERE w.word = q.word {match}
            ) p {restrict[0]}
            GROUP BY p.chunk_id HAVING SUM(q.weight * {term}) > 0 {order[0]}"""
        arguments = [list(weights), list(weights.values()), *keys[1], *restrict[1], *order[1]]
        with self._db.connection(reading=True) as conn:
            return [(chunk_id, float(score)) for chunk_id, score in conn.execute(query, arguments).fetchall()]

    def documents_holding(self, word: str) -> set[str]:
        """The ids of the documents some chunk of which holds `word`: one step along the word's postings per document
        (they are keyed by word, then document), not a read of them all."""
        return {row["document_id"] for row in self._db.rows(_DOCUMENTS_HOLDING, {"word": word})}

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> dict[str, float]:
        """The inner product of each chunk's vector with `vector` (cosine: both are normalised)."""
        rows = self._db.rows(
            "SELECT id, -(embedding <#> %s) AS similarity FROM chunks WHERE id = ANY(%s)",
            (vector.astype(np.float32), list(chunk_ids)),
        )
        return {row["id"]: float(row["similarity"]) for row in rows}

    def centroids(self, documents: Collection[str] | None = None) -> dict[str, np.ndarray]:
        """Each document's centroid (of the `documents` given, when given): the normalised sum of its chunk vectors
        (documents without chunks have none); stored at commit, else (an index whose search tables are not filled
        yet, which the documents given may not ask for) averaged here."""
        if documents is not None or self.search_ready():
            where, args = ("WHERE document_id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
            rows = self._db.rows(f"SELECT document_id, centroid FROM document_centroids {where}", args)
            return {row["document_id"]: row["centroid"].to_numpy() for row in rows}
        rows = self._db.rows("SELECT document_id, AVG(embedding) AS centroid FROM chunks GROUP BY document_id")
        means = {row["document_id"]: row["centroid"].to_numpy() for row in rows}
        return {document_id: mean / max(float(np.linalg.norm(mean)), 1e-12) for document_id, mean in means.items()}


def forget_words(cur: psycopg.Cursor[Any], where: str, args: tuple[str, ...]) -> None:
    """Take the chunks of the documents `where` (a condition on documents `d`) out of the words' chunk counts and
    the totals, before they are deleted. Called after the generation's bump, so commits take turns on the counts
    too."""
    cur.execute(
        f"""INSERT INTO word_chunks SELECT w.word, -COUNT(*) FROM documents d
            JOIN chunks c ON c.document_id = d.id JOIN chunk_words w ON w.chunk_id = c.id
            WHERE {where} GROUP BY w.word ORDER BY w.word {_ADD_WORD_CHUNKS}""",
        args,
    )
    cur.execute(
        f"""UPDATE search_totals SET chunks = chunks - gone.n, words = words - gone.total
            FROM (SELECT COUNT(*) AS n, COALESCE(SUM(t.length), 0) AS total FROM documents d
                  JOIN chunks c ON c.document_id = d.id JOIN chunk_terms t ON t.chunk_id = c.id
                  WHERE {where}) gone""",
        args,
    )


def write_search(cur: psycopg.Cursor, document: DocumentRecord, chunks: list[Chunk], vectors: np.ndarray) -> None:
    """Write a document's chunks into the search tables: their words, lengths and counts, and its centroid."""
    label = document_label(document.name, document.title)
    postings: list[tuple[str, str, int, int, str]] = []
    terms: list[tuple[str, int, list[str], list[int]]] = []
    for chunk in chunks:
        counts = Counter(indexed_words(search_text(chunk, label)))
        length = sum(counts.values())
        terms.append((chunk.id, length, list(counts), list(counts.values())))
        postings.extend((word, chunk.id, count, length, document.id) for word, count in counts.items())
    for table, rows in (("chunk_terms", terms), ("chunk_words", postings)):
        with cur.copy(f"COPY {table} FROM STDIN") as copy:  # a chunk has ~100 postings: far faster than INSERTs
            for row in rows:
                copy.write_row(row)
    cur.execute(
        "UPDATE search_totals SET chunks = chunks + %s, words = words + %s",
        (len(terms), sum(length for _, length, *_ in terms)),
    )
    holding = Counter(word for word, *_ in postings)
    cur.execute(
        f"""INSERT INTO word_chunks SELECT * FROM unnest(%s::text[], %s::int[]) ORDER BY 1 {_ADD_WORD_CHUNKS}""",
        (list(holding), list(holding.values())),
    )
    if len(vectors):
        (centroid,) = chunk_centroids(np.zeros(len(vectors), dtype=np.int64), vectors, 1)
        cur.execute("INSERT INTO document_centroids VALUES (%s, %s)", (document.id, centroid.astype(np.float32)))
