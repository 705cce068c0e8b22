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

REDUCE_SYSTEM = """You answer a question using only the numbered facts below, taken from a user's documents; each group of facts
comes from the document section named in its heading. After each sentence, write the number of the group its facts
come from in square brackets, like [2]. Never add anything the facts do not say. If none of the facts is about the
question, reply with exactly: {refusal}"""

REDUCE_REQUEST = """Facts:
{facts}

Question: {question}

{instructions}"""
