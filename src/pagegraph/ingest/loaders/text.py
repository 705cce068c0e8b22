"""Plain-text loader: form feeds separate pages; headings are detected later by the tree builder."""

from __future__ import annotations

from pathlib import Path

from pagegraph.errors import DocumentError
from pagegraph.state.documents import LoadedDocument, Page, SourceType


def load_text(path: Path, text: str) -> LoadedDocument:
    text = text.replace("\r\n", "\n")
    page_texts = [part.strip("\n") for part in text.split("\f")]
    while len(page_texts) > 1 and not page_texts[-1].strip():
        page_texts.pop()
    if not any(part.strip() for part in page_texts):
        raise DocumentError(path, "no text")
    return LoadedDocument(
        path=str(path),
        name=path.name,
        source_type=SourceType.TEXT,
        title=path.stem,
        pages=[Page(number=i + 1, text=part) for i, part in enumerate(page_texts)],
    )
