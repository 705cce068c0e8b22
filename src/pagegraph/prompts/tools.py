"""What another agent reads about pagegraph's MCP tools: the server's instructions and each tool's description."""

INSTRUCTIONS = """\
pagegraph answers questions over a collection of documents (PDF, Markdown, text, DOCX, transcripts) with
page-accurate citations. Call list_documents to see what you may read, search to find the passages and sentences
that hold something (fast, no model), and ask for an answer written from them with its citations and how far to
trust it. Cite what you use as the labels given: [file, section, p. N]."""

SEARCH = """\
Find the passages of the documents that best match a query, best first, each with its citation label
([file, section, p. N]: the page number printed on the page), its pages, its text and the sentences in it most likely
to answer the query. No model is called: it takes about a second. Use it to look something up, to check a fact
yourself, or before `ask` to see whether the documents cover a topic. Narrow it with `documents` (file names from
list_documents), `projects`, `source_types` or a date range. Returns at most `k` passages (1 to 20)."""

ASK = """\
Answer a question from the documents: the answer, its citations ([file, section, p. N]), the sentences it rests on
and a band saying how far to trust it: `supported` (checked against the cited text), `uncertain`, `quoted` (a
sentence of the documents stands in for an answer that failed its checks) or `abstained` (the documents do not hold
the answer; `abstain_reason` says why). Slower than search (a model writes the answer: seconds to a minute). Ask one
self-contained question at a time, in any language; narrow it as for search."""

LIST_DOCUMENTS = """\
List the documents you may read: file name (for the `documents` filter of search and ask), title, type, number of
pages, project, confidentiality, date and a short summary."""

INGEST = """\
Add files or folders to the documents (editors and admins only): paths on the disk of the machine pagegraph runs on
(the server's upload folder, over HTTP). A file already there unchanged is left as it is; a changed one is updated.
Tags each file with `project`, `confidentiality` (public, internal or confidential) and `source_type`.
Returns each file's outcome (added, updated, unchanged, retagged, skipped, or failed with the reason). Slow for large or scanned files."""
