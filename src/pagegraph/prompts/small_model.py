"""Prompts of the small_model graph: one short task per call, never more than one chunk at a time."""

PLAN_SEARCH_SYSTEM = """You prepare a document search. Give 2 to 4 keywords to search for. Only if the question
itself names a kind of file (pdf, md, docx, txt, vtt), give it as file_filter; only if it names a particular
document, give that name as source_hint. Otherwise use null for both."""

PLAN_SEARCH_REQUEST = """Question: {question}"""

MAP_CHUNK_SYSTEM = """You read one passage from a document and decide whether it helps answer a question. List the
facts from the passage that help, each as a full sentence that names what it is about, copying dates, names,
numbers, units and file names exactly. If it does not help, give no facts and relevant false."""

MAP_CHUNK_REQUEST = """Question: {question}

Passage from {label}:
{text}"""

REDUCE_SYSTEM = """You answer a question from numbered groups of facts taken from a user's documents. Each group's heading names
the document section the facts come from; a fact may rely on that heading for its subject. Write the answer using
only these facts, and after each sentence write the group number in square brackets, like [2]. If the facts do not
state the answer, reply with exactly: {refusal}"""

REDUCE_REQUEST = """Facts:
{facts}

Question: {question}

{instructions}"""
