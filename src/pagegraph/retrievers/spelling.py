"""A question's words the index has never seen, read as the index's word one typing slip away: "Neflix" as
"Netflix", "advertsing" as "advertising". A misspelt word matches nothing in BM25, pulls the question's vector away
from the passages and hides from the router the company the question names; the search reads the corrected
question (the question shown and answered stays as written).

A word is read as another only when all of these hold:
- it has at least `retrieval.spelling_min_letters` letters (5) and is not a stopword;
- it is written in one case, or capitalised: a name written in mixed case ("LLaVa", "iPhone") is spelled on purpose;
- no chunk of the index holds it;
- it is not a common English word (one the embedder's word-piece vocabulary holds whole), so "compare" stays
  "compare" in an index whose documents only write "compared";
- a word one edit away (a letter dropped, added or changed, or two neighbours swapped) is held by some chunk; of
  several, the one the most chunks hold, then one that only adds an ending ("italic" as "italics", not "italia").
"""

from __future__ import annotations

import re
import string

from pagegraph.llm.minilm import whole_words
from pagegraph.store.index import Index
from pagegraph.text.words import tokenize

_WORD = re.compile(r"(?<!\w)[A-Za-z]+(?!\w)")


def one_edit_away(word: str) -> set[str]:
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    dropped = {head + tail[1:] for head, tail in splits if tail}
    swapped = {head + tail[1] + tail[0] + tail[2:] for head, tail in splits if len(tail) > 1}
    changed = {head + letter + tail[1:] for head, tail in splits if tail for letter in string.ascii_lowercase}
    added = {head + letter + tail for head, tail in splits for letter in string.ascii_lowercase}
    return (dropped | swapped | changed | added) - {word}


def _may_be_misspelt(word: str) -> bool:
    """Whether `word` may be a slip, whatever the index holds."""
    lower = word.lower()
    one_case = word.isupper() or word[1:].islower()
    return one_case and bool(tokenize(lower)) and lower not in whole_words()


def spelling_corrections(query: str, index: Index, min_letters: int) -> dict[str, str]:
    """Each word of `query` (of at least `min_letters` letters) the index has never seen, with the nearest spelling it
    holds, in the word's case."""
    suspects = [
        word for word in dict.fromkeys(_WORD.findall(query)) if len(word) >= min_letters and _may_be_misspelt(word)
    ]
    # most suspects are the index's own words: their candidates (hundreds each) are looked up only for the others
    known = index.document_frequencies([word.lower() for word in suspects]) if suspects else {}
    unknown = {word: one_edit_away(word.lower()) for word in suspects if word.lower() not in known}
    held = index.document_frequencies(sorted(set().union(*unknown.values()))) if unknown else {}
    corrections: dict[str, str] = {}
    for word, candidates in unknown.items():
        if found := sorted(candidates & held.keys()):
            lower = word.lower()
            best = max(found, key=lambda candidate: (held[candidate], candidate.startswith(lower)))
            corrections[word] = best.upper() if word.isupper() else best.capitalize() if word[0].isupper() else best
    return corrections


def correct_spelling(query: str, corrections: dict[str, str]) -> str:
    """`query` with its `spelling_corrections` made."""
    return _WORD.sub(lambda match: corrections.get(match.group(0), match.group(0)), query)
