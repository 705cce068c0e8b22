"""pagegraph for other agents: its search, questions, document list and ingest as plain calls (`documents`), as MCP
tools over stdio and HTTP (`mcp`), and its search as a LangChain retriever (`retriever`)."""
