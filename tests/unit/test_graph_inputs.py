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


def test_a_run_whose_context_does_not_fit_is_named(graph_inputs) -> None:
    rag = graph_inputs.served_graph("rag")
    asked = {"input": {"question": "When?"}}
    assert graph_inputs.run_problem(rag, {**asked, "context": {"retrieval": {"top_k_files": 5}}}) is None
    flat = graph_inputs.run_problem(rag, {**asked, "context": {"top_k_files": 5}})
    assert flat.startswith("the rag context does not fit") and "'top_k_files' is retrieval.top_k_files" in flat
    assert "top_k_files" in graph_inputs.run_problem(rag, {**asked, "context": {"retrieval": {"top_k_files": 0}}})


def test_a_state_update_is_checked_key_by_key(graph_inputs) -> None:
    basic = graph_inputs.served_graph("basic")
    assert graph_inputs.update_problem(basic, {"question": "When?", "filters": None, "documents": ["a.md"]}) is None
    assert "'evidence' holds records" in graph_inputs.update_problem(basic, {"evidence": [{"id": 3}]})
    assert graph_inputs.update_problem(basic, {"evidence": None, "pick": None}) is None
    assert "'usage' holds records" in graph_inputs.update_problem(basic, {"usage": {"calls": 1}}), "a bare record"
    assert "'nonesuch' is not part of the basic state" in graph_inputs.update_problem(basic, {"nonesuch": 1})
    # a run's own working state is not the thread's: it starts afresh each run, out of an edit's reach
    assert "'retrieved' is not part of the basic state" in graph_inputs.update_problem(basic, {"retrieved": []})
    through_command = {"input": None, "command": {"update": {"evidence": 5}}}
    assert "'evidence' holds records" in graph_inputs.run_problem(basic, through_command)
    assert "'question' does not fit" in graph_inputs.update_problem(basic, {"question": 5})


def test_chat_style_messages_are_an_input_and_other_shapes_are_named(graph_inputs) -> None:
    basic = graph_inputs.served_graph("basic")
    for messages in ([{"role": "user", "content": "When?"}], [{"type": "human", "content": "When?"}], [["user", "x"]]):
        assert graph_inputs.run_problem(basic, {"input": {"messages": messages}}) is None, messages
        assert graph_inputs.update_problem(basic, {"messages": messages}) is None, messages
    assert "messages: not chat messages" in graph_inputs.run_problem(basic, {"input": {"messages": [{"rle": "x"}]}})
    assert "a list of chat messages, not int" in graph_inputs.run_problem(basic, {"input": {"messages": 5}})


def test_a_passage_stored_as_plain_json_reads_as_a_record() -> None:
    """A thread whose `retrieved` was written as plain JSON (before such edits were refused) reads again."""
    from pagegraph.state.answering import Evidence
    from pagegraph.state.graph import merge_evidence

    stored = Evidence(
        id="a#1", chunk_ids=["a#1"], source="rota.md", start_page=1, end_page=1, text="At 22:00.", score=1.0, rank=1
    )
    merged = merge_evidence([stored], [stored.model_dump(mode="json"), {**stored.model_dump(), "id": "a#2"}])
    assert [e.id for e in merged] == ["a#1", "a#2"] and all(isinstance(e, Evidence) for e in merged)


def test_bodies_no_route_can_take_are_named() -> None:
    from pagegraph.server.bodies import body_problem

    assert body_problem(b'{"assistant_id": "basic", "input": {"question": "When?"}, "limit": 10}') is None
    assert body_problem(b"not json") is None and body_problem(b"") is None
    assert "nests deeper than 64" in body_problem(b"[" * 10_000 + b"]" * 10_000)
    assert "nests deeper than 64" in body_problem(b"[" * 100 + b"]" * 100)
    assert (
        body_problem(json.dumps({"input": {"question": "a\u0000b"}}).encode()) == "input.question holds a NUL character"
    )
    assert "a key in the body" in body_problem(json.dumps({"a\u0000": 1}).encode())
    assert body_problem(b'{"limit": -1}') == "limit is -1; it must be from 0 to 2,147,483,647"
    assert "offset is 1e+20" in body_problem(b'{"offset": 1e20}')
    assert "after_seconds" in body_problem(b'{"after_seconds": 1e14}')
    assert "numbers may not pass" in body_problem(b'{"input": {"x": [1e300]}}')


def test_a_state_edit_may_not_grow_a_thread_past_its_limit() -> None:
    from pagegraph.config import Settings
    from pagegraph.server.write_guard import WriteGuard

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        return None

    limits = WriteGuard(app, Settings(limits={"max_state_bytes": 4096}))
    thread = {"values": {"messages": [{"type": "human", "content": "x" * 3000}]}}
    assert limits._state_too_large(thread, 500) is None
    problem = limits._state_too_large(thread, 2000)
    assert problem is not None and "would pass 4,096 bytes" in problem and "PAGEGRAPH_MAX_STATE_BYTES" in problem
