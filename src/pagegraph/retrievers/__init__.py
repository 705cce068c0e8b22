"""LangChain retrievers over a pagegraph index: bm25, dense, hybrid (weighted RRF) with windows."""
