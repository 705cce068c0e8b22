"""`pagegraph mcp`: pagegraph's tools for an MCP client that starts it (a desktop assistant, an editor), over stdio."""

from __future__ import annotations

from pagegraph.cli.common import DatabaseOption, IndexOption, ModelOption, app, fail, index_folder
from pagegraph.config import Context, get_settings
from pagegraph.errors import PagegraphError


@app.command()
def mcp(
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    model: ModelOption = None,
) -> None:
    """Serve search, ask, list_documents and ingest as MCP tools over stdin/stdout, as the local user: every
    document of the index is readable, and ingest writes to it. Configure your MCP client to start this command
    (docs/tools.md); it logs to stderr only."""
    from pagegraph.services import Services
    from pagegraph.tools.documents import DocumentTools
    from pagegraph.tools.mcp import build_mcp_server

    settings = get_settings()
    try:
        context = Context(index=str(index_folder(index, settings)), model=model)
    except ValueError as exc:
        raise fail(str(exc)) from None
    services = Services(settings)
    try:
        build_mcp_server(DocumentTools(services, context)).run("stdio")
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    finally:
        services.close()
