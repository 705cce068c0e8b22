"""The API's routes as the guards in front of it know them: which paths start runs, add or change crons, or edit a
thread's state, and the API itself asked from inside a request, as that request's user (its thread as they may see
it, the graph an assistant runs, their crons)."""

from __future__ import annotations

import json
import re
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from pagegraph.server.bodies import ASGIApp, Message, Scope, json_body, replayer
from pagegraph.server.graph_inputs import served_graph, served_graph_ids

# POST paths that start runs: those that answer when the run ends hold their slot for the request; background ones
# until the run is joined.
RUN_PATH = re.compile(r"^(/threads/[^/]+)?/runs(/wait|/stream|/batch)?/?$")
CRON_PATH = re.compile(r"^(/threads/[^/]+)?/runs/crons/?$")
CRON_UPDATE_PATH = re.compile(r"^/runs/crons/[^/]+/?$")
THREAD_PART_PATH = re.compile(r"^/threads/([^/]+)/.+")  # a thread's state, history, copy, runs, ...
THREAD_STATE_PATH = re.compile(r"^/threads/([^/]+)/state/?$")


def starts_runs(scope: Scope) -> bool:
    """Whether a request starts runs now or later: a run, a batch, a new cron, or a cron's new input."""
    method, path = scope.get("method"), scope.get("path", "")
    return bool(method == "POST" and (RUN_PATH.match(path) or CRON_PATH.match(path))) or bool(
        method == "PATCH" and CRON_UPDATE_PATH.match(path)
    )


class InternalApi:
    """The API below a guard (`app`), asked as the user whose request `scope` is."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def ask(self, scope: Scope, method: str, path: str, payload: Any = None) -> tuple[int, bytes]:
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

    async def body(self, scope: Scope, method: str, path: str, payload: Any = None) -> bytes:
        """The body of the API's answer."""
        return (await self.ask(scope, method, path, payload))[1]

    async def thread(self, scope: Scope, thread_id: str) -> dict | None:
        """The thread as the API reads it for the user of `scope`, or None where they may not see it: its auth
        filters the read by owner, while langgraph-runtime-pg answers some routes under a thread (its state, for one)
        without that filter."""
        status, found = await self.ask(scope, "GET", f"/threads/{thread_id}")
        thread = json_body(found) if status == 200 else None
        return thread if isinstance(thread, dict) else None

    async def graph_of(self, scope: Scope, assistant: Any) -> CompiledStateGraph | None:
        """The served graph an assistant ID or graph name runs; None when the user may not see it (the API
        answers)."""
        if not isinstance(assistant, str):
            return None
        if assistant in served_graph_ids():
            return served_graph(assistant)
        status, found = await self.ask(scope, "GET", f"/assistants/{assistant}")
        record = json_body(found) if status == 200 else None
        graph_id = record.get("graph_id") if isinstance(record, dict) else None
        return served_graph(graph_id) if isinstance(graph_id, str) else None

    async def crons_of(self, scope: Scope, most: int) -> int:
        """How many crons the user of `scope` has, up to `most`."""
        crons = json_body(await self.body(scope, "POST", "/runs/crons/search", {"limit": most}))
        return len(crons) if isinstance(crons, list) else 0
