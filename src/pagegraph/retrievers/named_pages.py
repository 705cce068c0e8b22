"""Pages a question names ("the figure on page 17", "slides 4 and 5", "pages 51-53"), found in a document.

A reader names the number printed on the page, which often differs from the page's place in the file (a cover and
a table of contents before page 1). A named number N stands for the physical page N and for the page printed N:
the page whose label (the PDF's own page labels) is N, or, in a document that defines no labels, the page whose
first or last lines print N, found through the offset between physical and printed numbers that most pages agree on.
"""

from __future__ import annotations

import re
from collections import Counter

from pagegraph.state.documents import Page

_PAGE_REFERENCE = re.compile(
    r"\b(?:pages?|pp?\.|slides?)\s*(\d{1,4})(?:\s*(?:-|–|to|and|&)\s*(\d{1,4}))?", re.IGNORECASE
)
_EDGE_NUMBER = re.compile(r"^\s*(\d{1,4})\b|\b(\d{1,4})\s*$")
MAX_NAMED_PAGES = 10
_EDGE_LINES = 2
# The share of pages that must print their number at the agreed offset for the offset to be trusted.
MIN_OFFSET_SUPPORT = 0.3


def named_page_numbers(question: str) -> list[int]:
    """The page numbers the question names, in its order; a range counts each page of it (at most
    MAX_NAMED_PAGES in all)."""
    numbers: list[int] = []
    for match in _PAGE_REFERENCE.finditer(question):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        span = range(first, last + 1) if first <= last <= first + MAX_NAMED_PAGES else (first, last)
        numbers.extend(n for n in span if n >= 1 and n not in numbers)
    return numbers[:MAX_NAMED_PAGES]


def _edge_numbers(text: str) -> set[int]:
    lines = [line for line in text.splitlines() if line.strip()]
    edges = lines[:_EDGE_LINES] + lines[-_EDGE_LINES:]
    return {int(a or b) for line in edges for a, b in _EDGE_NUMBER.findall(line)}


def printed_offset(pages: list[Page]) -> int | None:
    """Physical minus printed page number that most pages agree on, from the numbers at the start or end of their
    first and last lines; None when too few pages agree."""
    offsets = Counter(page.number - n for page in pages for n in _edge_numbers(page.text) if n <= page.number)
    if not offsets:
        return None
    offset, support = offsets.most_common(1)[0]
    return offset if support >= max(2, MIN_OFFSET_SUPPORT * len(pages)) else None


def physical_pages(pages: list[Page], numbers: list[int]) -> list[int]:
    """The physical pages that `numbers` name in a document with these pages: each number's physical page, then
    its printed page (by label, else by the printed offset), without repeats."""
    count = len(pages)
    by_label = {page.label: page.number for page in pages if page.label}
    offset = None if by_label else printed_offset(pages)
    found: list[int] = []
    for n in numbers:
        printed = by_label.get(str(n)) if by_label else (n + offset if offset is not None else None)
        for page in (n, printed):
            if page is not None and 1 <= page <= count and page not in found:
                found.append(page)
    return found
