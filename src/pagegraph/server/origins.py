"""No ambient authority for web pages: the server answers only requests addressed to it by a name it serves (a DNS
rebinding page addresses it by the attacker's name), from its own web page or an origin the operator allowed, and a
request that changes something must be one a cross-site form cannot send (JSON, or the web page's own header).

Without a users file the server trusts whoever reaches it, which on 127.0.0.1 is the local user, but also any web
page that user visits: those pages are what this keeps out. Middleware outermost in the app (langgraph.json
`http.app`), so it sees every request before LangGraph's own CORS handling, and rewrites that handling's answers:
LangGraph's development server allows every origin (`*`) and private-network access."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from pagegraph.config import Settings, get_settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
# Sent by the web page on every request: a header a cross-site form or a "simple" fetch cannot add.
PAGE_HEADER = b"x-requested-with"
CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
JSON_TYPES = ("application/json",)


def host_name(value: str) -> str:
    """The name part of a Host header or an origin's network location, lower-cased, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class OriginGuard:
    def __init__(self, app: ASGIApp, settings: Settings | None = None) -> None:
        self.app = app
        settings = settings or get_settings()
        self.hosts = LOOPBACK_NAMES | {host_name(h) for h in settings.server.allowed_hosts}
        self.any_host = "*" in settings.server.allowed_hosts
        self.origins = {origin.rstrip("/").lower() for origin in settings.server.allowed_origins}

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> str | None:
        """Why a request is refused; None when it may go on."""
        host = headers.get(b"host", b"").decode(errors="replace")
        if not self.any_host and host_name(host) not in self.hosts:
            return (
                f"this server does not answer to the host name {host_name(host)!r} "
                "(PAGEGRAPH_ALLOWED_HOSTS lists the names it serves besides loopback)"
            )
        origin = headers.get(b"origin", b"").decode(errors="replace").rstrip("/").lower()
        if origin and not self.origin_allowed(origin, host):
            return (
                f"requests from web pages of {origin} are not allowed "
                "(PAGEGRAPH_ALLOWED_ORIGINS lists the origins allowed besides the server's own web page)"
            )
        if scope.get("method") in CHANGING and _has_body(headers) and not _non_simple(headers):
            return "a request that changes something must send JSON (content-type: application/json)"
        return None

    def origin_allowed(self, origin: str, host: str) -> bool:
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if (reason := self.refusal(scope, headers)) is not None:
            body = json.dumps({"detail": reason}).encode()
            start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": start})
            await send({"type": "http.response.body", "body": body})
            return
        origin = headers.get(b"origin", b"").decode(errors="replace").rstrip("/")
        cross = origin.lower() in self.origins  # allowed above; same-origin pages need no CORS headers

        async def send_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")]
                if cross:
                    cors = [(k, v) for k, v in message.get("headers", []) if k.lower().startswith(b"access-control-")]
                    kept += [
                        (k, origin.encode() if k.lower() == b"access-control-allow-origin" else v)
                        for k, v in cors
                        if k.lower() != b"access-control-allow-private-network"
                    ]
                    kept.append((b"vary", b"Origin"))
                message = {**message, "headers": kept}
            await send(message)

        await self.app(scope, receive, send_headers)


def _has_body(headers: dict[bytes, bytes]) -> bool:
    length = headers.get(b"content-length", b"0").decode(errors="replace").strip()
    return b"transfer-encoding" in headers or (length.isdigit() and int(length) > 0) or b"content-type" in headers


def _non_simple(headers: dict[bytes, bytes]) -> bool:
    """A request a web page of another origin could only send after a CORS preflight this server refuses."""
    kind = headers.get(b"content-type", b"").decode(errors="replace").split(";")[0].strip().lower()
    return kind in JSON_TYPES or PAGE_HEADER in headers
