"""pagegraph as MCP tools (the official `mcp` SDK): search, ask, list_documents and ingest, the same over stdio
(`pagegraph mcp`, the local user on a local index) and over HTTP (`/mcp` on `pagegraph serve`, as the caller's key
allows). Each returns structured content (and the same JSON as text); a refusal, a limit or a bad input is a tool
error naming the reason, never a server error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import date
from typing import Annotated, Any, Protocol, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from pagegraph.access.records import Access
from pagegraph.access.runs import LOCAL_OWNER
from pagegraph.errors import PagegraphError, described
from pagegraph.prompts import tools as descriptions
from pagegraph.state.documents import Confidentiality
from pagegraph.tools.documents import (
    Answer,
    DocumentList,
    DocumentTools,
    IngestResult,
    QuestionGraph,
    SearchResult,
    search_filter,
)
from pagegraph.version import __version__

T = TypeVar("T")
AccessOf = Callable[[Mapping[str, str] | None], Access | None]

Documents = Annotated[
    list[str] | None, Field(description="search only these documents: file names as list_documents gives them")
]
Projects = Annotated[list[str] | None, Field(description="only documents tagged with one of these projects")]
SourceTypes = Annotated[list[str] | None, Field(description="only documents with one of these source-type tags")]
Since = Annotated[date | None, Field(description="only documents dated on or after this day (YYYY-MM-DD)")]
Until = Annotated[date | None, Field(description="only documents dated on or before this day (YYYY-MM-DD)")]
READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class RunLimiter(Protocol):
    """How many calls a user may have going and start per minute (the server's per-user run limits)."""

    def admit(self, user: str, runs: int = 1) -> tuple[str, int] | None: ...

    def release(self, user: str, runs: int = 1) -> None: ...


def owner_access(headers: Mapping[str, str] | None) -> Access | None:
    """Over stdio: the local user, who owns the local index (as on the command line)."""
    return None


class ToolServer(MCPServer):
    """The SDK's server, whose refusal of a tool call's arguments names each field and what is wrong with it in one
    line, without pydantic's echo of the values and its documentation link."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(f"{name}: {described(exc.__cause__)}") from exc.__cause__
            raise


def build_mcp_server(
    tools: DocumentTools, access_of: AccessOf = owner_access, limits: RunLimiter | None = None
) -> MCPServer:
    """The MCP server of `tools`: each call runs as `access_of(the request's headers)` and, with `limits`, counts
    against that user's run limits."""
    server = ToolServer(name="pagegraph", instructions=descriptions.INSTRUCTIONS, version=__version__)

    async def run(ctx: Context, work: Callable[[Access | None], Awaitable[T]]) -> T:
        """`work(the caller's access)` within the caller's limits; a refusal as a tool error."""
        access = await anyio.to_thread.run_sync(access_of, ctx.headers)
        user = access.user if access is not None else LOCAL_OWNER
        if limits is not None and (refusal := limits.admit(user)):
            reason, wait = refusal
            raise ToolError(f"{reason}: try again in {wait} s")
        try:
            return await work(access)
        except PagegraphError as exc:
            raise ToolError(str(exc)) from None
        finally:
            if limits is not None:
                limits.release(user)

    @server.tool(name="search", title="Search the documents", description=descriptions.SEARCH, annotations=READS)
    async def search(
        query: Annotated[str, Field(description="what to look for: a question or a few words")],
        ctx: Context,
        documents: Documents = None,
        projects: Projects = None,
        source_types: SourceTypes = None,
        since: Since = None,
        until: Until = None,
        k: Annotated[int, Field(ge=1, le=20, description="how many passages, at most")] = 5,
    ) -> SearchResult:
        return await run(
            ctx,
            lambda access: tools.search(
                query, search_filter(documents, projects, source_types, since, until), k, access
            ),
        )

    @server.tool(name="ask", title="Ask the documents", description=descriptions.ASK, annotations=READS)
    async def ask(
        question: Annotated[str, Field(description="one self-contained question")],
        ctx: Context,
        documents: Documents = None,
        projects: Projects = None,
        source_types: SourceTypes = None,
        since: Since = None,
        until: Until = None,
        graph: Annotated[
            QuestionGraph, Field(description="the answering workflow; auto picks one for the model")
        ] = "auto",
    ) -> Answer:
        told = 0

        async def progress(stage: str) -> None:  # MCP clients time out a silent call; these keep it alive
            nonlocal told
            told += 1
            await ctx.report_progress(told, None, stage)

        return await run(
            ctx,
            lambda access: tools.ask(
                question, search_filter(documents, projects, source_types, since, until), graph, access, progress
            ),
        )

    @server.tool(
        name="list_documents", title="List the documents", description=descriptions.LIST_DOCUMENTS, annotations=READS
    )
    async def list_documents(ctx: Context) -> DocumentList:
        return await run(ctx, lambda access: anyio.to_thread.run_sync(tools.documents, access))

    @server.tool(
        name="ingest",
        title="Add documents",
        description=descriptions.INGEST,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    )
    async def ingest(
        paths: Annotated[list[str], Field(min_length=1, description="files or folders on pagegraph's disk")],
        ctx: Context,
        project: Annotated[str | None, Field(description="the project to tag them with")] = None,
        confidentiality: Annotated[
            Confidentiality | None, Field(description="who may read them (default internal)")
        ] = None,
        source_type: Annotated[str | None, Field(description="a label such as manual or contract")] = None,
    ) -> IngestResult:
        return await run(ctx, lambda access: tools.ingest(paths, project, confidentiality, source_type, access))

    return server
