"""What pagegraph says when the documents do not hold the answer."""

ABSTAIN_MESSAGE = """I could not answer this from the indexed documents: {reason}.
{searched}To get an answer, ingest a document that covers it (`pagegraph ingest PATH`) and ask again."""

SEARCHED = "Searched: {documents}.\n"
