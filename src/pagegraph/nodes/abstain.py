"""Abstention: say plainly that the documents do not hold the answer, why, and what to ingest."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, finished_turn, usage_update
from pagegraph.prompts.abstain import ABSTAIN_MESSAGE, SEARCHED
from pagegraph.state.graph import RagState


def abstain(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    timer = StageTimer("abstain")
    reason = state.get("abstain_reason") or "no relevant passage was found"
    route = state.get("route")
    searched = SEARCHED.format(documents=", ".join(route.names)) if route else ""
    message = ABSTAIN_MESSAGE.format(reason=reason, searched=searched)
    return {
        "answer": message,
        "citations": [],
        "abstained": True,
        "abstain_reason": reason,
        "confidence": 0.0,
        "low_confidence": True,
        "evidence": state.get("evidence") or [],
        **usage_update(state.get("trace") or []),
        **finished_turn(state, message),
        "trace": [timer.record(reason)],
    }
