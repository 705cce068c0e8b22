"""The router: pick the documents most likely to hold the answer, from their summaries."""

ROUTE_SYSTEM = """You choose which documents a search should look in. You get a question and a catalogue of documents,
each with a summary. Pick the {top_k} documents most likely to contain the answer, best first, using the exact file
names from the catalogue, and give a short reason."""

ROUTE_REQUEST = """Question: {question}

Catalogue:
{catalogue}"""

CATALOGUE_ENTRY = "- {name} ({document_type}): {summary} Topics: {topics}."
