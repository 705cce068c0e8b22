"""PDF tables as Markdown rows: cleaning pdfplumber's cells, placing a table over its own span of pypdf's text,
and chunks that continue a table carrying its header row."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
from fpdf import FPDF

from pagegraph import build_graph
from pagegraph.config import Context, ReadingKnobs, Settings
from pagegraph.ingest.chunking import table_header
from pagegraph.ingest.loaders import ReadOptions, load_document
from pagegraph.ingest.loaders.pdfium_text import pdfium_text
from pagegraph.ingest.loaders.tables import _character as pdfium_character
from pagegraph.ingest.loaders.tables import (
    clean_rows,
    looks_tabular,
    page_chars,
    pages_with_tables,
    place_tables,
    ruled_tables,
)
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.ingest.prepare import prepare_document
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.highlights import asked_columns
from pagegraph.services import Services
from pagegraph.state.documents import DocumentTags
from pagegraph.store.chunk_text import search_text
from pagegraph.store.index import open_index
from pagegraph.store.manifest import IndexParams
from pagegraph.text.tables import markdown, table_readings
from tests.fakes import ScriptedChatModel

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
    # a total's amount, drawn with its currency sign, one ruled column right of the amounts above it: one column
    split = [["Products", "", "$73,929", "", "$77,457"], ["Services", "20,907", "", "19,821", ""]]
    assert clean_rows(split) == [["Products", "$73,929", "$77,457"], ["Services", "20,907", "19,821"]]
    ledger = [["Account", "Debit", "Credit"], ["Cash", "100", ""], ["Sales", "", "100"]]
    assert clean_rows(ledger) == ledger, "columns with headings of their own stay apart"
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
    assert [ruled_tables(page, *page_chars(page)) for page in drawn] == [[], [], []]
    ruled = pdfium.PdfDocument(ruled_table_pdf(tmp_path / "report.pdf"))
    (first,) = ruled_tables(ruled[0], *page_chars(ruled[0]))
    assert [clean_rows(first)[i] for i in (0, 1, -1)] == [YEARS, ROWS[0], ROWS[29]], "PDFium reads each cell's text"


def test_pdfium_text_becomes_plain_text() -> None:
    assert [pdfium_character(code) for code in (ord("A"), 0x2212, 0x1D463)] == ["A", "\u2212", "\U0001d463"]
    assert pdfium_character(0x110000) == "", "a code no character has"
    assert pdfium_text("re-\x02\r\nsult") == "re--\nsult" and pdfium_text("\x02") == "-", "a hyphen at a line break"
    assert [pdfium_text(chr(code)) for code in (0, 1, 0x1F, 0x7F)] == [""] * 4
    assert pdfium_text("\ud835\udc63 = \ud835") == "\U0001d463 = ", "UTF-16 halves joined, a lone one dropped"


SPECS = [
    ["Specification", '27" model', '32" model'],
    ["Brightness (typ.)", "300 cd/m2", "350 cd/m2"],
    ["Contrast ratio", "1000:1", "3000:1"],
    ["Panel height", "336.30 mm", "398.52 mm"],
    ["Weight", "4.6 kg", "6.2 kg"],
]


def test_a_pdf_table_highlight_reads_with_its_row_label_and_column_heading(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Monitor specifications (in millimetres where not stated).", new_x="LMARGIN", new_y="NEXT")
    with pdf.table() as table:
        for row in SPECS:
            table.row(row)
    pdf.multi_cell(0, 6, "Both models ship with a stand and a power cable.", new_x="LMARGIN", new_y="NEXT")
    (tmp_path / "docs").mkdir()
    pdf.output(str(tmp_path / "docs" / "monitors.pdf"))
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([tmp_path / "docs"]).failed
        compiled = build_graph(
            "extract", services=Services(settings, chat_model=ScriptedChatModel.replying(), index=index)
        )
        question = "What is the typical brightness of the 32-inch model?"
        for _namespace, update in compiled.stream(
            {"question": question}, context=Context(tree={"use": False}), stream_mode="updates", subgraphs=True
        ):
            if "highlight" in update:
                highlights = update["highlight"]["highlights"]
                break
        page = index.pages(index.documents()[0].id)[0]
    top = highlights[0]
    assert top.sentence == 'Brightness (typ.) — 32" model: 350 cd/m2', "the row label, the asked column, its value"
    assert page.text[top.start : top.end] == "Brightness (typ.) | 300 cd/m2 | 350 cd/m2", "the page's row is marked"
    assert top.label == "[monitors.pdf, p. 1]"


def test_table_readings_carry_headings_spans_label_cells_and_units() -> None:
    text = (
        "(Dollars in millions)\n| | Three Months Ended | |\n| --- | --- | --- |\n| | 2023 | 2022 |\n"
        "| Net income | $1,234 | $987 |\n| Revenue | 5,000 | 4,000 |\nAfter.\n"
        "| Item | A | B |\n| --- | --- | --- |\n| Brightness | 250 (min.) | 280 (min.) |\n| | 300 (typ.) | 350 (typ.) |"
    )
    readable, rows = table_readings(text)
    assert readable.split("\n") == [
        "(Dollars in millions)",
        "Net income — Three Months Ended 2023: $1,234; Three Months Ended 2022: $987 (in millions)",
        "Revenue — Three Months Ended 2023: 5,000; Three Months Ended 2022: 4,000 (in millions)",
        "After.",
        "Brightness — A: 250 (min.), 300 (typ.); B: 280 (min.), 350 (typ.)",
    ]
    brightness = rows["Brightness — A: 250 (min.), 300 (typ.); B: 280 (min.), 350 (typ.)"]
    assert brightness == "Brightness | 250 (min.) | 280 (min.) |\n| | 300 (typ.) | 350 (typ.)", (
        "a label cell spans rows"
    )
    assert all(row in text for row in rows.values()), "each reading's rows are found in the text as written"
    continued, _ = table_readings("| Net income | 1 | 2 |", header="| Item | 2023 | 2022 |")
    assert continued == "Net income — 2023: 1; 2022: 2", "a chunk inside a table reads with the table's header"
    assert table_readings("No table here.\n| just a bar") == ("No table here.\n| just a bar", {})
    centred = '| | 27" | 32" |\n| --- | --- | --- |\n| Response Time | 12 ms | 12 ms |\n| | 300 cd/m² (typ.) | 350 cd/m² (typ.) |'
    centred += (
        "\n| Light Intensity | | |\n| | Optional 700 cd/m² | Optional 700 cd/m² |\n| Contrast | 1000:1 | 1000:1 |"
    )
    assert table_readings(centred)[0].split("\n") == [
        'Response Time — 27": 12 ms; 32": 12 ms',
        'Light Intensity — 27": 300 cd/m² (typ.), Optional 700 cd/m²; 32": 350 cd/m² (typ.), Optional 700 cd/m²',
        'Contrast — 27": 1000:1; 32": 1000:1',
    ], "a label centred in the rows its cell spans reads with all of them"
    key_values, _ = table_readings("| AC IN | AC 100 V – 240 V |\n| --- | --- |\n| Weight | Approx. 0.7 kg |")
    assert key_values == "AC IN — AC 100 V – 240 V\nWeight — Approx. 0.7 kg", "a key and its value head no column"
    gapped, _ = table_readings("| Item | 2023 |\n| --- | --- |\n| Revenue | 5 | … | Cost | 3 |")
    assert gapped.split("\n") == ["Revenue — 2023: 5", "…", "Cost — 3"], "a row after a passage's gap is a row"


def test_a_reading_keeps_the_columns_the_question_names() -> None:
    reading = ReadingKnobs()
    statement = (
        "| | Year ended December 31, | | |\n| --- | --- | --- | --- |\n| | 2015 | 2014 | 2013 |\n"
        "| Net income | 122,641 | 266,799 | 112,403 |"
    )
    for question, expected in [
        ("What was the net income in 2013?", "Net income — Year ended December 31, 2013: 112,403"),
        ("What was net income for the year ended 2014?", "Net income — Year ended December 31, 2014: 266,799"),
        (
            "How did net income change?",
            "Net income — Year ended December 31, 2015: 122,641; Year ended December 31, 2014: 266,799; "
            "Year ended December 31, 2013: 112,403",
        ),
    ]:
        assert table_readings(statement, columns=asked_columns(question, reading))[0] == expected, question
    scores = "| Method | Physics | Chemistry |\n| --- | --- | --- |\n| PaLM-2L + Step-Back | 73.2% | 81.8% |"
    chemistry, rows = table_readings(scores, columns=asked_columns("Step-Back accuracy on Chemistry?", reading))
    assert chemistry == "PaLM-2L + Step-Back — Chemistry: 81.8%"
    assert rows[chemistry] == "PaLM-2L + Step-Back | 73.2% | 81.8%", "the reading still marks its whole row"


def test_a_text_layer_table_under_a_line_of_years_reads_by_year() -> None:
    text = (
        "Year ended December 31,\n2015 2014 2013\n(in thousands, except per share data)\n"
        "Revenues $ 6,779,511 $ 5,504,656 $ 4,374,562\nEarnings per share:\nBasic $ 0.29 $ 0.63 $ 0.28\n"
        "Free cash flow (1) (920,557) (126,699) (16,300)\nDebt due to related party — — 198,109\n"
        "(1) See Liquidity for a definition.\nOther 1 2 3"
    )
    readable, rows = table_readings(text)
    assert readable.split("\n")[3:9] == [
        "Revenues — 2015: $6,779,511; 2014: $5,504,656; 2013: $4,374,562 (in thousands)",
        "Earnings per share:",
        "Basic — 2015: $0.29; 2014: $0.63; 2013: $0.28 (in thousands)",
        "Free cash flow (1) — 2015: (920,557); 2014: (126,699); 2013: (16,300) (in thousands)",
        "Debt due to related party — 2015: —; 2014: —; 2013: 198,109 (in thousands)",
        "(1) See Liquidity for a definition.",
    ]
    assert readable.endswith("\nOther 1 2 3"), "a line after the table's end is not one of its rows"
    assert all(row in text for row in rows.values()), "each reading's line is found in the text as written"
    asked, _ = table_readings(text, columns=asked_columns("What was free cash flow in 2014?", ReadingKnobs()))
    assert "Free cash flow (1) — 2014: (126,699) (in thousands)" in asked.split("\n")
    employees = "Number of Employees\n2021 2020 2019\n\n| United States | 192,000 | 181,000 | 167,000 |\n"
    employees += "| --- | --- | --- | --- |\n| Canada | 47,000 | 46,000 | 42,000 |"
    assert table_readings(employees)[0].split("\n")[3:] == [
        "United States — 2021: 192,000; 2020: 181,000; 2019: 167,000",
        "Canada — 2021: 47,000; 2020: 46,000; 2019: 42,000",
    ], "a ruled table whose first row is data reads under the line of years above it"


def test_columns_of_two_periods_read_with_their_period_and_date() -> None:
    """A filing's statement: "Three Months Ended" and "Six Months Ended" over the same years (or dates written over
    two lines) head two groups of columns; each column reads with its period, and a question picks its own."""
    statement = (
        "INCOME STATEMENTS\n(In millions, except per share amounts)\nThree Months Ended\nDecember 31,\n"
        "Six Months Ended\nDecember 31,\n2022 2021 2022 2021\nRevenue:\n"
        "Total revenue 52,747 51,728 102,869 97,045\nResearch and development 6,844 5,758 13,472 11,357"
    )
    readable = table_readings(statement)[0].split("\n")
    assert readable[-1] == (
        "Research and development — Three Months Ended December 31, 2022: 6,844; Three Months Ended December 31, "
        "2021: 5,758; Six Months Ended December 31, 2022: 13,472; Six Months Ended December 31, 2021: 11,357 "
        "(in millions)"
    )
    question = "What were research and development expenses in the six months ended December 31, 2021?"
    asked = table_readings(statement, columns=asked_columns(question, ReadingKnobs()))[0].split("\n")
    assert asked[-1] == "Research and development — Six Months Ended December 31, 2021: 11,357 (in millions)"
    dates = "Three Months Ended Six Months Ended\n" + "April 1,\n2023\nMarch 26,\n2022\n" * 2
    note = dates + "iPhone $ 51,334 $ 50,570 $ 117,109 $ 122,198\n\n| Mac | 7,168 | 10,435 | 14,903 | 21,287 |\n"
    note += "| --- | --- | --- | --- | --- |\n| iPad | 6,670 | 7,646 | 16,066 | 14,894 |\n\nTotal net sales include"
    read = table_readings(
        note, columns=asked_columns("Mac net sales in the six months ended March 26, 2022?", ReadingKnobs())
    )
    assert read[0].split("\n")[9:12] == [
        "iPhone — Six Months Ended March 26, 2022: $122,198",
        "",
        "Mac — Six Months Ended March 26, 2022: 21,287",
    ], "a text row under the dates starts the table, and the ruled rows after it go on under the same headings"
    alone = "Year ended December 31,\n2015 2014\nRevenues $ 6,779,511 $ 5,504,656"
    assert table_readings(alone)[0].endswith("Revenues — 2015: $6,779,511; 2014: $5,504,656"), "no period repeats"


def test_a_table_without_rules_takes_the_headings_its_columns_stand_under(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    pdf.multi_cell(
        0, 6, "Table 1: accuracy over 5 runs, standard deviations in parentheses.", new_x="LMARGIN", new_y="NEXT"
    )
    scores = [
        ["Method", "MMLU Physics", "MMLU Chemistry"],
        ["PaLM-2L", "66.4% (0.8%)", "70.9% (0.9%)"],
        ["PaLM-2L + Step-Back", "73.2% (1.9%)", "81.8% (1.4%)"],
        ["GPT-4", "70.3% (2.3%)", "79.9% (1.0%)"],
    ]
    with pdf.table(borders_layout="NONE", col_widths=(60, 40, 40), text_align=("LEFT", "CENTER", "CENTER")) as table:
        for row in scores:
            table.row(row)
    pdf.multi_cell(0, 6, "Stock prices by quarter.", new_x="LMARGIN", new_y="NEXT")
    with pdf.table(borders_layout="NONE", col_widths=(50, 25, 25, 25, 25), text_align="CENTER") as table:
        years = table.row()
        years.cell("")
        years.cell("2015", colspan=2)  # a year centred over each pair of columns
        years.cell("2014", colspan=2)
        for row in [["", "High", "Low", "High", "Low"], ["First quarter", "$69.50", "$45.26", "$65.43", "$45.58"]]:
            table.row(row)
        table.row(["Second quarter", "100.89", "58.46", "64.40", "42.79"])
    pdf.multi_cell(0, 6, "(in thousands)\nTotal assets 1,200 1,100\nTotal debt 300 250", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "results.pdf"))

    text = load_document(tmp_path / "results.pdf", read=ReadOptions(tables=True)).pages[0].text
    assert markdown(scores) in text, "the headings of a table without rules stand over their columns"
    chemistry = asked_columns("What did PaLM-2L + Step-Back reach on MMLU Chemistry?", ReadingKnobs())
    assert "PaLM-2L + Step-Back — MMLU Chemistry: 81.8% (1.4%)" in table_readings(text, columns=chemistry)[0]
    prices = table_readings(text)[0]
    assert "First quarter — 2015 High: $69.50; 2015 Low: $45.26; 2014 High: $65.43; 2014 Low: $45.58" in prices
    assert "(in thousands)\nTotal assets 1,200 1,100\nTotal debt 300 250" in text, "a units line heads no columns"
