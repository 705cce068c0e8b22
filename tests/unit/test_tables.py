"""PDF tables as Markdown rows: cleaning pdfplumber's cells, placing a table over its own span of pypdf's text,
and chunks that continue a table carrying its header row."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
from fpdf import FPDF

from pagegraph.indexing.chunking import search_text, table_header
from pagegraph.indexing.loaders import ReadOptions, load_document
from pagegraph.indexing.loaders.pdfium_text import pdfium_text
from pagegraph.indexing.loaders.tables import _character as pdfium_character
from pagegraph.indexing.loaders.tables import (
    clean_rows,
    looks_tabular,
    markdown,
    pages_with_tables,
    place_tables,
    ruled_tables,
)
from pagegraph.indexing.manifest import IndexParams
from pagegraph.indexing.prepare import prepare_document
from pagegraph.state.documents import DocumentTags

YEARS = ["Item", "2023", "2022"]
ROWS = [[f"Line item {i}", f"{1000 + i:,}", f"{900 + i}"] for i in range(60)]


def test_cells_are_cleaned_and_spanning_columns_merged() -> None:
    raw = [
        ["", "2023", None, "", "2022", None],
        ["Revenue", "$", "46,298", "", "$", "51,761"],
        ["Revenue % change", "", "(10.6)", "%", "", "9.5 %"],
        [None, None, None, None, None, None],
    ]
    assert clean_rows(raw) == [
        ["", "2023", "2022"],
        ["Revenue", "$46,298", "$51,761"],
        ["Revenue % change", "(10.6)%", "9.5 %"],
    ]
    assert clean_rows([["A paragraph that happens to sit in a ruled box " * 4, "x"], ["y", "z"]]) == []
    assert clean_rows([["only", "one row"]]) == []


def test_a_table_replaces_its_own_span_and_nothing_else() -> None:
    text = "Results\nSelected data:\nItem 2023 2022\nRevenue 46,298 51,761\nCost 36,386 40,121\nSee the notes."
    rows = [["Item", "2023", "2022"], ["Revenue", "46,298", "51,761"], ["Cost", "36,386", "40,121"]]
    placed = place_tables(text, [rows])
    assert placed == "Results\nSelected data:\n\n" + markdown(rows) + "\n\nSee the notes."
    assert place_tables(text, [[["Absent", "1"], ["Nowhere", "2"]]]) == text, "a table not found changes nothing"
    assert looks_tabular(text) and not looks_tabular("Prose with 1 number.\nAnd another 2.\n")


def ruled_table_pdf(path: Path) -> Path:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Selected financial data follows.", new_x="LMARGIN", new_y="NEXT")
    with pdf.table() as table:
        for row in [YEARS, *ROWS[:30]]:
            table.row(row)
    pdf.add_page()
    with pdf.table() as table:
        for row in [YEARS, *ROWS[30:]]:
            table.row(row)
    pdf.multi_cell(0, 6, "See the notes to the financial statements.", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))
    return path


def test_a_ruled_pdf_table_becomes_rows_and_its_chunks_keep_the_header(tmp_path: Path) -> None:
    pdf = ruled_table_pdf(tmp_path / "report.pdf")
    flat = load_document(pdf)
    loaded = load_document(pdf, read=ReadOptions(tables=True))
    assert "| Item | 2023 | 2022 |\n| --- | --- | --- |\n| Line item 0 | 1,000 | 900 |" in loaded.pages[0].text
    assert loaded.pages[0].text.startswith("Selected financial data follows.")
    assert loaded.pages[1].text.endswith("See the notes to the financial statements.")
    assert flat.pages[0].text != loaded.pages[0].text and "| ---" not in flat.pages[0].text

    prepared = prepare_document(pdf, "0" * 64, DocumentTags(), IndexParams(), ReadOptions(tables=True))
    text = prepared.loaded.text
    continued = [c for c in prepared.chunks if c.table_header]
    assert continued, "a long table spans several chunks"
    for chunk in prepared.chunks:
        assert text[chunk.start_offset : chunk.end_offset] == chunk.text, "offsets stay exact"
        for line in chunk.text.splitlines():
            assert not line.startswith("|") or line.endswith("|"), f"a row was cut: {line!r}"
    assert pages_with_tables(pdf.read_bytes(), {1: flat.pages[0].text}, seconds=0) == {}, "out of time: left flat"
    for chunk in continued:
        assert chunk.table_header == "| Item | 2023 | 2022 |" and chunk.table_header in search_text(chunk, "report")
        assert chunk.table_header == table_header(text, chunk.start_offset)


def test_a_table_is_a_grid_of_drawn_lines(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()  # the same figures without rules
    with pdf.table(borders_layout="NONE") as table:
        for row in [YEARS, *ROWS[:10]]:
            table.row(row)
    pdf.add_page()  # a chart: two axes and horizontal grid lines, no cells
    pdf.line(20, 20, 20, 120)
    pdf.line(20, 120, 180, 120)
    for y in range(30, 120, 20):
        pdf.line(20, y, 180, y)
    pdf.add_page()  # a framed note: one cell
    pdf.rect(20, 20, 100, 30)
    pdf.output(str(tmp_path / "drawn.pdf"))
    drawn = pdfium.PdfDocument(tmp_path / "drawn.pdf")
    assert [ruled_tables(page) for page in drawn] == [[], [], []]
    ruled = pdfium.PdfDocument(ruled_table_pdf(tmp_path / "report.pdf"))
    (first,) = ruled_tables(ruled[0])
    assert [clean_rows(first)[i] for i in (0, 1, -1)] == [YEARS, ROWS[0], ROWS[29]], "PDFium reads each cell's text"


def test_pdfium_text_becomes_plain_text() -> None:
    assert [pdfium_character(code) for code in (ord("A"), 0x2212, 0x1D463)] == ["A", "\u2212", "\U0001d463"]
    assert pdfium_character(0x110000) == "", "a code no character has"
    assert pdfium_text("re-\x02\r\nsult") == "re--\nsult" and pdfium_text("\x02") == "-", "a hyphen at a line break"
    assert [pdfium_text(chr(code)) for code in (0, 1, 0x1F, 0x7F)] == [""] * 4
    assert pdfium_text("\ud835\udc63 = \ud835") == "\U0001d463 = ", "UTF-16 halves joined, a lone one dropped"
