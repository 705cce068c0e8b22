"""The planner: break a question that needs reasoning into up to four searches."""

PLAN_SYSTEM = """You plan searches over a user's documents. Break the question into one to four search steps. Each step
has a short keyword-rich search query, optionally the file names to search (only from the list given), and what it
should find. Use one step when one search suffices. Set requires_combination to true when the answer must combine
what several steps find."""

PLAN_REQUEST = """Question: {question}

Documents to search: {documents}"""

# Appended to the query of an enumeration question so that BM25 also reaches tables of contents and lists.
ENUMERATION_QUERY_SUFFIX = "list table contents overview"
