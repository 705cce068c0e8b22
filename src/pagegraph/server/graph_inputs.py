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

from langchain_core.messages import convert_to_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, TypeAdapter, ValidationError

from pagegraph.errors import described


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
    if problem := messages_problem(given.get("messages")):
        return f"the {graph.name} input does not fit: {problem}"
    try:
        graph.get_input_schema().model_validate({key: value for key, value in given.items() if key != "messages"})
    except ValidationError as exc:
        return f"the {graph.name} input does not fit: {described(exc)}"
    return None


def messages_problem(messages: Any) -> str | None:
    """Why `messages` are not a chat the graphs take, or None (also for no messages). Any form LangChain reads as
    messages is taken, as the graphs' `add_messages` converts it: chat-style `{"role": "user", "content": ...}` as
    most clients send, LangChain's `{"type": "human", ...}`, (role, text) pairs."""
    if messages is None:
        return None
    if not isinstance(messages, list):
        return f"messages: a list of chat messages, not {type(messages).__name__}"
    try:
        convert_to_messages(messages)
    except (ValueError, TypeError, KeyError, NotImplementedError, ValidationError) as exc:
        return f"messages: not chat messages ({str(exc).splitlines()[0][:200]})"
    return None


def update_problem(graph: CompiledStateGraph, values: dict) -> str | None:
    """Why `values` is not a state update of `graph`: a key its state does not have, a value of the wrong type, or
    a value for a key that holds the graph's own records. Those are written only by its stages: the runtime would
    store a client's JSON as it came, and the stages that read the key (or its reducer, on every later read of the
    thread) would meet a plain object in place of the record. Such a key may be cleared, and None clears any key
    (the graphs read a cleared key as an absent one)."""
    fields = state_fields(graph)
    inputs = set(typing.get_type_hints(graph.get_input_schema()))
    for key, value in values.items():
        if key not in fields:
            return f"{key!r} is not part of the {graph.name} state (its keys: {', '.join(sorted(fields))})"
        if value is None:
            continue
        if key == "messages":
            problem = messages_problem(value)
            if problem:
                return f"the {graph.name} state's {problem}"
            continue
        if key not in inputs and key in record_keys(graph):
            return (
                f"the {graph.name} state's {key!r} holds records its stages write; a state edit may clear it (null) "
                "but not set it"
            )
        try:
            fields[key].validate_python(value)
        except ValidationError as exc:
            return f"the {graph.name} state's {key!r} does not fit: {described(exc)}"
    return None


@cache
def state_hints(graph: CompiledStateGraph) -> dict[str, Any]:
    return typing.get_type_hints(graph.builder.state_schema, include_extras=True)


@cache
def state_fields(graph: CompiledStateGraph) -> dict[str, TypeAdapter]:
    return {name: TypeAdapter(hint) for name, hint in state_hints(graph).items()}


@cache
def record_keys(graph: CompiledStateGraph) -> frozenset[str]:
    """The state keys whose values are, or hold, pydantic records (a passage, the route, a list of them)."""
    return frozenset(name for name, hint in state_hints(graph).items() if holds_records(hint))


def holds_records(hint: Any) -> bool:
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        return True
    return any(holds_records(argument) for argument in typing.get_args(hint))


def sent_runs(payload: Any) -> list[dict]:
    """The runs a request that starts runs describes: the payload, or each of a batch's."""
    return [run for run in (payload if isinstance(payload, list) else [payload]) if isinstance(run, dict)]


def run_problem(graph: CompiledStateGraph, run: dict) -> str | None:
    """Why a run's `input`, `context` or `command.update` does not fit `graph`, or None."""
    given = run.get("input")
    if given is not None and not isinstance(given, dict):
        return f"the {graph.name} input must be a JSON object of its fields, not {type(given).__name__}"
    if isinstance(given, dict) and (problem := input_problem(graph, given)):
        return problem
    context, schema = run.get("context"), getattr(graph, "context_schema", None)
    if context is not None and isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(context)
        except ValidationError as exc:
            return f"the {graph.name} context does not fit: {described(exc)}"
    command = run.get("command")
    update = command.get("update") if isinstance(command, dict) else None
    if isinstance(update, dict):
        return update_problem(graph, update)
    return None
