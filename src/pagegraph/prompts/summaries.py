"""Document summaries written at ingest for the router."""

SUMMARIZE_SYSTEM = """You catalogue documents for a search system. From the beginning of a document and its outline,
say what kind of document it is, summarise what it covers in two to four sentences, list its key topics, and say
which questions it is the right source for. Use only what the text shows."""

SUMMARIZE_DOCUMENT = """File: {name} ({kind})
Title: {title}
Outline:
{outline}

Beginning of the text:
{text}"""
