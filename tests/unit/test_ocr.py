"""OCR of pages without a text layer: a scan of a text PDF made here, a mixed PDF, the refusal without OCR, the
store's columns for it. Needs Tesseract (scripts/setup.sh installs it with apt); skipped, saying so, without it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders import ReadOptions, load_document
from pagegraph.ingest.ocr import OcrOptions, _words_to_text, ocr_options, ocr_unavailable
from pagegraph.ingest.prepare import prepare_document
from pagegraph.state.documents import DocumentTags
from pagegraph.store.manifest import IndexParams
from pagegraph.store.sqlite import _SCHEMA, SqliteStore
from tests.pdf_factory import scanned_pdf, text_pdf

PAGES = [
    ("Installation", "Mount the controller on a solid wall that can hold 120 kg, indoors or in a garage. " * 3),
    ("Wiring", "Connect the output to a dedicated 32 A circuit breaker and tighten the terminals to 4 Nm. " * 3),
    ("Warranty", "Northwind guarantees the controller for ten years from the installation date. " * 3),
]
OCR = OcrOptions()
needs_tesseract = pytest.mark.skipif(
    ocr_unavailable(OCR) is not None,
    reason=f"{ocr_unavailable(OCR)} (scripts/setup.sh installs it where apt is at hand)",
)


def test_tesseract_words_become_lines_and_paragraphs() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "5\t1\t1\t1\t1\t1\t0\t0\t9\t9\t90\tMount",
        "5\t1\t1\t1\t1\t2\t0\t0\t9\t9\t80\tit",
        "5\t1\t1\t1\t2\t1\t0\t0\t9\t9\t70\there.",
        "4\t1\t1\t1\t2\t0\t0\t0\t9\t9\t-1\t",
        "5\t1\t2\t1\t1\t1\t0\t0\t9\t9\t60\tNext",
    ]
    read = _words_to_text("\n".join([header, *rows]))
    assert read.text == "Mount it\nhere.\n\nNext" and read.confidence == 0.75


def test_settings_turn_ocr_off() -> None:
    assert ocr_options(Settings(ingest={"ocr": "off"})) is None


@needs_tesseract
def test_a_scanned_pdf_is_read_by_ocr_and_its_chunks_are_flagged(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", text_pdf(tmp_path / "manual.pdf", PAGES))
    loaded = load_document(scan, read=ReadOptions(ocr=OCR))
    assert [bool(page.text) for page in loaded.pages] == [True, True, True]
    assert "32 A circuit breaker" in " ".join(loaded.pages[1].text.split())
    assert all(0.5 < page.ocr_confidence <= 1 for page in loaded.pages)
    prepared = prepare_document(scan, "0" * 64, DocumentTags(), IndexParams(), ReadOptions(ocr=OCR))
    assert prepared.chunks and all(chunk.ocr_confidence is not None for chunk in prepared.chunks)


@needs_tesseract
def test_an_image_page_inside_a_text_pdf_becomes_searchable(tmp_path: Path) -> None:
    mixed = scanned_pdf(tmp_path / "mixed.pdf", text_pdf(tmp_path / "manual.pdf", PAGES), pages={2})
    without = load_document(mixed)
    assert without.pages[1].text == "" and without.pages[0].text
    loaded = load_document(mixed, read=ReadOptions(ocr=OCR))
    assert "tighten the terminals" in " ".join(loaded.pages[1].text.split())
    assert [page.ocr_confidence is not None for page in loaded.pages] == [False, True, False]
    assert loaded.pages[0].text == without.pages[0].text, "pages with a text layer are not OCR'd"


def test_without_ocr_an_image_only_pdf_is_refused_with_the_way_out(tmp_path: Path) -> None:
    scan = scanned_pdf(tmp_path / "scan.pdf", text_pdf(tmp_path / "manual.pdf", PAGES[:1]), dpi=72)
    with pytest.raises(DocumentError, match="image-only PDF .* OCR is off .* install Tesseract"):
        load_document(scan)


def test_an_older_store_gains_the_new_columns_and_reads_as_before(tmp_path: Path) -> None:
    old = _SCHEMA.replace(", ocr_confidence REAL, PRIMARY KEY", ", PRIMARY KEY").replace(
        "embedding BLOB NOT NULL, ocr_confidence REAL, table_header TEXT);", "embedding BLOB NOT NULL);"
    )
    assert old.count("ocr_confidence") == 0 and old.count("table_header") == 0
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.executescript(old)
        db.execute("INSERT INTO documents VALUES ('d', '/x.pdf', 'x.pdf', 'h', 'pdf', 'X', 1, 'none', '{}', 'now')")
        db.execute("INSERT INTO pages VALUES ('d', 1, NULL, 'old text', NULL)")
        db.execute(
            "INSERT INTO chunks VALUES ('d:c0', 'd', 0, 'old text', 0, 8, 1, 1, 's', '[]', NULL, NULL, '[]', 1, ?)",
            (b"\0" * 16,),
        )
    reader = SqliteStore(tmp_path, read_only=True)
    assert [(p.text, p.ocr_confidence) for p in reader.pages("d")] == [("old text", None)]
    chunk = reader.chunks_by_id(["d:c0"])["d:c0"]
    assert (chunk.text, chunk.ocr_confidence, chunk.table_header) == ("old text", None, None)
    assert [c.id for c in reader.chunks()] == ["d:c0"]
    reader.close()
    SqliteStore(tmp_path).close()
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(pages)")}
        assert "ocr_confidence" in columns
        chunk_columns = [row[1] for row in db.execute("PRAGMA table_info(chunks)")]
        assert chunk_columns[-3:] == ["embedding", "ocr_confidence", "table_header"]
