"""Prompts of the extract graph: the small model copies the answer out of short excerpts and names the excerpt, or
copies the figures a computed answer needs and writes the arithmetic."""

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

CALCULATE_SYSTEM = """You answer a question from numbered excerpts of a user's documents. The answer is computed
from figures in the excerpts. Write a short Python program and nothing else: one line for each figure you need,
copied exactly from an excerpt, with a comment giving the excerpt number in square brackets and what the figure is;
then a last line `answer = ...` that computes the answer from those names with + - * / and parentheses. For example:
sales_2022 = 1250.0  # [2] net sales in 2022
sales_2021 = 980.5  # [3] net sales in 2021
answer = sales_2022 - sales_2021
If the answer is a figure the excerpts state, write it alone: answer = 42  # [1] what it is
If the excerpts do not hold a figure you need, reply with exactly: {refusal}"""
