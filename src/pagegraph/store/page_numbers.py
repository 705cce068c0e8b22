"""The page numbers a reader sees printed on a document's pages, which often differ from the pages' places in the
file (a cover and a table of contents before page 1). A PDF's own page labels (`/PageLabels`, read at ingest) name
them where it defines them; else the numbers that start or end the first or last lines of the pages, where most of
them agree on one offset from the physical number. A page is given a printed number only where it is its own: the
page prints it, or it lies between two pages that print numbers of the same sequence (a number lost to a picture or a
full-page table). Numbers with a letter prefix ("A-2", an appendix's pages) are a sequence of their own, shown as
printed: read as plain numbers they would name other pages."""

from __future__ import annotations

import re
from collections import Counter

from pagegraph.state.documents import Page

# a number, or an appendix's "A-2", alone at the start or the end of a line
_EDGE_NUMBER = re.compile(r"^\s*(?:([A-Z]{1,3})-)?(\d{1,4})\b|\b(?:([A-Z]{1,3})-)?(\d{1,4})\s*$")
_EDGE_LINES = 2


def _edge_numbers(text: str) -> set[tuple[str, int]]:
    """(prefix, number) of each number at an edge of the page's first and last lines; the prefix is "" for a plain
    number."""
    lines = [line for line in text.splitlines() if line.strip()]
    edges = lines[:_EDGE_LINES] + lines[-_EDGE_LINES:]
    found = set()
    for line in edges:
        for start_prefix, start, end_prefix, end in _EDGE_NUMBER.findall(line):
            found.add((start_prefix or end_prefix, int(start or end)))
    return found


def printed_offset(pages: list[Page], min_support: float, prefix: str = "") -> int | None:
    """Physical minus printed page number that most pages agree on, from the numbers (with `prefix`) at the start or
    end of their first and last lines; None when fewer than `min_support` of the pages (and fewer than 2) agree. A
    prefixed sequence (an appendix's "A-1", "A-2") counts against the pages that print that prefix."""
    return _offset({page.number: _edge_numbers(page.text) for page in pages}, min_support, prefix)


def _offset(edges: dict[int, set[tuple[str, int]]], min_support: float, prefix: str) -> int | None:
    """`printed_offset` from each page's edge numbers (page number → `_edge_numbers`)."""
    offsets = Counter(number - n for number, found in edges.items() for p, n in found if p == prefix and n <= number)
    if not offsets:
        return None
    offset, support = offsets.most_common(1)[0]
    counted = len(edges) if not prefix else sum(any(p == prefix for p, _ in found) for found in edges.values())
    return offset if support >= max(2, min_support * counted) else None


def _sequence(edges: dict[int, set[tuple[str, int]]], min_support: float, prefix: str) -> dict[int, str]:
    """The pages of one printed sequence with their printed numbers: those printing the number the sequence's
    offset gives them, and the pages between two such."""
    offset = _offset(edges, min_support, prefix)
    if offset is None:
        return {}
    own = [number for number, found in edges.items() if (prefix, number - offset) in found]
    if not own:
        return {}
    return {
        number: f"{prefix}-{number - offset}" if prefix else str(number - offset)
        for number in edges
        if min(own) <= number <= max(own)
    }


def printed_numbers(pages: list[Page], min_support: float) -> dict[int, str]:
    """Physical page number → the number printed on it, for the pages whose printed number differs from their place
    in the file: the document's page labels where it has them, else the printed sequences (`printed_offset`),
    prefixed ones first; empty when the two agree everywhere or nothing is printed."""
    labels = {page.number: page.label for page in pages if page.label}
    if not labels:
        edges = {page.number: _edge_numbers(page.text) for page in pages}
        prefixes = Counter(p for found in edges.values() for p in {p for p, _ in found if p})
        for prefix in [*(p for p, count in prefixes.most_common() if count >= 2), ""]:
            for number, label in _sequence(edges, min_support, prefix).items():
                labels.setdefault(number, label)
    return {number: label for number, label in labels.items() if label != str(number)}
