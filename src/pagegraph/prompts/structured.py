"""Instructions that make a model answer in JSON, and the repair request after a reply that did not validate."""

JSON_INSTRUCTION = """Reply with one JSON object and nothing else: no prose, no code fences.
It must match this JSON schema:
{schema}"""

REPAIR_REQUEST = """Your reply could not be used: {error}

Reply again with only one JSON object, no prose and no code fences, matching this JSON schema:
{schema}"""
