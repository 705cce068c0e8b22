"""Both backends behind `RecordStore` keep the same records: the same samples ingested into a folder index and into a
database index read back alike, and every write of the interface behaves alike on both."""

from __future__ import annotations

import numpy as np
import pytest

from pagegraph.config import Settings
from pagegraph.indexing.embedder import Embedder
from pagegraph.indexing.index import open_index
from pagegraph.indexing.pipeline import Ingestor
from pagegraph.indexing.records import RecordStore, SectionSummaries
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import DocumentTags
from pagegraph.state.evaluation import EvalRun
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


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory, cache_dir, embedder: Embedder, request) -> dict[str, dict]:
    """The two samples ingested into each backend, read back through the interface."""
    found = {}
    for backend in BACKENDS:
        folder = tmp_path_factory.mktemp(f"records-{backend}")
        settings = on_backend(Settings(index=folder / "index", cache_dir=cache_dir), backend, request)
        with open_index(settings.index, settings, write=True, embedder=embedder) as index:
            assert not Ingestor(index).run(SAMPLE_FILES).failed
            assert isinstance(index.store, RecordStore)
            found[backend] = records(index.store)
    return found


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
