"""Tables as Markdown rows under their header row: DOCX tables, and the tables of PDF pages in place of the flat
text of their text layer.

For PDFs, only pages whose text looks tabular (several lines with two or more numbers) are examined. A table there is
a grid of drawn lines: PDFium reads the page's path segments, pdfplumber's rules (snapping, joining, intersections,
cells) join them into cells, and PDFium reads the text inside each cell, at a small part of the cost of pdfplumber's
own page parse. Each table replaces its own span of the page's text, found by its first and last rows' letters and
digits (cells and the text layer may space text differently); a table whose span cannot be found is left as the text
layer gave it, so the page's text is never lost."""

from __future__ import annotations

import ctypes
import logging
import re
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw

from pagegraph.ingest.document_dates import MONTHS
from pagegraph.ingest.loaders.pdfium_text import pdfium_text
from pagegraph.state.answering import GAP_MARK

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"(?<![\w.])[-$€£(]?\d[\d,.]*%?\)?(?![\w])")
TABULAR_LINES = 3  # lines with two or more numbers that make a page worth examining
_ANCHOR = 30
_PROSE_CELL = 150  # a cell this long is a paragraph that happens to sit in a ruled box, not a table
_PREFIXES = {"$", "€", "£", "("}
_SUFFIXES = {"%", ")", "%)"}

# Which of a table's columns to read, given each column's heading (the label column's first): their indexes, or None
# for all of them.
ColumnChoice = Callable[[list[str]], set[int] | None]


def looks_tabular(text: str) -> bool:
    return sum(len(_NUMBER.findall(line)) >= 2 for line in text.splitlines()) >= TABULAR_LINES


def pages_with_tables(data: bytes, texts: dict[int, str], seconds: float) -> dict[int, str]:
    """The pages (1-indexed, with their text-layer text) on which at least one table was put in Markdown, with the new
    text. Pages where nothing was found or placed are left out, and so are the pages left when `seconds` have been
    spent (a pathological file must not hold up an ingest)."""
    rewritten = {}
    started = time.perf_counter()
    try:
        with closing(pdfium.PdfDocument(data)) as document:
            for number, text in texts.items():
                if time.perf_counter() - started > seconds:
                    log.info(
                        "table detection stopped at page %d after %.0f s; the rest keep their text", number, seconds
                    )
                    break
                try:
                    page = document[number - 1]
                    chars, boxes = page_chars(page)
                    tables = [clean_rows(rows) for rows in ruled_tables(page, chars, boxes)]
                    tables += aligned_tables(chars, boxes)
                except Exception as exc:  # a page PDFium cannot read, or odd geometry, keeps its text-layer text
                    log.info("page %d: table detection failed (%s)", number, exc)
                    continue
                placed = place_tables(text, [rows for rows in tables if rows])
                if placed != text:
                    rewritten[number] = placed
    except pdfium.PdfiumError as exc:  # a file PDFium cannot open keeps its text-layer text everywhere
        log.info("table detection skipped (%s)", exc)
    return rewritten


def ruled_tables(page: pdfium.PdfPage, chars: list[str], boxes: np.ndarray) -> list[list[list[str | None]]]:
    """The page's tables of drawn lines with two or more rows and columns, each as rows of cell text (None where a row
    has no cell in a column), from the page's characters and their boxes (`page_chars`)."""
    grids = _grids(page)
    if not grids:
        return []
    texts = _cell_texts(chars, boxes, [cell for grid in grids for cell in grid])
    return [[[None if cell is None else texts[cell] for cell in row] for row in _rows(grid)] for grid in grids]


Cell = tuple[float, float, float, float]  # x0, top, x1, bottom, with top = -y (pdfplumber's top-down order)


def _rows(cells: list[Cell]) -> list[list[Cell | None]]:
    """A grid's cells by row (top to bottom), each row by the grid's distinct left edges."""
    lefts = sorted({cell[0] for cell in cells})
    rows = []
    for top in sorted({cell[1] for cell in cells}):
        at = {cell[0]: cell for cell in cells if cell[1] == top}
        rows.append([at.get(left) for left in lefts])
    return rows


