"""Documents as pagegraph reads and stores them: pages, tags, section trees, chunks.

Offsets are character offsets into a document's full text: its pages' texts joined by PAGE_SEPARATOR.
Page numbers are 1-indexed physical pages (the first page of a PDF is 1); printed labels are kept beside them.
"""

from __future__ import annotations

import datetime as dt
import re
from bisect import bisect_right
from collections.abc import Mapping
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

PAGE_SEPARATOR = "\n\n"

Confidentiality = Literal["public", "internal", "confidential"]
CONFIDENTIALITY_LEVELS: tuple[Confidentiality, ...] = ("public", "internal", "confidential")


class SourceType(StrEnum):
    PDF = "pdf"
    MARKDOWN = "markdown"
    TEXT = "text"
    DOCX = "docx"
    TRANSCRIPT = "transcript"


class Page(BaseModel):
    number: int = Field(ge=1, description="1-indexed physical page number")
    label: str | None = Field(default=None, description="printed page label, when the document defines one")
    text: str
    error: str | None = Field(default=None, description="why extraction failed on this page; the page is kept empty")
    ocr_confidence: float | None = Field(
        default=None, description="mean word confidence (0-1) when the text was read by OCR; None: the text layer"
    )


# the titles a tree built from pages gives its nodes (ingest.tree): "Page 3", "Page 3 (iii)", "Pages 1–20"
_PAGE_TITLE = re.compile(r"^Pages? \d+(?:–\d+)?(?: \([^)]*\))?$")
_FILE_NAME = re.compile(r"\.(?:pdf|docx?|txt|md|markdown|rtf|odt|html?|xlsx?|pptx?|vtt|srt|json)$", re.IGNORECASE)
_TOKEN_WITH_DIGITS = re.compile(r"^(?=\S*\d)\S{8,}$")
_MIN_TITLE_LETTERS = 3


def names_a_section(title: str, source: str) -> bool:
    """Whether a title says something a reader recognises, so that a citation may show it: not the file's name or
    stem, not a page node's title ("Page 3"), not an identifier (an SEC accession number, a report code, a hash: one
    token holding digits, or fewer than three letters) and not a file name ("Microsoft Word - q3.docx")."""
    title = " ".join(title.split())
    stem = source.rsplit(".", 1)[0] if "." in source else source
    return not (
        title.casefold() in {source.casefold(), stem.casefold()}
        or _PAGE_TITLE.match(title)
        or _FILE_NAME.search(title)
        or _TOKEN_WITH_DIGITS.match(title)
        or sum(ch.isalpha() for ch in title) < _MIN_TITLE_LETTERS
    )


def clipped(text: str, chars: int) -> str:
    """The text, or its first `chars` characters ending in "…" when it is longer."""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def page_starts(pages: list[Page]) -> list[int]:
    """Offset at which each page's text starts in the joined document text."""
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page.text) + len(PAGE_SEPARATOR)
    return starts


def page_of(starts: list[int], offset: int) -> int:
    """The 1-indexed page holding `offset`, given each page's start offset."""
    return max(1, bisect_right(starts, offset))


class OutlineEntry(BaseModel):
    """A heading or bookmark: where a section starts and how deep it sits."""

    title: str
    level: int = Field(ge=1)
    offset: int = Field(ge=0, description="character offset where the section starts")


class TranscriptSegment(BaseModel):
    start: float = Field(ge=0, description="seconds from the start of the recording")
    end: float = Field(ge=0)
    speaker: str | None = None
    text: str
    offset: int = Field(default=0, ge=0, description="character offset of the segment's line in the full text")
    end_offset: int = Field(default=0, ge=0)


class TypedLine(BaseModel):
    """A line of a page with the size of its type, as the PDF loader read it: the lines in type larger than the
    body text's, which may be headings (`ingest.tree`)."""

    page: int = Field(ge=1)
    text: str
    size: float = Field(description="the type size most of the line's characters have, in points")


