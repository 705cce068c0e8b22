"""The auto graph's choice: extract for models marked small in Settings (the embedded ones by default), rag for
the rest."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context, Settings
from pagegraph.llm.factory import resolve_spec
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.services import Services
from pagegraph.state.graph import RagState


def graph_for_model(context: Context, settings: Settings) -> tuple[str, str]:
    """The graph `auto` runs for the run's model, and the model's resolved spec."""
    spec = resolve_spec(context.model or context.model_profile, settings)
    return ("extract" if spec in settings.small_models else "rag"), spec


def choose_graph(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("auto")
    choice, spec = graph_for_model(context_of(runtime), services.settings)
    reason = "is marked small (PAGEGRAPH_SMALL_MODELS)" if choice == "extract" else "is not marked small"
    return {"graph_choice": choice, "trace": [timer.record(f"{choice}: model {spec} {reason}", ids=[choice])]}
