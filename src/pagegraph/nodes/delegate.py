"""Hand the question to another compiled graph and take its output as this run's: how the rag and small_model
graphs fall back to the basic graph when a stage fails, and how the auto graph runs the graph it picked. The
trace keeps what came before (the failure, the choice) followed by the other graph's records.

The other graph is compiled with `checkpointer=False`: its result is saved as this node's update, and a graph
invoked inside a node would otherwise inherit the run's checkpointer, whose LangGraph-server (async) kind cannot be
called from this synchronous node."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import context_of, finished_turn, usage_update
from pagegraph.state.graph import InputState, RagState

PASSED_ON = ("question", "documents", "filters", "output_type")
RETURNED = (
    "highlights",
    "answer",
    "citations",
    "abstained",
    "abstain_reason",
    "confidence",
    "low_confidence",
    "evidence",
)


def delegate(
    state: RagState, runtime: Runtime[Context], config: RunnableConfig, graph: CompiledStateGraph
) -> dict[str, Any]:
    inputs: InputState = {key: state[key] for key in PASSED_ON if state.get(key)}  # type: ignore[misc]
    route = state.get("route")
    if route is not None and not state.get("documents"):
        inputs["documents"] = route.names
    result = graph.invoke(inputs, config=config, context=context_of(runtime))
    return {
        **{key: result[key] for key in RETURNED if key in result},
        "trace": result["trace"],
        **usage_update([*(state.get("trace") or []), *result["trace"]]),
        **finished_turn(state, result["answer"]),
    }
