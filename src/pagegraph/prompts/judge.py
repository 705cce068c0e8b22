"""The closed check of an answer against the question's top evidence sentences: one token, Yes or No, whose
probability is read rather than the word written (P(True), Kadavath et al. 2022); and the second reading of the same
sentences, whose values a supported answer must state."""

from pagegraph.prompts.extract import EXTRACT_REQUEST, EXTRACT_SYSTEM, SHAPE_INSTRUCTIONS

JUDGE_SYSTEM = "You check answers against evidence. Reply with one word: Yes or No."

JUDGE_REQUEST = """Sentences:
{sentences}

Question: {question}
Proposed answer: {answer}

Do the sentences state that the proposed answer is the answer to the question? Reply Yes or No."""

NO_SENTENCES = "(none)"
YES_WORDS = ("yes",)
NO_WORDS = ("no",)

# The second reading: the question asked again over the judge's sentences alone, with the extract graph's reader
# prompt, asking for a value (only an answer stating one is read again). A refusal written as two plain words: the
# reader's own refusal sentence drew refusals from the embedded model where the sentences held the value.
REREAD_REFUSAL = "NOT FOUND"
REREAD_SYSTEM = EXTRACT_SYSTEM.format(shape=SHAPE_INSTRUCTIONS["number"], refusal=REREAD_REFUSAL)
REREAD_REQUEST = EXTRACT_REQUEST
