"""What pagegraph says when the documents do not hold the answer."""

ABSTAIN_MESSAGE = """I could not answer this from the indexed documents: {reason}.
{searched}{hint}"""

SEARCHED = "Searched: {documents}.\n"

PASSAGES_FROM = "The passages found came from: {documents}.\n"

INGEST_HINT = "To get an answer, ingest a document that covers it (`pagegraph ingest PATH`) and ask again."

NAME_HINT = (
    "If one of your documents covers it, ask again naming it (`--document NAME`) so that it alone is searched; "
    "otherwise ingest one that does (`pagegraph ingest PATH`)."
)
