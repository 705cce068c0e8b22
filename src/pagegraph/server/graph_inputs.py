"""Run inputs and state updates checked against their graph before the runtime stores them. LangGraph types a
graph's input and state but does not check what a client sends: a question sent as an object reached a node as one
and failed there (an AttributeError inside the run), and a state update of the wrong shape was written into the
thread's checkpoints, where every later run on the thread met it. Here each gets a 422 naming the field instead."""

from __future__ import annotations

import importlib
import json
import os
import typing
from functools import cache
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from pydantic import TypeAdapter, ValidationError

SHOWN_ERRORS = 3


@cache
def served_graph(graph_id: str) -> CompiledStateGraph | None:
    """The graph the server serves as `graph_id` (langgraph.json's `graphs`, which the runtime reads from
    LANGSERVE_GRAPHS), from its module, which the server has already imported; None for a name it does not serve or
    a graph given as a file path."""
    try:
        spec = json.loads(os.environ.get("LANGSERVE_GRAPHS") or "{}").get(graph_id)
    except (ValueError, AttributeError):
        return None
    module, _, attribute = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not module or "/" in module or module.endswith(".py"):
        return None
    graph = getattr(importlib.import_module(module), attribute or "graph", None)
    return graph if isinstance(graph, CompiledStateGraph) else None


def served_graph_ids() -> frozenset[str]:
    try:
        graphs = json.loads(os.environ.get("LANGSERVE_GRAPHS") or "{}")
    except ValueError:
        return frozenset()
    return frozenset(graphs) if isinstance(graphs, dict) else frozenset()


def input_problem(graph: CompiledStateGraph, given: dict) -> str | None:
    """Why `given` is not an input of `graph` (its fields named), or None."""
    try:
        graph.get_input_schema().model_validate(given)
    except ValidationError as exc:
        return f"the {graph.name} input does not fit: {described(exc)}"
    return None


def update_problem(graph: CompiledStateGraph, values: dict) -> str | None:
    """Why `values` is not a state update of `graph`: a key its state does not have, or a value of the wrong type.
    None clears a key (the graphs read a cleared key as an absent one)."""
    fields = state_fields(graph)
    for key, value in values.items():
        if key not in fields:
            return f"{key!r} is not part of the {graph.name} state (its keys: {', '.join(sorted(fields))})"
        if value is None:
            continue
        try:
            fields[key].validate_python(value)
        except ValidationError as exc:
            return f"the {graph.name} state's {key!r} does not fit: {described(exc)}"
    return None


@cache
def state_fields(graph: CompiledStateGraph) -> dict[str, TypeAdapter]:
    hints = typing.get_type_hints(graph.builder.state_schema, include_extras=True)
    return {name: TypeAdapter(hint) for name, hint in hints.items()}


def described(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(at) for at in error['loc']) or 'the value'}: {error['msg']}" for error in errors]
    more = f" (and {len(parts) - SHOWN_ERRORS} more)" if len(parts) > SHOWN_ERRORS else ""
    return "; ".join(parts[:SHOWN_ERRORS]) + more


def sent_runs(payload: Any) -> list[dict]:
    """The runs a request that starts runs describes: the payload, or each of a batch's."""
    return [run for run in (payload if isinstance(payload, list) else [payload]) if isinstance(run, dict)]


def run_problem(graph: CompiledStateGraph, run: dict) -> str | None:
    """Why a run's `input` or `command.update` does not fit `graph`, or None."""
    given = run.get("input")
    if given is not None and not isinstance(given, dict):
        return f"the {graph.name} input must be a JSON object of its fields, not {type(given).__name__}"
    if isinstance(given, dict) and (problem := input_problem(graph, given)):
        return problem
    command = run.get("command")
    update = command.get("update") if isinstance(command, dict) else None
    if isinstance(update, dict):
        return update_problem(graph, update)
    return None
