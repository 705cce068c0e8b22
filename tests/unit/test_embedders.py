"""The embedder of an index: names `ingest --embedder` takes, which scripts each model reads and which languages it
was trained on (a question in another is searched by keywords alone), and similarities on MiniLM's scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pagegraph.config import RetrievalKnobs, Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.embedder import MULTILINGUAL_MODEL, SIMILARITY_SCALE, Embedder, embedding_model
from pagegraph.llm.minilm import MODEL_NAME
from pagegraph.retrievers.hybrid import HybridRetriever
from tests.conftest import markdown_library


def test_embedder_names_stand_for_their_models_and_others_are_refused() -> None:
    assert embedding_model("minilm") == MODEL_NAME and embedding_model("multilingual-e5") == MULTILINGUAL_MODEL
    assert embedding_model(MULTILINGUAL_MODEL) == MULTILINGUAL_MODEL  # as a manifest records it
    with pytest.raises(PagegraphError, match="minilm or multilingual-e5"):
        embedding_model("bge-m3")


def test_the_english_embedder_says_which_texts_it_cannot_read(tmp_path) -> None:
    settings = Settings(cache_dir=tmp_path)
    english, multilingual = Embedder(settings), Embedder(settings, "multilingual-e5")
    latin = ["The ferry leaves at six.", "Die Fähre fährt um sechs Uhr ab.", "Phà khởi hành lúc sáu giờ.", "12 | 34"]
    others = ["渡轮早上六点出发。", "Паром отправляется в шесть утра.", "العبارة تغادر في السادسة.", "เรือออกหกโมงเช้า"]
    assert all(english.reads(text) for text in latin) and not any(english.reads(text) for text in others)
    assert all(multilingual.reads(text) for text in latin + others)
    assert english.reads("Паром (ferry) отправляется в шесть утра, the ferry leaves at six in the morning daily.")


def test_the_english_embedder_says_which_questions_are_in_a_language_it_was_not_trained_on(tmp_path) -> None:
    settings = Settings(cache_dir=tmp_path)
    english, multilingual = Embedder(settings), Embedder(settings, "multilingual-e5")
    assert english.understands("When does the ferry to Naxos leave in the morning?")
    assert english.understands("SB-40 weight?"), "a question no language is likely for is taken as English"
    others = ["¿A qué hora sale el transbordador hacia Naxos?", "Wann fährt die Fähre nach Naxos ab?", "渡轮几点出发？"]
    assert not any(english.understands(question) for question in others)
    assert all(multilingual.understands(question) for question in others)


def test_similarities_are_put_on_minilm_scale() -> None:
    english = Embedder(Settings())
    cosines = np.array([-0.1, 0.19, 0.73])
    assert np.array_equal(english.comparable(cosines), cosines), "MiniLM's own scale is left as it is"
    floor, ceiling = SIMILARITY_SCALE[MULTILINGUAL_MODEL]
    assert 0.0 < floor < ceiling <= 1.0, "e5's cosines of unrelated texts sit well above 0"


FERRIES = {
    "ferry-greek.md": "# Δρομολόγια\n\nΤο πλοίο για τη Νάξο αναχωρεί στις έξι το πρωί από τον Πειραιά.\n",
    "ferry-greek-fares.md": "# Εισιτήρια\n\nΤο εισιτήριο για τη Νάξο κοστίζει σαράντα ευρώ.\n",
    "ferry-english.md": "# Timetable\n\nThe ferry to Naxos leaves Piraeus at six in the morning.\n",
}


def test_a_question_the_embedder_cannot_read_or_was_not_taught_is_searched_by_keywords_alone(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    with markdown_library(tmp_path, FERRIES, cache_dir, embedder) as index:

        def fused(question: str, **knobs: float) -> list[tuple[str, float]]:
            return [
                (h.chunk_id, round(h.score, 6))
                for h in HybridRetriever(index=index, knobs=RetrievalKnobs(**knobs)).fused(question)
            ]

        greek = "Πότε αναχωρεί το πλοίο για τη Νάξο;"
        assert not embedder.reads(greek)
        assert fused(greek) == fused(greek, alpha=1.0), "BM25's scores alone"
        spanish = "¿A qué hora sale el barco hacia Naxos?"
        assert embedder.reads(spanish) and fused(spanish) == fused(spanish, alpha=1.0), "nor one it was not taught"
        english = "When does the ferry to Naxos leave?"
        assert fused(english) != fused(english, alpha=1.0), "a question it reads: cosines weigh in"
