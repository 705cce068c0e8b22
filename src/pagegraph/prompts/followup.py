"""Chat follow-ups: rewrite the newest question so that it can be searched without the conversation. Small models
copy the question back unless shown examples, so the request comes after worked examples (as earlier turns)."""

FOLLOWUP_SYSTEM = """You rewrite the user's last question so that someone who has not seen the conversation understands it.
Replace "it", "that", "they", "this one" and similar words with the thing they refer to, and add the subject when
the question leaves it out. Keep the question's language; do not answer it. Reply with the rewritten question only."""

FOLLOWUP_REQUEST = """Conversation:
{turns}

Last question: {question}
Rewritten question:"""

# (conversation, last question, rewritten question)
FOLLOWUP_EXAMPLES = [
    (
        "Q: What is the warranty period of the P-7 pump?\nA: Five years.",
        "And how much does it cost?",
        "How much does the P-7 pump cost?",
    ),
    ("Q: Who signed the 2021 lease?\nA: Maria Lopez.", "When does it end?", "When does the 2021 lease end?"),
    (
        "Q: What is the capital of Spain?\nA: Madrid.",
        "What is the population of Lisbon?",
        "What is the population of Lisbon?",
    ),
]
