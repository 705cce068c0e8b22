"""How files are read: OCR and tables for PDFs, and the bounds that keep a small hostile file from taking the
machine (a Word file that unpacks to gigabytes, a document of millions of pages)."""

from __future__ import annotations

from dataclasses import dataclass

from pagegraph.config import LimitSettings
from pagegraph.ingest.ocr import OcrOptions

_LIMITS = LimitSettings.model_fields  # the bounds' defaults are the settings' (one place says what they are)


@dataclass(frozen=True)
class ReadOptions:
    """OCR for PDF pages without a text layer (None: left empty); PDF tables as Markdown rows, looked for during at
    most `table_seconds` per document; and the limits every file is read within (Settings: PAGEGRAPH_MAX_*)."""

    ocr: OcrOptions | None = None
    tables: bool = False
    table_seconds: float = 60.0
    max_file_bytes: int = _LIMITS["max_file_bytes"].default
    max_unpacked_bytes: int = _LIMITS["max_unpacked_bytes"].default
    max_unpack_ratio: int = _LIMITS["max_unpack_ratio"].default
    max_pages: int = _LIMITS["max_pages"].default
    max_chars: int = _LIMITS["max_document_chars"].default