def page_chars(page: pdfium.PdfPage) -> tuple[list[str], np.ndarray]:
    """Each character of the page in PDFium's reading order, line breaks included, and its box (left, right,
    bottom, top; NaN for a space, a line break or a character PDFium generated)."""
    textpage = page.get_textpage()
    try:
        raw = textpage.raw
        count = pdfium_raw.FPDFText_CountChars(raw)
        chars, boxes = [], np.full((count, 4), np.nan)
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        for i in range(count):
            char = _character(pdfium_raw.FPDFText_GetUnicode(raw, i))
            chars.append(char)
            if not char or char.isspace() or pdfium_raw.FPDFText_IsGenerated(raw, i) == 1:
                continue
            if pdfium_raw.FPDFText_GetCharBox(raw, i, left, right, bottom, top):
                boxes[i] = left.value, right.value, bottom.value, top.value
    finally:
        textpage.close()
    return chars, boxes


def _cell_texts(chars: list[str], boxes: np.ndarray, cells: list[Cell]) -> dict[Cell, str]:
    """The text of each cell: the characters whose box's centre lies in it (a descender of the row above does not),
    in PDFium's reading order, with a space wherever anything else (a space, a line break) came between two of them."""
    xs, ys = boxes[:, :2].mean(axis=1), -boxes[:, 2:].mean(axis=1)
    owner = np.full(len(chars), -1)
    for k, (x0, y0, x1, y1) in enumerate(cells):
        owner[(xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)] = k
    texts: list[list[str]] = [[] for _ in cells]
    last: dict[int, int] = {}
    for i in np.flatnonzero(owner >= 0):
        k = owner[i]
        if k in last and i > last[k] + 1:
            texts[k].append(" ")  # a space, a line break or another cell's text came between
        texts[k].append(chars[i])
        last[k] = i
    return {cell: pdfium_text("".join(text)) for cell, text in zip(cells, texts)}


def aligned_tables(chars: list[str], boxes: np.ndarray) -> list[list[list[str]]]:
    """Tables a page draws without rules, which its text layer gives as plain lines (a paper's table of results): a
    line of column headings in words over two or more lines that each end with the same number (two or more) of
    values, each column of values apart from the next on the page; a line of years above the headings ("2015 2014"
    over "High Low High Low") is an upper heading row. Each heading word belongs to the column it stands over (the
    nearest by the characters' boxes), or to the labels' column. A line of years alone over such rows is read at
    question time (`table_readings`), so a headings line holding numbers is left to it, and so is a units line. Read
    from the page's characters and their boxes (`page_chars`)."""
    text = "".join(chars)
    lines = [(m.start(), m.group()) for m in re.finditer(r"[^\r\n]+", text)]
    split = [_trailing_spans(line) for _, line in lines]
    tables, n = [], 1
    while n < len(lines):
        width, end = len(split[n][1]), n
        while end < len(lines) and len(split[end][1]) == width and _LETTER.search(split[end][0]):
            end += 1
        if width >= 2 and end - n >= 2:
            rows = [(start, line, *split[k]) for k, (start, line) in enumerate(lines[n:end], start=n)]
            years = lines[n - 2] if n >= 2 and _YEARS_LINE.match(lines[n - 2][1]) else None
            table = _aligned_table(lines[n - 1], years, rows, boxes)
            tables += [table] if table else []
        n = max(end, n + 1)
    return tables


_LETTER = re.compile(r"[^\W\d_]")
_LONE_NUMBER = re.compile(r"(?<![\w-])[$€£(]?\d")  # a number standing alone, not part of a name ("GPT-4")
Line = tuple[int, str]  # a line of the page's characters and the offset of its first


