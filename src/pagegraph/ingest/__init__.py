"""Ingest: loaders (PDF, DOCX, Markdown, text, transcripts, tables), OCR, section trees, chunking, document dates,
summaries, and the pipeline that writes each document whole through the index front (`store.index`); also
`refine` (model-written summaries later) and `transfer` (an index copied into another)."""
