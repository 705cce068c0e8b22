"""How files are read: OCR and tables for PDFs, and the bounds that keep a small hostile file from taking the
machine (a Word file that unpacks to gigabytes, a document of millions of pages)."""

from __future__ import annotations

from dataclasses import dataclass

from pagegraph.indexing.ocr import OcrOptions


@dataclass(frozen=True)
class ReadOptions:
    """OCR for PDF pages without a text layer (None: left empty); PDF tables as Markdown rows, looked for during at
    most `table_seconds` per document; and the limits every file is read within (Settings: PAGEGRAPH_MAX_*)."""

    ocr: OcrOptions | None = None
    tables: bool = False
    table_seconds: float = 60.0
    max_file_bytes: int = 500_000_000
    max_unpacked_bytes: int = 200_000_000
    max_pages: int = 10_000
    max_chars: int = 50_000_000