def _aligned_table(
    heading: Line, years: Line | None, rows: list[tuple[int, str, str, list[tuple[int, int]]]], boxes: np.ndarray
) -> list[list[str]] | None:
    """The rows (each: its offset, its line, its label and its values' spans in the line) under `heading` (and
    `years` above it) as a table whose first rows are the headings, or None when the line above is no heading or the
    words of a heading line do not stand over the columns in order, each column of values under one of them."""
    words = heading[1]
    if (
        _trailing_spans(words)[1]
        or not _LETTER.search(words)
        or _LONE_NUMBER.search(words)
        or _UNITS.search(words)
        or len(words) > _PROSE_CELL
    ):
        return None

    def extent(start: int, end: int) -> tuple[float, float]:
        part = boxes[start:end]
        return (np.nan, np.nan) if np.isnan(part[:, 0]).all() else (np.nanmin(part[:, 0]), np.nanmax(part[:, 1]))

    def column(spans: list[tuple[float, float]]) -> tuple[float, float]:
        return min(a for a, _ in spans), max(b for _, b in spans)

    width = len(rows[0][3])
    labels = column([extent(start, start + len(label)) for start, _, label, _ in rows])
    values = [column([extent(start + s[j][0], start + s[j][1]) for start, _, _, s in rows]) for j in range(width)]
    ranges = [labels, *values]
    if any(np.isnan(r).any() for r in ranges) or any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
        return None

    def over_columns(line: Line) -> list[str] | None:
        """The line's words joined by the column they stand over, or None when they are out of order."""
        cells: list[list[str]] = [[] for _ in ranges]
        last = 0
        for word in re.finditer(r"\S+", line[1]):
            left, right = extent(line[0] + word.start(), line[0] + word.end())
            centre = (left + right) / 2
            if np.isnan(centre):
                return None
            k = min(range(len(ranges)), key=lambda i: max(ranges[i][0] - centre, centre - ranges[i][1], 0.0))
            if k < last:
                return None
            cells[k].append(word.group())
            last = k
        return [" ".join(cell) for cell in cells]

    headings = over_columns(heading)
    if headings is None or not all(headings[1:]):
        return None
    body = [[label.strip(), *(_value_text(line[a:b]) for a, b in spans)] for _, line, label, spans in rows]
    if years is None:
        return [headings, *body]
    # a year heads the columns nearer to it than to another year, and stands in the first of them (a heading row's
    # cell spans the empty cells to its right: `_column_headings`)
    marks = [
        (word.group(), sum(extent(years[0] + word.start(), years[0] + word.end())) / 2)
        for word in re.finditer(r"\S+", years[1])
    ]
    upper = [""] * len(ranges)
    for j, (left, right) in enumerate(values, start=1):
        year, _ = min(marks, key=lambda mark: abs(mark[1] - (left + right) / 2))
        if year not in upper:
            upper[j] = year
    return [[headings[0], *upper[1:]], ["", *headings[1:]], *body]  # the second heading row joins the header


def _character(code: int) -> str:
    """A PDFium character code as text ("" for a code no character has)."""
    return chr(code) if 0 <= code <= 0x10FFFF else ""


def _grids(page: pdfium.PdfPage) -> list[list[Cell]]:
    """The cells of each grid the page's drawn lines form, by pdfplumber's rules for joining edges into cells, kept
    when they make two or more rows and columns."""
    from pdfplumber.table import (
        TableSettings,
        cells_to_tables,
        edges_to_intersections,
        intersections_to_cells,
        merge_edges,
    )
    from pdfplumber.utils import filter_edges

    settings = TableSettings.resolve(None)
    edges: list[dict] = []
    for i in range(pdfium_raw.FPDFPage_CountObjects(page.raw)):
        _path_edges(pdfium_raw.FPDFPage_GetObject(page.raw, i), None, edges)
    edges = filter_edges(edges, min_length=settings.edge_min_length_prefilter)
    edges = merge_edges(
        edges,
        settings.snap_x_tolerance,
        settings.snap_y_tolerance,
        settings.join_x_tolerance,
        settings.join_y_tolerance,
    )
    edges = filter_edges(edges, min_length=settings.edge_min_length)
    intersections = edges_to_intersections(edges, settings.intersection_x_tolerance, settings.intersection_y_tolerance)
    return [
        cells
        for cells in cells_to_tables(intersections_to_cells(intersections))
        if len({cell[1] for cell in cells}) >= 2 and len({cell[0] for cell in cells}) >= 2
    ]


Matrix = tuple[float, float, float, float, float, float]


