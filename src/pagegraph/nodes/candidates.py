"""Candidates: the table cells, values and names of the top passages that could answer the question,
found without a model (`checks.candidates`), for the reader to pick among (`nodes.pick`). The passages they
come from become the run's evidence, numbered as the candidates cite them."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.checks.candidates import answer_candidates
from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, readable_evidence
from pagegraph.retrievers.highlights import answer_shape
from pagegraph.services import Services
from pagegraph.state.graph import ExtractState

# a yes or no is no value of the passages: such questions are answered in words (`nodes.read`)
WRITTEN_SHAPES = frozenset({"yes_no"})


def offer_candidates(state: ExtractState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("candidates")
    context = context_of(runtime)
    question = state["question"]
    if not context.picking.use or answer_shape(question) in WRITTEN_SHAPES:
        why = "picking is off" if not context.picking.use else "a yes-or-no question is answered in words"
        return {"candidates": [], "trace": [timer.record(f"no candidates: {why}")]}
    index = services.index(context)
    ranked = readable_evidence(index, state.get("retrieved") or [], state)
    passages = ranked[: context.reading.highlight_passages]
    candidates = answer_candidates(question, passages, index.embedder, context.picking, context.reading)
    kinds = ", ".join(f"{sum(c.kind == kind for c in candidates)} {kind}s" for kind in ("cell", "value", "name"))
    summary = f"{len(candidates)} candidates from {len(passages)} passages ({kinds})"
    return {
        "candidates": candidates,
        "evidence": passages if candidates else state.get("evidence") or [],
        "trace": [timer.record(summary, ids=[f"{c.value} | {c.measures}"[:120] for c in candidates])],
    }
