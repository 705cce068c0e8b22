"""The auto graph's choice: extract for models marked small in Settings (the embedded ones by default), rag for
the rest, and rag for a document with sections (`output_type` other than answer), which only rag writes."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context, Settings
from pagegraph.llm.factory import resolve_spec
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.services import Services
from pagegraph.state.graph import AutoState


def graph_for_model(context: Context, settings: Settings) -> tuple[str, str]:
    """The graph `auto` runs for the run's model, and the model's resolved spec."""
    spec = resolve_spec(context.model or context.model_profile, settings)
    return ("extract" if spec in settings.models.small_models else "rag"), spec


def choose_graph(state: AutoState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("auto")
    context = context_of(runtime)
    choice, spec = graph_for_model(context, services.settings)
    reason = "is marked small (PAGEGRAPH_SMALL_MODELS)" if choice == "extract" else "is not marked small"
    output_type = state.get("output_type") or context.output_type
    if output_type != "answer":
        choice, reason = "rag", f"writes the {output_type}: extract copies short answers only"
    return {"graph_choice": choice, "trace": [timer.record(f"{choice}: model {spec} {reason}", ids=[choice])]}
