"""The auto graph's choice: small_model for models marked small in Settings (the embedded ones by default), rag for
the rest."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.llm.factory import resolve_spec
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.services import Services
from pagegraph.state.graph import RagState


def choose_graph(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("auto")
    context = context_of(runtime)
    spec = resolve_spec(context.model or context.model_profile, services.settings)
    small = spec in services.settings.small_models
    choice = "small_model" if small else "rag"
    reason = "is marked small (PAGEGRAPH_SMALL_MODELS)" if small else "is not marked small"
    return {"graph_choice": choice, "trace": [timer.record(f"{choice}: model {spec} {reason}", ids=[choice])]}
