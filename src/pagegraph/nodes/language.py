"""The language of a question (`text.language`): answers, refusals and the band's name are written in it."""

from __future__ import annotations

from pagegraph.config import ReadingKnobs
from pagegraph.prompts.languages import ANSWER_LANGUAGE, BAND_TEXTS, LANGUAGE_NAMES
from pagegraph.state.answering import Band
from pagegraph.text.language import identify


def question_language(question: str, reading: ReadingKnobs) -> str:
    """The question's language code; "en" when no language is likely enough, or with `reading.answer_language` off."""
    if not reading.answer_language:
        return "en"
    language, probability = identify(question)
    return language if probability >= reading.language_min_confidence else "en"


def band_label(band: Band, language: str) -> str:
    """How the band is named beside the answer, in `language` (a `question_language`) where `BAND_TEXTS` has it."""
    return BAND_TEXTS.get(language, BAND_TEXTS["en"])[band]


def answer_language_instruction(question: str, reading: ReadingKnobs) -> str:
    """What an answer request adds for a question not in English ("" for English)."""
    language = question_language(question, reading)
    return "" if language == "en" else "\n\n" + ANSWER_LANGUAGE.format(language=LANGUAGE_NAMES[language])
