"""Sentences as the evidence shows and checks them: where they end in page text (stops, line breaks that end a
heading, a row or a list item; for showing, not those that wrap a line), with their offsets."""

from __future__ import annotations

import regex

from pagegraph.config import ReadingKnobs
from pagegraph.state.answering import GAP_MARK
from pagegraph.text.words import word_count

# Sentence ends: a stop and a space before a capital, a digit, or a letter of a script without capitals; the stops of
# Chinese and Japanese (no space after them), of Devanagari and Arabic. And line breaks before the same or a list or
# table mark (table rows, list items and headings end there): a break before a lower-case word is a wrapped line of
# the same sentence, and for showing so is a break before a capital after a full line that ends mid-phrase
# (`_wrapped`). And " … ", which joins a passage's chunks where text between them is left out (a page break).
# The dot of an abbreviation ends nothing: of a title or an initial ("Dr. Smith", "J. Smith", "e.g. Apple"), nor of
# a word a number follows ("Approx. 0.7 kg", "Fig. 3", "No. 12", "Jan. 5").
_STARTS = r"(?:[\"'(\[\d]|(?!\p{Ll})\p{L})"
_TITLE = r"(?<!\b(?<!-)(?:[eE]\.g|[iI]\.e|cf|vs|Mr|Mrs|Ms|Dr|Prof|St|\p{Lu})\.)"  # not a designation's "10-K."
_BEFORE_NUMBER = (
    r"(?<!\b(?i:approx|ca|no|nos|fig|figs|eq|vol|pp?|ch|sec|art|tel|ref|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)"
    r"\.\s+)"
)
_SENTENCE_END = regex.compile(
    rf"(?<=[.!?]){_TITLE}\s+(?:(?=\d){_BEFORE_NUMBER}|(?={_STARTS})(?!\d))|(?<=[。！？])\s*(?=\S)|(?<=[।॥؟۔])\s+|"
    rf"(?P<line>\n+)(?=\s*(?:{_STARTS}|[|•*#-]))|{GAP_MARK}"
)
_MID_PHRASE = regex.compile(r"[\p{Ll},]\Z")
_CASED_WORD = regex.compile(r"(?<![\p{L}\p{N}])[\p{Lu}\p{Ll}]")
# a line at least this share of the text's width (its 9th-decile line length), and this long, is a full line of a
# paragraph, not a heading, a list item or a table's label
_FULL_LINE_SHARE = 0.7
_FULL_LINE_CHARS = 20


def sentences(text: str, reading: ReadingKnobs, *, wrapped: bool = False) -> list[tuple[int, str]]:
    """(offset in `text`, sentence) of each sentence worth showing: of `reading.sentence_min_words` words or more,
    cut at `reading.sentence_max_chars`. `wrapped`: a sentence runs on over the line breaks that wrap it (what is
    shown to a person); without it a line break before a capital ends one (what the reader's excerpts are cut by: a
    small model read worse from excerpts cut the other way, docs/experiments.md)."""
    found = []
    start = 0
    ends = list(_SENTENCE_END.finditer(text))
    if wrapped:
        lengths = sorted(len(line.strip()) for line in text.splitlines())
        full = max(_FULL_LINE_CHARS, _FULL_LINE_SHARE * lengths[(len(lengths) - 1) * 9 // 10]) if lengths else 0
        ends = [m for m in ends if not (m.group("line") and _wrapped(text, m, full))]
    for end_match in [*ends, None]:
        end = end_match.start() if end_match else len(text)
        piece = text[start:end]
        stripped = piece.strip(" \t|-*•#")
        if word_count(stripped) >= reading.sentence_min_words:  # a character of a script without spaces: a word
            found.append((start + piece.index(stripped), stripped[: reading.sentence_max_chars]))
        start = end_match.end() if end_match else len(text)
    return found


def _wrapped(text: str, line_break: regex.Match[str], full: int | float) -> bool:
    """Whether a line break wraps a sentence ("…as part of the⏎Northwind plan."): the line before it is full (at
    least `full` characters), ends mid-phrase (a lower-case letter or a comma) and reads as prose (most of its words
    start lower-case: a line in Title Case is a heading, a table's labels or a list of names), and the next line
    starts no list or table item."""
    line = text[text.rfind("\n", 0, line_break.start()) + 1 : line_break.start()].strip()
    after = text[line_break.end() :].lstrip(" \t")
    if len(line) < full or not _MID_PHRASE.search(line) or after[:1] in ("|", "•", "*", "#", "-"):
        return False
    initials = _CASED_WORD.findall(line)
    return sum(initial.islower() for initial in initials) * 2 >= len(initials)
