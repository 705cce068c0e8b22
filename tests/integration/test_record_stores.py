"""Both backends behind `RecordStore` keep the same records: the same samples ingested into a folder index and into a
database index read back alike, every write of the interface behaves alike on both, and both search alike (bm25s over
files in a folder index, SQL in a database index)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import DocumentTags
from pagegraph.state.evaluation import EvalRun
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index, open_index
from pagegraph.store.records import RecordStore, SectionSummaries
from pagegraph.text.words import tokenize
from tests.conftest import BACKENDS, SAMPLES, on_backend

pytestmark = pytest.mark.slow

SAMPLE_FILES = sorted(SAMPLES.glob("*.md"))[:2]


def records(store: RecordStore) -> dict:
    """Everything the store holds about its documents, without what differs by when it was written."""
    documents = store.documents()
    return {
        "documents": [doc.model_dump(exclude={"ingested_at"}) for doc in documents],
        "pages": {doc.name: store.pages(doc.id) for doc in documents},
        "tree": {doc.name: store.tree(doc.id) for doc in documents},
        "chunks": {doc.name: store.chunks(doc.id) for doc in documents},
        "vectors": np.stack([vector for _, vector in store.iter_chunks()]),
        "sections": {doc.name: store.sections(doc.id) for doc in documents},
        "section_titles": store.section_titles(2),
        "summaries": {doc.name: store.summaries().get(doc.id) for doc in documents},
        "chunk_count": store.chunk_count(),
        "catalog": store.chunk_catalog(),
        "failures": store.failures(),
    }


def on_each_backend(
    files: list[Path],
    read_back: Callable[[Index], dict],
    factory: pytest.TempPathFactory,
    cache_dir: Path,
    embedder: Embedder,
    request: pytest.FixtureRequest,
) -> dict[str, dict]:
    """`files` ingested into a new index on each backend; what `read_back` finds in it, opened again to read."""
    found = {}
    for backend in BACKENDS:
        folder = factory.mktemp(f"records-{backend}")
        settings = on_backend(Settings(index=folder / "index", cache_dir=cache_dir), backend, request)
        with open_index(settings.index, settings, write=True, embedder=embedder) as index:
            assert not Ingestor(index).run(files).failed
        with open_index(settings.index, settings, embedder=embedder) as reader:
            found[backend] = read_back(reader)
    return found


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, cache_dir, embedder: Embedder, request) -> dict[str, dict]:
    """The two samples ingested into each backend, read back through the interface."""

    def read_back(index: Index) -> dict:
        assert isinstance(index.store, RecordStore)
        return records(index.store)

    return on_each_backend(SAMPLE_FILES, read_back, tmp_path_factory, cache_dir, embedder, request)


def test_both_backends_read_back_the_same_records(ingested: dict[str, dict]) -> None:
    folder, database = ingested["folder"], ingested["postgres"]
    assert folder["documents"] and folder["chunk_count"] > 0
    for key in folder:
        if key == "vectors":
            np.testing.assert_allclose(folder[key], database[key], atol=1e-6)
        elif key == "catalog":  # the tags' JSON text is re-encoded by JSONB
            assert [row[:6] for row in folder[key]] == [tuple(row[:6]) for row in database[key]]
        else:
            assert folder[key] == database[key], key


QUERIES = [
    "commissioning the battery cabinet",
    "error code E04 on the support call",
    "breaker breaker rated amps",  # a word said twice counts twice
    "warranty",
    "zzzunheardword",
]


def searches(index: Index) -> dict:
    """What the retrievers ask of an index, by chunk id and document name (the orders may differ)."""
    ids = index.catalog.ids
    vector = index.embedder.embed(["how do I pair the battery with the app"])[0]
    words = sorted({word for query in QUERIES for word in tokenize(query)})
    profiles = index.profiles
    names = dict(zip(profiles.ids, profiles.names))
    one = RetrievalFilter(documents=["commissioning-guide.md"])
    return {
        "keyword": {q: dict(zip(ids, index.keyword_scores_of(q, ids).tolist())) for q in QUERIES},
        "top": {q: index.keyword_search(q, 5) for q in QUERIES},
        "top in one document": {q: index.keyword_search(q, 3, one) for q in QUERIES},
        "holding": {word: sorted(names[d] for d in index.documents_holding(word)) for word in words},
        "frequencies": index.document_frequencies(words),
        "similarities": dict(zip(ids, index.similarities(ids, vector).tolist())),
        "dense": [c for c, _ in index.dense_search(vector, 5, RetrievalFilter(), exact_below=0)],
        "centroids": dict(zip(profiles.names, profiles.centroids)),
    }


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory, cache_dir, embedder: Embedder, request) -> dict[str, dict]:
    """Every sample ingested into each backend, searched as the retrievers search."""
    return on_each_backend([SAMPLES], searches, tmp_path_factory, cache_dir, embedder, request)


def test_both_backends_score_and_rank_alike(searched: dict[str, dict]) -> None:
    folder, database = searched["folder"], searched["postgres"]
    for query in QUERIES:
        assert folder["keyword"][query].keys() == database["keyword"][query].keys()
        for chunk_id, score in folder["keyword"][query].items():
            assert database["keyword"][query][chunk_id] == pytest.approx(score, rel=1e-4, abs=1e-6), (query, chunk_id)
        for ranking in ("top", "top in one document"):
            assert [c for c, _ in folder[ranking][query]] == [c for c, _ in database[ranking][query]], query
            assert [s for _, s in database[ranking][query]] == pytest.approx([s for _, s in folder[ranking][query]])
    assert any(folder["top"][q] for q in QUERIES) and not folder["top"]["zzzunheardword"]
    assert (
        folder["top in one document"]["error code E04 on the support call"]
        != folder["top"]["error code E04 on the support call"][:3]
    ), "the filter changes what is found"
    assert folder["holding"] == database["holding"] and folder["holding"]["breaker"]
    assert folder["frequencies"] == database["frequencies"] and folder["frequencies"]["breaker"] > 0
    for chunk_id, similarity in folder["similarities"].items():
        assert database["similarities"][chunk_id] == pytest.approx(similarity, abs=1e-5)
    assert folder["dense"] == database["dense"]
    assert folder["centroids"].keys() == database["centroids"].keys()
    for name, centroid in folder["centroids"].items():
        np.testing.assert_allclose(centroid, database["centroids"][name], atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_write_of_the_interface_behaves_alike(
    backend: str, settings: Settings, embedder: Embedder, request
) -> None:
    settings = on_backend(settings, backend, request)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run(SAMPLE_FILES[:1]).failed
        store = index.store
        (doc,) = store.documents()
        generation = store.generation()

        summary = StoredSummary(document_type="manual", summary="About pumps.", method="extractive")
        assert store.set_summary(doc.id, summary) and store.summaries()[doc.id] == summary
        assert not store.set_summary("no-such-document", summary)

        sections = store.sections(doc.id)
        refined = sections[0].model_copy(update={"summary": "Refined.", "writer": "model"})
        assert store.refine_section(doc.id, refined, ("key-1", "Refined."))
        assert store.sections(doc.id)[0].summary == "Refined." and store.cached_section_summary("key-1") == "Refined."
        assert not store.refine_section("no-such-document", refined, None)
        store.add_to_summary_cache({"key-1": "Other.", "key-2": "Second."})
        assert store.summary_cache()["key-1"] == "Refined." and store.cached_section_summary("key-2") == "Second."

        ids, vectors = store.section_vectors(doc.id)
        store.set_section_vectors(doc.id, {ids[0]: -vectors[0]})
        np.testing.assert_allclose(store.section_vectors(doc.id)[1][0], -vectors[0], atol=1e-6)
        store.set_sections(doc.id, SectionSummaries(sections[:1], vectors[:1]))
        assert [s.node_id for s in store.sections(doc.id)] == [sections[0].node_id]
        assert store.documents_with_sections() == {doc.id}
        store.set_section_vector_recipe("test recipe")
        assert store.section_vector_recipe() == "test recipe"

        store.record_failure("/nowhere/broken.pdf", "broken.pdf", "not a PDF")
        assert store.failures() == [("/nowhere/broken.pdf", "broken.pdf", "not a PDF")]
        store.forget_failure("/nowhere/broken.pdf")
        assert store.failures() == []

        run = EvalRun(id="run-1", mode="retrieval", config={"k": 5}, summary={}, per_question=[])
        store.save_eval_run(run)
        store.save_eval_run(run.model_copy(update={"summary": {"hit@5": 0.5}}))  # a resumed run replaces itself
        assert [r.summary for r in store.eval_runs()] == [{"hit@5": 0.5}]

        tags = DocumentTags(project="pumps", confidentiality="public")
        store.update_tags(doc.id, tags)
        assert store.document_by_path(doc.path).tags == tags
        assert all(chunk.tags == tags for chunk in store.chunks(doc.id))
        store.remove_document(doc.id)
        assert store.documents() == [] and store.chunk_count() == 0 and store.document_by_path(doc.path) is None
        assert store.generation() == generation + 2  # the retag and the removal are commits