def _path_edges(obj: object, outer: Matrix | None, edges: list[dict]) -> None:
    """The straight pieces of a path object (and of the paths inside a form object) as pdfplumber edge records, in
    page space; y is negated into pdfplumber's top-down `top`/`bottom`. Curves count by their points, as
    pdfplumber counts them, and a slanted piece as a vertical edge, as pdfplumber takes a slanted line."""
    m = pdfium_raw.FS_MATRIX()
    pdfium_raw.FPDFPageObj_GetMatrix(obj, ctypes.byref(m))
    a, b, c, d, e, f = m.a, m.b, m.c, m.d, m.e, m.f
    if outer is not None:
        oa, ob, oc, od, oe, of = outer
        a, b, c, d, e, f = (
            a * oa + b * oc,
            a * ob + b * od,
            c * oa + d * oc,
            c * ob + d * od,
            e * oa + f * oc + oe,
            e * ob + f * od + of,
        )
    kind = pdfium_raw.FPDFPageObj_GetType(obj)
    if kind == pdfium_raw.FPDF_PAGEOBJ_FORM:
        for i in range(pdfium_raw.FPDFFormObj_CountObjects(obj)):
            _path_edges(pdfium_raw.FPDFFormObj_GetObject(obj, i), (a, b, c, d, e, f), edges)
        return
    if kind != pdfium_raw.FPDF_PAGEOBJ_PATH:
        return
    x, y = ctypes.c_float(), ctypes.c_float()
    runs: list[list[tuple[float, float]]] = []
    start = None
    for i in range(pdfium_raw.FPDFPath_CountSegments(obj)):
        segment = pdfium_raw.FPDFPath_GetPathSegment(obj, i)
        pdfium_raw.FPDFPathSegment_GetPoint(segment, x, y)
        point = (a * x.value + c * y.value + e, b * x.value + d * y.value + f)
        if pdfium_raw.FPDFPathSegment_GetType(segment) == pdfium_raw.FPDF_SEGMENT_MOVETO or not runs:
            runs.append([point])
            start = point
        else:
            runs[-1].append(point)
        if pdfium_raw.FPDFPathSegment_GetClose(segment) and start is not None:
            runs[-1].append(start)
    for run in runs:
        for (x0, y0), (x1, y1) in zip(run, run[1:]):
            width, height = abs(x1 - x0), abs(y1 - y0)
            edges.append(
                {
                    "object_type": "path_edge",
                    "x0": min(x0, x1),
                    "x1": max(x0, x1),
                    "top": -max(y0, y1),
                    "bottom": -min(y0, y1),
                    "width": width,
                    "height": height,
                    "orientation": "h" if height < 0.01 else "v",
                }
            )


def clean_rows(rows: list[list[str | None]]) -> list[list[str]]:
    """Cells as single-line text; currency signs and percent signs joined to their numbers; columns and rows that
    are empty throughout dropped. Empty when fewer than two rows or two columns remain."""
    cleaned = []
    for row in rows:
        cells = [" ".join((cell or "").split()).replace("|", "/") for cell in row]
        for i, cell in enumerate(cells):
            if cell in _PREFIXES and i + 1 < len(cells) and cells[i + 1]:
                cells[i + 1], cells[i] = cell + cells[i + 1], ""
            elif cell in _SUFFIXES:
                before = next((j for j in range(i - 1, -1, -1) if cells[j]), None)
                if before is not None:
                    cells[before], cells[i] = cells[before] + cell, ""
        if any(cells):
            cleaned.append(cells)
    width = max((len(row) for row in cleaned), default=0)
    columns = [[row[c] if c < len(row) else "" for row in cleaned] for c in range(width)]
    merged: list[list[str]] = []
    for column in columns:
        if not any(column):
            continue
        # A header spanning two ruled columns ("2023" over "$" and "46,298"): its column holds nothing else, and
        # the next one has no header of its own.
        if merged and merged[-1][0] and not any(merged[-1][1:]) and not column[0]:
            merged[-1] = [a or b for a, b in zip(merged[-1], column)]
        elif len(merged) > 1 and _one_column(merged[-1], column):
            merged[-1] = [a or b for a, b in zip(merged[-1], column)]
        else:
            merged.append(column)
    table = [list(row) for row in zip(*merged) if any(row)]
    filled = [cell for row in table for cell in row if cell]
    if len(table) < 2 or len(merged) < 2 or max(map(len, filled)) > _PROSE_CELL:
        return []
    return table