class LoadedDocument(BaseModel):
    """What a loader returns: pages, section headings and, for transcripts, timed segments."""

    path: str
    name: str
    source_type: SourceType
    title: str
    pages: list[Page]
    outline: list[OutlineEntry] = Field(default_factory=list)
    outline_source: Literal["bookmarks", "headings", "none"] = "none"
    segments: list[TranscriptSegment] = Field(default_factory=list)
    set_apart: list[TypedLine] = Field(
        default_factory=list, description="a PDF's lines in type larger than its body text's, in reading order"
    )
    created: date | None = Field(default=None, description="creation date the file's own metadata gives")

    @property
    def text(self) -> str:
        return PAGE_SEPARATOR.join(page.text for page in self.pages)

    def page_starts(self) -> list[int]:
        return page_starts(self.pages)


class DocumentTags(BaseModel):
    """Access and filtering metadata given at ingest time."""

    project: str | None = None
    source_type: str | None = Field(default=None, description="user label, e.g. 'manual' or 'contract'")
    confidentiality: Confidentiality = "internal"
    date: dt.date | None = Field(default=None, description="the document's date: given at ingest, else the file's own")
    extra: dict[str, str] = Field(default_factory=dict)


class DocumentRecord(BaseModel):
    id: str
    path: str
    name: str
    sha256: str
    source_type: SourceType
    title: str
    n_pages: int
    n_chunks: int
    n_nodes: int
    outline_source: str
    tags: DocumentTags
    ingested_at: str


class TreeNode(BaseModel):
    id: str
    document_id: str
    parent_id: str | None
    children_ids: list[str] = Field(default_factory=list)
    position: int = Field(description="pre-order position in the document's tree")
    level: int = Field(ge=0, description="0 for the document root")
    title: str
    title_path: list[str]
    start_page: int
    end_page: int
    start_offset: int
    end_offset: int
    text: str = ""

    def own_end(self, by_id: Mapping[str, TreeNode]) -> int:
        """Where the text this section owns ends: at its first subsection (a leaf owns all of its text)."""
        first = next((by_id[child] for child in self.children_ids if child in by_id), None)
        return first.start_offset if first is not None else self.end_offset


class NodeSummary(BaseModel):
    """A section of the tree index: where it sits in its document's tree and what it is about."""

    node_id: str
    parent_id: str | None
    children_ids: list[str] = Field(default_factory=list)
    level: int
    is_leaf: bool
    is_summary: bool = Field(
        description="written by the summarizer; False: the section's own text (or its children's summaries), short "
        "enough to keep as it is"
    )
    title: str
    summary: str
    start_page: int
    end_page: int
    writer: str = Field(
        default="",
        description="who wrote the summary: `text` (kept as it is), `extractive`, or the model's label; empty in "
        "indexes written before this was recorded",
    )


class Chunk(BaseModel):
    id: str
    document_id: str
    source: str = Field(description="file name of the document")
    position: int = Field(ge=0, description="order of the chunk within its document")
    text: str
    start_offset: int
    end_offset: int
    start_page: int
    end_page: int
    section_id: str
    section_path: list[str]
    start_time: float | None = None
    end_time: float | None = None
    speakers: list[str] = Field(default_factory=list)
    tags: DocumentTags = Field(default_factory=DocumentTags)
    index_version: int
    ocr_confidence: float | None = Field(
        default=None, description="lowest OCR confidence of the pages it covers; None when none was OCR'd"
    )
    table_header: str | None = Field(
        default=None, description="the header row of the Markdown table it starts inside, when that row is above it"
    )

    def location(self) -> dict[str, str | int]:
        """Where the chunk sits: the fields a citation and a metadata filter need."""
        return {
            "document_id": self.document_id,
            "source": self.source,
            "position": self.position,
            "start_page": self.start_page,
            "end_page": self.end_page,
            "section_id": self.section_id,
        }


def within_ceiling(level: Confidentiality, ceiling: Confidentiality | None) -> bool:
    return ceiling is None or CONFIDENTIALITY_LEVELS.index(level) <= CONFIDENTIALITY_LEVELS.index(ceiling)


def day_number(day: date) -> int:
    """A date as the integer YYYYMMDD: what Chroma (numbers only in range filters) and the catalog compare."""
    return day.year * 10000 + day.month * 100 + day.day
