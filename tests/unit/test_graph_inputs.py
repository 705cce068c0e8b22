"""Run inputs and state updates checked against the served graph before the runtime stores them."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO


@pytest.fixture
def graph_inputs(monkeypatch: pytest.MonkeyPatch):
    from pagegraph.server import graph_inputs

    monkeypatch.setenv("LANGSERVE_GRAPHS", json.dumps(json.loads((REPO / "langgraph.json").read_text())["graphs"]))
    graph_inputs.served_graph.cache_clear()
    yield graph_inputs
    graph_inputs.served_graph.cache_clear()


def test_a_run_whose_input_does_not_fit_is_named(graph_inputs) -> None:
    basic = graph_inputs.served_graph("basic")
    assert "basic" in graph_inputs.served_graph_ids() and graph_inputs.served_graph("nonesuch") is None
    assert graph_inputs.run_problem(basic, {"input": {"question": "When?", "filters": {"projects": ["a"]}}}) is None
    problem = graph_inputs.run_problem(basic, {"input": {"question": {"text": "When?"}}})
    assert problem == "the basic input does not fit: question: Input should be a valid string"
    assert "JSON object" in graph_inputs.run_problem(basic, {"input": ["When?"]})
    assert "filters" in graph_inputs.run_problem(basic, {"input": {"question": "When?", "filters": 5}})


def test_a_state_update_is_checked_key_by_key(graph_inputs) -> None:
    basic = graph_inputs.served_graph("basic")
    assert graph_inputs.update_problem(basic, {"question": "When?", "filters": None, "documents": ["a.md"]}) is None
    assert "'retrieved' does not fit" in graph_inputs.update_problem(basic, {"retrieved": [{"id": 3}]})
    assert "'nonesuch' is not part of the basic state" in graph_inputs.update_problem(basic, {"nonesuch": 1})
    through_command = {"input": None, "command": {"update": {"retrieved": 5}}}
    assert "'retrieved' does not fit" in graph_inputs.run_problem(basic, through_command)
