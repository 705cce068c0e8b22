"""Evidence gate: abstain before the answer call when nothing retrieved is close enough to the question."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.state.graph import RagState


def gate(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    timer = StageTimer("gate")
    threshold = context_of(runtime).abstain_threshold
    retrieved = state.get("retrieved") or []
    best = max(state.get("relevance") or [0.0])
    if not retrieved:
        reason = "no passage of the searched documents matches the question"
    elif best < threshold:
        reason = f"no passage of the searched documents is close to the question (best similarity {best:.2f} < {threshold:.2f})"
    else:
        return {"trace": [timer.record(f"{len(retrieved)} passages, best similarity {best:.2f} ≥ {threshold:.2f}")]}
    return {"abstain_reason": reason, "trace": [timer.record(reason)]}
