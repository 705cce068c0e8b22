"""PDF loader: page texts (PDFium) with 1-indexed numbers, printed labels and the bookmark outline (pypdf)."""

from __future__ import annotations

import io
import logging
import re
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from pypdf import PdfReader, apply_configuration
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, WrongPasswordError
from pypdf.generic import Destination

from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders.options import ReadOptions
from pagegraph.ingest.loaders.pdfium_text import pdfium_text, typed_lines
from pagegraph.ingest.loaders.tables import looks_tabular, pages_with_tables
from pagegraph.ingest.ocr import OcrError, OcrOptions, ocr_pages
from pagegraph.state.documents import (
    PAGE_SEPARATOR,
    LoadedDocument,
    OutlineEntry,
    Page,
    SourceType,
    TypedLine,
    names_a_section,
    page_starts,
)

log = logging.getLogger(__name__)

# A complete PDF ends with %%EOF; writers may append a few bytes of whitespace or junk after it.
_EOF_WINDOW = 2048
# A page with less text than this that holds an image is taken for a scan (a page number alone is not a text layer).
OCR_BELOW_CHARS = 25
_RAISED_LIMITS: dict[str, Any] = {
    "array_maximum_element_count": 1_000_000,
    "dictionary_maximum_element_count": 1_000_000,
}
# a line whose type is this much larger than the body text's is set apart (a heading, or a chart's title)
SET_APART_SIZE = 1.15


def load_pdf(path: Path, data: bytes, read: ReadOptions) -> LoadedDocument:
    try:
        return _load_pdf(path, data, read)
    except LimitReachedError:
        # pypdf's element limits guard against hostile files but also stop some large legitimate ones (big object
        # streams in financial filings); retry once with limits ten times higher.
        log.info("%s: pypdf limit reached, retrying with raised limits", path.name)
        with apply_configuration(**_RAISED_LIMITS):
            try:
                return _load_pdf(path, data, read)
            except LimitReachedError as exc:
                raise DocumentError(
                    path, f"PDF structure exceeds pypdf's safety limits even when raised ({exc})"
                ) from exc


def _load_pdf(path: Path, data: bytes, read: ReadOptions) -> LoadedDocument:
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise DocumentError(path, "not a PDF (no %PDF header): the file is corrupt or has the wrong extension")
    if b"%%EOF" not in data[-_EOF_WINDOW:]:
        raise DocumentError(path, "truncated or incomplete PDF (no %%EOF marker at the end of the file)")
    reader = _open_reader(path, data)
    try:
        n_pages = len(reader.pages)
    except LimitReachedError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged page trees
        raise DocumentError(path, f"corrupt PDF: page tree unreadable ({type(exc).__name__}: {exc})") from exc
    if n_pages == 0:
        raise DocumentError(path, "PDF has no pages")

    # the type sizes of the lines are for a tree of headings where the PDF has no bookmarks to build one from
    pages, lines = _page_texts(data, n_pages, path, typed=not _has_bookmarks(reader))
    scanned = [
        p.number for p in pages if len(p.text.strip()) < OCR_BELOW_CHARS and _page_has_images(reader, p.number - 1)
    ]
    if scanned and read.ocr is not None:
        pages = _with_ocr(path, data, pages, scanned, read.ocr)
    tabular = {p.number: p.text for p in pages if read.tables and p.ocr_confidence is None and looks_tabular(p.text)}
    if tabular:
        for number, text in pages_with_tables(data, tabular, read.table_seconds).items():
            pages[number - 1].text = text
    labels = _page_labels(reader, n_pages)
    for page, label in zip(pages, labels):
        page.label = label
    if not any(page.text.strip() for page in pages):
        if scanned:
            why = "OCR read no text on them" if read.ocr else "OCR is off (--no-ocr) or no OCR engine is installed"
            raise DocumentError(
                path,
                f"image-only PDF ({n_pages} pages, no text layer) and {why}: install Tesseract "
                "(Debian: tesseract-ocr tesseract-ocr-eng), or OCR it yourself (e.g. ocrmypdf) and ingest the result",
            )
        failed = [page for page in pages if page.error]
        if failed:
            raise DocumentError(path, f"text extraction failed on every page ({failed[0].error})")
        raise DocumentError(path, f"PDF has {n_pages} pages but no text on any of them")

    outline = _outline(reader, pages, path)
    return LoadedDocument(
        path=str(path),
        name=path.name,
        source_type=SourceType.PDF,
        title=_title(reader, path),
        pages=pages,
        outline=outline,
        outline_source="bookmarks" if outline else "none",
        set_apart=set_apart(lines),
        created=_created(reader),
    )


