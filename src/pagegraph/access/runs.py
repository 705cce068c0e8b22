"""Who is asking: the LangGraph server user running a graph, and what they may read.

The server puts the authenticated user into each run's config; `pagegraph.access.auth` adds their projects and
ceiling and role under ACCESS_KEY. Outside the server (the CLI, Python) there is no such user and the caller owns the index.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config

from pagegraph.access.records import Access, RetrievalFilter

AUTH_USER_KEY = "langgraph_auth_user"
ACCESS_KEY = "pagegraph_access"


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
    identity = str(user.get("identity") or "unknown")
    granted = user.get(ACCESS_KEY)
    if granted is None:
        return Access(user=identity, projects=[], ceiling="public")
    return Access(
        user=identity,
        projects=granted.get("projects"),
        ceiling=granted.get("ceiling"),
        role=granted.get("role") or "reader",
    )


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
    return (filters or RetrievalFilter()).within(access)
