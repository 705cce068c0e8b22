"""Months by name, in English: the words dates are written with ("December 31, 2022", "31 Dec 2022"); and the
heading of periods over a paragraph ("Three Months Ended December 31, 2022 Compared with ...")."""

from __future__ import annotations

import re

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
# a month as written in a date, longest name first ("September" before "Sep"), with its abbreviation's dot
MONTH_NAME = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"

YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_WORD = re.compile(r"[^\W\d_]+")
# a paragraph's heading: at most this many words, each capitalised but for these, one of them a period's
_HEADING_WORDS = 16
_HEADING_SMALL_WORDS = frozenset("to of and the with for vs versus in on a an ended ending".split())
_HEADING_PERIOD_WORDS = frozenset("fiscal fy year quarter months weeks ended ending compared".split())


def period_heading_above(text: str, at: int, lines_above: int) -> tuple[int, str] | None:
    """The heading of periods over the paragraph holding offset `at` of `text` ("FISCAL 2021 COMPARED TO FISCAL
    2020", "Six Months Ended December 31, 2022 Compared with ..."), with its offset: looked for up the paragraph's
    lines and the headings under it that name no period ("Productivity and Business Processes"), at most
    `lines_above` lines; None where a table stands between."""
    end = text.rfind("\n", 0, at) + 1
    lines = text[:end].split("\n")[:-1][-lines_above:]
    for line in reversed(lines):
        end -= len(line) + 1
        words = _WORD.findall(line)
        if line.lstrip().startswith("|") or (line.strip() and not words):
            return None  # a table's row or a line of its numbers
        if not words or not _is_heading_line(line, words):
            continue  # the paragraph's own lines
        if {word.lower() for word in words} & _HEADING_PERIOD_WORDS and YEAR.search(line):
            return end, line.strip()
        # else a heading of no period ("Greater China", a segment's name): a part of the period's text
    return None


def _is_heading_line(line: str, words: list[str]) -> bool:
    """A short line opening with a capital and ending in no stop whose words are capitalised, but for the small
    words of a heading, with no number but years and days."""
    line = line.strip()
    if len(words) > _HEADING_WORDS or not line[:1].isupper() or line[-1:] in ".,;:" or "%" in line or "$" in line:
        return False
    if any(not YEAR.fullmatch(number) and int(number) > 31 for number in re.findall(r"\d+", line)):
        return False
    return all(word[0].isupper() or word.lower() in _HEADING_SMALL_WORDS for word in words)
