"""What a request would write, checked before the runtime stores it: the body's size (413; uploads to the web page
have their own limit) and shape (400: `bodies.body_problem`), a thread the user may not see (404), run inputs and
state updates that do not fit their graph (422, `graph_inputs`), a question past the limit in a run, a cron or a
state edit (413: the runtime never stores it, no run reads it), and a state edit that would grow a thread past
PAGEGRAPH_MAX_STATE_BYTES (413). The body, read once, is replayed to the routes behind."""

from __future__ import annotations

import json
from typing import Any

from pagegraph.config import Settings, get_settings
from pagegraph.server.api_routes import (
    CRON_PATH,
    RUN_PATH,
    THREAD_PART_PATH,
    THREAD_STATE_PATH,
    InternalApi,
    starts_runs,
)
from pagegraph.server.bodies import (
    ASGIApp,
    Receive,
    Scope,
    Send,
    body_problem,
    json_body,
    longest_question,
    read_body,
    refuse,
    replayer,
    too_large,
)
from pagegraph.server.graph_inputs import run_problem, sent_runs, update_problem
from pagegraph.server.page_routes import UPLOAD_PATH


class WriteGuard:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.settings = settings or get_settings()
        self.api = InternalApi(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        post = scope.get("method") == "POST"
        upload = post and path == UPLOAD_PATH
        limit = self.settings.limits.max_upload_bytes if upload else self.settings.limits.max_request_bytes
        knob = "PAGEGRAPH_MAX_UPLOAD_BYTES" if upload else "PAGEGRAPH_MAX_REQUEST_BYTES"
        declared = dict(scope.get("headers") or []).get(b"content-length", b"").decode()
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
        payload = json_body(body)
        thread_part = THREAD_PART_PATH.match(path)
        state_update = post and THREAD_STATE_PATH.match(path)
        thread = None
        if thread_part and (self.settings.server.auth_file is not None or state_update):
            thread = await self.api.thread(scope, thread_part.group(1))
            if thread is None and self.settings.server.auth_file is not None:
                await refuse(send, 404, f"Thread {thread_part.group(1)} not found")
                return
        if post and (problem := await self._misfit(scope, path, payload, thread)):
            await refuse(send, 422, problem)
            return
        if (starts_runs(scope) or state_update) and (
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
        await self.app(scope, replayer(body), send)

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
            graph = await self.api.graph_of(scope, ((thread or {}).get("metadata") or {}).get("graph_id"))
            return update_problem(graph, values) if graph and isinstance(values, dict) else None
        if not (RUN_PATH.match(path) or CRON_PATH.match(path)):
            return None
        for run in sent_runs(payload):
            graph = await self.api.graph_of(scope, run.get("assistant_id"))
            if graph and (problem := run_problem(graph, run)):
                return problem
        return None
