"""The door of `pagegraph serve`: with a users file, every route but the open ones (the web page's shell, its static
files, /ok) needs a known key. A request without one is refused here, before any route runs (401; 429 with
Retry-After past the failed sign-ins its address may make, `access.keys`), and written to the audit log (a refusal
that repeats, once a minute with its count)."""

from __future__ import annotations

import asyncio

from langgraph_sdk import Auth

from pagegraph.access.audit import RepeatedRefusals
from pagegraph.access.auth import request_access, request_key
from pagegraph.access.keys import key_id_of
from pagegraph.config import Settings, get_settings
from pagegraph.server.bodies import ASGIApp, Receive, Scope, Send, refuse

# The routes that answer without a key (GET and HEAD only): the web page's shell and its static files, which sign
# in from the browser, and /ok, the one health check a load balancer needs. Every other route of the app, the API's
# and the web page's alike, whatever its entry (runs, commands, MCP, crons, store), needs a known key.
OPEN_PATHS = frozenset({"/", "/ok", "/favicon.ico"})
OPEN_PREFIX = "/ui/static/"


def is_open(scope: Scope) -> bool:
    path = scope.get("path", "")
    return scope.get("method") in ("GET", "HEAD") and (path in OPEN_PATHS or path.startswith(OPEN_PREFIX))


def client_address(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


class SignedIn:
    """With a users file, the door of every route but the open ones: a request without a known key is refused here
    (401; 429 with Retry-After past the failed sign-ins an address may make), written to the audit log, and never
    reaches a route. Without a users file the server is the local owner's, on loopback."""

    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        self.settings = settings or get_settings()
        self.refusals = RepeatedRefusals()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.settings.server.auth_file is None or is_open(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        try:
            await asyncio.to_thread(request_access, headers, client_address(scope))
        except Auth.exceptions.HTTPException as exc:
            key_id = key_id_of(request_key(headers))
            who = f"key {key_id}" if key_id else ("a key of no known form" if request_key(headers) else "no key")
            self.refusals.audit(
                "sign_in_refused",
                who=who,
                route=scope.get("path", ""),
                source=client_address(scope),
                reason=str(exc.detail),
            )
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": str(exc.detail)[:120]})
                return
            retry = (exc.headers or {}).get("retry-after")
            await refuse(send, exc.status_code, str(exc.detail), int(retry) if retry else None)
            return
        await self.app(scope, receive, send)
