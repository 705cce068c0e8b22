"""Words as the keyword search and every length rule count them: NFKC-normalised, case-folded words, English
stopwords dropped, and scripts written without spaces read as character pairs."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import regex
from bm25s.stopwords import STOPWORDS_EN

_STOPWORDS = frozenset(STOPWORDS_EN)
# What `tokenize` makes of text. Every keyword index records it (a folder's BM25, a database's search tables), and
# the next writer rebuilds one made by another.
TOKENIZER = "nfkc-casefold-words-unspaced-bigrams-v2"
# A word: letters, digits and the combining marks that belong to them (Devanagari and Thai vowel signs are marks).
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}_]+")
_ASCII_WORD = re.compile(r"\w+", re.ASCII)
# Scripts written without spaces between words (and Hangul, whose spaced units carry their particles): read as
# overlapping pairs of characters, as Lucene's CJK analyzer does, since there is no word boundary to split on.
# (by script extension: the prolonged sound mark of katakana and the iteration mark of kanji are shared characters)
UNSPACED_SCRIPTS = "".join(
    rf"\p{{scx={script}}}" for script in ("Han", "Hiragana", "Katakana", "Hangul", "Thai", "Lao", "Khmer", "Myanmar")
)
_UNSPACED = regex.compile(rf"((?:[{UNSPACED_SCRIPTS}]\p{{M}}*)+)")
_UNSPACED_CHARACTER = regex.compile(rf"[{UNSPACED_SCRIPTS}]")
_CHARACTER = regex.compile(r"\X")


def tokenize(text: str) -> list[str]:
    """BM25's words: the text NFKC-normalised and case-folded, split into words; English stopwords dropped, and
    single characters kept only when they are digits. A run of a script written without spaces (Chinese, Japanese,
    Korean, Thai, Lao, Khmer, Myanmar) becomes its overlapping character pairs (one character alone stays)."""
    if text.isascii():  # most English text: the same words, found faster
        return [w for w in _ASCII_WORD.findall(text.lower()) if _kept(w)]
    words = []
    for run in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if run.isascii():
            if _kept(run):
                words.append(run)
            continue
        for i, part in enumerate(_UNSPACED.split(run)):
            if i % 2:  # an unspaced run: its characters (with their marks) in pairs
                characters = _CHARACTER.findall(part)
                words.extend([characters[0]] if len(characters) == 1 else map("".join, zip(characters, characters[1:])))
            elif part and _kept(part):
                words.append(part)
    return words


def word_count(text: str) -> int:
    """How many words `text` has, for rules of length: its spaced words, and each character of a script written
    without spaces as one."""
    return len(text.split()) + len(_UNSPACED_CHARACTER.findall(text))


def unspaced(word: str) -> bool:
    """Whether a BM25 word is a character pair (or lone character) of a script written without spaces."""
    return bool(_UNSPACED_CHARACTER.match(word))


def _kept(word: str) -> bool:
    """Whether a spaced word counts: not an English stopword, and more than one character unless a digit."""
    return word not in _STOPWORDS and (len(word) > 1 or word.isdigit())


def word_counts(text: str) -> Counter[str]:
    """Each BM25 word of `text` with how often it occurs."""
    return Counter(tokenize(text))
