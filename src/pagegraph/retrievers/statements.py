"""A financial report's primary statements, for questions that ask for a financial metric, name a statement or
name one of its line items.

A ratio, margin, turnover or return is computed from line items on the balance sheet, the income statement and the
cash flow statement, pages that share few words with the question: "inventory turnover" needs cost of sales and
inventories, neither of which the question writes. When a question asks for such a metric and its document holds
those statements, the first page of each is searched first. A question that names a statement ("as shown in the cash
flow statement") gets that statement's first page, and one that names a line item of a statement's first page
("What goodwill did Acme have?", the row "Goodwill 1,250 1,180") gets the page whose row it names in most words: a
statement page is a grid of figures under short labels, which keyword and vector search rank below the prose and
the notes that discuss the same item.

A statement's first page is titled with it (a line that is its name and a few words more, "Consolidated Statements of
Cash Flows", "Cash flow statement for the year ended June 30, 2024", "Income Statements") and holds many numbers. An
index of contents names several statements, heads its page numbers with "Page" or ends a statement's line with the
page it is on ("F-4"); a sentence that mentions a statement is longer than a title.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from pagegraph.config import PageRules
from pagegraph.state.documents import Page
from pagegraph.text.dates import MONTHS
from pagegraph.text.words import singular, tokenize

_METRIC = re.compile(
    r"\b(?:ratios?|margins?|turnover|returns? on|ebitda|ebit|working capital|per share|eps|capital employed"
    r"|invested capital|capitali[sz]ation|effective tax rate|cash conversion|days (?:sales|payables|inventory)"
    r"|coverage|leverage|liquidity|payout)\b"
    # a ratio named "A to B" of two line items: "interest to average total debt", "cash flow to current liabilities"
    r"|\b(?:income|interest|debt|assets|equity|liabilities|sales|revenues?|cash flow|profit|earnings|expenses?)"
    r"\s+to\s+(?:average\s+)?(?:total\s+|current\s+)?(?:assets|equity|debt|liabilities|sales|revenues?)\b",
    re.IGNORECASE,
)
_OF = r"statements?\s+of\s+(?:consolidated\s+)?"
# each statement by its titles, which are also what a question calls it ("the cash flow statement")
_STATEMENTS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"balance\s+sheets?|{_OF}financial\s+position",
        rf"{_OF}(?:operations|income|earnings)|income\s+statements?|profit\s+(?:and|&)\s+loss|\bp\s?&\s?l\b",
        rf"{_OF}cash\s+flows?|cash\s+flows?\s+statements?",
    )
)
# a word every statement's title holds one of
_TITLE_WORDS = ("balance", "statement", "profit", "p&l", "p & l")
_NUMBER = re.compile(r"\d[\d,.]*")
# an index of contents heads its column of page numbers, or itself, with a line of one word
_CONTENTS_HEADING = re.compile(r"^\s*(?:pages?|index)\s*$", re.IGNORECASE | re.MULTILINE)
# or ends an entry with the page it points at: a lettered page ("F-4") or a number after a dot leader ("..... 45");
# a title's own line may end with a year, so a bare number is no page reference
_PAGE_REFERENCE = re.compile(r"(?:\b[A-Z]{1,2}\s?-\s?\d{1,3}|(?:\.\s?){3,}\s*\d{1,4})\s*$")
_TABLE_ROW = re.compile(r"^\s*\|([^|]*)\|(.*)$")
# the label of a row ends where its details start: "Common stock, $0.10 par value: ..." is the row "Common stock"
_LABEL_END = re.compile(r"[,:;(]")
# words that alone name no line item ("Total", "Net", "Diluted"); a label holding a month heads columns of dates
_GENERIC = frozenset(
    "total net other less basic diluted per share current gross three six nine twelve million thousand billion "
    "except amount unaudited note fiscal year quarter month week ended ending period dollar".split()
)


class StatementPage(NamedTuple):
    """A statement's first page: its number, and the labels of its rows of figures, each as its singular words."""

    number: int
    rows: tuple[tuple[str, ...], ...]


