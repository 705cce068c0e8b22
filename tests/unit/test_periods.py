"""Which period a table row's number stands for: the row's numbers in order under the nearest heading above that
names as many periods, against the one year the question names."""

from __future__ import annotations

from pagegraph.checks.periods import (
    asked_year,
    heading_years,
    other_periods,
    paragraph_year,
    row_cells,
    stated_for_another_year,
)
from pagegraph.checks.values import extract_values
from pagegraph.config import ConfidenceKnobs

LINES = ConfidenceKnobs().period_heading_lines

# a balance sheet as a PDF's text layer gives it: the heading one date part a line, then the table
BALANCE_SHEET = """CONSOLIDATED BALANCE SHEETS
(amounts in millions, except par value and share data)
August 29,
2021
August 30,
2020
ASSETS
| Total current assets | 29,505 |  | 28,120 |  |
| Noncontrolling interests | 514 |  | 421 |  |
| TOTAL EQUITY | 18,078 |  | 18,705 |  |
"""
INCOME = """Year ended December 31,
2015 2014 2013
Revenues $ 6,779,511 $ 5,504,656 $ 4,374,562
Technology and development 650,788 472,321 378,769
"""
EQUITY_2021 = "What is total equity, including noncontrolling interests, for the company in FY2021?"


def at(text: str, row: str) -> int:
    return text.index(row) + 2


def test_the_year_a_question_names() -> None:
    assert asked_year(EQUITY_2021) == 2021
    assert asked_year("What goodwill was there for the fiscal year ending January 28, 2023?") == 2023
    assert asked_year("What was the dividend between 2002 and 2003?") is None  # two years: no one period
    assert asked_year("What is total equity?") is None


def test_a_heading_is_found_above_the_row_and_read_in_order() -> None:
    assert heading_years(BALANCE_SHEET, BALANCE_SHEET.index("| TOTAL EQUITY"), LINES) == [2021, 2020]
    assert heading_years(INCOME, INCOME.index("Technology"), LINES) == [2015, 2014, 2013]
    markdown = "|  | 52 Weeks Ended August 29, 2021 | 52 Weeks Ended August 30, 2020 |\n| --- | --- | --- |\n| Sales | 1 | 2 |\n"
    assert heading_years(markdown, markdown.index("| Sales"), LINES) == [2021, 2020]
    assert heading_years("Net sales rose.\nTotal 12 14\n", 16, LINES) == []
    cash_flows = "YEAR ENDED MAY 31,\n(Dollars in millions) 2021 2020 2019\nCash provided by operations:\nNet income $ 5,727 $ 2,539 $ 4,029\n"
    assert heading_years(cash_flows, cash_flows.index("Net income"), LINES) == [2021, 2020, 2019]
    asked = "What was the net income in fiscal 2017?"
    absent = other_periods(extract_values("$4,029"), asked, cash_flows, at(cash_flows, "Net income"), LINES)
    assert [(o.period, o.asked, o.asked_cells) for o in absent] == [(2019, 2017, [])], "no column for 2017"


def test_a_row_s_numbers_are_its_cells_after_the_label() -> None:
    assert row_cells("| TOTAL EQUITY | 18,078 |  | 18,705 |  |") == ["18,078", "18,705"]
    assert row_cells("| Cash and cash equivalents |  | $11,258 |  | $12,277 |") == ["$11,258", "$12,277"]
    assert row_cells("Technology and development 650,788 472,321 378,769") == ["650,788", "472,321", "378,769"]
    assert row_cells("Revenues $ 6,779,511 $ 5,504,656 $ 4,374,562") == ["$6,779,511", "$5,504,656", "$4,374,562"]
    assert row_cells("Debt due — — 198,109 ($1,2)") == ["—", "—", "198,109", "($1,2)"], "a dash is an empty cell"
    assert row_cells("2015 2014 2013") == []  # numbers alone: no labelled row


def test_a_value_from_another_year_s_column_is_named_with_the_asked_year_s() -> None:
    (other,) = other_periods(
        extract_values("$18,705"), EQUITY_2021, BALANCE_SHEET, at(BALANCE_SHEET, "TOTAL EQUITY"), LINES
    )
    assert (other.value.text, other.period, other.asked, other.asked_cells) == ("$18,705", 2020, 2021, ["18,078"])
    assert (
        other_periods(extract_values("$18,078"), EQUITY_2021, BALANCE_SHEET, at(BALANCE_SHEET, "TOTAL EQUITY"), LINES)
        == []
    )
    question = "What was technology and development expense in FY 2014?"
    row = INCOME.index("Technology")
    assert other_periods(extract_values("472,321"), question, INCOME, row, LINES) == []
    assert [o.asked_cells for o in other_periods(extract_values("650,788"), question, INCOME, row, LINES)] == [
        ["472,321"]
    ]
    segment = "2015 2014 2015 vs. 2014\nRevenues $ 1,953,435 $ 1,308,061 $ 645,374 49 %\n"
    assert heading_years(segment, segment.index("Revenues"), LINES) == [2015, 2014, 2015, 2014]
    (other,) = other_periods(extract_values("$1,953,435"), "Revenues in 2016?", segment, segment.index("Rev"), LINES)
    assert (other.period, other.asked_cells) == (2015, []), "a change column's years count as columns"
    absent = other_periods(extract_values("650,788"), "What was it in 2016?", INCOME, row, LINES)
    assert [(o.period, o.asked, o.asked_cells) for o in absent] == [(2015, 2016, [])], "the row has no 2016 column"


