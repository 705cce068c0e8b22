"""The HTTP app LangGraph server mounts beside its API (langgraph.json `http.app`): the web page and its routes
(`pagegraph.server.page_routes`), and pagegraph's MCP tools at /mcp (`pagegraph.server.mcp_endpoint`; langgraph.json
switches off the API's own graph-per-tool MCP). Its middleware guards every request, the API's included: the
origin, a known key on every route but the page shell, its static files and /ok (`SignedIn`), the body size (413;
uploads to the web page have their own limit), run inputs and state updates that do not fit their graph (422,
`graph_inputs`), and how many runs one user may have going at once and start per minute (429, with the limit named
and Retry-After; an MCP tool call counts too, and over the limit gets a tool error with the time to wait)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk import Auth
from starlette.applications import Starlette

from pagegraph.access.auth import request_access
from pagegraph.config import Context, Settings, get_settings
from pagegraph.nodes.language import question_language
from pagegraph.server.bodies import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    batch_size,
    body_problem,
    created_runs,
    json_body,
    longest_question,
    owned_cron,
    read_body,
    refuse,
    replayer,
    too_large,
    with_body,
)
from pagegraph.server.graph_inputs import run_problem, sent_runs, served_graph, served_graph_ids, update_problem
from pagegraph.server.mcp_endpoint import mcp_endpoint
from pagegraph.server.origins import OriginGuard
from pagegraph.server.page_routes import UPLOAD_PATH, routes
from pagegraph.server.run_limits import RunLimits, user_run_limits
from pagegraph.server.sign_in import SignedIn
from pagegraph.services import default_services

# POST paths that start runs: those that answer when the run ends hold their slot for the request; background ones
# until the run is joined.
RUN_PATH = re.compile(r"^(/threads/[^/]+)?/runs(/wait|/stream|/batch)?/?$")
CRON_PATH = re.compile(r"^(/threads/[^/]+)?/runs/crons/?$")
CRON_UPDATE_PATH = re.compile(r"^/runs/crons/[^/]+/?$")
THREAD_PART_PATH = re.compile(r"^/threads/([^/]+)/.+")  # a thread's state, history, copy, runs, ...
THREAD_STATE_PATH = re.compile(r"^/threads/([^/]+)/state/?$")
log = logging.getLogger(__name__)


class RequestLimits:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.settings = settings or get_settings()
        self.runs = user_run_limits() if settings is None else RunLimits.of(settings)
        self._joins: set[asyncio.Task] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        upload = scope.get("method") == "POST" and path == UPLOAD_PATH
        limit = self.settings.limits.max_upload_bytes if upload else self.settings.limits.max_request_bytes
        knob = "PAGEGRAPH_MAX_UPLOAD_BYTES" if upload else "PAGEGRAPH_MAX_REQUEST_BYTES"
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").decode()
        if declared.isdigit() and int(declared) > limit:
            await refuse(send, 413, too_large(int(declared), limit, knob))
            return
        body, size = await read_body(receive, limit)
        if body is None:
            await refuse(send, 413, too_large(size, limit, knob))
            return
        if problem := body_problem(body):
            await refuse(send, 400, problem)
            return
        replay = replayer(body)
        payload = json_body(body)
        post = scope.get("method") == "POST"
        thread_part = THREAD_PART_PATH.match(path)
        state_update = post and THREAD_STATE_PATH.match(path)
        thread = None
        if thread_part and (self.settings.server.auth_file is not None or state_update):
            thread = await self._thread(scope, thread_part.group(1))
            if thread is None and self.settings.server.auth_file is not None:
                await refuse(send, 404, f"Thread {thread_part.group(1)} not found")
                return
        if post and (problem := await self._misfit(scope, path, payload, thread)):
            await refuse(send, 422, problem)
            return
        cron_update = scope.get("method") == "PATCH" and CRON_UPDATE_PATH.match(path)
        starts_runs = post and (RUN_PATH.match(path) or CRON_PATH.match(path)) or cron_update
        if (starts_runs or state_update) and (
            longest := longest_question(payload)
        ) > self.settings.limits.max_question_chars:
            # refused before the runtime stores the run's input or the state: a question past the limit is kept
            # nowhere, and no later run reads it
            limit = self.settings.limits.max_question_chars
            detail = f"the question has {longest:,} characters; the limit is {limit:,} (PAGEGRAPH_MAX_QUESTION_CHARS)"
            await refuse(send, 413, detail)
            return
        if state_update and (problem := self._state_too_large(thread, len(body))):
            await refuse(send, 413, problem)
            return
        if not starts_runs:
            await self.app(scope, replay, send)
            return
        if cron_update:  # a cron's new input starts runs later, as the cron's owner
            await self.app(scope, replay, send)
            return
        try:
            user = (await asyncio.to_thread(request_access, headers)).user
        except Auth.exceptions.HTTPException:
            await self.app(scope, replay, send)  # the API's auth answers it
            return
        if CRON_PATH.match(path):
            if refusal := await self._cron_refusal(scope, user):
                await refuse(send, 429, refusal)
                return
            owned = owned_cron(payload, user)
            if owned is None:  # the API answers a malformed request
                await self.app(scope, replay, send)
            else:
                await self.app(with_body(scope, owned), replayer(owned), send)
            return
        runs = batch_size(payload) if path.endswith("/batch") else 1
        if refusal := self.runs.admit(user, runs, crons=await self._crons_of(scope)):
            await refuse(send, 429, refusal[0], retry_after=refusal[1])
            return
        if path.endswith(("/wait", "/stream")):  # the answer comes when the run ends
            try:
                await self.app(scope, replay, send)
            finally:
                self.runs.release(user, runs)
            return
        captured = bytearray()

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.body":
                captured.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, replay, capture)
        except BaseException:
            self.runs.release(user, runs)
            raise
        created = created_runs(bytes(captured))
        self.runs.release(user, runs - len(created))
        for thread_id, run_id in created:
            task = asyncio.create_task(self._hold_until_done(scope, user, thread_id, run_id))
            self._joins.add(task)
            task.add_done_callback(self._joins.discard)

    def _state_too_large(self, thread: dict | None, sent: int) -> str | None:
        """Why an edit of `thread`'s state would make it too large: what it keeps and what is sent together past
        PAGEGRAPH_MAX_STATE_BYTES (keys with reducers, a chat's messages, grow at each edit)."""
        kept = len(json.dumps((thread or {}).get("values") or {}, default=str))
        limit = self.settings.limits.max_state_bytes
        if kept + sent <= limit:
            return None
        return (
            f"the thread's state would pass {limit:,} bytes ({kept:,} kept, {sent:,} sent) (PAGEGRAPH_MAX_STATE_BYTES)"
        )

    async def _misfit(self, scope: Scope, path: str, payload: Any, thread: dict | None) -> str | None:
        """Why a run's input or a state update that `payload` sends does not fit its graph (`graph_inputs`), or None
        (also for what is not such a request, or not JSON: the API answers that). `thread`: the thread a state
        update is for, as the API reads it."""
        if THREAD_STATE_PATH.match(path):
            values = payload.get("values") if isinstance(payload, dict) else None
            graph = await self._graph_of(scope, ((thread or {}).get("metadata") or {}).get("graph_id"))
            return update_problem(graph, values) if graph and isinstance(values, dict) else None
        if not (RUN_PATH.match(path) or CRON_PATH.match(path)):
            return None
        for run in sent_runs(payload):
            graph = await self._graph_of(scope, run.get("assistant_id"))
            if graph and (problem := run_problem(graph, run)):
                return problem
        return None

    async def _graph_of(self, scope: Scope, assistant: Any) -> CompiledStateGraph | None:
        """The served graph an assistant ID or graph name runs; None when the user may not see it (the API answers)."""
        if not isinstance(assistant, str):
            return None
        if assistant in served_graph_ids():
            return served_graph(assistant)
        status, found = await self._ask(scope, "GET", f"/assistants/{assistant}")
        record = json_body(found) if status == 200 else None
        graph_id = record.get("graph_id") if isinstance(record, dict) else None
        return served_graph(graph_id) if isinstance(graph_id, str) else None

    async def _cron_refusal(self, scope: Scope, user: str) -> str | None:
        """Why `user` may not add a cron: each cron starts runs on its own schedule, so a user has at most
        PAGEGRAPH_RUNS_PER_USER of them (their runs would otherwise run past the limit at once)."""
        if (crons := await self._crons_of(scope)) >= self.runs.at_once:
            return (
                f"{user} has {crons} crons; each starts runs of its own, and a user may have "
                f"{self.runs.at_once} runs at once (PAGEGRAPH_RUNS_PER_USER): delete one first"
            )
        return None

    async def _crons_of(self, scope: Scope) -> int:
        """How many crons the user of `scope` has (up to the run limit: more would not change an answer). Each holds
        one of their run slots, so that their runs and their crons' never pass the limit together."""
        crons = json_body(await self._internal(scope, "POST", "/runs/crons/search", {"limit": self.runs.at_once + 1}))
        return len(crons) if isinstance(crons, list) else 0

    async def _hold_until_done(self, scope: Scope, user: str, thread_id: str, run_id: str) -> None:
        """Keep a background run's slot until the run ends: join it through the API, as its owner."""
        try:
            await self._internal(scope, "GET", f"/threads/{thread_id}/runs/{run_id}/join")
        finally:
            self.runs.release(user)

    async def _internal(self, scope: Scope, method: str, path: str, payload: Any = None) -> bytes:
        """Ask the API itself, as the user whose request `scope` is, and return the body of its answer."""
        return (await self._ask(scope, method, path, payload))[1]

    async def _ask(self, scope: Scope, method: str, path: str, payload: Any = None) -> tuple[int, bytes]:
        request = {**scope, "method": method, "path": path, "raw_path": path.encode(), "query_string": b""}
        status, body = 0, bytearray()

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))

        await self.app(request, replayer(b"" if payload is None else json.dumps(payload).encode()), capture)
        return status, bytes(body)

    async def _thread(self, scope: Scope, thread_id: str) -> dict | None:
        """The thread as the API reads it for the user of `scope`, or None where they may not see it: its auth
        filters the read by owner, while langgraph-runtime-pg answers some routes under a thread (its state, for one)
        without that filter."""
        status, found = await self._ask(scope, "GET", f"/threads/{thread_id}")
        thread = json_body(found) if status == 200 else None
        return thread if isinstance(thread, dict) else None


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
app.add_middleware(RequestLimits)
app.add_middleware(SignedIn)
app.add_middleware(OriginGuard)  # outermost of the checks: before every other one
app.add_middleware(LifespanToRouter, router=app.router)
