"""DOCX loader (python-docx): paragraphs and tables in reading order, `Heading N` styles as the outline.

Word files hold no fixed pages; page numbers come from the page breaks Word recorded when it last laid the file out
(`lastRenderedPageBreak`), or from explicit page breaks when there are none.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders.options import ReadOptions
from pagegraph.state.documents import PAGE_SEPARATOR, LoadedDocument, OutlineEntry, Page, SourceType, names_a_section
from pagegraph.text.tables import markdown

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_RENDERED_BREAK = ".//w:lastRenderedPageBreak"
_EXPLICIT_BREAK = './/w:br[@w:type="page"]'


RATIO_FLOOR_BYTES = 10_000_000  # members smaller than this unpacked are not judged by their ratio


def refuse_zip_bomb(path: Path, data: bytes, limit: int, ratio: int) -> None:
    """Refuse a Word file (a zip) whose directory says it unpacks to more than `limit`, or holds a member past
    RATIO_FLOOR_BYTES that expands more than `ratio` times its packed size, before anything is unpacked (a 1 MB file
    whose document.xml expands to gigabytes is a zip bomb). Python's zipfile never unpacks a member past its
    declared size, and python-docx parses without resolving XML entities, so this bounds the parse."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise DocumentError(path, f"corrupt Word document ({exc})") from exc
    total = sum(member.file_size for member in members)
    if total > limit:
        biggest = max(members, key=lambda member: member.file_size)
        raise DocumentError(
            path,
            f"unpacks to {total:,} bytes ({biggest.filename}: {biggest.file_size:,}), over the limit of {limit:,} "
            "(PAGEGRAPH_MAX_UNPACKED_BYTES)",
        )
    for member in members:
        if member.file_size > RATIO_FLOOR_BYTES and member.file_size > ratio * max(member.compress_size, 1):
            raise DocumentError(
                path,
                f"{member.filename} expands {member.file_size / max(member.compress_size, 1):,.0f} times "
                f"({member.compress_size:,} to {member.file_size:,} bytes), over the limit of {ratio} "
                "(PAGEGRAPH_MAX_UNPACK_RATIO)",
            )


def load_docx(path: Path, data: bytes, read: ReadOptions) -> LoadedDocument:
    refuse_zip_bomb(path, data, read.max_unpacked_bytes, read.max_unpack_ratio)
    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError, etree.XMLSyntaxError) as exc:
        # XMLSyntaxError: malformed XML, or entities that would expand past libxml2's amplification limit
        raise DocumentError(path, f"corrupt Word document ({exc})") from exc
    blocks = list(document.iter_inner_content())
    break_query = _RENDERED_BREAK if any(_breaks(block, _RENDERED_BREAK) for block in blocks) else _EXPLICIT_BREAK

    pages: list[list[str]] = [[]]
    outline: list[tuple[int, int, str, int]] = []  # page index, block index in page, title, level
    for block in blocks:
        for _ in range(_breaks(block, break_query)):
            pages.append([])
        text = _block_text(block)
        if not text:
            continue
        level = _heading_level(block)
        if level:
            outline.append((len(pages) - 1, len(pages[-1]), text, level))
        pages[-1].append(text)

    page_texts = ["\n\n".join(blocks_on_page) for blocks_on_page in pages]
    while len(page_texts) > 1 and not page_texts[-1]:
        page_texts.pop()
    if not any(page_texts):
        raise DocumentError(path, "Word document has no text")
    entries = [
        OutlineEntry(title=title, level=level, offset=_offset(page_texts, pages, page_index, block_index))
        for page_index, block_index, title, level in outline
    ]
    core_title = " ".join((document.core_properties.title or "").split())
    return LoadedDocument(
        path=str(path),
        name=path.name,
        source_type=SourceType.DOCX,
        title=next(
            (t for t in [core_title, *(e.title for e in entries if e.level == 1)] if names_a_section(t, path.name)),
            path.stem,
        ),
        pages=[Page(number=i + 1, text=text) for i, text in enumerate(page_texts)],
        outline=entries,
        outline_source="headings" if entries else "none",
        created=document.core_properties.created.date() if document.core_properties.created else None,
    )


def _breaks(block: Paragraph | Table, query: str) -> int:
    if isinstance(block, Table):
        return 0
    return len(block._p.xpath(query))


def _block_text(block: Paragraph | Table) -> str:
    if isinstance(block, Paragraph):
        return block.text.strip()
    return markdown([[cell.text for cell in row.cells] for row in block.rows]) if block.rows else ""


def _heading_level(block: Paragraph | Table) -> int:
    if not isinstance(block, Paragraph) or block.style is None:
        return 0
    name = block.style.name or ""
    if name.lower() == "title":
        return 1
    match = _HEADING_STYLE.match(name)
    return int(match.group(1)) if match else 0


def _offset(page_texts: list[str], pages: list[list[str]], page_index: int, block_index: int) -> int:
    before_page = sum(len(text) + len(PAGE_SEPARATOR) for text in page_texts[:page_index])
    within = sum(len(text) + 2 for text in pages[page_index][:block_index])
    return before_page + within
