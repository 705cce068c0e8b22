"""The web page `pagegraph serve` shows at `/`, and the routes it reads besides the LangGraph API (which it calls
for runs and threads): who is signed in, the documents they may read, their uploads, and the citation viewer's
pages. Every route answers as the user whose API key it carries, under the same projects and ceiling as retrieval:
a document they may not read is answered exactly as one that does not exist (404)."""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePath
from typing import Any, get_args

from langgraph_sdk import Auth
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pagegraph import GRAPH_NAMES
from pagegraph.access.audit import audit, recent
from pagegraph.access.auth import request_access
from pagegraph.access.records import Access
from pagegraph.config import Context, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.loaders import SUPPORTED_EXTENSIONS
from pagegraph.nodes.labels import ANSWER_NODES, STAGE_LABELS
from pagegraph.server.page_view import page_image, passage_boxes
from pagegraph.services import default_services
from pagegraph.state.answering import OutputType
from pagegraph.state.documents import CONFIDENTIALITY_LEVELS, DocumentRecord, page_starts
from pagegraph.store.index import Index

STATIC = Path(__file__).with_name("static")
UPLOAD_PATH = "/ui/uploads"
NOT_FOUND = "no such document or page"
MAX_NAME_BYTES = 200  # file systems take 255; room for the index's own suffixes


class Refusal(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


Handler = Callable[[Request, Access], Awaitable[Response]]


def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """The route as the user whose key the request carries; refusals as JSON `{"detail": ...}`."""

    @functools.wraps(handler)
    async def route(request: Request) -> Response:
        try:
            access = await asyncio.to_thread(request_access, dict(request.scope["headers"]), client_of(request))
            return await handler(request, access)
        except Auth.exceptions.HTTPException as exc:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        except Refusal as exc:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status)

    return route


def readable_index() -> Index | None:
    """The server's index, shared with the graphs; None before anything was ingested."""
    services = default_services()
    return services.index(Context()) if services.has_index(Context()) else None


def readable_document(index: Index | None, document_id: str, access: Access) -> DocumentRecord:
    document = next((d for d in index.documents() if d.id == document_id), None) if index else None
    if document is None or not access.may_read(document.tags):
        raise Refusal(404, NOT_FOUND)
    return document


async def index_page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-cache"})


async def favicon(request: Request) -> Response:
    """The page's icon where a browser asks for it without reading the page's link to it."""
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml", headers={"cache-control": "max-age=86400"})


@signed_in
async def me(request: Request, access: Access) -> Response:
    """Who is signed in, and what the page offers them."""
    return JSONResponse(
        {
            **access.model_dump(mode="json"),
            "may_upload": access.may_ingest,
            "graphs": list(GRAPH_NAMES),
            "output_types": list(get_args(OutputType)),
            "confidentiality": list(CONFIDENTIALITY_LEVELS),
            "stages": STAGE_LABELS,
            "answer_nodes": list(ANSWER_NODES),
            "upload_types": sorted(SUPPORTED_EXTENSIONS),
            "max_upload_bytes": get_settings().limits.max_upload_bytes,
        }
    )


@signed_in
async def documents(request: Request, access: Access) -> Response:
    settings = get_settings()

    def listed() -> dict:
        index = readable_index()
        if index is None:
            return {"documents": [], "failures": []}
        summaries = index.summaries()
        shown = []
        for document in index.documents():
            if not access.may_read(document.tags):
                continue
            summary = summaries.get(document.id)
            shown.append(
                {
                    "id": document.id,
                    "name": document.name,
                    "title": document.title,
                    "type": document.source_type,
                    "pages": document.n_pages,
                    "chunks": document.n_chunks,
                    "project": document.tags.project,
                    "confidentiality": document.tags.confidentiality,
                    "status": "searchable",
                    "summary": summary.summary if summary else "",
                    "summary_by": summary.method if summary else None,
                    "ingested_at": document.ingested_at,
                    "may_remove": access.may_write(document.tags),
                }
            )
        own = settings.uploads_of(access.user)
        failures = [
            {"name": name, "reason": reason}
            for path, name, reason in index.failures()
            if access.role == "admin" or Path(path).is_relative_to(own)
        ]
        return {"documents": shown, "failures": failures}

    return JSONResponse(await asyncio.to_thread(listed))


AUDIT_LIMIT = 1000


@signed_in
async def audit_log(request: Request, access: Access) -> Response:
    """The newest entries of the server's audit log (`?limit=N`, at most 1000): admins only."""
    if access.role != "admin":
        reason = f"{access.user} may not read the audit log: role {access.role} (it needs admin)"
        audit("role_refused", who=access.user, route=request.url.path, reason=reason, source=client_of(request))
        raise Refusal(403, reason)
    limit = max(1, min(AUDIT_LIMIT, _int(request.query_params.get("limit")) or 100))
    entries = await asyncio.to_thread(recent, get_settings().audit_path(), limit)
    return JSONResponse({"entries": [entry.model_dump() for entry in entries]})


def client_of(request: Request) -> str | None:
    return request.client.host if request.client else None