def _one_column(left: list[str], right: list[str]) -> bool:
    """Whether two neighbouring columns of amounts are one column the rules split: no row fills both, and each
    holds only numbers (a total's amount, drawn with its currency sign, lands one ruled column to the right of the
    amounts above it). Columns with headings of their own (a ledger's "Debit" and "Credit") stay apart."""
    return not any(a and b for a, b in zip(left, right)) and all(
        not cell or _NUMBER.fullmatch(cell) for cell in [*left, *right]
    )


def markdown(rows: list[list[str]]) -> str:
    """Rows (the first is the header) as a Markdown table."""
    rows = [[" ".join(cell.split()).replace("|", "/") for cell in row] for row in rows]
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    separator = "| " + " | ".join("---" for _ in rows[0]) + " |"
    return "\n".join([lines[0], separator, *lines[1:]])


_SEPARATOR_ROW = re.compile(r"^\|(?:\s*:?-{3,}:?\s*\|)+$")


def plain_rows(text: str) -> str:
    """`text` with its Markdown tables as plain lines of cells (no bars, no `| --- |` rows): for extracts that are
    read as prose."""
    lines = []
    for line in text.split("\n"):
        stripped = line.strip()
        if _SEPARATOR_ROW.match(stripped):
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            line = " ".join(cell.strip() for cell in stripped.strip("|").split("|"))
        lines.append(line)
    return "\n".join(lines)


_UNITS = re.compile(r"\bin\s+(?:thousands|millions|billions)\b", re.IGNORECASE)
_YEARLIKE = re.compile(r"^(?:\(?[A-Za-z.]*\s*(?:19|20)\d\d\)?|[A-Za-z][^\d]*)$")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def _column_headings(rows: list[list[str]], width: int) -> list[str]:
    """Each column's heading: its header rows' cells joined top to bottom; a cell of an upper row spans the empty
    cells to its right ("Three Months Ended" over "2023" and "2022")."""
    spread = []
    for depth, row in enumerate(rows):
        row = row + [""] * (width - len(row))
        if depth < len(rows) - 1:
            for i in range(2, width):  # the label column starts no span
                if not row[i] and row[i - 1]:
                    row[i] = row[i - 1]
        spread.append(row)
    return [" ".join(row[i] for row in spread if row[i]) for i in range(width)]


def row_reading(label: str, cells: list[str], headings: list[str], units: str = "") -> str:
    """A table row as a reader takes it in: `Brightness (typ.) — 27": 300 cd/m²; 32": 350 cd/m²`, the table's units
    ("in millions") after it."""
    values = [
        f"{headings[i]}: {cell}" if i < len(headings) and headings[i] else cell
        for i, cell in enumerate(cells)
        if i > 0 and cell
    ]
    reading = f"{label} — {'; '.join(values)}" if label and values else label or "; ".join(values)
    return f"{reading} ({units})" if units and values else reading


# A text layer's table without rules: a line of years heads the columns ("2015 2014 2013"), and each row below it
# is a label followed by one value per year ("Net income 122,641 266,799 112,403"; "$ 1,043", "(920,557)", "30 %",
# "—" for none).
_YEARS_LINE = re.compile(r"^\s*(?:(?:19|20)\d\d\s+)+(?:19|20)\d\d\s*$")
# a value with its spread or change in brackets after it ("73.2% (1.9%)") is one cell
_TEXT_VALUE_AT_END = re.compile(
    r"(?:^|\s)(\(?(?:[$€£]\s*)?\(?-?\d[\d,]*(?:\.\d+)?\)?(?:\s*%)?(?:\s*\(\s*[±+-]?\d+(?:\.\d+)?\s*%\s*\))?|[—–-])$"
)


