"""Sentences as the evidence shows and checks them: where they end in page text (stops, line breaks that end a
heading, a row or a list item), with their offsets."""

from __future__ import annotations

import regex

from pagegraph.config import ReadingKnobs
from pagegraph.state.answering import GAP_MARK
from pagegraph.text.words import word_count

# Sentence ends: a stop and a space before a capital, a digit, or a letter of a script without capitals; the stops of
# Chinese and Japanese (no space after them), of Devanagari and Arabic. And line breaks before the same or a list or
# table mark (table rows, list items and headings end there): a break before a lower-case word is a wrapped line of
# the same sentence. And " … ", which joins a passage's chunks where text between them is left out (a page break).
_STARTS = r"(?:[\"'(\[\d]|(?!\p{Ll})\p{L})"
_SENTENCE_END = regex.compile(
    rf"(?<=[.!?])\s+(?={_STARTS})|(?<=[。！？])\s*(?=\S)|(?<=[।॥؟۔])\s+|\n+(?=\s*(?:{_STARTS}|[|•*#-]))|{GAP_MARK}"
)


def sentences(text: str, reading: ReadingKnobs) -> list[tuple[int, str]]:
    """(offset in `text`, sentence) of each sentence worth showing: of `reading.sentence_min_words` words or more,
    cut at `reading.sentence_max_chars`."""
    found = []
    start = 0
    for end_match in [*_SENTENCE_END.finditer(text), None]:
        end = end_match.start() if end_match else len(text)
        piece = text[start:end]
        stripped = piece.strip(" \t|-*•#")
        if word_count(stripped) >= reading.sentence_min_words:  # a character of a script without spaces: a word
            found.append((start + piece.index(stripped), stripped[: reading.sentence_max_chars]))
        start = end_match.end() if end_match else len(text)
    return found
