"""Around another graph run as a subgraph (a failing graph's fallback to `basic`, auto's choice of `rag` or
`extract`): LangGraph passes it the `HandOver` keys of this run's state and takes back its `HandBack` keys, its
trace records after this run's. `hand_over` narrows the question to the documents a router picked; `take_back`
adds up the model calls of the whole trace and records the turn on the thread."""

from __future__ import annotations

from typing import Any

from pagegraph.nodes.common import finished_turn, usage_update
from pagegraph.state.graph import RunState, SearchState


def hand_over(state: SearchState) -> dict[str, Any]:
    route = state.get("route")
    if route is not None and not state.get("documents"):
        return {"documents": route.names}
    return {}


def take_back(state: RunState) -> dict[str, Any]:
    return {**usage_update(state.get("trace") or []), **finished_turn(state, state["answer"])}
