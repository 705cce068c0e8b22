"""Which language a text is in: py3langid's identifier, among the languages answers are written in
(`prompts.languages.LANGUAGE_NAMES`). Questions are answered in theirs (`nodes.language`); keyword search stems a
text's words in it (`text.words.indexed_words`, `query_words`)."""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Any

from pagegraph.prompts.languages import LANGUAGE_NAMES

# A question is taken to be in the language the identifier gives better than even odds (docs/experiments.md: how
# often that is right).
_LIKELY = 0.5


@cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGE_NAMES))
    return identifier


def identify(text: str) -> tuple[str, float]:
    """The likeliest language code of `text` and its probability."""
    language, probability = _identifier().classify(text)
    return language, float(probability)


@lru_cache(maxsize=256)  # asked by each search a question takes (its words, its fusion)
def likely_language(question: str) -> str | None:
    """The question's language where it is likelier than not; None where no language is."""
    language, probability = identify(question)
    return language if probability >= _LIKELY else None
