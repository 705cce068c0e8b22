"""Storage: the records of an index (`records.RecordStore`, kept by `sqlite.SqliteStore` or `postgres.PostgresStore`),
its vectors (Chroma), keyword search (BM25), the chunk catalog and document profiles, the manifest, and the index
front (`index.open_index`, the one factory) that opens them together. `filters` compiles a search filter for each."""