@signed_in
async def upload(request: Request, access: Access) -> Response:
    """Files into the user's upload folder, ready for their `ingest` run (which the page starts next)."""
    if not access.may_ingest:
        reason = f"{access.user} may not upload: role {access.role} (uploads need editor or admin)"
        audit("ingest_refused", who=access.user, route=request.url.path, reason=reason, source=client_of(request))
        raise Refusal(403, reason)
    settings = get_settings()
    form = await request.form(max_files=100, max_fields=10)
    files = [item for _, item in form.multi_items() if isinstance(item, UploadFile)]
    if not files:
        raise Refusal(400, "no file in the upload (send multipart/form-data with one or more `file` parts)")
    names = [upload_name(item) for item in files]
    folder = settings.uploads_of(access.user)
    saved = await asyncio.to_thread(save_uploads, folder, list(zip(names, files)))
    return JSONResponse({"files": [{"name": path.name, "path": str(path)} for path in saved]})


def upload_name(item: UploadFile) -> str:
    name = PurePath((item.filename or "").replace("\\", "/")).name.strip()
    if not name or name.startswith(".") or any(ord(ch) < 32 for ch in name):
        raise Refusal(400, f"upload {item.filename!r}: give the file a name (no control characters)")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise Refusal(400, f"upload {name[:40]!r}…: a file name of at most {MAX_NAME_BYTES} bytes, please")
    if PurePath(name).suffix.lower() not in SUPPORTED_EXTENSIONS:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise Refusal(415, f"{name}: pagegraph cannot read this type of file (supported: {supported})")
    return name


def save_uploads(folder: Path, files: list[tuple[str, UploadFile]]) -> list[Path]:
    """Each file written whole beside its final name, then moved there: a reader never sees half a file."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for name, item in files:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", delete=False) as part:
            try:
                item.file.seek(0)
                while block := item.file.read(1 << 20):
                    part.write(block)
            except BaseException:
                Path(part.name).unlink(missing_ok=True)
                raise
        target = folder / name
        try:
            os.replace(part.name, target)
        except BaseException:
            Path(part.name).unlink(missing_ok=True)
            raise
        saved.append(target)
    return saved


@signed_in
async def view(request: Request, access: Access) -> Response:
    """What the citation viewer shows for `?document=ID&page=N`, or `?chunk=ID[&chunk=ID...]&page=N` (a cited
    passage, whose chunks' part of the page is marked), with `start`/`end` page-text offsets to mark instead (a
    highlighted sentence)."""
    query = request.query_params

    def shown() -> dict:
        index = readable_index()
        if index is None:
            raise Refusal(404, NOT_FOUND)
        chunk_ids = query.getlist("chunk")
        chunks = list(index.chunks_by_id(chunk_ids).values()) if chunk_ids else []
        if len(chunks) != len(set(chunk_ids)) or len({c.document_id for c in chunks}) > 1:
            raise Refusal(404, NOT_FOUND)
        document = readable_document(index, chunks[0].document_id if chunks else query.get("document", ""), access)
        pages = index.pages(document.id)
        asked = _int(query.get("page"))
        number = asked if asked is not None else min((c.start_page for c in chunks), default=1)
        if not 1 <= number <= len(pages):
            raise Refusal(404, NOT_FOUND)
        text = pages[number - 1].text
        mark = None
        if (start := _int(query.get("start"))) is not None and (end := _int(query.get("end"))) is not None:
            mark = (max(0, start), min(len(text), end))
        elif chunks:
            first = page_starts(pages)[number - 1]
            mark = (
                max(0, min(c.start_offset for c in chunks) - first),
                min(len(text), max(c.end_offset for c in chunks) - first),
            )
        if mark is not None and mark[0] >= mark[1]:
            mark = None
        shown: dict[str, Any] = {
            "document": {"id": document.id, "name": document.name, "title": document.title, "pages": len(pages)},
            "page": number,
            "text": text,
            "mark": mark,
            "image": None,
            "boxes": [],
        }
        if document.source_type == "pdf" and Path(document.path).is_file():
            shown["image"] = f"/ui/pages/{document.id}/{number}.png"
            if mark is not None:
                shown["boxes"] = passage_boxes(Path(document.path), number, text[mark[0] : mark[1]])
        return shown

    return JSONResponse(await asyncio.to_thread(shown))


@signed_in
async def page_png(request: Request, access: Access) -> Response:
    settings = get_settings()
    document_id, page = request.path_params["document_id"], request.path_params["page"]
    if not page.isdigit():
        raise Refusal(400, f"page {page!r}: a page number is a whole number from 1")
    number = int(page)

    def rendered() -> bytes:
        document = readable_document(readable_index(), document_id, access)
        if document.source_type != "pdf" or not 1 <= number <= document.n_pages:
            raise Refusal(404, NOT_FOUND)
        if not Path(document.path).is_file():
            raise Refusal(404, f"{document.name} is no longer on the server's disk; its text is still indexed")
        cache = Path(settings.cache_dir).expanduser() / "pages" / document.sha256
        try:
            return page_image(Path(document.path), number, cache)
        except PagegraphError as exc:
            raise Refusal(404, str(exc)) from exc

    image = await asyncio.to_thread(rendered)
    return Response(image, media_type="image/png", headers={"cache-control": "private, max-age=3600"})


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        raise Refusal(400, f"{value!r} is not a whole number") from None


routes = [
    Route("/", index_page),
    Route("/favicon.ico", favicon),
    Route("/ui/me", me),
    Route("/ui/audit", audit_log),
    Route("/ui/documents", documents),
    Route(UPLOAD_PATH, upload, methods=["POST"]),
    Route("/ui/view", view),
    Route("/ui/pages/{document_id}/{page}.png", page_png),
    Mount("/ui/static", StaticFiles(directory=STATIC), name="static"),
]
