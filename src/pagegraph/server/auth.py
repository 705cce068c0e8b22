"""LangGraph server auth: API keys → users with allowed projects and a confidentiality ceiling.

Users come from `PAGEGRAPH_AUTH_FILE` (JSON: {"users": [...]}) or `PAGEGRAPH_AUTH_USERS` (the JSON list); see
`ApiUser`. A request without a known key gets 401. Threads, runs and crons belong to the user who created them;
assistants (the graphs) are readable by everyone. The user's projects and ceiling travel with each run, and the
graphs' first stage narrows every search to them (`pagegraph.nodes.common.caller_access`).

With no users configured every request is the local owner with full access: the server then must stay on
127.0.0.1, which is where `pagegraph serve` binds it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from pathlib import Path

from langgraph_sdk import Auth
from pydantic import TypeAdapter, ValidationError

from pagegraph.access import ACCESS_KEY
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.records import ApiUser

LOCAL_OWNER = "local"
_USERS = TypeAdapter(list[ApiUser])
_cache: dict[tuple[str, float], list[ApiUser]] = {}

auth = Auth()


def load_users(path: Path) -> list[ApiUser]:
    """The users of an auth file, re-read when the file changes."""
    try:
        stamp = (str(path), path.stat().st_mtime)
        if stamp not in _cache:
            body = json.loads(path.read_text())
            _cache.clear()
            _cache[stamp] = _USERS.validate_python(body.get("users") if isinstance(body, dict) else None)
        return _cache[stamp]
    except FileNotFoundError:
        raise PagegraphError(f"auth file {path} does not exist") from None
    except (json.JSONDecodeError, ValidationError) as exc:
        raise PagegraphError(f'auth file {path}: expected {{"users": [{{"name", "api_key", ...}}]}} ({exc})') from None


def configured_users() -> list[ApiUser] | None:
    """The configured users; None when auth is not configured."""
    settings = get_settings()
    if settings.auth_file is not None:
        return load_users(settings.auth_file)
    return settings.auth_users


def find_user(users: list[ApiUser], key: str) -> ApiUser | None:
    for user in users:
        if hmac.compare_digest(user.api_key.encode(), key.encode()):
            return user
    return None


def request_key(headers: dict[bytes, bytes]) -> str:
    key = headers.get(b"x-api-key", b"").decode().strip()
    if not key:
        scheme, _, token = headers.get(b"authorization", b"").decode().partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else ""
    return key


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> Auth.types.MinimalUserDict:
    try:
        users = await asyncio.to_thread(configured_users)
    except PagegraphError as exc:
        raise Auth.exceptions.HTTPException(status_code=500, detail=str(exc)) from None
    if users is None:
        return {"identity": LOCAL_OWNER, ACCESS_KEY: {"projects": None, "ceiling": None}}  # type: ignore[typeddict-unknown-key]
    key = request_key(headers)
    if not key:
        raise Auth.exceptions.HTTPException(status_code=401, detail="missing API key (send the x-api-key header)")
    user = find_user(users, key)
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown API key")
    access = user.access()
    return {"identity": user.name, ACCESS_KEY: {"projects": access.projects, "ceiling": access.ceiling}}  # type: ignore[typeddict-unknown-key]


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: dict) -> bool | dict:
    """The graphs are everyone's to read and run; assistants a user creates are theirs."""
    if ctx.action in ("read", "search"):
        return True
    return _owned(ctx, value)


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """Threads, runs and crons: the creator's alone."""
    return _owned(ctx, value)


@auth.on.store
async def store(ctx: Auth.types.AuthContext, value: dict) -> None:
    """Store items live under the user's own namespace."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        raise Auth.exceptions.HTTPException(status_code=403, detail="store namespaces start with your user name")


def _owned(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """Stamp the owner into what is created (in place: the server keeps using the same metadata object) and
    filter everything else by it."""
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict) and ctx.action in ("create", "create_run", "update"):
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"].update(owner)
    return owner