def _with_ocr(path: Path, data: bytes, pages: list[Page], scanned: list[int], ocr: OcrOptions) -> list[Page]:
    """`pages` with the scanned ones' text read by OCR (a page OCR cannot read stays as it was)."""
    try:
        read = ocr_pages(data, scanned, ocr)
    except OcrError as exc:
        log.warning("%s: pages %s kept without text, OCR failed: %s", path.name, scanned, exc)
        return pages
    for number, found in read.items():
        text = re.sub(r"\n{3,}", PAGE_SEPARATOR, found.text.replace("\x00", "").strip())
        pages[number - 1] = Page(number=number, text=text, ocr_confidence=found.confidence)
    return pages


def _open_reader(path: Path, data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                decrypted = reader.decrypt("")
            except DependencyError as exc:
                raise DocumentError(path, f"encrypted PDF needs the 'cryptography' package ({exc})") from exc
            if not decrypted:
                raise DocumentError(
                    path, "encrypted with a password; pagegraph opens only PDFs without one (decrypt it first)"
                )
        return reader
    except (DocumentError, LimitReachedError):
        raise
    except (FileNotDecryptedError, WrongPasswordError) as exc:
        raise DocumentError(
            path, "encrypted with a password; pagegraph opens only PDFs without one (decrypt it first)"
        ) from exc
    except Exception as exc:  # pypdf raises many types on damaged files; all mean the same to the user
        raise DocumentError(path, f"corrupt PDF ({type(exc).__name__}: {exc})") from exc


def set_apart(lines: list[TypedLine]) -> list[TypedLine]:
    """The lines in type at least SET_APART_SIZE times the body text's (the size most characters have)."""
    by_size: Counter[float] = Counter()
    for line in lines:
        by_size[line.size] += len(line.text)
    if not by_size:
        return []
    body = by_size.most_common(1)[0][0]
    return [line for line in lines if line.size >= SET_APART_SIZE * body]


def _page_texts(data: bytes, n_pages: int, path: Path, typed: bool) -> tuple[list[Page], list[TypedLine]]:
    """Each page's text layer, read by PDFium (an order of magnitude faster than pypdf's extractor, which bounded
    ingest on small machines), and with `typed` its lines with their type sizes."""
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise DocumentError(path, f"corrupt PDF: PDFium cannot open it ({exc})") from exc
    pages: list[Page] = []
    lines: list[TypedLine] = []
    try:
        seen = len(document)
        for index in range(n_pages):
            if index >= seen:
                pages.append(
                    Page(number=index + 1, text="", error=f"PDFium sees {seen} pages, the page tree {n_pages}")
                )
                continue
            page, sized = _page_text(document, index, path, typed)
            pages.append(page)
            lines += [TypedLine(page=index + 1, text=text, size=size) for text, size in sized]
        return pages, lines
    finally:
        document.close()


def _page_text(
    document: pdfium.PdfDocument, index: int, path: Path, typed: bool
) -> tuple[Page, list[tuple[str, float]]]:
    try:
        page = document[index]
        textpage = page.get_textpage()
        text = textpage.get_text_bounded()
        lines = typed_lines(textpage) if typed else []
        textpage.close()
        page.close()
    except Exception as exc:  # a single bad page must not lose the document
        log.warning("%s: page %d kept empty, text extraction failed: %s", path.name, index + 1, exc)
        return Page(number=index + 1, text="", error=f"{type(exc).__name__}: {exc}"), []
    # The page separator must stay unambiguous inside the joined text.
    text = pdfium_text(text).strip()
    return Page(number=index + 1, text=re.sub(r"\n{3,}", PAGE_SEPARATOR, text)), lines


def _page_labels(reader: PdfReader, n_pages: int) -> list[str | None]:
    try:
        labels: list[str | None] = list(reader.page_labels)
    except Exception:
        return [None] * n_pages
    if len(labels) != n_pages:
        return [None] * n_pages
    # pypdf reports the 1-based number as the label when the PDF defines none; keep only real labels.
    if all(label == str(i + 1) for i, label in enumerate(labels)):
        return [None] * n_pages
    return labels


def _page_has_images(reader: PdfReader, index: int) -> bool:
    try:
        resources = reader.pages[index].get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources else None
        if not xobjects:
            return False
        return any(xobj.get_object().get("/Subtype") == "/Image" for xobj in xobjects.get_object().values())
    except Exception:
        return False


def _created(reader: PdfReader) -> date | None:
    """The creation date in the PDF's information dictionary; None when absent or malformed (writers vary)."""
    try:
        created = reader.metadata.creation_date if reader.metadata else None
    except Exception:
        return None
    return created.date() if created else None


def _title(reader: PdfReader, path: Path) -> str:
    try:
        title = reader.metadata.get("/Title") if reader.metadata else None
    except Exception:
        title = None
    title = " ".join(str(title).split()) if title else ""
    # metadata titles are often an identifier or the source file's name (an SEC filing's accession number,
    # "Microsoft Word - q3.docx"): the file's own name is the better root then
    return title if len(title) <= 200 and names_a_section(title, path.name) else path.stem


def _has_bookmarks(reader: PdfReader) -> bool:
    try:
        return bool(reader.outline)
    except Exception:  # noqa: BLE001 - an unreadable outline is none (`_outline` says so)
        return False


def _outline(reader: PdfReader, pages: list[Page], path: Path) -> list[OutlineEntry]:
    try:
        raw = reader.outline
    except Exception as exc:
        log.warning("%s: outline unreadable, falling back to detected headings: %s", path.name, exc)
        return []
    flat: list[tuple[int, str, int]] = []
    _flatten(reader, raw, 1, flat)
    starts = page_starts(pages)
    entries = []
    for page_index, title, level in flat:
        if not 0 <= page_index < len(pages):
            continue
        page_offset = _title_offset(pages[page_index].text, title)
        entries.append(OutlineEntry(title=title, level=level, offset=starts[page_index] + page_offset))
    # Bookmarks are not always in reading order; sections must be.
    entries.sort(key=lambda entry: entry.offset)
    return entries


def _flatten(reader: PdfReader, items: list, level: int, out: list[tuple[int, str, int]]) -> None:
    for item in items:
        if isinstance(item, list):
            _flatten(reader, item, level + 1, out)
        elif isinstance(item, Destination):
            title = " ".join(str(item.title or "").split())
            if not title:
                continue
            try:
                page_index = reader.get_destination_page_number(item)
            except Exception:
                continue
            if page_index is not None and page_index >= 0:
                out.append((page_index, title, level))


def _title_offset(page_text: str, title: str) -> int:
    """Where a bookmark's title appears on its page, so the section starts at the heading, not the page top."""
    words = re.findall(r"\w+", title)[:8]
    if not words:
        return 0
    pattern = r"\W*".join(re.escape(word) for word in words)
    match = re.search(pattern, page_text, flags=re.IGNORECASE)
    if not match:
        return 0
    line_start = page_text.rfind("\n", 0, match.start()) + 1
    return line_start
