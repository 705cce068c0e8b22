"""What BM25 and the embedder see of a chunk (`search_text`): its text under a header naming the document, the
section path and, in transcripts, the speakers, and the header row of a table it continues. Ingest writes it, the
index rebuilds keyword search from it, and the manifest records its recipe (`CHUNK_HEADER`)."""

from __future__ import annotations

import re

from pagegraph.state.documents import Chunk

# How search text is made from a chunk; the manifest records it, so an index never mixes two recipes.
CHUNK_HEADER = "title-section-v1"

_SEPARATORS = re.compile(r"[\s_]+|(?<!\d)[.-]|[.-](?!\d)")
_IDENTIFIER = re.compile(r"^(?=.*\d)[0-9a-f]{12,}$|^\d{6,}$", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{3,}")
_HEADER_LABEL_CHARS = 120
_HEADER_SECTION_LEVELS = 2
_HEADER_SECTION_CHARS = 120


def document_label(name: str, title: str) -> str:
    """What a chunk header calls its document: the words of its file name (without hashes and long digit runs)
    and its title when that has words the file name lacks."""
    stem = name.rsplit(".", 1)[0] if "." in name else name
    words = [w for w in _SEPARATORS.split(stem) if w and not _IDENTIFIER.match(w)]
    label = " ".join(words)
    named = {w.lower() for w in _WORD.findall(label)}
    title_words = {w.lower() for w in _WORD.findall(title)}
    if len(title_words) >= 2 and not title_words <= named:
        label = f"{label} - {' '.join(title.split())}" if label else " ".join(title.split())
    return label[:_HEADER_LABEL_CHARS].strip()


def chunk_header(label: str, section_path: list[str], speakers: list[str] | None = None) -> str:
    """The line BM25 and the embedder see above a chunk. The section path leaves out the root, which is the
    document's title, and keeps the deepest levels."""
    sections = " > ".join(" ".join(t.split()) for t in section_path[1:][-_HEADER_SECTION_LEVELS:])
    parts = [label, sections[-_HEADER_SECTION_CHARS:]]
    if speakers:
        parts.append("speakers: " + ", ".join(speakers))
    return " | ".join(part for part in parts if part)


def search_text(chunk: Chunk, label: str) -> str:
    """What BM25 and the embedder index for a chunk: its header line, the header row of the table it continues, its
    text."""
    lines = [chunk_header(label, chunk.section_path, chunk.speakers), chunk.table_header or "", chunk.text]
    return "\n".join(line for line in lines if line)
