"""Who is asking: the LangGraph server user running a graph, and what they may read.

The server puts the authenticated user into each run's config; `pagegraph.access.auth` adds their projects and
ceiling and role under ACCESS_KEY. Outside the server (the CLI, Python) there is no such user and the caller owns the index.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config

from pagegraph.access.audit import audit
from pagegraph.access.keys import user_directory
from pagegraph.access.records import Access
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.filters import RetrievalFilter

AUTH_USER_KEY = "langgraph_auth_user"
LOCAL_OWNER = "local"  # who every request is when the server has no users file
ACCESS_KEY = "pagegraph_access"


def run_user(access: Access) -> dict[str, Any]:
    """The user a graph run carries in its config (under AUTH_USER_KEY): their name and rights, as `caller_access`
    reads them back."""
    return {
        "identity": access.user,
        ACCESS_KEY: {"projects": access.projects, "ceiling": access.ceiling, "role": access.role},
    }


def caller_access() -> Access | None:
    """What the LangGraph server user running this graph may read, from the run's config; None outside the server
    (CLI, Python), where the caller owns the index. A server user that pagegraph's auth handler did not vouch for
    reads nothing."""
    try:
        user = get_config().get("configurable", {}).get(AUTH_USER_KEY)
    except RuntimeError:
        return None
    if user is None:
        return None
    if callable(getattr(user, "get", None)):  # pagegraph's user, or the runtime's proxy of it after storage
        identity, granted = str(user.get("identity") or "unknown"), user.get(ACCESS_KEY)
    else:  # a user object without mapping access (the runtime's SimpleUser): its name and nothing more
        identity, granted = str(getattr(user, "identity", None) or getattr(user, "username", "unknown")), None
    if granted is None:
        return scheduled_access(identity)
    return Access(
        user=identity,
        projects=granted.get("projects"),
        ceiling=granted.get("ceiling"),
        role=granted.get("role") or "reader",
    )


def scheduled_access(identity: str) -> Access:
    """The rights of a user whose run carries their name but not their rights: a run the server starts on its own
    schedule (a cron) for them. Read from the users file at each run, so the cron reads what its owner may read
    now; the run of a user no longer in the file fails. Without a users file, the local owner's runs read everything
    and a name nothing vouches for reads nothing."""
    settings = get_settings()
    if settings.server.auth_file is None:  # no users: the local owner's own runs, as their requests, read everything
        return (
            Access(user=identity, role="admin")
            if identity == LOCAL_OWNER
            else Access(user=identity, projects=[], ceiling="public")
        )
    owner = user_directory(settings).named(identity)
    if owner is None:
        reason = f"{identity} is no longer a user of this server: their scheduled run is refused"
        audit("scheduled_run_refused", who=identity, route="cron", reason=reason)
        raise PagegraphError(reason)
    return owner.access()


def readable_filter(filters: RetrievalFilter | dict[str, Any] | None) -> RetrievalFilter | None:
    """The filter a read of the index runs under: the one the run's state asks for (a server client may send it as
    plain JSON), narrowed to what the server user running the graph may read. Every read derives it here, from the
    authenticated user in the run's config, so a state edited between steps (`update_state`, a fork, `Command`) can
    narrow a search but never widen it. None outside the server with no filter asked."""
    if filters is not None and not isinstance(filters, RetrievalFilter):
        filters = RetrievalFilter.model_validate(filters)
    access = caller_access()
    if access is None:
        return filters
    return (filters or RetrievalFilter()).within(access.projects, access.ceiling)
