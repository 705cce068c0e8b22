"""Filter: keep the chunks the model found relevant and that gave facts; their facts become the evidence the
answer is written from (and checked against)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer
from pagegraph.state.graph import RagState

NO_FACTS = "No relevant information found."


def filter_facts(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    timer = StageTimer("filter_facts")
    mapped = sorted(state.get("mapped") or [], key=lambda m: m.evidence.rank)
    kept = [m for m in mapped if m.relevant and m.facts]
    if not kept:
        return {"abstain_reason": NO_FACTS, "trace": [timer.record(f"0 of {len(mapped)} chunks relevant")]}
    evidence = [m.evidence.model_copy(update={"text": "\n".join(m.facts)}) for m in kept]
    summary = f"{len(kept)} of {len(mapped)} chunks relevant, {sum(len(m.facts) for m in kept)} facts"
    return {"evidence": evidence, "trace": [timer.record(summary, ids=[e.label() for e in evidence])]}
