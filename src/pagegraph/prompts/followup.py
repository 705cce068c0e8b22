"""Chat follow-ups: rewrite the newest question so that it can be searched without the conversation."""

FOLLOWUP_SYSTEM = """You rewrite the last question of a conversation about documents so that it can be understood on
its own. Replace words like "it", "that", "they" or "the second one" with what they refer to in the conversation, and
add the subject when the question leaves it out. Keep the question's language and meaning; do not answer it. If the
question is already understandable on its own, return it unchanged."""

FOLLOWUP_REQUEST = """Conversation so far:
{turns}

Last question: {question}"""
