"""The closed check of an answer against the question's top evidence sentences: one token, Yes or No, whose
probability is read rather than the word written (P(True), Kadavath et al. 2022); and the second reading of the same
sentences, whose values a supported answer must state."""

JUDGE_SYSTEM = "You check answers against evidence. Reply with one word: Yes or No."

JUDGE_REQUEST = """Sentences:
{sentences}

Question: {question}
Proposed answer: {answer}

Do the sentences state that the proposed answer is the answer to the question? Reply Yes or No."""

NO_SENTENCES = "(none)"
YES_WORDS = ("yes",)
NO_WORDS = ("no",)

# The second reading: the question asked again over the judge's sentences alone, answered the way the extract graph's
# reader answers it, so that the values read there can be set beside the answer's.
REREAD_SYSTEM = """You answer a question from a few numbered sentences of a user's documents. Copy the answer from
the sentence that states it exactly, with its unit if it has one: {shape}. Then write the sentence number in square
brackets, like [2]. If no sentence states the answer, reply with exactly: {refusal}"""

REREAD_REQUEST = """Sentences:
{sentences}

Question: {question}"""
