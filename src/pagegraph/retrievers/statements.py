"""A financial report's primary statements, for questions that ask for a financial metric.

A ratio, margin, turnover or return is computed from line items on the balance sheet, the income statement and the
cash flow statement, pages that share few words with the question: "inventory turnover" needs cost of sales and
inventories, neither of which the question writes. When a question asks for such a metric and its document holds
those statements, the first page of each is searched first. A statement's page is one whose first lines name it and
that holds many numbers (an index of the statements names them too, with a few page numbers).
"""

from __future__ import annotations

import re

from pagegraph.config import PageRules
from pagegraph.state.documents import Page

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
_STATEMENTS = (
    re.compile(rf"balance\s+sheets?|{_OF}financial\s+position", re.IGNORECASE),
    re.compile(rf"{_OF}(?:operations|income|earnings)", re.IGNORECASE),
    re.compile(rf"{_OF}cash\s+flows?", re.IGNORECASE),
)
_NUMBER = re.compile(r"\d[\d,.]*")


def asks_for_metric(question: str) -> bool:
    """Whether the question names a financial metric; words joined by underscores ("cash_ratio") count apart."""
    return bool(_METRIC.search(question.replace("_", " ")))


def statement_pages(pages: list[Page], rules: PageRules) -> list[int]:
    """The first page of each primary statement (balance sheet, income statement, cash flow statement), in that
    order; none unless at least `rules.statement_min_pages` are found (a document that is not a financial
    report)."""
    found = []
    for statement in _STATEMENTS:
        first = next(
            (
                page.number
                for page in pages
                if statement.search(page.text[: rules.statement_title_chars])
                and len(_NUMBER.findall(page.text)) >= rules.statement_min_numbers
            ),
            None,
        )
        if first is not None:
            found.append(first)
    return found if len(found) >= rules.statement_min_pages else []
