"""What the web page's citation viewer shows of a PDF page: the page as a PNG (rendered once, then cached on disk)
and where a passage of the page's indexed text lies on it, as boxes in fractions of the page's size.

The indexed text (PDFium's text layer, OCR or table rows) and the boxes of PDFium's characters differ in spaces,
line breaks and table markup, so a passage is found by its letters and digits alone, whole or else by its first and
last few dozen of them."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pypdfium2 as pdfium

from pagegraph.errors import PagegraphError
from pagegraph.ingest.ocr import PDFIUM_LOCK

RENDER_SCALE = 1.5  # 108 dpi: a page is readable on a laptop screen
ANCHOR_CHARS = 40
Box = tuple[float, float, float, float]  # left, top, right, bottom; 0..1 of the page, top-left origin


def page_image(pdf: Path, page: int, cache: Path) -> bytes:
    """The PNG of 1-indexed `page` of `pdf`, from `cache` (a folder for this file's content) or rendered into it."""
    target = cache / f"{page}.png"
    if target.is_file():
        return target.read_bytes()
    with PDFIUM_LOCK:
        document = _open(pdf)
        try:
            if not 1 <= page <= len(document):
                raise PagegraphError(f"{pdf.name} has no page {page}")
            image = document[page - 1].render(scale=RENDER_SCALE).to_pil()
        finally:
            document.close()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cache, suffix=".part", delete=False) as part:
        image.save(part, format="PNG")
    os.replace(part.name, target)  # a concurrent reader sees the whole file or none
    return target.read_bytes()


def passage_boxes(pdf: Path, page: int, passage: str) -> list[Box]:
    """Where `passage` (text of the page as indexed) lies on the page: one box per line it covers. Empty when it
    cannot be found in the PDF's own text layer (a scanned page, text drawn as curves)."""
    with PDFIUM_LOCK:
        document = _open(pdf)
        try:
            if not 1 <= page <= len(document):
                return []
            pdf_page = document[page - 1]
            left, bottom, right, top = pdf_page.get_bbox()  # the box a rendering shows
            textpage = pdf_page.get_textpage()
            found = _find(textpage, _letters(passage))
            boxes = [textpage.get_charbox(i) for i in found]
        finally:
            document.close()
    width, height = right - left, top - bottom
    if width <= 0 or height <= 0:
        return []
    lines = _lines(boxes)
    return [
        (
            round((x0 - left) / width, 4),
            round((top - y1) / height, 4),
            round((x1 - left) / width, 4),
            round((top - y0) / height, 4),
        )
        for x0, y0, x1, y1 in lines
    ]


def _open(pdf: Path) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(pdf)
    except (pdfium.PdfiumError, OSError) as exc:
        raise PagegraphError(f"{pdf.name} cannot be opened to show its pages ({exc})") from exc


def _letters(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())


def _find(textpage: pdfium.PdfTextPage, wanted: str) -> list[int]:
    """Indices of the PDF characters that spell `wanted` (letters and digits only): the whole of it, or from its
    first ANCHOR_CHARS to its last when the middle differs."""
    if not wanted:
        return []
    indices, letters = [], []
    for i in range(textpage.count_chars()):
        char = textpage.get_text_range(i, 1)
        if len(char) == 1 and char.isalnum():
            indices.append(i)
            letters.append(char.lower())
    spelled = "".join(letters)
    start = spelled.find(wanted)
    if start >= 0:
        return indices[start : start + len(wanted)]
    head, tail = wanted[:ANCHOR_CHARS], wanted[-ANCHOR_CHARS:]
    start = spelled.find(head)
    end = spelled.find(tail, start + 1) if start >= 0 else -1
    if start < 0 or end < 0 or end - start > 2 * len(wanted):
        return []
    return indices[start : end + len(tail)]


def _lines(boxes: list[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """Character boxes (PDF units, bottom-left origin) merged into one box per line, in reading order."""
    lines: list[list[float]] = []
    for x0, y0, x1, y1 in boxes:
        middle = (y0 + y1) / 2
        line = lines[-1] if lines else None
        if line is not None and line[1] <= middle <= line[3] and x0 >= line[0] - 2:
            line[0], line[1], line[2], line[3] = min(line[0], x0), min(line[1], y0), max(line[2], x1), max(line[3], y1)
        else:
            lines.append([x0, y0, x1, y1])
    return [(a, b, c, d) for a, b, c, d in lines]
