"""The HTTP app LangGraph server mounts beside its API (langgraph.json `http.app`): the web page and its routes
(`pagegraph.server.page_routes`), and pagegraph's MCP tools at /mcp (`pagegraph.server.mcp_endpoint`; langgraph.json
switches off the API's own graph-per-tool MCP). Its middleware guards every request, the API's included, outermost
first: the origin (`origins`), a known key on every route but the page shell, its static files and /ok
(`sign_in`), what a request would write (`write_guard`: sizes, shapes, inputs that do not fit their graph, questions
and states past their limits) and how many runs one user may have going and start per minute (`run_admission`; an MCP
tool call counts too, and over the limit gets a tool error with the time to wait). langgraph-api's auth handlers
(`access.auth`) see neither a state edit's values nor a run's end, so these checks stay in front of the API."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from pagegraph.config import Context
from pagegraph.nodes.language import question_language
from pagegraph.server.bodies import ASGIApp, Receive, Scope, Send
from pagegraph.server.mcp_endpoint import mcp_endpoint
from pagegraph.server.origins import OriginGuard
from pagegraph.server.page_routes import routes
from pagegraph.server.run_admission import RunAdmission
from pagegraph.server.run_limits import user_run_limits
from pagegraph.server.sign_in import SignedIn
from pagegraph.server.write_guard import WriteGuard
from pagegraph.services import default_services

log = logging.getLogger(__name__)


class LifespanToRouter:
    """Hands the server's startup and shutdown (the ASGI lifespan) straight to the router. langgraph-api wraps this
    app in its `EnsureStoreAccessible` middleware, which opens the store on every scope, the lifespan's included; the
    team runtime's store (langgraph-runtime-pg) exists only once the lifespan has run."""

    def __init__(self, app: ASGIApp, router: ASGIApp) -> None:
        self.app = app
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await (self.router if scope["type"] == "lifespan" else self.app)(scope, receive, send)


def warm_replica() -> None:
    """Load the index, embedder, default model and language identifier this process's runs share; a failure is
    left for the first run to report (no index yet, say)."""
    started = time.monotonic()
    context = Context()
    try:
        question_language("warm", context.reading)
        default_services().warm(context)
    except Exception as exc:  # noqa: BLE001 - the server serves regardless; the run that needs the part says why
        log.warning("pagegraph: warm-up stopped: %s", exc)
        return
    log.info("pagegraph: index, embedder, model and language identifier loaded in %.1f s", time.monotonic() - started)


MCP_ROUTE, MCP_SESSIONS = mcp_endpoint(user_run_limits())


@asynccontextmanager
async def warm_at_start(_: Starlette) -> AsyncIterator[None]:
    """At startup, in the background: the server answers health checks at once, and a run that comes before the
    warm-up ends waits on the same loads. The MCP route's session manager runs while the app does."""
    threading.Thread(target=warm_replica, name="pagegraph-warm-up", daemon=True).start()
    async with MCP_SESSIONS.run():
        yield


app = Starlette(routes=[*routes, MCP_ROUTE], lifespan=warm_at_start)
app.add_middleware(RunAdmission)
app.add_middleware(WriteGuard)
app.add_middleware(SignedIn)
app.add_middleware(OriginGuard)  # outermost of the checks: before every other one
app.add_middleware(LifespanToRouter, router=app.router)
