from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.indexing.embedder import Embedder

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
SHARED_DOCS = REPO.parent / "shared" / "eval" / "mmlongbench" / "documents"


@pytest.fixture(scope="session")
def shared_docs() -> Path:
    if not SHARED_DOCS.is_dir():
        pytest.skip(f"evaluation documents not found at {SHARED_DOCS} (../shared is absent)")
    return SHARED_DOCS


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pagegraph-cache")


@pytest.fixture
def settings(tmp_path: Path, cache_dir: Path) -> Settings:
    return Settings(index=tmp_path / "index", cache_dir=cache_dir, embedding_threads=0)


@pytest.fixture(scope="session")
def embedder(cache_dir: Path) -> Embedder:
    return Embedder(Settings(cache_dir=cache_dir))
