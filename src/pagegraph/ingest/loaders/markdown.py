"""Markdown loader: ATX headings (`#`…`######`) become the outline; fenced code is never taken for a heading."""

from __future__ import annotations

import re
from pathlib import Path

from pagegraph.errors import DocumentError
from pagegraph.state.documents import LoadedDocument, OutlineEntry, Page, SourceType
from pagegraph.store.manifest import DEFAULT_HEADING_PATTERN

_FENCE = re.compile(r"^(```|~~~)")


def markdown_headings(text: str, heading_pattern: str = DEFAULT_HEADING_PATTERN) -> list[OutlineEntry]:
    pattern = re.compile(heading_pattern)
    if not {"marks", "title"} <= set(pattern.groupindex):
        raise ValueError(f"heading pattern {heading_pattern!r} must define the groups 'marks' and 'title'")
    entries, offset, in_fence = [], 0, False
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if _FENCE.match(stripped.lstrip()):
            in_fence = not in_fence
        elif not in_fence and (match := pattern.match(stripped)):
            title = match.group("title").strip()
            if title:
                entries.append(OutlineEntry(title=title, level=len(match.group("marks")), offset=offset))
        offset += len(line)
    return entries


def load_markdown(path: Path, text: str, heading_pattern: str = DEFAULT_HEADING_PATTERN) -> LoadedDocument:
    text = text.replace("\r\n", "\n").strip("\n")
    if not text.strip():
        raise DocumentError(path, "no text")
    outline = markdown_headings(text, heading_pattern)
    top = min((entry for entry in outline), key=lambda entry: (entry.level, entry.offset), default=None)
    return LoadedDocument(
        path=str(path),
        name=path.name,
        source_type=SourceType.MARKDOWN,
        title=top.title if top and top.level == 1 else path.stem,
        pages=[Page(number=1, text=text)],
        outline=outline,
        outline_source="headings" if outline else "none",
    )
