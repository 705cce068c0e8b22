"""Services: the index a run reads is reopened after an ingest changed it; every index it opened is closed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pagegraph.config import Context, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.services import Services
from pagegraph.store.index import open_index


def ingest(folder: Path, settings: Settings, embedder: Embedder, docs: Path) -> None:
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([docs]).failed


def test_an_index_changed_by_an_ingest_is_reopened_and_the_old_one_closed_with_the_rest(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    folder, docs = tmp_path / "index", tmp_path / "docs"
    docs.mkdir()
    (docs / "alpha.md").write_text("# Alpha\n\nThe alpha unit weighs 12 kg.\n")
    settings = Settings(cache_dir=cache_dir, index=folder)
    ingest(folder, settings, embedder, docs)
    services = Services(settings)
    first = services.index(Context())
    assert services.index(Context()) is first, "opened once while nothing changes"

    (docs / "beta.md").write_text("# Beta\n\nThe beta unit weighs 20 kg.\n")
    ingest(folder, settings, embedder, docs)
    second = services.index(Context())
    assert second is not first and {d.name for d in second.store.documents()} == {"alpha.md", "beta.md"}
    assert first.store.documents(), "a run still holding the replaced index can finish"

    services.close()
    for index in (first, second):
        with pytest.raises(sqlite3.ProgrammingError):
            index.store.documents()


def test_warming_opens_the_index_and_makes_the_default_model_before_any_run(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    folder, docs = tmp_path / "index", tmp_path / "docs"
    settings = Settings(cache_dir=cache_dir, index=folder, model="ollama:llama3.2")
    services = Services(settings)
    services.warm(Context())  # no index yet: the model only, nothing to fail on
    docs.mkdir()
    (docs / "alpha.md").write_text("# Alpha\n\nThe alpha unit weighs 12 kg.\n")
    ingest(folder, settings, embedder, docs)
    services.warm(Context())
    with services._lock:
        warmed = dict(services._indexes), dict(services._models)
    assert list(warmed[0]) == [folder.resolve()] and services.index(Context()) is warmed[0][folder.resolve()]
    assert [spec for spec, _ in warmed[1]] == [None], "the default model, made once"
    services.close()
