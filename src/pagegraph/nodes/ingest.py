"""The `ingest` graph's one stage: index files that are on the server's disk, reporting each file as it finishes
(stream mode `custom`); a cancelled run stops within seconds and releases the index. A server user needs the
editor or admin role, may only tag documents into their own projects and up to their ceiling, and reads only from
the ingest folders (`Settings.server.ingest_roots`)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from pagegraph.access.audit import audit
from pagegraph.access.runs import caller_access
from pagegraph.config import Context
from pagegraph.errors import PagegraphError
from pagegraph.ingest.pipeline import NOT_FOUND, FileOutcome, Ingestor, IngestProgress, IngestSummary, inside
from pagegraph.llm.stop import RUN_STOP
from pagegraph.nodes.common import context_of
from pagegraph.services import Services
from pagegraph.state.documents import DocumentTags
from pagegraph.state.ingest import IngestedFile, IngestReport, IngestState
from pagegraph.store.index import open_index


class StreamedProgress(IngestProgress):
    """Ingest progress as custom stream events, each naming its file: started, parsed (pages), its chunks to
    embed, each batch embedded, finished. Files are ingested one after another, so the events of one file follow
    its `file_started`."""

    def __init__(self) -> None:
        self._write = get_stream_writer()
        self._file = ""

    def start(self, total_files: int) -> None:
        self._write({"event": "ingest_started", "files": total_files})

    def file_started(self, path: Path) -> None:
        self._file = path.name
        self._write({"event": "file_started", "name": path.name})

    def pages_parsed(self, pages: int) -> None:
        self._write({"event": "file_parsed", "name": self._file, "pages": pages})

    def chunks_planned(self, chunks: int) -> None:
        self._write({"event": "file_embedding", "name": self._file, "chunks": chunks})

    def chunks_embedded(self, chunks: int, seconds: float) -> None:
        self._write({"event": "chunks_embedded", "name": self._file, "chunks": chunks})

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


def resolve_in_roots(item: str, roots: list[Path]) -> Path | None:
    """What a server user named, once symlinks and '..' are resolved, when it exists inside an ingest folder; a
    relative path is looked up in each folder. None otherwise, whatever lies outside."""
    path = local_path(item)
    for candidate in [path] if path.is_absolute() else [root / path for root in roots]:
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        if inside(resolved, roots) and resolved.exists():
            return resolved
    return None


def shown_path(path: str, roots: list[Path]) -> str:
    """How a server user sees a path: relative to the ingest folder it lies in (the same whether or not the file
    exists or is theirs to see), else as they gave it."""
    normal = Path(os.path.normpath(path))
    for root in roots:
        if normal.is_absolute() and normal.is_relative_to(root):
            return str(normal.relative_to(root))
    return path


def ingest_documents(state: IngestState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """Cancelling the run (the server's cancel, a closed client) tells the ingest to stop (`nodes.stoppable`); the
    cancellation completes once it has wound down, so the index lock is released by then."""
    context = context_of(runtime)
    access = caller_access()
    try:
        folder = services.index_folder(context)
        items = state.get("paths") or []
        removing = state.get("remove") or []
        if not items and not removing and not state.get("prune"):
            raise PagegraphError("give at least one path to ingest or document to remove (or prune: true)")
        tags = DocumentTags(
            project=state.get("project"),
            source_type=state.get("source_type"),
            confidentiality=state.get("confidentiality") or "internal",
            extra=state.get("tags") or {},
        )
        roots = None
        refused: list[FileOutcome] = []
        if access is None:
            paths = [local_path(item) for item in items]
        else:
            if removing and not access.may_ingest:
                refusal = f"{access.user} may not remove documents: role {access.role} (it needs editor or admin)"
                audit("ingest_refused", who=access.user, route="graph ingest", reason=refusal)
                raise PagegraphError(refusal)
            if (items or state.get("prune")) and (beyond := access.refuse_tags(tags)):
                audit("ingest_refused", who=access.user, route="graph ingest", reason=beyond)
                raise PagegraphError(beyond)
            if state.get("declassify") and access.role != "admin":
                refusal = f"{access.user} may not declassify documents (declassify needs the admin role)"
                audit("declassify_refused", who=access.user, route="graph ingest", reason=refusal)
                raise PagegraphError(refusal)
            roots = services.settings.ingest_folders(access.user)
            found = {item: resolve_in_roots(item, roots) for item in items}
            paths = [path for path in found.values() if path is not None]
            refused = [FileOutcome(str(local_path(i)), "failed", reason=NOT_FOUND) for i, p in found.items() if not p]
            if refused:
                outside = ", ".join(outcome.path for outcome in refused[:5])
                audit(
                    "ingest_refused",
                    who=access.user,
                    route="graph ingest",
                    reason=f"{len(refused)} path(s) outside the ingest folders: {outside}",
                )
        summary = IngestSummary(outcomes=refused)
        if paths or removing or state.get("prune"):
            with open_index(folder, services.settings, write=True) as index:
                ingestor = Ingestor(
                    index,
                    StreamedProgress(),
                    access=access,
                    roots=roots,
                    declassify=bool(state.get("declassify")),
                    stop=RUN_STOP.get(),
                )
                ran = (
                    ingestor.run(paths, tags=tags, prune=bool(state.get("prune")))
                    if paths or state.get("prune")
                    else IngestSummary()
                )
                removed = ingestor.remove(removing) if removing else []
            summary = replace(ran, outcomes=refused + ran.outcomes + removed)
            if access is not None and (gone := [o.name for o in removed if o.status == "removed"]):
                audit("documents_removed", who=access.user, route="graph ingest", reason=", ".join(gone))
            if access is not None:  # declassifying without being asked is refused as the explicit one is
                for outcome in ran.outcomes:
                    if outcome.lowers_confidentiality:
                        audit(
                            "declassify_refused",
                            who=access.user,
                            route="graph ingest",
                            reason=f"{Path(outcome.path).name}: {outcome.reason}",
                        )
        if roots is not None:
            summary.outcomes = [replace(o, path=shown_path(o.path, roots)) for o in summary.outcomes]
    except PagegraphError as exc:
        return {"report": None, "error": str(exc)}
    return {"report": ingest_report(str(folder), summary), "error": None}


def ingest_report(index: str, summary: IngestSummary) -> IngestReport:
    files = [
        IngestedFile(name=o.name, path=o.path, status=o.status, pages=o.pages, chunks=o.chunks, reason=o.reason)
        for o in summary.outcomes
    ]
    return IngestReport(
        index=index, files=files, seconds=round(summary.seconds, 2), chunks_embedded=summary.chunks_embedded
    )