# the period a group of columns covers, in the heading lines over its dates or years ("Three Months Ended December
# 31, ... Six Months Ended December 31," over "2022 2021 2022 2021")
_PERIOD = re.compile(
    r"\b(?:(?:three|six|nine|twelve|thirteen|twenty-six|thirty-nine|fifty-two|fifty-three|\d{1,2})[\s-]+"
    r"(?:months?|weeks?)|quarters?|(?:fiscal\s+)?years?)\s+ended\b"
    rf"(?:\s+(?:{'|'.join(MONTHS)})\.?\s+\d{{1,2}},?)?",
    re.IGNORECASE,
)
# a column's date, written on one line or two ("April 1," over "2023")
_COLUMN_DATE = re.compile(rf"\b(?:{'|'.join(MONTHS)})\.?\s+\d{{1,2}},?\s+(?:19|20)\d\d\b", re.IGNORECASE)
_HEADING_LINES = 16  # lines above a table read for its column headings and units


def headings_above(lines: list[str], end: int, width: int) -> tuple[list[str], str] | None:
    """The headings of a table's `width` value columns that the heading lines ending at `lines[end]` give, and the
    units they name ("in millions"), or None when they give none for that many columns: a line of years
    ("2022 2021"), or as many dates, each maybe over two lines ("April 1," / "2023"). Where a heading repeats (three
    and six months of two years), each group of columns takes its period from those lines, in order ("Six Months
    Ended December 31, 2021"), when there is one period per group. Read back from `end` to a row of values, a
    table's row or prose."""
    block: list[str] = []
    for line in reversed(lines[max(0, end + 1 - _HEADING_LINES) : end + 1]):
        values = _trailing_spans(line)[1]
        if _is_row(line) or len(line) > _PROSE_CELL or (len(values) >= 2 and not _YEARS_LINE.match(line)):
            break
        block.insert(0, line)
    years = next((line.split() for line in reversed(block) if _YEARS_LINE.match(line)), [])
    heading = " ".join(" ".join(line for line in block if not _YEARS_LINE.match(line)).split())
    dates = [" ".join(date.split()) for date in _COLUMN_DATE.findall(heading)]
    columns = dates if len(dates) == width else years if len(years) == width else None
    if columns is None:
        return None
    found = _UNITS.search(heading)
    units = " ".join(found.group().lower().split()) if found else ""
    periods = [" ".join(period.split()) for period in _PERIOD.findall(_COLUMN_DATE.sub(" ", heading))]
    if len(set(columns)) == width or len(periods) < 2 or width % len(periods):
        return columns, units
    group = width // len(periods)
    return [f"{periods[j // group]} {column}" for j, column in enumerate(columns)], units


def trailing_values(line: str, most: int | None = None) -> tuple[str, list[str]]:
    """The values a line of a text-layer table ends with, in order (at most `most`), each as written less its inner
    spaces ("$ 1,043" → "$1,043", "30 %" → "30%"; "—" for an empty cell), and the text before them."""
    rest, spans = _trailing_spans(line, most)
    return rest, [_value_text(line[start:end]) for start, end in spans]


def _value_text(value: str) -> str:
    return re.sub(r"(?<=[\d%])\(", " (", "".join(value.split()))  # "73.2 % ( 1.9 %)" → "73.2% (1.9%)"


def _trailing_spans(line: str, most: int | None = None) -> tuple[str, list[tuple[int, int]]]:
    """Where in `line` each of the values it ends with stands (`trailing_values`), and the text before them."""
    spans: list[tuple[int, int]] = []
    rest = line.rstrip()
    while (most is None or len(spans) < most) and (found := _TEXT_VALUE_AT_END.search(rest)):
        spans.insert(0, found.span(1))
        rest = rest[: found.start()].rstrip()
    return rest, spans


def _text_row(line: str, years: list[str]) -> tuple[str, list[str]] | None:
    """A line under a line of years read as its label and one value per year, or None when it is not one."""
    label, values = trailing_values(line, len(years))
    if len(values) < len(years) or not _LETTER.search(label):
        return None
    return label.strip(), values


def _text_headings(lines: list[str], n: int) -> tuple[list[str], str] | None:
    """The column headings and units over `lines[n]` where it is a label and two or more values whose headings
    stand above it (`headings_above`)."""
    label, values = trailing_values(lines[n])
    if len(values) < 2 or not _LETTER.search(label):
        return None
    return headings_above(lines, n - 1, len(values))


