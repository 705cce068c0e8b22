"""The terms a question names that neither the retrieved passages nor their documents mention.

A question that names something (a company, a dataset, a model, a country, a year) can only be answered from
documents that mention it. A small answer model answers "the 2024 election" from a passage about 2020 and gives an
address for a department the document does not hold; a named term that no retrieved passage mentions tells that the
documents do not hold the answer more reliably than the model's own refusal, and costs no model call.

Key terms are years, the numbers of variants ("43" of "the 43-inch model"), and words written with a capital letter
inside a sentence (names, acronyms, model names): not the first word of a sentence or bracket, not in a question
written mostly in capitals or title case, and not words that name a part or kind of document (page, table, PDF,
Word). A term is mentioned when each of its parts (its runs of three or more letters, and its numbers) is: the same
word or one sharing a prefix with it (`matches`), or, for five or more letters (`gate.near_spelling_letters`), a near
spelling ("Netfilx" for "Netflix"). A term the passages miss still counts as mentioned when one of the documents
they come from holds each of its words somewhere (BM25's words: exact, stopwords aside): filings name their company
on the cover and write "we" after it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

import numpy as np

from pagegraph.config import GateKnobs, ReadingKnobs
from pagegraph.state.answering import Evidence
from pagegraph.store.index import Index
from pagegraph.text.words import matches, tokenize

# a year stands apart from Latin letters and digits, not from other scripts' letters ("2015年", "в2015")
# a name, a year, or the number of a variant joined to its unit ("the 43-inch model", "a 12-month plan")
_TERM = re.compile(
    r"[A-Za-z][\w'’.-]*[A-Za-z0-9]|(?<![0-9A-Za-z_])(?:19|20)\d\d(?![0-9A-Za-z_])|(?<![\w.,])\d+(?=-[A-Za-z]{2})"
)
_STARTS_SENTENCE = re.compile(r"(?:^|[.?!:;(])[\s\"“'‘(]*$")
_PART = re.compile(r"[a-z]+|\d+")
_POSSESSIVE = re.compile(r"['’]s$")
# Words that name a part or kind of document, which its text rarely writes ("the table at Page 28", "the Word file").
_DOCUMENT_WORDS = frozenset(
    {"page", "pages", "section", "sections", "figure", "figures", "fig", "table", "tables", "appendix", "chapter"}
    | {"pdf", "word", "docx", "txt", "markdown", "excel", "powerpoint"}
)


def key_terms(question: str) -> list[str]:
    """The years, the numbers of variants and the names written with a capital inside a sentence, in the order the
    question has them."""
    words = [w for w in question.split() if w[:1].isalpha()]
    capitals_say_nothing = sum(w[0].isupper() for w in words) * 2 > len(words)
    terms: list[str] = []
    for match in _TERM.finditer(question):
        term = _POSSESSIVE.sub("", match.group(0).rstrip(".'’"))
        if term.isdigit():  # a year, or a variant's number
            named = True
        elif capitals_say_nothing or _STARTS_SENTENCE.search(question[: match.start()]):
            named = False
        else:
            named = any(c.isupper() for c in term) and term.lower() not in _DOCUMENT_WORDS
        if named and term not in terms:
            terms.append(term)
    return terms


def term_parts(term: str, min_letters: int) -> list[str]:
    """The parts of a term worth looking for: its numbers and its words of at least `min_letters` letters."""
    return [p for p in _PART.findall(term.lower()) if p.isdigit() or len(p) >= min_letters]


def unmentioned_terms(question: str, texts: Iterable[str], gate: GateKnobs, reading: ReadingKnobs) -> list[str]:
    """The question's key terms some part of which no text mentions (near spellings as `gate` allows)."""
    terms = key_terms(question)
    if not terms:
        return []
    words = set(_PART.findall(" ".join(texts).lower()))
    spellings = [w for w in words if len(w) >= reading.word_prefix_letters and not w.isdigit()]

    def mentioned(part: str) -> bool:
        if part.isdigit():
            return part in words
        if matches(part, words, reading):
            return True
        near = len(part) >= gate.near_spelling_letters and difflib.get_close_matches(
            part, spellings, n=1, cutoff=gate.near_spelling_ratio
        )
        return bool(near)

    return [term for term in terms if not all(mentioned(part) for part in term_parts(term, gate.term_part_letters))]


def documents_holding(index: Index, words: list[str]) -> np.ndarray:
    """Per document (the profiles' order): whether it holds each of `words` (BM25's words: exact, stopwords aside)
    somewhere; with no word, every document does (nothing to look for)."""
    profiles = index.profiles
    held = np.ones(len(profiles), dtype=bool)
    for word in words:
        holding = index.documents_holding(word)
        held &= np.array([doc_id in holding for doc_id in profiles.ids], dtype=bool)
    return held


def documents_mention(index: Index, term: str, documents: list[str], gate: GateKnobs) -> bool:
    """Whether one of `documents` (names) holds each of the term's parts as a word."""
    profiles = index.profiles
    rows = [profiles.row_named[name] for name in documents if name in profiles.row_named]
    return bool(documents_holding(index, tokenize(" ".join(term_parts(term, gate.term_part_letters))))[rows].any())


def unmentioned_in_evidence(
    index: Index, question: str, passages: list[Evidence], gate: GateKnobs, reading: ReadingKnobs
) -> list[str]:
    """The key terms neither the passages (with their file names and sections) nor their documents mention."""
    missed = unmentioned_terms(question, (f"{e.source} {e.section} {e.text}" for e in passages), gate, reading)
    documents = sorted({e.source for e in passages})
    return [term for term in missed if not documents_mention(index, term, documents, gate)]
