"""Tables as a reader takes them in, from the Markdown rows ingest wrote (`ingest.loaders.tables`) or the plain
lines of a text layer's table: each body row as a reading under its row label and column headings
(`Net income — 2013: 112,403 (in thousands)`), in the columns a question names; column headings from the lines above
a table that has no header row of its own (years, dates, the periods they group under), and the units named there."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pagegraph.state.answering import GAP_MARK
from pagegraph.text.dates import MONTH_NAME

NUMBER = re.compile(r"(?<![\w.])[-$€£(]?\d[\d,.]*%?\)?(?![\w])")
LETTER = re.compile(r"[^\W\d_]")
PROSE_CELL = 150  # a cell this long is a paragraph that happens to sit in a ruled box, not a table

# Which of a table's columns to read, given each column's heading (the label column's first): their indexes, or None
# for all of them.
ColumnChoice = Callable[[list[str]], set[int] | None]


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


UNITS = re.compile(r"\bin\s+(?:thousands|millions|billions)\b", re.IGNORECASE)
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
YEARS_LINE = re.compile(r"^\s*(?:(?:19|20)\d\d\s+)+(?:19|20)\d\d\s*$")
# a value with its spread or change in brackets after it ("73.2% (1.9%)") is one cell
_TEXT_VALUE_AT_END = re.compile(
    r"(?:^|\s)(\(?(?:[$€£]\s*)?\(?-?\d[\d,]*(?:\.\d+)?\)?(?:\s*%)?(?:\s*\(\s*[±+-]?\d+(?:\.\d+)?\s*%\s*\))?|[—–-])$"
)


# the period a group of columns covers, in the heading lines over its dates or years ("Three Months Ended December
# 31, ... Six Months Ended December 31," over "2022 2021 2022 2021")
_PERIOD = re.compile(
    r"\b(?:(?:three|six|nine|twelve|thirteen|twenty-six|thirty-nine|fifty-two|fifty-three|\d{1,2})[\s-]+"
    r"(?:months?|weeks?)|quarters?|(?:fiscal\s+)?years?)\s+ended\b"
    rf"(?:\s+{MONTH_NAME}\s+\d{{1,2}},?)?",
    re.IGNORECASE,
)
# a column's date, written on one line or two ("April 1," over "2023")
_COLUMN_DATE = re.compile(rf"\b{MONTH_NAME}\s+\d{{1,2}},?\s+(?:19|20)\d\d\b", re.IGNORECASE)
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
        values = trailing_spans(line)[1]
        if _is_row(line) or len(line) > PROSE_CELL or (len(values) >= 2 and not YEARS_LINE.match(line)):
            break
        block.insert(0, line)
    years = next((line.split() for line in reversed(block) if YEARS_LINE.match(line)), [])
    heading = " ".join(" ".join(line for line in block if not YEARS_LINE.match(line)).split())
    dates = [" ".join(date.split()) for date in _COLUMN_DATE.findall(heading)]
    columns = dates if len(dates) == width else years if len(years) == width else None
    if columns is None:
        return None
    found = UNITS.search(heading)
    units = " ".join(found.group().lower().split()) if found else ""
    periods = [" ".join(period.split()) for period in _PERIOD.findall(_COLUMN_DATE.sub(" ", heading))]
    if len(set(columns)) == width or len(periods) < 2 or width % len(periods):
        return columns, units
    group = width // len(periods)
    return [f"{periods[j // group]} {column}" for j, column in enumerate(columns)], units


def trailing_values(line: str, most: int | None = None) -> tuple[str, list[str]]:
    """The values a line of a text-layer table ends with, in order (at most `most`), each as written less its inner
    spaces ("$ 1,043" → "$1,043", "30 %" → "30%"; "—" for an empty cell), and the text before them."""
    rest, spans = trailing_spans(line, most)
    return rest, [value_text(line[start:end]) for start, end in spans]


def value_text(value: str) -> str:
    return re.sub(r"(?<=[\d%])\(", " (", "".join(value.split()))  # "73.2 % ( 1.9 %)" → "73.2% (1.9%)"


def trailing_spans(line: str, most: int | None = None) -> tuple[str, list[tuple[int, int]]]:
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
    if len(values) < len(years) or not LETTER.search(label):
        return None
    return label.strip(), values


def _text_headings(lines: list[str], n: int) -> tuple[list[str], str] | None:
    """The column headings and units over `lines[n]` where it is a label and two or more values whose headings
    stand above it (`headings_above`)."""
    label, values = trailing_values(lines[n])
    if len(values) < 2 or not LETTER.search(label):
        return None
    return headings_above(lines, n - 1, len(values))


def _data_like(header: list[str]) -> bool:
    """A table's first row that is data, not a header: a two-column table's key and its value ("AC IN | AC 100 V –
    240 V 50 Hz"), or a label and amounts that are no years ("United States | 192,000 | 181,000")."""
    if len(header) == 2 and bool(re.search(r"\d", header[1])) and len(header[1].split()) >= 3:
        return True
    amounts = [cell for cell in header[1:] if cell]
    return bool(amounts) and all(NUMBER.fullmatch(c) and not re.fullmatch(r"(?:19|20)\d\d", c) for c in amounts)


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

    years: list[str] = []  # the column headings of a text table being read (`YEARS_LINE`)
    last_text_row = -1
    for n, line in enumerate(lines):
        if not _is_row(line):
            flush()
            in_table = False
            if YEARS_LINE.match(line):
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
            elif years and (unit := UNITS.search(line)) and not re.search(r"\d", line):
                units = " ".join(unit.group().lower().split())
            elif years and (re.search(r"\d", line) or len(line) > PROSE_CELL):
                years = []
            out.append(line)
            continue
        if _SEPARATOR_ROW.match(line.strip()):
            continue
        cells = _cells(line)
        if not in_table:
            in_table = True
            line_above = next((lines[k] for k in range(n - 1, max(-1, n - 3), -1) if lines[k].strip()), "")
            named = UNITS.search(line_above) or UNITS.search(line)
            units = " ".join(named.group().lower().split()) if named else ""
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