def _data_like(header: list[str]) -> bool:
    """A table's first row that is data, not a header: a two-column table's key and its value ("AC IN | AC 100 V –
    240 V 50 Hz"), or a label and amounts that are no years ("United States | 192,000 | 181,000")."""
    if len(header) == 2 and bool(re.search(r"\d", header[1])) and len(header[1].split()) >= 3:
        return True
    amounts = [cell for cell in header[1:] if cell]
    return bool(amounts) and all(_NUMBER.fullmatch(c) and not re.fullmatch(r"(?:19|20)\d\d", c) for c in amounts)


def _asked_cells(cells: list[str], headings: list[str], columns: ColumnChoice | None) -> list[str]:
    """A row's cells with those outside the columns `columns` picks by their `headings` left empty; the label stays."""
    kept = columns(headings) if columns else None
    return [cell if not kept or i == 0 or i in kept else "" for i, cell in enumerate(cells)]


@dataclass(frozen=True)
class TableRow:
    """One body row of a table as `table_readings` reads it: its label, its cells (the label's first, those outside
    the asked columns empty) under their column headings, the table's units, its reading (`row_reading`) and the
    row as the page writes it (`raw`)."""

    label: str
    cells: tuple[str, ...]
    headings: tuple[str, ...]
    units: str
    reading: str
    raw: str


def table_readings(
    text: str, header: str | None = None, columns: ColumnChoice | None = None
) -> tuple[str, dict[str, str]]:
    """`text` with each table's body rows written as readings, and each reading's row as the page writes it
    (`table_rows`)."""
    readable, rows = table_rows(text, header, columns)
    raw_of: dict[str, str] = {}
    for row in rows:
        raw_of.setdefault(row.reading, row.raw)
    return readable, raw_of


