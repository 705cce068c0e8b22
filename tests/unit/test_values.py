"""The value normaliser and the model-free value check: the numbers, amounts, percentages, dates and names an
answer states, looked up in the sentences it cites."""

from __future__ import annotations

from pagegraph.checks.values import (
    asks_computation,
    check_values,
    extract_values,
    own_values,
    restates,
    same_value,
    value_in,
)
from pagegraph.config import ReadingKnobs


def keys(text: str) -> list[str]:
    return [value.key() for value in extract_values(text)]


def one(text: str):
    (value,) = extract_values(text, names=False)
    return value


def test_numbers_in_words_and_digits_are_the_same_value() -> None:
    assert keys("five meetings") == ["5"]
    assert keys("twenty-one days and two hundred and five pages") == ["21", "205"]
    assert keys("a dozen units") == ["12"]
    assert same_value(one("5 meetings"), one("Five meetings"))
    assert not same_value(one("10 meetings"), one("five meetings"))


def test_thousands_separators_decimals_and_scale_words() -> None:
    assert keys("1,200 staff") == ["1200"]
    assert keys("$1.2 million") == ["money 1,200,000"]
    assert keys("USD 3bn") == ["money 3,000,000,000"]
    assert keys("Rs. 3,02,16,492.00 in all") == ["money 30,216,492"]  # Indian grouping
    assert keys("its 10-Q and 8-K filings list 3 risks") == ["3"]  # a form's designation is no value
    assert value_in(one("3,02,16,492.00"), "a dividend of 30216492.00")
    assert value_in(one("1,200"), "a total of 1200 staff")
    assert value_in(one("$1.2 million"), "revenue was $1,234,567")  # the answer rounds: 1.2 million
    assert not value_in(one("$1.3 million"), "revenue was $1,234,567")
    assert value_in(one("$1,234 million"), "Revenue | 1,234 | 1,100")  # a table 'in millions'
    assert not value_in(one("10"), "twelve members")  # an integer is exact


def test_percentages_and_fractions() -> None:
    assert keys("up 12% or 3 percent, 4 per cent") == ["12%", "3%", "4%"]
    assert value_in(one("12%"), "a share of 0.12 of the total")
    assert value_in(one("12 percent"), "grew by 12%")
    assert not value_in(one("13%"), "grew by 12%")


def test_currency_symbols_and_codes() -> None:
    assert [v.kind for v in extract_values("€4.50, £3, 100 dollars, Rs. 500", names=False)] == ["money"] * 4
    assert value_in(one("$500"), "costs USD 500 a year")
    assert value_in(one("(1,234)"), "a loss of 1,234")  # a statement's parenthesised loss


def test_dates_in_their_usual_forms() -> None:
    assert keys("31st March, 2007") == keys("March 31, 2007") == keys("2007-03-31") == ["2007-03-31"]
    assert keys("in March 2007") == ["2007-03"]
    assert value_in(one("March 2007"), "signed on 31st March, 2007")  # a month matches any of its days
    assert not value_in(one("April 2007"), "signed on 31st March, 2007")
    assert value_in(one("2007"), "the year ended 31 March 2007")  # a year against a date's year
    assert value_in(one("04/03/2021"), "on 4 March 2021") and value_in(one("03/04/2021"), "on 4 March 2021")


def test_identifiers_list_numbers_and_citation_labels_are_not_values() -> None:
    assert keys("Model X5 in Q3") == []
    assert keys("at 500 MHz for a PhD") == ["500"]  # a unit or a word with capitals inside is no name
    assert [v.key() for v in extract_values("1. Open the lid\n2. Press reset", names=False)] == []
    assert [v.key() for v in extract_values("It weighs 98 kg [manual.pdf, p. 7]", names=False)] == ["98"]


def test_an_answer_s_own_values_leave_out_those_the_question_holds() -> None:
    own = own_values("In 2007 there were 5 meetings of the board.", "How many meetings were held in 2007?")
    assert [v.key() for v in own] == ["5"]
    names = own_values("The auditor was Deloitte.", "Who audited Acme in 2007?")
    assert [v.key() for v in names] == ["deloitte"]


GOVERNANCE = (
    "The Board of Directors has 10 members, of whom four are independent. "
    "During the financial year ended 31st March, 2007, five meetings of the Board took place. "
    "The Audit Committee met 4 times during the year."
)
MEETINGS = "How many meetings of the Board were held during the financial year ended 31st March, 2007?"


