"""/mcp on `pagegraph serve`: pagegraph's MCP tools (`pagegraph.tools.mcp`) over Streamable HTTP, stateless (any
replica answers any call) with JSON answers. Each call runs as the user whose key it carries (the server's doors
checked the key, the origin and the body size before it gets here) and counts against their run limits."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from pagegraph.access.auth import request_access
from pagegraph.access.records import Access
from pagegraph.config import Context
from pagegraph.services import default_services
from pagegraph.tools.documents import DocumentTools
from pagegraph.tools.mcp import RunLimiter, build_mcp_server

MCP_PATH = "/mcp"


def key_access(headers: Mapping[str, str] | None) -> Access:
    """The caller of an MCP request, from its key (the local owner without a users file)."""
    return request_access({name.lower().encode(): value.encode() for name, value in (headers or {}).items()})


def mcp_endpoint(limits: RunLimiter) -> tuple[Route, StreamableHTTPSessionManager]:
    """The /mcp route, and the session manager the app's lifespan must run."""
    server = build_mcp_server(DocumentTools(default_services(), Context()), key_access, limits)
    # the server's OriginGuard checks hosts and origins for every route, this one included
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    return Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(manager), methods=["GET", "POST", "DELETE"]), manager
