"""The embedder of an index: names `ingest --embedder` takes, which scripts each model reads, and similarities on
MiniLM's scale."""

from __future__ import annotations

import numpy as np
import pytest

from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.embedder import MULTILINGUAL_MODEL, SIMILARITY_SCALE, Embedder, embedding_model
from pagegraph.llm.minilm import MODEL_NAME


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


def test_similarities_are_put_on_minilm_scale() -> None:
    english = Embedder(Settings())
    cosines = np.array([-0.1, 0.19, 0.73])
    assert np.array_equal(english.comparable(cosines), cosines), "MiniLM's own scale is left as it is"
    floor, ceiling = SIMILARITY_SCALE[MULTILINGUAL_MODEL]
    assert 0.0 < floor < ceiling <= 1.0, "e5's cosines of unrelated texts sit well above 0"
