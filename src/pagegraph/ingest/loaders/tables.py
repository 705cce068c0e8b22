"""The tables of PDF pages as Markdown rows under their header row (`text.tables.markdown`, as DOCX tables are
written), in place of the flat text of their text layer; `text.tables` reads them back at question time.

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
from contextlib import closing

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_raw

from pagegraph.ingest.loaders.pdfium_text import pdfium_text
from pagegraph.text.tables import (
    LETTER,
    NUMBER,
    PROSE_CELL,
    UNITS,
    YEARS_LINE,
    markdown,
    trailing_spans,
    value_text,
)

log = logging.getLogger(__name__)

TABULAR_LINES = 3  # lines with two or more numbers that make a page worth examining
_ANCHOR = 30
_PREFIXES = {"$", "€", "£", "("}
_SUFFIXES = {"%", ")", "%)"}


def looks_tabular(text: str) -> bool:
    return sum(len(NUMBER.findall(line)) >= 2 for line in text.splitlines()) >= TABULAR_LINES


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
    for i in np.flatnonzero(owner >= 0).tolist():
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
    split = [trailing_spans(line) for _, line in lines]
    tables, n = [], 1
    while n < len(lines):
        width, end = len(split[n][1]), n
        while end < len(lines) and len(split[end][1]) == width and LETTER.search(split[end][0]):
            end += 1
        if width >= 2 and end - n >= 2:
            rows = [(start, line, *split[k]) for k, (start, line) in enumerate(lines[n:end], start=n)]
            years = lines[n - 2] if n >= 2 and YEARS_LINE.match(lines[n - 2][1]) else None
            table = _aligned_table(lines[n - 1], years, rows, boxes)
            tables += [table] if table else []
        n = max(end, n + 1)
    return tables


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
        trailing_spans(words)[1]
        or not LETTER.search(words)
        or _LONE_NUMBER.search(words)
        or UNITS.search(words)
        or len(words) > PROSE_CELL
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
    body = [[label.strip(), *(value_text(line[a:b]) for a, b in spans)] for _, line, label, spans in rows]
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
    if len(table) < 2 or len(merged) < 2 or max(map(len, filled)) > PROSE_CELL:
        return []
    return table


def _one_column(left: list[str], right: list[str]) -> bool:
    """Whether two neighbouring columns of amounts are one column the rules split: no row fills both, and each
    holds only numbers (a total's amount, drawn with its currency sign, lands one ruled column to the right of the
    amounts above it). Columns with headings of their own (a ledger's "Debit" and "Credit") stay apart."""
    return not any(a and b for a, b in zip(left, right)) and all(
        not cell or NUMBER.fullmatch(cell) for cell in [*left, *right]
    )


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
