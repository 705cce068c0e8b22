"""Pages a question names ("the figure on page 17", "pages three and four", "the cover", "the last page", "Figure
4"), found in a document.

A reader names the number printed on the page, which often differs from the page's place in the file (a cover and
a table of contents before page 1). A named number N stands for the physical page N and for the page printed N:
the page whose label (the PDF's own page labels) is N, or, in a document that defines no labels, the page whose
first or last lines print N, found through the offset between physical and printed numbers that most pages agree on.
A named figure or table is the page whose caption starts a line with it ("Figure 4:", "Fig. 4", "Table 2").

A reference can also be absent: a PDF has no page 400 among its 151, and a paper that numbers its figures 1 to 6
has no Figure 7. A question naming either cannot be answered from that document (nodes.gate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pagegraph.config import PageRules
from pagegraph.state.documents import Page, SourceType
from pagegraph.store.index import Index
from pagegraph.store.page_numbers import printed_numbers

_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_NUMBER = r"\d{1,4}|" + "|".join(_WORDS)
_PAGE_REFERENCE = re.compile(
    rf"\b(?:pages?|pp?\.|slides?)\s*({_NUMBER})\b(?:\s*(?:-|–|to|and|&)\s*({_NUMBER})\b)?", re.IGNORECASE
)
_ORDINAL_PAGE = re.compile(rf"\b({'|'.join(_ORDINALS)}|last|final)\s+(?:page|slide)s?\b", re.IGNORECASE)
_FRONT_COVER = re.compile(r"\b(?:the|front)\s+cover\b|\b(?:cover|front|title)\s+page\b", re.IGNORECASE)
_BACK_COVER = re.compile(r"\bback\s+cover\b", re.IGNORECASE)
_CAPTION_REFERENCE = re.compile(r"\b(fig(?:ure)?s?\.?|tables?)\s*(\d{1,3})\b", re.IGNORECASE)
_CAPTION_LABELS = {"figure": r"(?:figure|fig\.?)", "table": r"table"}
# "Figure 7", "Fig. 7b": the numbers a document writes of a kind, sub-figures included
_NUMBERED = {
    kind: re.compile(rf"\b{label}\s*(\d{{1,3}})(?!\d)", re.IGNORECASE) for kind, label in _CAPTION_LABELS.items()
}
LAST = -1


@dataclass(frozen=True)
class PageReferences:
    """What a question names: page numbers (LAST: the last page) and captions such as ("figure", 4)."""

    numbers: list[int] = field(default_factory=list)
    captions: list[tuple[str, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.numbers or self.captions)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _WORDS.index(text.lower()) + 1


def page_references(question: str, rules: PageRules) -> PageReferences:
    """The pages and captions the question names, in its order; a page range counts each of its pages (at most
    `rules.max_named_pages` in all; a longer range counts its ends)."""
    most = rules.max_named_pages
    numbers: list[int] = []
    for match in _PAGE_REFERENCE.finditer(question):
        first = _number(match.group(1))
        last = _number(match.group(2)) if match.group(2) else first
        numbers.extend(range(first, last + 1) if first <= last <= first + most else (first, last))
    for match in _ORDINAL_PAGE.finditer(question):
        word = match.group(1).lower()
        numbers.append(_ORDINALS.index(word) + 1 if word in _ORDINALS else LAST)
    if _FRONT_COVER.search(question):
        numbers.append(1)
    if _BACK_COVER.search(question):
        numbers.append(LAST)
    captions = [
        ("figure" if label.lower().startswith("fig") else "table", int(number))
        for label, number in _CAPTION_REFERENCE.findall(question)
    ]
    return PageReferences(
        [n for i, n in enumerate(numbers) if n != 0 and n not in numbers[:i]][:most],
        list(dict.fromkeys(captions)),
    )


def caption_pages(pages: list[Page], kind: str, number: int) -> list[int]:
    """The pages where a line starts with the caption ("Figure 4", "Fig. 4", "Table 4")."""
    caption = re.compile(rf"^\s*{_CAPTION_LABELS[kind]}\s*{number}\b", re.IGNORECASE | re.MULTILINE)
    return [page.number for page in pages if caption.search(page.text)]


def named_pages(pages: list[Page], references: PageReferences, rules: PageRules) -> list[int]:
    """The physical pages the references name in a document with these pages, without repeats: each number's
    physical page, then the page printed with it (`printed_numbers`); then the captions' pages."""
    count = len(pages)
    by_printed = {label: number for number, label in printed_numbers(pages, rules.printed_offset_support).items()}
    found: list[int] = []
    for n in references.numbers:
        printed = None if n == LAST else by_printed.get(str(n))
        for page in (count if n == LAST else n, printed):
            if page is not None and 1 <= page <= count and page not in found:
                found.append(page)
    for kind, number in references.captions:
        found.extend(page for page in caption_pages(pages, kind, number) if page not in found)
    return found


def absent_references(pages: list[Page], references: PageReferences, rules: PageRules, *, paged: bool) -> list[str]:
    """What the references name that a document with these pages lacks, as "page 400" or "Figure 7":
    - in a `paged` document (a PDF; other files' page breaks are the writer's, not the reader's), a number that
      is neither a physical nor a printed page of it;
    - a figure or table number its text never writes, in a document that writes numbers of that kind (one that
      numbers none may show its figures as pictures, captions and all)."""
    absent = []
    if paged:
        absent = [
            "the last page" if n == LAST else f"page {n}"
            for n in references.numbers
            if not named_pages(pages, PageReferences(numbers=[n]), rules)
        ]
    text = "\n".join(page.text for page in pages)
    for kind, number in references.captions:
        numbered = {int(n) for n in _NUMBERED[kind].findall(text)}
        if numbered and number not in numbered:
            absent.append(f"{kind.capitalize()} {number}")
    return absent


def absent_from_documents(index: Index, question: str, documents: list[str], rules: PageRules) -> list[str]:
    """The pages, figures and tables the question names that none of `documents` (names) has."""
    references = page_references(question, rules)
    profiles = index.profiles
    rows = [profiles.row_named[name] for name in documents if name in profiles.row_named]
    if not references or not rows:
        return []
    lacking = [
        absent_references(index.pages(record.id), references, rules, paged=record.source_type == SourceType.PDF)
        for record in (profiles.documents[row] for row in rows)
    ]
    return [name for name in lacking[0] if all(name in others for others in lacking[1:])]
