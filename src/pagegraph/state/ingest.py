"""State of the `ingest` graph: files on the server's disk in, what happened to each out."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from pagegraph.state.documents import Confidentiality

Status = Literal["added", "updated", "unchanged", "retagged", "failed", "skipped", "removed"]


class IngestInput(TypedDict, total=False):
    """`paths`: files or folders on the server's disk, as paths or file:// URLs (the server downloads nothing);
    `remove`: documents to take out of the index, by the name the documents list shows (their files stay)."""

    paths: list[str]
    remove: list[str]
    project: str | None
    source_type: str | None
    confidentiality: Confidentiality | None
    tags: dict[str, str]
    prune: bool
    declassify: bool


class IngestedFile(BaseModel):
    name: str
    path: str
    status: Status
    pages: int = 0
    chunks: int = 0
    reason: str = ""


class IngestReport(BaseModel):
    index: str
    files: list[IngestedFile] = Field(default_factory=list)
    seconds: float = 0.0
    chunks_embedded: int = 0


class IngestOutput(TypedDict, total=False):
    """`report` lists every file with its outcome; `error` says why nothing was ingested (bad input, no access)."""

    report: IngestReport | None
    error: str | None


class IngestState(IngestInput, IngestOutput):
    pass
