"""The closed check of an answer against the question's top evidence sentences: one token, Yes or No, whose
probability is read rather than the word written (P(True), Kadavath et al. 2022)."""

JUDGE_SYSTEM = "You check answers against evidence. Reply with one word: Yes or No."

JUDGE_REQUEST = """Sentences:
{sentences}

Question: {question}
Proposed answer: {answer}

Do the sentences state that the proposed answer is the answer to the question? Reply Yes or No."""

NO_SENTENCES = "(none)"
YES_WORDS = ("yes",)
NO_WORDS = ("no",)