def table_rows(text: str, header: str | None = None, columns: ColumnChoice | None = None) -> tuple[str, list[TableRow]]:
    """`text` with each Markdown table's body rows written as readings (`row_reading`) and its header and separator
    rows left out, and each reading's Markdown rows (from its first cell to its last, as `highlights.sentences`
    takes a row) to find it again in the page. `header` is the header row of a table `text` starts inside
    (`Chunk.table_header`). Body rows at a table's top with an empty first cell and only headings in the rest
    ("| | 2023 | 2022 |") join the header; rows with an empty first cell continue the labelled row above them, or
    belong to the next when that one's label stands alone on its row (a label cell spanning rows, its text
    centred: "Brightness — 27": 250 (min.), 300 (typ.)"); rows before a table's first label are that label's. A line
    of units just above a table ("(in millions)") travels with its rows. `columns` picks the cells each reading
    keeps by their headings (the columns a question names); the label always stays. A passage's gap marks
    (`GAP_MARK`) stand on lines of their own."""
    lines = text.replace(GAP_MARK, f"\n{GAP_MARK.strip()}\n").split("\n")
    out: list[str] = []
    rows: list[TableRow] = []
    headings: list[list[str]] = []
    group: list[list[str]] = []  # the rows of the labelled row being read, and its continuations
    group_lines: list[str] = []
    units = ""
    in_table = heading_rows_open = False

    def flush() -> None:
        if not group:
            return
        width = max(map(len, group))
        merged = [", ".join(row[i] for row in group if i < len(row) and row[i]) for i in range(width)]
        merged[0] = next((row[0] for row in group if row[0]), "")
        column_headings = _column_headings(headings, width)
        cells = _asked_cells(merged, column_headings, columns)
        reading = row_reading(merged[0], cells, column_headings, units)
        raw = "\n".join(line.strip() for line in group_lines).strip(" |")
        rows.append(TableRow(merged[0], tuple(cells), tuple(column_headings), units, reading, raw))
        out.append(reading)
        group.clear()
        group_lines.clear()

    years: list[str] = []  # the column headings of a text table being read (`_YEARS_LINE`)
    last_text_row = -1
    for n, line in enumerate(lines):
        if not _is_row(line):
            flush()
            in_table = False
            if _YEARS_LINE.match(line):
                years, units = headings_above(lines, n, len(line.split())) or (line.split(), "")
                out.append(line)
                continue
            if not years and (above := _text_headings(lines, n)):
                years, units = above  # the first row of a text table whose headings stand over it
            if years and (found := _text_row(line, years)):
                label, values = found
                cells = _asked_cells([label, *values], ["", *years], columns)
                reading = row_reading(label, cells, ["", *years], units)
                rows.append(TableRow(label, tuple(cells), ("", *years), units, reading, line.strip()))
                line, last_text_row = reading, n
            elif years and (unit := _UNITS.search(line)) and not re.search(r"\d", line):
                units = " ".join(unit.group().lower().split())
            elif years and (re.search(r"\d", line) or len(line) > _PROSE_CELL):
                years = []
            out.append(line)
            continue
        if _SEPARATOR_ROW.match(line.strip()):
            continue
        cells = _cells(line)
        if not in_table:
            in_table = True
            above = next((lines[k] for k in range(n - 1, max(-1, n - 3), -1) if lines[k].strip()), "")
            found = _UNITS.search(above) or _UNITS.search(line)
            units = " ".join(found.group().lower().split()) if found else ""
            next_line = lines[n + 1].strip() if n + 1 < len(lines) else ""
            if _SEPARATOR_ROW.match(next_line) and not _data_like(cells):
                headings, heading_rows_open = [cells], True
                continue
            headings = [_cells(header)] if header and not out and not _data_like(_cells(header)) else []
            if not headings and (found_above := headings_above(lines, n - 1, len(cells) - 1)):
                headings, units = [["", *found_above[0]]], units or found_above[1]  # its headings stand above it
            elif not headings and len(years) == len(cells) - 1 and not "".join(lines[last_text_row + 1 : n]).strip():
                headings = [["", *years]]  # it goes on from the text table just above, under the same headings
            heading_rows_open = bool(headings)
        if heading_rows_open and not cells[0] and all(_YEARLIKE.match(c) for c in cells[1:] if c):
            headings.append(cells)
            continue
        heading_rows_open = False
        if cells[0] and any(row[0] for row in group):
            # a label alone on its row sits in the middle of the rows its cell spans: the unlabelled rows just
            # above it are its own
            labelled = max(i for i, row in enumerate(group) if row[0])
            carried = (group[labelled + 1 :], group_lines[labelled + 1 :]) if not any(cells[1:]) else ([], [])
            del group[len(group) - len(carried[0]) :], group_lines[len(group_lines) - len(carried[1]) :]
            flush()
            group.extend(carried[0])
            group_lines.extend(carried[1])
        group.append(cells)
        group_lines.append(line)
    flush()
    return "\n".join(out), rows


def place_tables(text: str, tables: list[list[list[str]]]) -> str:
    """`text` with each table's span replaced by its Markdown; spans that cannot be found, or overlap one already
    placed, are left alone."""
    letters, where = [], []
    for i, char in enumerate(text):
        if char.isalnum():
            letters.append(char.lower())
            where.append(i)
    spelled = "".join(letters)
    spans: list[tuple[int, int, str]] = []
    for rows in tables:
        head = _letters(" ".join(rows[0]))[:_ANCHOR] or _letters(" ".join(rows[1]))[:_ANCHOR]
        tail = _letters(" ".join(rows[-1]))[-_ANCHOR:]
        if not head or not tail:
            continue
        tail_at = spelled.find(tail)
        head_at = spelled.rfind(head, 0, tail_at + 1) if tail_at >= 0 else -1
        if head_at < 0:
            continue
        start = text.rfind("\n", 0, where[head_at]) + 1
        last = where[tail_at + len(tail) - 1]
        end = text.find("\n", last)
        end = len(text) if end < 0 else end
        table = markdown(rows)
        if end - start > 3 * len(table) + 200 or any(start < e and s < end for s, e, _ in spans):
            continue
        spans.append((start, end, table))
    for start, end, table in sorted(spans, reverse=True):
        before = "" if start == 0 or text[:start].endswith("\n\n") else "\n"
        after = "" if end >= len(text) or text[end:].startswith("\n\n") else "\n"
        text = text[:start] + before + table + after + text[end:]
    return text


def _letters(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())
