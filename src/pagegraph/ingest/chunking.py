"""Chunking: sections of the tree are cut into overlapping chunks at paragraph, line, sentence or word boundaries.

`page` chunks never cross a page; `document` chunks may, and record their page range. What BM25 and the embedder see
of a chunk (`search_text`) is its text under a header naming the document, the section path and, in transcripts,
the speakers; the stored text and citations are the chunk's own. A chunk with its header is kept inside the
embedder's token window when a token counter is given, so that nothing in a chunk goes unembedded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pagegraph.state.documents import Chunk, DocumentTags, LoadedDocument, TranscriptSegment, TreeNode, page_of
from pagegraph.store.chunk_text import chunk_header, document_label
from pagegraph.store.manifest import ChunkingParams

# Preferred cut points, best first: paragraph break, line break, sentence end, any whitespace.
_BOUNDARIES = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?;:])\s+"), re.compile(r"\s+"))
# Where an overlap may begin: after a sentence or line end, else after any space.
_OVERLAP_STARTS = (re.compile(r"(?<=[.!?;:])\s+|\n+"), re.compile(r"\s+"))
# A cut is looked for in the last part of the allowed span, so chunks stay close to the target size.
_MIN_FILL = 0.5


def table_header(text: str, start: int) -> str | None:
    """The header row of the Markdown table whose body `start` lies in (None outside tables, and at a table's
    first row, which is the header itself)."""
    line = text.rfind("\n", 0, start) + 1
    if not text.startswith("|", line):
        return None
    top = line
    while top > 0 and text.startswith("|", above := text.rfind("\n", 0, top - 1) + 1):
        top = above
    header_end = text.find("\n", top)
    if top == line or not text.startswith("| ---", header_end + 1):
        return None
    return text[top:header_end]


@dataclass
class _Piece:
    start: int
    end: int
    section: TreeNode


def chunk_document(
    doc: LoadedDocument,
    nodes: list[TreeNode],
    params: ChunkingParams,
    tags: DocumentTags,
    index_version: int,
    count_tokens: Callable[[str], int] | None = None,
) -> list[Chunk]:
    text = doc.text
    label = document_label(doc.name, doc.title)
    page_starts = doc.page_starts()
    pieces = _section_pieces(nodes, text)
    if params.strategy == "page":
        pieces = _cut_at_pages(pieces, page_starts)
    pieces = _merge_tiny(pieces, text, params, page_starts)

    chunks: list[Chunk] = []
    for piece in pieces:
        path = piece.section.title_path
        counter = None
        if count_tokens is not None:

            def counter(start: int, end: int, path: list[str] = path) -> int:
                header = chunk_header(label, path, _speakers(doc, start, end))
                return count_tokens(f"{header}\n{table_header(text, start) or ''}\n{text[start:end]}")

        for start, end in _split(text, piece.start, piece.end, params, counter):
            chunk_text = text[start:end]
            first_page = page_of(page_starts, start)
            chunk = Chunk(
                id=f"{nodes[0].document_id}:c{len(chunks)}",
                document_id=nodes[0].document_id,
                source=doc.name,
                position=len(chunks),
                text=chunk_text,
                start_offset=start,
                end_offset=end,
                start_page=first_page,
                end_page=max(first_page, page_of(page_starts, end - 1)),
                section_id=piece.section.id,
                section_path=piece.section.title_path,
                tags=tags,
                index_version=index_version,
            )
            _add_times(chunk, doc)
            chunk.table_header = table_header(text, start)
            read = [
                p.ocr_confidence
                for p in doc.pages[chunk.start_page - 1 : chunk.end_page]
                if p.ocr_confidence is not None
            ]
            chunk.ocr_confidence = min(read) if read else None
            chunks.append(chunk)
    return chunks


def _section_pieces(nodes: list[TreeNode], text: str) -> list[_Piece]:
    """Partition the text by the deepest section covering each part: a node owns the text before its first child."""
    by_id = {node.id: node for node in nodes}
    pieces = []
    for node in nodes:
        own_end = node.own_end(by_id)
        if text[node.start_offset : own_end].strip():
            pieces.append(_Piece(node.start_offset, own_end, node))
    return pieces


def _cut_at_pages(pieces: list[_Piece], page_starts: list[int]) -> list[_Piece]:
    cut = []
    for piece in pieces:
        start = piece.start
        for page_start in page_starts:
            if start < page_start < piece.end:
                cut.append(_Piece(start, page_start, piece.section))
                start = page_start
        cut.append(_Piece(start, piece.end, piece.section))
    return cut


def _merge_tiny(pieces: list[_Piece], text: str, params: ChunkingParams, page_starts: list[int]) -> list[_Piece]:
    """Fold sections shorter than min_section_chars (often a bare heading) into their neighbour."""

    def size(piece: _Piece) -> int:
        return len(text[piece.start : piece.end].strip())

    def joinable(a: _Piece, b: _Piece) -> bool:
        same_page = page_of(page_starts, a.start) == page_of(page_starts, b.end - 1)
        fits = b.end - a.start <= params.chunk_size or size(a) < params.min_section_chars
        return fits and (params.strategy == "document" or same_page)

    merged: list[_Piece] = []
    pending: _Piece | None = None
    for piece in pieces:
        if pending is not None:
            if joinable(pending, piece):
                piece = _Piece(pending.start, piece.end, piece.section)
            else:
                merged.append(pending)
            pending = None
        if size(piece) < params.min_section_chars:
            pending = piece
        else:
            merged.append(piece)
    if pending is not None:
        if merged and joinable(merged[-1], pending):
            merged[-1] = _Piece(merged[-1].start, pending.end, merged[-1].section)
        else:
            merged.append(pending)
    return merged


def _split(
    text: str, start: int, end: int, params: ChunkingParams, count_tokens: Callable[[int, int], int] | None
) -> list[tuple[int, int]]:
    """Spans of text[start:end]; `count_tokens(span start, span end)` measures what the embedder would see."""
    spans = []
    position = _skip_space(text, start, end)
    while position < end:
        size = params.chunk_size
        while True:
            cut = _find_cut(text, position, end, size)
            span = _trim(text, position, cut)
            if count_tokens is None or params.max_tokens is None or size <= 100:
                break
            tokens = count_tokens(*span)
            if tokens <= params.max_tokens:
                break
            size = max(100, int(size * params.max_tokens / tokens * 0.95))
        if span[1] > span[0]:
            spans.append(span)
        if cut >= end:
            break
        overlap = min(params.chunk_overlap, (cut - position) // 2)
        position = max(position + 1, _next_boundary(text, cut - overlap, cut))
        position = _skip_space(text, position, end)
    return spans


def _find_cut(text: str, start: int, end: int, size: int) -> int:
    limit = start + size
    if limit >= end:
        return end
    window_start = start + int(size * _MIN_FILL)
    window = text[window_start:limit]
    for boundary in _BOUNDARIES:
        ends = [match.end() for match in boundary.finditer(window)]
        if ends:
            return window_start + ends[-1]
    return limit


def _next_boundary(text: str, start: int, stop: int) -> int:
    """The first sentence or word boundary at or after `start`, so an overlap never begins mid-word."""
    if start <= 0:
        return 0
    window = text[start:stop]
    for boundary in _OVERLAP_STARTS:
        match = boundary.search(window)
        if match:
            return start + match.end()
    return stop


def _skip_space(text: str, position: int, end: int) -> int:
    while position < end and text[position].isspace():
        position += 1
    return position


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _covered(doc: LoadedDocument, start: int, end: int) -> list[TranscriptSegment]:
    return [s for s in doc.segments if s.offset < end and s.end_offset > start]


def _speakers(doc: LoadedDocument, start: int, end: int) -> list[str]:
    return list(dict.fromkeys(s.speaker for s in _covered(doc, start, end) if s.speaker))


def _add_times(chunk: Chunk, doc: LoadedDocument) -> None:
    covered = _covered(doc, chunk.start_offset, chunk.end_offset)
    if covered:
        chunk.start_time = covered[0].start
        chunk.end_time = covered[-1].end
        chunk.speakers = _speakers(doc, chunk.start_offset, chunk.end_offset)
