"""What a filing's cover page says it is: the registrant, the form and the period ("Intel Corporation, Form 10-Q,
quarterly period ended April 1, 2023"). A filing's file name or metadata title is often a ticker, a date or an
accession number ("2023 Q1 INTC", "04.01.2023 10Q Document"), where a question names the company ("Intel's R&D in
Q1 2023"). The cover's words become the document's title, which its chunk headers and its profile are searched by."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pagegraph.ingest.document_dates import FILING_PAGES, filing_period
from pagegraph.state.documents import LoadedDocument

_COMMISSION = re.compile(r"securities\s+and\s+exchange\s+commission", re.IGNORECASE)
# a cover's form stands on a line of its own ("FORM 10-K", "Form 20-F", "FORM 10-Q/A")
_FORM_LINE = re.compile(
    r"^[ \t]*form[ \t]+(?P<form>\d{1,2}-[a-z]{1,2}(?:405)?|[sf]-\d{1,2}|def[ \t]+14a|n-csrs?)(?P<amended>/a)?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
# the note under the registrant's name: "(Exact name of registrant as specified in its charter)"
_REGISTRANT_NOTE = re.compile(r"^\s*\(\s*exact\s+name\s+of\s+(?:the\s+)?registrants?\b", re.IGNORECASE | re.MULTILINE)
# where covers without that note put the name: on the line after the file number (Microsoft's)
_FILE_NUMBER = re.compile(r"^.*\bcommission\s+file\s+(?:number|no\b).*$", re.IGNORECASE | re.MULTILINE)
_LETTERS = re.compile(r"[^\W\d_]")
# a cover's rules of underscores, which text extraction can run into the form's or the name's line ("____ FORM 10-K")
_RULE = re.compile(r"_{3,}")
_NAME_CHARS = 100


@dataclass(frozen=True)
class FilingCover:
    company: str
    form: str
    period: str  # "quarterly period ended April 1, 2023"; "" when the cover names none

    @property
    def title(self) -> str:
        return ", ".join(part for part in (self.company, f"Form {self.form}", self.period) if part)


def filing_cover(doc: LoadedDocument) -> FilingCover | None:
    """The cover of a filing to a securities commission among the document's first pages: its form on a line of its
    own and the registrant's name (above the note naming it, else after the file number). None for any other
    document, or a cover whose registrant cannot be read."""
    for page in doc.pages[:FILING_PAGES]:
        text = _RULE.sub("\n", page.text)
        form = _FORM_LINE.search(text)
        if form is None or not _COMMISSION.search(text):
            continue
        company = _registrant(text)
        if company is None:
            return None
        kind = " ".join(form.group("form").upper().split()) + ("/A" if form.group("amended") else "")
        period = filing_period(doc)
        ended = f"{period[0]} ended {period[1]:%B} {period[1].day}, {period[1].year}" if period else ""
        return FilingCover(company, kind, ended)
    return None


def _registrant(text: str) -> str | None:
    note = _REGISTRANT_NOTE.search(text)
    if note is not None:
        above = [line for line in text[: note.start()].splitlines() if len(_LETTERS.findall(line)) >= 2]
        return _name(above[-1]) if above else None
    number = _FILE_NUMBER.search(text)
    if number is not None:
        below = [line for line in text[number.end() :].splitlines() if len(_LETTERS.findall(line)) >= 2]
        return _name(below[0]) if below else None
    return None


def _name(line: str) -> str | None:
    """A registrant's name as a title shows it (an all-capitals name in capitalised words, "3M" as it is); None for
    a line that is not a name (a note in brackets, the file number, a long sentence)."""
    name = " ".join(line.split()).strip(" ,")
    if not name or name.startswith("(") or len(name) > _NAME_CHARS or _FILE_NUMBER.match(name):
        return None
    if not name.isupper():
        return name
    return " ".join(word if word[0].isdigit() else word.capitalize() for word in name.split())
