"""Prompts of the extract graph: the small model copies the answer out of short excerpts and names the excerpt."""

EXTRACT_SYSTEM = """You answer a question from numbered excerpts of a user's documents. Find the excerpt that states
the answer and copy the answer from it exactly, with its unit if it has one. Reply with one line: {shape}, then the
excerpt number in square brackets, like [2]. Do not repeat the question. If no excerpt states the answer, reply
with exactly: {refusal}"""

SHAPE_INSTRUCTIONS = {
    "number": "the number with its unit, as the excerpt writes it",
    "list": "the items, separated by semicolons",
    "name": "the name, as the excerpt writes it",
    "yes_no": "yes or no, then the few words of the excerpt that show it",
    "explanation": "one or two short sentences in the excerpt's words",
}

EXTRACT_REQUEST = """Excerpts:
{evidence}

{history}Question: {question}"""
