"""The language of a question (py3langid, among `prompts.languages.LANGUAGE_NAMES`): answers, refusals and the band's
name are written in it."""

from __future__ import annotations

from functools import cache
from typing import Any

from pagegraph.prompts.languages import ANSWER_LANGUAGE, BAND_TEXTS, LANGUAGE_NAMES
from pagegraph.state.answering import Band

# Below this probability the question is taken as English: a short English question ("EBITDA in FY2019?") can look
# like several languages at once.
MIN_CONFIDENCE = 0.5


@cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGE_NAMES))
    return identifier


def question_language(question: str) -> str:
    """The question's language code; "en" when no language is likely enough."""
    language, probability = _identifier().classify(question)
    return language if probability >= MIN_CONFIDENCE else "en"


def band_label(band: Band, question: str) -> str:
    """How the band is named beside the answer, in the question's language where it is one of `BAND_TEXTS`'."""
    return BAND_TEXTS.get(question_language(question), BAND_TEXTS["en"])[band]


def answer_language_instruction(question: str) -> str:
    """What an answer request adds for a question not in English ("" for English)."""
    language = question_language(question)
    return "" if language == "en" else "\n\n" + ANSWER_LANGUAGE.format(language=LANGUAGE_NAMES[language])
