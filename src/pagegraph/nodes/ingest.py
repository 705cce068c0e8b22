"""The `ingest` graph's one stage: index files that are on the server's disk, reporting each file as it finishes
(stream mode `custom`). A server user may only tag documents into their own projects and up to their ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from pagegraph.access import caller_access
from pagegraph.config import Context
from pagegraph.errors import ModelError, PagegraphError
from pagegraph.indexing.index import Index
from pagegraph.indexing.pipeline import FileOutcome, Ingestor, IngestProgress
from pagegraph.nodes.common import context_of
from pagegraph.services import Services
from pagegraph.state.ingest import IngestReport, IngestState
from pagegraph.state.records import CONFIDENTIALITY_LEVELS, Access, DocumentTags


class StreamedProgress(IngestProgress):
    """Ingest progress as custom stream events: one per file started and finished."""

    def __init__(self) -> None:
        self._write = get_stream_writer()

    def start(self, total_files: int) -> None:
        self._write({"event": "ingest_started", "files": total_files})

    def file_started(self, path: Path) -> None:
        self._write({"event": "file_started", "name": path.name})

    def file_finished(self, outcome: FileOutcome) -> None:
        self._write(
            {"event": "file_finished", "name": outcome.name, "status": outcome.status, "reason": outcome.reason}
        )


def local_path(item: str) -> Path:
    """A path on the server's disk, from a path or a file:// URL."""
    parsed = urlparse(item)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme in ("http", "https", "ftp", "s3"):
        raise PagegraphError(f"{item}: only paths and file:// URLs on the server's disk can be ingested")
    return Path(item).expanduser()


def check_tags(tags: DocumentTags, access: Access | None) -> None:
    if access is None:
        return
    if access.projects is not None and tags.project not in access.projects:
        allowed = ", ".join(access.projects) or "none"
        raise PagegraphError(f"{access.user} may ingest into projects {allowed}, not {tags.project!r}")
    if access.ceiling is not None and CONFIDENTIALITY_LEVELS.index(tags.confidentiality) > CONFIDENTIALITY_LEVELS.index(
        access.ceiling
    ):
        raise PagegraphError(f"{access.user} may ingest documents up to {access.ceiling}, not {tags.confidentiality}")


def ingest_documents(state: IngestState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    context = context_of(runtime)
    folder = services.index_folder(context)
    try:
        paths = [local_path(item) for item in state.get("paths") or []]
        if not paths and not state.get("prune"):
            raise PagegraphError("give at least one path to ingest (or prune: true)")
        missing = [str(path) for path in paths if not path.exists()]
        if missing:
            raise PagegraphError(f"not found on the server: {', '.join(missing)}")
        tags = DocumentTags(
            project=state.get("project"),
            source_type=state.get("source_type"),
            confidentiality=state.get("confidentiality") or "internal",
            extra=state.get("tags") or {},
        )
        check_tags(tags, caller_access())
        model = None if services.settings.ingest_summaries == "extractive" else services.chat_model(context, 0.0)
        with Index(folder, services.settings, write=True) as index:
            summary = Ingestor(index, StreamedProgress(), model).run(paths, tags=tags, prune=bool(state.get("prune")))
    except ModelError as exc:
        return {"report": None, "error": f"writing document summaries: {exc}; documents finished before are kept"}
    except PagegraphError as exc:
        return {"report": None, "error": str(exc)}
    return {"report": IngestReport.from_summary(str(folder), summary), "error": None}
