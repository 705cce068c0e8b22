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
from figures in the excerpts. Reply with a short Python program and nothing else: one line for each figure you need,
copied exactly from an excerpt, with a comment giving the excerpt number in square brackets and what the figure is;
then a last line `answer = ...` that computes the answer from those names with + - * / and parentheses. If the answer
is a figure an excerpt states, write it alone, like: answer = 42  # [1] what it is
If the excerpts do not hold a figure you need, reply with exactly: {refusal}"""

# One worked exchange, shown to the model before the question: small models follow an example more than a rule.
CALCULATE_EXAMPLE_REQUEST = """Excerpts:
[1] [bakery-report.pdf, Sales, p. 3]
In 2022 the bakery sold 12,400 loaves. Sales rose to 15,100 loaves in 2023.

[2] [bakery-report.pdf, Staff, p. 5]
The bakery employed 8 bakers in 2022 and 11 in 2023.

Question: How many more loaves did the bakery sell in 2023 than in 2022?"""

CALCULATE_EXAMPLE_REPLY = """loaves_2022 = 12400  # [1] loaves sold in 2022
loaves_2023 = 15100  # [1] loaves sold in 2023
answer = loaves_2023 - loaves_2022"""