def test_a_quarterly_report_s_repeated_years_are_read_column_by_column() -> None:
    quarter = """Three Months Ended Nine Months Ended
July 1,
2023
June 25,
2022
July 1,
2023
June 25,
2022
| Total net sales | 81,797 |  | 82,959 |  | 282,457 |  | 304,182 |  |
"""
    row = at(quarter, "Total net sales")
    question = "What were Apple's total net sales in the quarter ended July 1, 2023?"
    (other,) = other_periods(extract_values("$82,959 million"), question, quarter, row, LINES)
    assert (other.period, other.asked_cells) == (2022, ["81,797", "282,457"])
    assert other_periods(extract_values("$81,797 million"), question, quarter, row, LINES) == []
    assert other_periods(extract_values("$282,457 million"), question, quarter, row, LINES) == []


def test_no_period_is_judged_without_a_heading_that_fits_the_row() -> None:
    row = at(BALANCE_SHEET, "TOTAL EQUITY")
    assert other_periods(extract_values("$18,705"), "What is total equity?", BALANCE_SHEET, row, LINES) == []
    changes = "2015 2014\nTechnology and development 650,788 472,321 178,467 38%\n"
    question = "What was technology and development expense in 2015?"
    assert (
        other_periods(extract_values("472,321"), question, changes, changes.index("Tech"), LINES) == []
    )  # 4 numbers, 2 years
    same = "2021 2020\nShares outstanding 441 441\n"
    assert other_periods(extract_values("441"), "How many shares in 2021?", same, same.index("Shares"), LINES) == []


def test_a_sentence_stating_a_value_for_another_year_is_caught_and_a_compared_year_is_not() -> None:
    asked = "What was the revenue in Greater China in fiscal 2022?"
    sentence = "Greater China revenues for fiscal 2021 increased 19%, driven by higher revenues in footwear."
    found = stated_for_another_year(extract_values("19%"), asked, sentence)
    assert [(o.value.text, o.period, o.asked, o.asked_cells) for o in found] == [("19%", 2021, 2022, [])]
    compared = "Revenue rose 12% to $4.1 billion, up from $3.7 billion in 2020."
    assert stated_for_another_year(extract_values("$4.1 billion"), "What was revenue in 2021?", compared) == []
    named = "In fiscal 2022, revenues increased 19% compared with fiscal 2021."
    assert stated_for_another_year(extract_values("19%"), asked, named) == [], "the asked year is named"
    assert stated_for_another_year(extract_values("19%"), "What was the growth?", sentence) == [], "no year asked"
    row = "2022\niPhone $ 51,334 $ 50,570 $ 117,109 $ 122,198"  # a heading's last year above a table's row
    assert stated_for_another_year(extract_values("$51,334"), "What were iPhone net sales in 2023?", row) == []


def test_a_sentence_naming_no_year_is_of_its_paragraph_heading_s_year() -> None:
    page = (
        "GREATER CHINA\n(Dollars in millions) 2021 2020\n| Revenues | $8,290 | $6,679 |\n"
        "FISCAL 2021 COMPARED TO FISCAL 2020\n"
        "On a currency-neutral basis, Greater China revenues for fiscal 2021 increased 19%, driven by higher\n"
        "revenues in all key categories. Currency-neutral footwear revenues increased 19%, driven by growth in\n"
        "all key categories.\n"
    )
    footwear = "Currency-neutral footwear revenues increased 19%, driven by growth in\nall key categories."
    at = page.index(footwear)
    assert paragraph_year(page, at, LINES) == 2021  # the year compared with is not the paragraph's
    asked = "What was NIKE's footwear revenue growth in Greater China in fiscal 2022?"
    found = stated_for_another_year(extract_values("19%"), asked, footwear, paragraph_year(page, at, LINES))
    assert [(o.value.text, o.period, o.asked) for o in found] == [("19%", 2021, 2022)]
    same_year = asked.replace("2022", "2021")
    assert stated_for_another_year(extract_values("19%"), same_year, footwear, 2021) == []
    compared = "Footwear revenues were $5,748 million, up from the prior year."  # it may state the year compared with
    assert stated_for_another_year(extract_values("$5,748 million"), asked, compared, 2021) == []
    # a table between the sentence and any heading: no paragraph year; a line of a reference is no heading
    assert paragraph_year(page, page.index("| Revenues"), LINES) is None
    cited = "Proceedings of the 2020 Conference on Empirical Methods\nThe model improves recall by 4%.\n"
    assert paragraph_year(cited, cited.index("The model"), LINES) is None
