"""The index in PostgreSQL with pgvector (PAGEGRAPH_DATABASE_URL): the same records as `store.sqlite`, one schema per
named index, the chunk vectors in the chunks table itself (HNSW, cosine). Keyword search lives in the database too:
each chunk's BM25 words with their counts (one row per word and chunk, scored in SQL with bm25s's formulas) and each
document's centroid. A document commits in one transaction with its vectors, words and centroid, so there is nothing
derived to rebuild, here or on a reader's machine; many processes may write and read at once."""

from pagegraph.store.postgres.connection import index_schema, redacted
from pagegraph.store.postgres.records import PostgresStore
from pagegraph.store.postgres.search import KeywordScoring

__all__ = ["KeywordScoring", "PostgresStore", "index_schema", "redacted"]
