"""How many runs one user may have going at once and start per minute (`run_limits`), at every entry that starts
runs: runs, batches and crons (429, with the limit named and Retry-After). A run answered when it ends holds its slot
for the request; a background run until it is joined; a user's crons hold one slot each, and a new cron is refused
when they have as many as runs at once. A new cron gets its owner in its own metadata."""

from __future__ import annotations

import asyncio
import sys

from langgraph_sdk import Auth

from pagegraph.access.auth import request_access
from pagegraph.config import Settings
from pagegraph.server.api_routes import CRON_PATH, CRON_UPDATE_PATH, InternalApi, starts_runs
from pagegraph.server.bodies import (
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    batch_size,
    created_runs,
    json_body,
    owned_cron,
    read_body,
    refuse,
    replayer,
    with_body,
)
from pagegraph.server.run_limits import RunLimits, user_run_limits


class RunAdmission:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.api = InternalApi(app)
        self.runs = user_run_limits() if settings is None else RunLimits.of(settings)
        self._joins: set[asyncio.Task] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        # a cron's new input starts runs later, as the cron's owner, whose crons are counted when each run starts
        if scope["type"] != "http" or not starts_runs(scope) or CRON_UPDATE_PATH.match(path):
            await self.app(scope, receive, send)
            return
        body, _ = await read_body(receive, sys.maxsize)  # bounded by the write guard in front, which replays it
        replay, payload = replayer(body or b""), json_body(body or b"")
        try:
            user = (await asyncio.to_thread(request_access, dict(scope.get("headers") or []))).user
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
        if over := self.runs.admit(user, runs, crons=await self._crons_of(scope)):
            await refuse(send, 429, over[0], retry_after=over[1])
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
        return await self.api.crons_of(scope, self.runs.at_once + 1)

    async def _hold_until_done(self, scope: Scope, user: str, thread_id: str, run_id: str) -> None:
        """Keep a background run's slot until the run ends: join it through the API, as its owner."""
        try:
            await self.api.body(scope, "GET", f"/threads/{thread_id}/runs/{run_id}/join")
        finally:
            self.runs.release(user)
