"""The tree retriever's judge: is a section, from its title and summary, likely to hold the answer?"""

JUDGE_SYSTEM = """You decide whether a section of a document is likely to hold the answer to a question, or to
contain a subsection that does. Answer from its title and summary."""

JUDGE_REQUEST = """Question: {question}

Section of {document}: {path} ({pages})
Summary: {summary}"""