def test_a_value_is_stated_by_a_cited_sentence_that_names_what_it_counts() -> None:
    wrong = check_values("10 meetings of the Board were held [1].", MEETINGS, [GOVERNANCE], [1], ReadingKnobs())
    assert [v.text for v in wrong.missing] == ["10"]  # 10 counts members, not meetings
    assert wrong.sentence is not None and "five meetings" in wrong.sentence.sentence
    right = check_values("Five meetings of the Board were held [1].", MEETINGS, [GOVERNANCE], [1], ReadingKnobs())
    assert not right.missing and "five meetings" in right.sentence.sentence
    assert right.sentence.offset == GOVERNANCE.index("During")


def test_a_scale_after_a_value_is_how_it_is_written_not_what_it_measures() -> None:
    # the table states its scale once, above the row; the row holding the value never says "millions"
    statement = (
        "Provision for income taxes and effective tax rate were as follows (dollars in millions):\n"
        "Provision for income taxes $ 4,222 $ 5,129 $ 9,847 $ 11,740\n"
    )
    question = (
        "What was the provision for income taxes in the three months ended April 1, 2023, in millions of dollars?"
    )
    found = check_values("$4,222 (in millions of dollars) [1]", question, [statement], [1], ReadingKnobs())
    assert not found.missing and found.sentence is not None and "4,222" in found.sentence.sentence
    invented = check_values("$4,223 (in millions of dollars) [1]", question, [statement], [1], ReadingKnobs())
    assert [v.text for v in invented.missing] == ["$4,223"]


def test_only_the_cited_passages_count_and_citing_none_supports_nothing() -> None:
    other = "The plant employs 1,200 people."
    answer = "The plant employs 1,200 people."
    assert check_values(answer, "How many people work there?", [GOVERNANCE, other], [1], ReadingKnobs()).missing
    assert not check_values(answer, "How many people work there?", [GOVERNANCE, other], [2], ReadingKnobs()).missing
    uncited = check_values(answer, "How many people work there?", [GOVERNANCE, other], [], ReadingKnobs())
    assert uncited.missing and uncited.sentence.sentence == other  # the closest evidence is still shown
    assert check_values("Yes, it is.", "Is it independent?", [GOVERNANCE], [1], ReadingKnobs()).values == []


def test_a_number_is_never_the_same_value_as_a_name() -> None:
    text = "Total assets at Northwind Traders were 59,268."
    written = extract_values(text)  # names included, as a caller may pass them
    name = next(v for v in written if v.kind == "name")
    assert value_in(one("59,268"), text, written)
    assert not same_value(one("59,268"), name) and not same_value(name, one("59,268"))


def test_a_question_asking_for_a_difference_a_ratio_or_a_change_asks_for_a_computation() -> None:
    for question in (
        "How much higher were sales in the second quarter than in the first?",
        "What is the gap between the two age groups?",
        "What is the current ratio in FY2021? Round your answer to two decimal places.",
        "What is the percentage change in revenue from 2019 to 2020?",
        "How many people do the two plants employ combined?",
        "How many times larger is the second data set?",
    ):
        assert asks_computation(question), question
    for question in (
        "How many meetings of the Board were held during the year?",
        "What was the total equity in fiscal 2021?",
        "What are the different models of wheels?",
        "Which signal has the lowest frequency?",
    ):
        assert not asks_computation(question), question


def test_a_word_ending_like_a_currency_keeps_the_number_after_it() -> None:
    assert [v.text for v in extract_values("The pump delivers 42 litres; 991 users, 5 members.")] == ["42", "991", "5"]
    assert [(v.kind, v.number) for v in extract_values("It costs Rs 42.")] == [("money", 42.0)]


def test_a_second_reading_restates_an_answer_only_with_its_values_and_no_other() -> None:
    question = "What share of Republican-leaning independents approved of Trump's job performance?"
    assert restates("About 70% approved [2].", "70%", question)
    assert not restates("64%", "70%", question), "another value of the same sentences"
    assert restates("1 to 2 minutes", "1 minute", "How long should you rest before measuring again?")
    two = "What is the operating temperature range, and how much does the adapter weigh?"
    assert not restates("0°C – 35°C", "0°C – 35°C, 0.7 kg", two), "an answer to one part of two"
    assert restates("$60", "NOT FOUND", "What is the annual fee?") is None, "no value read: no verdict"
    assert restates("Paris", "Paris", "Where is the head office?") is None, "names are not read again"
