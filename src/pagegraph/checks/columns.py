"""Which column of a table row a value stands in. A reader that takes the wrong column of a row (the Physics score
for a Chemistry question, the 27-inch model's weight for the 32-inch one) states a number the page does hold, for
another thing than the one asked. Where a question names some of a table's columns and not others
(`asked_columns`, as the answer models read the row), a value the row states only outside them answers another
question. Read without a model; a line of years over a text-layer table is the period check's (`checks.periods`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pagegraph.checks.values import Value, value_in
from pagegraph.config import ReadingKnobs
from pagegraph.retrievers.highlights import asked_columns
from pagegraph.text.tables import table_readings


@dataclass(frozen=True)
class OtherColumn:
    """The values the answer took from columns of a row the question does not name, and the row read in those it
    names."""

    values: list[Value]
    asked_reading: str


def other_columns(
    values: Sequence[Value], question: str, page_text: str, at: int, reading: ReadingKnobs
) -> OtherColumn:
    """The values that the Markdown table row holding offset `at` of `page_text` states only in columns the question
    does not name, when it names some of the table's columns and not others; none otherwise."""
    start = page_text.rfind("\n", 0, at) + 1
    end = page_text.find("\n", at)
    end = len(page_text) if end < 0 else end
    if not page_text.startswith("|", start):
        return OtherColumn([], "")
    # the page read up to the row: its last reading is the row's, under its table's headings
    asked = table_readings(page_text[:end], columns=asked_columns(question, reading))[0].rsplit("\n", 1)[-1]
    row = page_text[start:end]
    outside = [value for value in values if value_in(value, row) and not value_in(value, asked)]
    return OtherColumn(outside, asked if outside else "")
