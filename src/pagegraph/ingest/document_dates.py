"""A document's date, read from what it says before what its file says: a filing's period ("for the fiscal year
ended December 31, 2018"), else the first full date on its first page (a paper's, a report's, a letter's). A file's
own creation date is often the day it was exported or downloaded (a 2018 annual report dated 2023-01-05), and is used
only when the text names none and it is plausible."""

from __future__ import annotations

import re
from datetime import date

from pagegraph.state.documents import LoadedDocument
from pagegraph.text.dates import MONTHS

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DATES = [
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),  # December 31, 2018
    re.compile(rf"\b{_DAY}\s+{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),  # 31 December 2018
    re.compile(rf"\b{_YEAR}-(?P<month>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12]\d|3[01])\b"),  # 2018-12-31
]
_PERIOD = re.compile(
    r"\b(?P<kind>fiscal\s+year|quarterly\s+period|transition\s+period|period|year)\s+ended:?\s*", re.IGNORECASE
)
FILING_PAGES = 3  # a filing's cover page, where its period is stated, is among its first pages
EARLIEST_YEAR = 1900


def _first_date(text: str) -> tuple[int, date] | None:
    """The earliest full date in `text` (its offset and the date); None without one."""
    found = []
    for pattern in _DATES:
        for match in pattern.finditer(text):
            month = match.group("month")
            number = int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]
            try:
                found.append((match.start(), date(int(match.group("year")), number, int(match.group("day")))))
            except ValueError:  # February 30th
                continue
    return min(found, default=None)


def _plausible(day: date | None, today: date) -> bool:
    return day is not None and EARLIEST_YEAR <= day.year and day <= today


def filing_period(doc: LoadedDocument, today: date | None = None) -> tuple[str, date] | None:
    """The period a filing's first pages say it covers, as they name it ("quarterly period", "fiscal year") and
    its end; None when they name none."""
    today = today or date.today()
    first_pages = "\n".join(page.text for page in doc.pages[:FILING_PAGES])
    for period in _PERIOD.finditer(first_pages):
        found = _first_date(first_pages[period.end() : period.end() + 40])
        if found is not None and found[0] == 0 and _plausible(found[1], today):
            return " ".join(period.group("kind").lower().split()), found[1]
    return None


def document_date(doc: LoadedDocument, today: date | None = None) -> date | None:
    """The document's date: the period a filing covers, else the first date on its first page, else (when
    plausible) its file's creation date; None when none is known."""
    today = today or date.today()
    if (period := filing_period(doc, today)) is not None:
        return period[1]
    found = _first_date(doc.pages[0].text) if doc.pages else None
    if found is not None and _plausible(found[1], today):
        return found[1]
    return doc.created if _plausible(doc.created, today) else None
