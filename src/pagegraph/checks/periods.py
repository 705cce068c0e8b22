"""Which period a number stands for. Financial statements set one value per period side by side under a heading of
years or dates ("August 29, 2021   August 30, 2020"); a reader that takes the wrong column states a number the page
does hold, for another year than the one asked. Read without a model: the row's numbers in order, the nearest
heading above the row that names as many periods, and the one year the question names; and, in a sentence of
prose, the year written nearest the value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pagegraph.checks.values import MONTHS, Value, extract_values, same_value
from pagegraph.text.dates import YEAR, period_heading_above
from pagegraph.text.tables import UNITS, trailing_values

# words a heading of periods is written with besides its dates ("52 Weeks Ended", "Fiscal Year", "As of", a change
# column's "2015 vs. 2014")
_PERIOD_WORDS = frozenset(
    "fiscal fy year years ended ending end as of at weeks week months month quarter three six nine twelve "
    "and the vs versus".split()
)
_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:st|nd|rd|th)?")
# words that set a year apart from a value as the one it is compared with ("up from $3.7 billion in 2020")
_COMPARED = re.compile(
    r"\b(?:since|from|than|versus|vs\.?|compared|prior|previous|over|before|after|against)\b", re.IGNORECASE
)
_CELL_NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class OtherPeriod:
    """A value the answer took from a row's column for another period than the one the question names."""

    value: Value
    period: int
    asked: int
    asked_cells: list[str]


def asked_year(question: str) -> int | None:
    """The one year the question names ("in FY2021", "for the fiscal year ending January 28, 2023"); None when it
    names none or several."""
    years = set(YEAR.findall(question))
    return int(years.pop()) if len(years) == 1 else None


def _is_heading(line: str) -> bool:
    """A line written only with dates and the words of periods, naming at least one year or month; or a line of
    years after the table's units ("(Dollars in millions) 2021 2020 2019")."""
    note, values = trailing_values(line)
    if len(values) >= 2 and all(YEAR.fullmatch(v) for v in values) and UNITS.search(note):
        return True
    dated = False
    for token in _TOKEN.findall(line.replace("|", " ")):
        word = token.lower()
        if YEAR.fullmatch(token) or word in MONTHS:
            dated = True
        elif word in _PERIOD_WORDS:
            continue
        elif not (token[0].isdigit() and int(token.rstrip("stndrh")) <= 53):  # a day ("31st"), or weeks in a year
            return False
    return dated


def heading_years(page_text: str, row_start: int, lines_above: int) -> list[int]:
    """The years of the nearest heading of periods above the line starting at `row_start` (its lines joined: a
    heading is often one date part a line), in their order; looked for in the `lines_above` lines above it."""
    lines = page_text[:row_start].split("\n")[:-1][-lines_above:]
    for end in range(len(lines) - 1, -1, -1):
        if not _is_heading(lines[end]):
            continue
        start = end
        while start > 0 and _is_heading(lines[start - 1]):
            start -= 1
        return [int(year) for year in YEAR.findall(" ".join(lines[start : end + 1]))]
    return []


def row_cells(row: str) -> list[str]:
    """The row's values in order: a Markdown row's cells with a number after its label, or the values ending a line
    of text ("Technology and development 650,788 472,321 378,769"; a dash for an empty cell)."""
    if row.lstrip().startswith("|"):
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        return [cell for cell in cells[1:] if _CELL_NUMBER.search(cell)]
    label, cells = trailing_values(row)
    return cells if label.strip() else []  # a line of numbers only is no labelled row


def other_periods(
    values: Sequence[Value], question: str, page_text: str, at: int, heading_lines: int
) -> list[OtherPeriod]:
    """The values that the row holding offset `at` of `page_text` states only in columns of other years than the one
    the question names — when the row has one number per period of its heading (a quarterly report heads the
    quarter's columns and the year-to-date's with the same two years). Where the heading has no column for that
    year, `asked_cells` is empty: the row does not state the asked year's value at all."""
    asked = asked_year(question)
    if asked is None:
        return []
    start = page_text.rfind("\n", 0, at) + 1
    end = page_text.find("\n", at)
    cells = row_cells(page_text[start : end if end >= 0 else len(page_text)])
    years = heading_years(page_text, start, heading_lines)
    if len(cells) < 2 or len(years) != len(cells):
        return []
    numbers = [extract_values(cell, names=False) for cell in cells]
    asked_cells = [cell for cell, year in zip(cells, years) if year == asked]  # a quarter's and the year-to-date's
    found = []
    for value in values:
        columns = [i for i, written in enumerate(numbers) if any(same_value(value, w) for w in written)]
        if columns and all(years[i] != asked for i in columns):
            found.append(OtherPeriod(value, years[columns[0]], asked, asked_cells))
    return found


def paragraph_year(page_text: str, at: int, lines_above: int) -> int | None:
    """The year of the heading of periods over the paragraph holding offset `at` of `page_text`
    (`text.dates.period_heading_above`), the year it is compared with left out ("FISCAL 2021 COMPARED TO FISCAL
    2020": 2021); None where it has none or names several."""
    heading = period_heading_above(page_text, at, lines_above)
    if heading is None:
        return None
    own = heading[1][: found.start()] if (found := _COMPARED.search(heading[1])) else heading[1]
    years = set(YEAR.findall(own))
    return int(years.pop()) if len(years) == 1 else None


def stated_for_another_year(
    values: Sequence[Value], question: str, sentence: str, heading_year: int | None = None
) -> list[OtherPeriod]:
    """The values that a sentence of prose states for another year than the one the question names, where it names
    that year nowhere: the year written nearest each value, leaving out those a comparison sets apart from it ("up
    from $3.7 billion in 2020"), is another ("Greater China revenues for fiscal 2021 increased 19%" answering a
    question about 2022); a sentence naming no year, nor any it compares with, is of its paragraph's heading's year
    (`heading_year`, `paragraph_year`). The sentence gives no value for the asked year, so `asked_cells` is empty."""
    asked = asked_year(question)
    if asked is None or str(asked) in sentence or any(len(row_cells(line)) >= 2 for line in sentence.splitlines()):
        return []  # a table's row is read under its heading (`other_periods`), not as prose
    years = [(found.start(), int(found.group())) for found in YEAR.finditer(sentence)]
    written = extract_values(sentence, names=False)
    found = []
    for value in values:
        at = next((w.start for w in written if w.kind not in ("date", "name") and same_value(value, w)), None)
        if at is None or value.kind in ("date", "name"):
            continue
        own = [
            (place, year) for place, year in years if not _COMPARED.search(sentence[min(place, at) : max(place, at)])
        ]
        if own and (year := min(own, key=lambda place_year: abs(place_year[0] - at))[1]) != asked:
            found.append(OtherPeriod(value, year, asked, []))
        elif not years and heading_year not in (None, asked) and not _COMPARED.search(sentence):
            found.append(OtherPeriod(value, heading_year, asked, []))
    return found
