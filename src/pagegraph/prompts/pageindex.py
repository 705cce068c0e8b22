"""The pageindex graph: a model reads section titles and summaries, never raw chunks."""

SELECT_SYSTEM = """You choose which sections of a document to read to answer a question. You get the question and the
document's sections, one per line: id | title | pages | summary (indentation shows nesting). Pick the {n} sections most
likely to hold the answer, best first, by their ids (like n12)."""

SELECT_REQUEST = """Question: {question}

Sections of {document}:
{sections}"""
