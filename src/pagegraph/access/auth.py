"""LangGraph server auth: API keys → users with a role, allowed projects and a confidentiality ceiling.

Users come from the users file `PAGEGRAPH_AUTH_FILE` (`pagegraph users add` writes it; see
`pagegraph.access.keys`). A request without a known key gets 401. Threads, runs and crons belong to the user who
created them; the graphs (the server's assistants) are readable by everyone, assistants a user creates by them
alone. The user's role, projects and ceiling travel with
each run, and the graphs narrow every search to them (`pagegraph.access.runs.caller_access`); the `ingest` graph refuses
readers and keeps editors inside what they may read.

With no users file every request is the local owner with full access: the server then must stay on 127.0.0.1,
which is where `pagegraph serve` binds it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_sdk import Auth
from starlette.authentication import BaseUser

from pagegraph.access.keys import SignInLimited, user_directory
from pagegraph.access.records import Access
from pagegraph.access.runs import ACCESS_KEY, AUTH_USER_KEY, LOCAL_OWNER, run_user
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError

auth = Auth()


def request_key(headers: dict[bytes, bytes]) -> str:
    key = headers.get(b"x-api-key", b"").decode(errors="replace").strip()
    if not key:
        scheme, _, token = headers.get(b"authorization", b"").decode(errors="replace").partition(" ")
        key = token.strip() if scheme.lower() == "bearer" else ""
    return key


def request_access(headers: dict[bytes, bytes], source: str | None = None) -> Access:
    """Who sent a request: the local owner when no users file is configured, else the user whose key it carries.
    Raises 401 for a missing or unknown key, 429 (with Retry-After) past the failed sign-ins one address may make,
    500 for a users file that cannot be read. `source`: the client's address (failures from unknown addresses are
    counted together)."""
    settings = get_settings()
    path = settings.server.auth_file
    if path is None:
        return Access(user=LOCAL_OWNER, role="admin")
    key = request_key(headers)
    directory = user_directory(settings)
    try:
        if not key:
            directory.failed(source)  # anonymous requests are limited too
            raise Auth.exceptions.HTTPException(status_code=401, detail="missing API key (send the x-api-key header)")
        user = directory.find(key, source)
    except SignInLimited as exc:
        raise Auth.exceptions.HTTPException(
            status_code=429, detail=str(exc), headers={"retry-after": str(exc.retry_after)}
        ) from None
    except PagegraphError as exc:
        raise Auth.exceptions.HTTPException(status_code=500, detail=str(exc)) from None
    if user is None:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown API key")
    return user.access()


class ServerUser(dict, BaseUser):
    """The signed-in user as the server carries it into each run's config: Starlette's `BaseUser`, which the server
    passes on as it is, and a plain dict underneath, because the team runtime stores a run's config as JSON (the
    server's own wrapper for a user given as a dict cannot be written there)."""

    @property
    def identity(self) -> str:
        return self["identity"]

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self["identity"]


@auth.authenticate
async def authenticate(headers: dict[bytes, bytes]) -> ServerUser:
    return ServerUser(run_user(await asyncio.to_thread(request_access, headers)))


@auth.on.assistants
async def assistants(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """The graphs (the server's own assistants) are everyone's to read and run; an assistant a user creates, with
    its context, is theirs alone."""
    if ctx.action in ("read", "search"):
        return {"$or": [{"owner": ctx.user.identity}, {"created_by": "system"}]}
    return _owned(ctx, value)


@auth.on
async def owned(ctx: Auth.types.AuthContext, value: dict) -> dict:
    """Threads, runs and crons: the creator's alone."""
    return _owned(ctx, value)


async def scheduled(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A cron is its creator's, and its runs start with no request: the server takes the user of each run from the
    cron's stored run config. Stamp the creator's name there, over anything the request sent (a forged user would
    run as someone else), and no rights: `caller_access` reads them from the users file at each run, so a revoked
    user's cron stops. An update that sends no config keeps the stamped one."""
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(payload, dict) and (ctx.action == "create" or "config" in payload):
        configurable = _dict_at(_dict_at(payload, "config"), "configurable")
        configurable[AUTH_USER_KEY] = {"identity": ctx.user.identity}
        configurable["langgraph_auth_permissions"] = []
    return _owned(ctx, value)


auth.on.crons.create(scheduled)
auth.on.crons.update(scheduled)


def _dict_at(holder: dict[str, Any], key: str) -> dict[str, Any]:
    """`holder[key]`, made an empty dict where it is none."""
    found = holder.get(key)
    if not isinstance(found, dict):
        found = holder[key] = {}
    return found


@auth.on.store
async def store(ctx: Auth.types.AuthContext, value: dict) -> None:
    """Store items live under the user's own namespace."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        raise Auth.exceptions.HTTPException(status_code=403, detail="store namespaces start with your user name")


def _owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Stamp the owner into what is created (in place: the server keeps using the same metadata object) and
    filter everything else by it."""
    owner = {"owner": ctx.user.identity}
    if isinstance(value, dict) and ctx.action in ("create", "create_run", "update"):
        if ctx.action == "create_run":
            _storable_user(value)
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"].update(owner)
    return owner


def _storable_user(run: dict) -> None:
    """Make the user in a new run's config (and the context the server copies from it) one the runtime can store.
    The server rebuilds a cron's user from the cron's stored config as its own wrapper object, which the runtime
    cannot write as JSON (every scheduled run failed); in place, it becomes a ServerUser with the same name and
    whatever rights it carried."""
    kwargs = run.get("kwargs")
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    config = kwargs.get("config")
    config = config if isinstance(config, dict) else {}
    for holder in (config.get("configurable"), kwargs.get("context")):
        user = holder.get(AUTH_USER_KEY) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or user is None or isinstance(user, dict):
            continue
        granted = user.get(ACCESS_KEY) if callable(getattr(user, "get", None)) else None
        holder[AUTH_USER_KEY] = ServerUser(identity=user.identity, **({ACCESS_KEY: granted} if granted else {}))
