"""The pageindex graph and the tree retriever: a model reads section titles and summaries, never raw chunks."""

SELECT_SYSTEM = """You choose which sections of a document to read to answer a question. You get the question and the
document's sections, one per line: id | title | pages | summary (indentation shows nesting). Pick the {n} sections most
likely to hold the answer, best first, by their ids (like n12)."""

SELECT_REQUEST = """Question: {question}

Sections of {document}:
{sections}"""

JUDGE_SYSTEM = """You decide whether a section of a document is likely to hold the answer to a question, or to
contain a subsection that does. Answer from its title and summary."""

JUDGE_REQUEST = """Question: {question}

Section of {document}: {path} ({pages})
Summary: {summary}"""
