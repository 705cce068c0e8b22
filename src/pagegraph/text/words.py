"""Words as the keyword search and every length rule count them: NFKC-normalised, case-folded words, English
stopwords dropped, and scripts written without spaces read as character pairs; the words keyword search indexes and
searches by, with their stems in the text's language beside them; and a text's content words, as the evidence scoring
and the answer checks match a question's words with them."""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

import regex
from bm25s.stopwords import STOPWORDS_EN

from pagegraph.config import ReadingKnobs
from pagegraph.text.language import identify, likely_language

_STOPWORDS = frozenset(STOPWORDS_EN)
# What `indexed_words` makes of text. Every keyword index records it (a folder's BM25, a database's search tables),
# and the next writer rebuilds one made by another.
TOKENIZER = "nfkc-casefold-words-unspaced-bigrams-v2/stems-v3"
# The stemmer of each language `text.language` tells apart that has one: Snowball's (PyStemmer), but Arabic's is
# NLTK's ARLSTem2, a light stemmer: Snowball stems an Arabic word's forms apart ("الانتخابات" and "انتخابات", "العصيان"
# and "للعصيان"). English has one but is searched by its whole words, as it was tuned.
_ARABIC = "arlstem2"
_STEMMERS = {
    "ar": _ARABIC,
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "es": "spanish",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "hi": "hindi",
    "id": "indonesian",
    "it": "italian",
    "nl": "dutch",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
}
# How likely a chunk's language must be for its words to be stemmed in it: its stems are indexed for every search
# to come, so all but certain (docs/experiments.md: how often chunks are taken for another language). A question's
# stems only add to its words: its likely language will do. Only a chunk's opening characters are read: enough to
# tell, at half the cost of a long chunk.
_INDEXED_LANGUAGE_PROBABILITY = 0.9
_LANGUAGE_SAMPLE_CHARS = 500
# A letter outside ASCII: text without one is taken as English without asking (an English chunk's curly quotes and
# dashes are not letters), which spares the identifier nearly every chunk of an English library.
_NON_ASCII_LETTER = regex.compile(r"[\p{L}--\p{ASCII}]", regex.V1)
# A stem is indexed with its language after this mark ("паром:ru"), which no word holds: it meets only the stems of
# its language, never a word as written, so a question taken for another language, or an English chunk, is matched
# as it was without stems.
_STEM_MARK = ":"
_stemmers = threading.local()  # a PyStemmer stemmer is not to be shared between threads
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
# Chinese asks for an amount, a duration or a count with these ("多长时间", "多少", "几年"); no word boundary
# separates them from the words around them.
AMOUNT_ZH = r"多少|多久|多长|多大|多高|多重|多远|几[个年天次岁月号点]"
# The words Chinese writes a question with, which no answering sentence holds: left out of its content words.
_QUESTION_PHRASES_ZH = re.compile(
    rf"多长时间|{AMOUNT_ZH}|什么|怎么样|怎么|为什么|如何|哪些|哪个|哪里|哪儿|是否|几|吗|呢"
)
# Words that shape a question but are not what it is about.
_QUESTION_WORDS = frozenset({"much", "many", "what", "which", "who", "whom", "whose", "when", "where", "why", "how"})


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


def indexed_words(text: str) -> list[str]:
    """The words keyword search indexes a text (a chunk, a document's profile) by: its BM25 words, and the stem of
    each in the text's language where that is all but certain and has a stemmer (`_STEM_MARK`). Text whose letters
    are all ASCII is taken as English, unstemmed."""
    words = tokenize(text)
    if text.isascii() or not _NON_ASCII_LETTER.search(text):
        return words
    language, probability = identify(text[:_LANGUAGE_SAMPLE_CHARS])
    return _with_stems(words, language) if probability >= _INDEXED_LANGUAGE_PROBABILITY else words


@lru_cache(maxsize=256)  # one search reads a question's words several times (chunks, documents, profiles)
def query_words(query: str) -> tuple[str, ...]:
    """The words keyword search looks a query up by: its BM25 words, and their stems in its language where that
    is likelier than not. An inflected word meets the stems of its other forms in a chunk of that language; the word
    as written still meets a chunk of any language that holds it as it is."""
    words = tokenize(query)
    language = likely_language(query)
    return tuple(_with_stems(words, language) if language else words)


def _with_stems(words: list[str], language: str) -> list[str]:
    """`words`, then the stem of each in `language` (none for a language without a stemmer), marked as a stem."""
    name = _STEMMERS.get(language)
    if name is None:
        return words
    return words + [f"{stem}{_STEM_MARK}{language}" for stem in _stemmer(name).stemWords(words) if _kept(stem)]


def _stemmer(name: str) -> Any:  # PyStemmer ships no type hints
    """This thread's stemmer of the algorithm `name` (`_STEMMERS`)."""
    stemmer = getattr(_stemmers, name, None)
    if stemmer is None:
        if name == _ARABIC:
            stemmer = _ArabicStemmer()
        else:
            import Stemmer

            stemmer = Stemmer.Stemmer(name)
        setattr(_stemmers, name, stemmer)
    return stemmer


class _ArabicStemmer:
    """NLTK's ARLSTem2 with PyStemmer's `stemWords`."""

    def __init__(self) -> None:
        from nltk.stem.arlstem2 import ARLSTem2

        self._stem = ARLSTem2().stem

    def stemWords(self, words: list[str]) -> list[str]:  # noqa: N802  # PyStemmer's name
        return [self._stem(word) for word in words]


def content_words(text: str) -> set[str]:
    """Lower-cased content words, plurals made singular ("capacities" → "capacity"); the words a question is asked
    with are not among them ("how", "多少")."""
    words = set()
    for word in tokenize(_QUESTION_PHRASES_ZH.sub(" ", text) if not text.isascii() else text):
        if word not in _QUESTION_WORDS:
            words.add(singular(word))
    return words


def singular(word: str) -> str:
    """An English plural made singular, crudely ("capacities" → "capacity", "revenues" → "revenue")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def matches(term: str, words: set[str], reading: ReadingKnobs) -> bool:
    """A word equals the term, or one starts with the other and the shorter has `reading.word_prefix_letters`
    letters ("weigh" and "weight"; not "governor" and "government")."""
    if term in words:
        return True
    least = reading.word_prefix_letters
    return len(term) >= least and any(
        len(word) >= least and (word.startswith(term) or term.startswith(word)) for word in words
    )
