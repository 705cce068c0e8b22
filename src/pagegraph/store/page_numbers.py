"""The page numbers a reader sees printed on a document's pages, which often differ from the pages' places in the
file (a cover and a table of contents before page 1). A PDF's own page labels (`/PageLabels`, read at ingest) name
them where it defines them; else the numbers that start or end the first or last lines of the pages, where most of
them agree on one offset from the physical number."""

from __future__ import annotations

import re
from collections import Counter

from pagegraph.state.documents import Page

_EDGE_NUMBER = re.compile(r"^\s*(\d{1,4})\b|\b(\d{1,4})\s*$")
_EDGE_LINES = 2


def _edge_numbers(text: str) -> set[int]:
    lines = [line for line in text.splitlines() if line.strip()]
    edges = lines[:_EDGE_LINES] + lines[-_EDGE_LINES:]
    return {int(a or b) for line in edges for a, b in _EDGE_NUMBER.findall(line)}


def printed_offset(pages: list[Page], min_support: float) -> int | None:
    """Physical minus printed page number that most pages agree on, from the numbers at the start or end of their
    first and last lines; None when fewer than `min_support` of the pages (and fewer than 2) agree."""
    offsets = Counter(page.number - n for page in pages for n in _edge_numbers(page.text) if n <= page.number)
    if not offsets:
        return None
    offset, support = offsets.most_common(1)[0]
    return offset if support >= max(2, min_support * len(pages)) else None


def printed_numbers(pages: list[Page], min_support: float) -> dict[int, str]:
    """Physical page number → the number printed on it, for the pages whose printed number differs from their place
    in the file: the document's page labels where it has them, else its printed offset (`printed_offset`); empty
    when the two agree everywhere or nothing is printed."""
    labels = {page.number: page.label for page in pages if page.label}
    if not labels:
        offset = printed_offset(pages, min_support) or 0
        labels = {page.number: str(page.number - offset) for page in pages if page.number > offset}
    return {number: label for number, label in labels.items() if label != str(number)}
