"""One filter, every backend: for random filters over one set of documents, the chunk catalog's masks (a folder
index), Chroma's `where`, and PostgreSQL's SQL (pgvector's exact search and keyword search in a database index) let
through exactly the chunks the filter's own meaning does (`RetrievalFilter.selects` and the page range)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.state.documents import CONFIDENTIALITY_LEVELS, Chunk, DocumentRecord, DocumentTags
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index, open_index
from tests.conftest import on_backend
from tests.pdf_factory import text_pdf

pytestmark = pytest.mark.slow

# Every page holds the word "harbour", so a keyword search for it reaches every chunk the filter allows.
TAGS = {
    "alpha-report.pdf": DocumentTags(
        project="alpha", source_type="report", confidentiality="public", date=date(2020, 3, 1)
    ),
    "alpha-memo.pdf": DocumentTags(project="alpha", source_type="memo", confidentiality="confidential"),
    "beta-manual.pdf": DocumentTags(
        project="beta", source_type="manual", confidentiality="internal", date=date(2022, 7, 15)
    ),
    "beta-report.pdf": DocumentTags(
        project="beta", source_type="report", confidentiality="internal", date=date(2024, 1, 31)
    ),
    "untagged.pdf": DocumentTags(),
    "gamma-notes.pdf": DocumentTags(project="gamma", confidentiality="public", date=date(2022, 7, 15)),
}
NAMES = sorted(TAGS)
PAGES = 3


def _documents(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [
        text_pdf(
            folder / name,
            [
                (f"Part {page}", f"Page {page} of {name}: the harbour log notes tide {page * 7} and crane {name[:4]}.")
                for page in range(1, PAGES + 1)
            ],
        )
        for name in NAMES
    ]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory, cache_dir: Path, embedder: Embedder, request) -> dict[str, Index]:
    """The same documents, tagged alike, in a folder index and in a database index, opened to read. The tags are
    given after the ingest, so that a tag taken away (the date each file brought) must leave every backend too."""
    files = _documents(tmp_path_factory.mktemp("filter-documents"))
    opened = {}
    for backend in ("folder", "postgres"):
        base = Settings(index=tmp_path_factory.mktemp(f"filter-{backend}") / "index", cache_dir=cache_dir)
        backend_settings = on_backend(base, backend, request)
        with open_index(backend_settings.index, backend_settings, write=True, embedder=embedder) as writer:
            assert not Ingestor(writer).run(files).failed
            for document in writer.documents():
                writer.retag(document.id, TAGS[document.name])
        opened[backend] = open_index(backend_settings.index, backend_settings, embedder=embedder)
    yield opened
    for index in opened.values():
        index.close()


def _expected(flt: RetrievalFilter, documents: dict[str, DocumentRecord], chunks: list[Chunk]) -> set[tuple[str, int]]:
    """The filter's meaning, from the records: the document is selected, the chunk overlaps the page range."""
    return {
        (documents[c.document_id].name, c.start_page)
        for c in chunks
        if flt.selects(documents[c.document_id])
        and (flt.pages is None or (c.end_page >= flt.pages[0] and c.start_page <= flt.pages[1]))
    }


def _places(index: Index, chunk_ids) -> set[tuple[str, int]]:
    found = index.chunks_by_id(list(chunk_ids))
    documents = {d.id: d.name for d in index.documents()}
    return {(documents[c.document_id], c.start_page) for c in found.values()}


days = st.dates(min_value=date(2019, 1, 1), max_value=date(2025, 12, 31))
filters = st.builds(
    RetrievalFilter,
    documents=st.none() | st.lists(st.sampled_from([*NAMES, "absent.pdf"]), max_size=3),
    projects=st.none() | st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=2),
    source_types=st.none() | st.lists(st.sampled_from(["report", "memo", "manual", "contract"]), max_size=2),
    max_confidentiality=st.none() | st.sampled_from(CONFIDENTIALITY_LEVELS),
    pages=st.none() | st.tuples(st.integers(1, PAGES + 1), st.integers(0, 2)).map(lambda p: (p[0], p[0] + p[1])),
    date_from=st.none() | days,
    date_to=st.none() | days,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=filters)
def test_every_backend_lets_the_same_chunks_through_a_filter(indexes: dict[str, Index], flt: RetrievalFilter) -> None:
    folder, database = indexes["folder"], indexes["postgres"]
    documents = {d.id: d for d in folder.documents()}
    chunks = folder.chunks()
    assert len(chunks) == len(NAMES) * PAGES
    expected = _expected(flt, documents, chunks)

    mask = folder.catalog.mask(flt)
    catalog_ids = folder.catalog.ids if mask is None else [i for i, kept in zip(folder.catalog.ids, mask) if kept]
    assert _places(folder, catalog_ids) == expected, "chunk catalog mask (folder index)"

    query = folder.embedder.embed_queries(["harbour log"])[0]
    chroma = folder.vectors.search(query, len(chunks), flt)
    assert _places(folder, [chunk_id for chunk_id, _ in chroma]) == expected, "Chroma where"

    exact = database.store.search.nearest(query, len(chunks), flt, database.generation, exact=True)
    assert _places(database, [chunk_id for chunk_id, _ in exact]) == expected, "PostgreSQL exact vector search"
    keyword = database.keyword_search("harbour", len(chunks), flt)
    assert _places(database, [chunk_id for chunk_id, _ in keyword]) == expected, "PostgreSQL keyword search"
    snapshot = database.catalog.mask(flt)
    kept = database.catalog.ids if snapshot is None else np.asarray(database.catalog.ids)[snapshot].tolist()
    assert _places(database, kept) == expected, "chunk catalog mask (database index snapshot)"


def test_the_filters_reach_every_kind_of_outcome(indexes: dict[str, Index]) -> None:
    """The documents are tagged so that each field can keep a chunk in or out (a test of the test's data)."""
    folder = indexes["folder"]
    documents, chunks = {d.id: d for d in folder.documents()}, folder.chunks()
    every = _expected(RetrievalFilter(), documents, chunks)
    for flt in (
        RetrievalFilter(projects=["alpha"]),
        RetrievalFilter(source_types=["report"]),
        RetrievalFilter(max_confidentiality="internal"),
        RetrievalFilter(pages=(2, 2)),
        RetrievalFilter(date_from=date(2022, 7, 15)),
        RetrievalFilter(date_to=date(2022, 7, 15)),
    ):
        assert set() < _expected(flt, documents, chunks) < every, flt