def asks_for_metric(question: str) -> bool:
    """Whether the question names a financial metric; words joined by underscores ("cash_ratio") count apart."""
    return bool(_METRIC.search(question.replace("_", " ")))


def statement_pages(pages: list[Page], rules: PageRules) -> dict[int, StatementPage]:
    """Each primary statement's first page, by its place in `_STATEMENTS` (0 the balance sheet, 1 the income
    statement, 2 the cash flow statement): the first page whose opening is titled with that statement alone, that
    holds many numbers and is not an index of contents; none unless at least `rules.statement_min_pages` are found
    (a document that is not a financial report)."""
    found: dict[int, Page] = {}
    for page in pages:
        head = page.text[: rules.statement_title_chars]
        # the title patterns only read the lines that hold a word of a title: most lines of most pages hold none
        if not any(word in head.lower() for word in _TITLE_WORDS):
            continue
        lines = [line for line in head.splitlines() if any(word in line.lower() for word in _TITLE_WORDS)]
        named = [kind for kind, statement in enumerate(_STATEMENTS) if _titled(statement, lines, rules)]
        if (
            len(named) == 1
            and not _CONTENTS_HEADING.search(head)
            and not any(_PAGE_REFERENCE.search(line) and any(s.search(line) for s in _STATEMENTS) for line in lines)
            and named[0] not in found
            and len(_NUMBER.findall(page.text)) >= rules.statement_min_numbers
        ):
            found[named[0]] = page
    if len(found) < rules.statement_min_pages:
        return {}
    return {kind: StatementPage(found[kind].number, _row_labels(found[kind].text)) for kind in sorted(found)}


def _titled(statement: re.Pattern[str], lines: list[str], rules: PageRules) -> bool:
    """Whether one of a page's opening lines is the statement's title: its name and at most
    `rules.statement_title_words` words more ("for the year ended June 30, 2024"), not a sentence that mentions it."""
    return any(
        len(line.split()) - len(match.group().split()) <= rules.statement_title_words
        for line in lines
        for match in statement.finditer(line)
    )


def asked_statement_pages(question: str, found: dict[int, StatementPage]) -> list[int]:
    """The statement pages a question asks for, of a report's `statement_pages`: every statement's first page for a
    financial metric; else the first pages of the statements it names, then of those with a row it names (the rows
    it names in most words)."""
    if asks_for_metric(question):
        return [page.number for page in found.values()]
    named = [page.number for kind, page in found.items() if _STATEMENTS[kind].search(question)]
    words = [singular(word) for word in tokenize(question)]
    fullest = {
        page.number: max((len(row) for row in page.rows if _holds(words, row)), default=0) for page in found.values()
    }
    most = max(fullest.values(), default=0)
    rows = [number for number, length in fullest.items() if most and length == most]
    return list(dict.fromkeys(named + rows))


def _row_labels(text: str) -> tuple[tuple[str, ...], ...]:
    """The labels of a page's rows of figures: a table row's first cell, or a line's text before its first number,
    where a number follows; labels that name no line item are left out."""
    labels = []
    for line in text.splitlines():
        if row := _TABLE_ROW.match(line):
            label, rest = row.group(1), row.group(2)
        elif number := _NUMBER.search(line):
            label, rest = line[: number.start()], line[number.start() :]
        else:
            continue
        words = tuple(singular(word) for word in tokenize(_LABEL_END.split(label, maxsplit=1)[0]))
        if (
            _NUMBER.search(rest)
            and any(word not in _GENERIC and not word.isdigit() for word in words)
            and not any(word in MONTHS for word in words)
        ):
            labels.append(words)
    return tuple(labels)


def _holds(words: list[str], label: tuple[str, ...]) -> bool:
    """Whether `label`'s words stand together, in order, in `words`."""
    size = len(label)
    return any(tuple(words[i : i + size]) == label for i in range(len(words) - size + 1))
