"""`manifest.json`: every parameter that shapes an index, checked whenever the index is opened."""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from pagegraph.llm.minilm import DIMENSION, MAX_TOKENS, MODEL_NAME
from pagegraph.store.chunk_text import CHUNK_HEADER
from pagegraph.version import __version__

INDEX_VERSION = 1
MANIFEST_FILE = "manifest.json"
ChunkStrategy = Literal["page", "document"]
# A Markdown heading line: `marks` (its level) and `title`.
DEFAULT_HEADING_PATTERN = r"^(?P<marks>#{1,6})[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$"


@dataclass(frozen=True)
class ChunkingParams:
    strategy: ChunkStrategy = "page"
    chunk_size: int = 1000
    chunk_overlap: int = 200
    min_section_chars: int = 200
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.chunk_size < 100:
            raise ValueError(f"chunk size {self.chunk_size} is too small (minimum 100 characters)")
        if not 0 <= self.chunk_overlap < self.chunk_size // 2:
            raise ValueError(f"chunk overlap {self.chunk_overlap} must be at least 0 and under half the chunk size")


class IndexParams(BaseModel):
    """Parameters an index is built with; two indexes with different values never mix."""

    index_version: int = INDEX_VERSION
    embedding_model: str = MODEL_NAME
    embedding_dimension: int = DIMENSION
    embedding_max_tokens: int = MAX_TOKENS
    chunk_strategy: ChunkStrategy = "page"
    chunk_size: int = Field(default=1000, ge=100)
    chunk_overlap: int = Field(default=200, ge=0)
    min_section_chars: int = Field(default=200, ge=0)
    chunk_max_tokens: int = Field(default=MAX_TOKENS, description="chunks are cut to fit the embedder's window")
    heading_pattern: str = DEFAULT_HEADING_PATTERN
    bm25_method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    chunk_header: str = Field(
        default=CHUNK_HEADER, description="how a chunk's search text is made (chunking.search_text)"
    )

    @model_validator(mode="before")
    @classmethod
    def _headerless_before_recorded(cls, data: object) -> object:
        """Manifests written before chunk headers existed describe indexes of bare chunk text."""
        if isinstance(data, dict) and "index_version" in data and "chunk_header" not in data:
            return {**data, "chunk_header": "none"}
        return data

    @field_validator("heading_pattern")
    @classmethod
    def _heading_pattern_has_groups(cls, pattern: str) -> str:
        try:
            groups = set(re.compile(pattern).groupindex)
        except re.error as exc:
            raise ValueError(f"heading pattern {pattern!r} is not a valid regular expression ({exc})") from exc
        if not {"marks", "title"} <= groups:
            raise ValueError(f"heading pattern {pattern!r} must define the groups 'marks' and 'title'")
        return pattern

    def chunking(self) -> ChunkingParams:
        return ChunkingParams(
            strategy=self.chunk_strategy,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            min_section_chars=self.min_section_chars,
            max_tokens=self.chunk_max_tokens,
        )

    def differences(self, other: IndexParams) -> dict[str, tuple[object, object]]:
        mine, theirs = self.model_dump(), other.model_dump()
        return {key: (mine[key], theirs[key]) for key in mine if mine[key] != theirs[key]}


class Manifest(BaseModel):
    index_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    created_by: str = f"pagegraph {__version__}"
    embedding_backend: str = Field(description="informational: ONNX and torch give the same vectors")
    params: IndexParams


def read_manifest(folder: Path) -> Manifest | None:
    path = folder / MANIFEST_FILE
    if not path.exists():
        return None
    return Manifest.model_validate(json.loads(path.read_text()))


def write_manifest(folder: Path, manifest: Manifest) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{MANIFEST_FILE}.tmp"
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n")
    os.replace(tmp, folder / MANIFEST_FILE)
