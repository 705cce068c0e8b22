"""Chat follow-ups: with earlier turns on a thread, the question is rewritten into a standalone one before the search."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.nodes.followup import standalone_question, usable_rewrite
from pagegraph.services import Services
from pagegraph.state.graph import checkpoint_serializer
from pagegraph.store.index import open_index
from tests.fakes import Reply, ScriptedChatModel, citing

FIRST = "How much does the SB-40 weigh?"
FOLLOW_UP = "And how tall is it?"
STANDALONE = "How tall is the SB-40?"
SELF_CONTAINED = "And what does error E04 mean?"
WEIGHS = citing("98 kg", "It weighs 98 kg [{n}].")
TALL = citing("1150 mm", "It is 1150 mm high [{n}].")


@pytest.fixture
def chat(sample_index: Path, cache_dir: Path, embedder: Embedder):
    """chat(graph, *replies, **context) -> (turn(question or input) -> output, scripted model): one thread, several
    turns."""
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)

    def open_thread(graph: str, *replies: Reply, **context):
        context.setdefault("tree", {"use": False})
        model = ScriptedChatModel.replying(*replies)
        compiled = build_graph(
            graph,
            services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index),
            checkpointer=InMemorySaver(serde=checkpoint_serializer()),
        )
        thread = {"configurable": {"thread_id": "t1"}}

        def turn(asked: str | dict) -> dict:
            inputs = asked if isinstance(asked, dict) else {"question": asked}
            return compiled.invoke(inputs, thread, context=Context(**context))

        return turn, model

    yield open_thread
    index.close()


def stages(output: dict) -> list[str]:
    return [record.stage for record in output["trace"]]


def test_a_follow_up_is_searched_and_answered_as_a_standalone_question(chat) -> None:
    turn, model = chat("rag", WEIGHS, STANDALONE, TALL)
    first = turn(FIRST)
    assert "rewrite_followup" not in stages(first), "a first question needs no rewrite"
    second = turn(FOLLOW_UP)
    assert stages(second)[:3] == ["rewrite_followup", "highlight", "route"]
    rewrite = second["trace"][0]
    assert rewrite.details == {"asked": FOLLOW_UP, "standalone": STANDALONE} and len(rewrite.calls) == 1
    rewrite_prompt = model.requests[1][0][-1].content
    assert f"Q: {FIRST}\nA: It weighs 98 kg" in rewrite_prompt and f"Last question: {FOLLOW_UP}" in rewrite_prompt
    assert len(model.requests[1][0]) > 2, "worked examples come before the request"
    plan = next(r for r in second["trace"] if r.stage == "plan")
    assert plan.ids == [STANDALONE], "the search uses the standalone question"
    answer_prompt = model.requests[2][0][-1].content
    assert f"Question: {STANDALONE}" in answer_prompt and f"Q: {FIRST}" in answer_prompt
    assert {e.source for e in second["evidence"]} >= {"sb40-user-manual.pdf"}


def test_each_run_on_a_thread_starts_from_a_fresh_state(chat) -> None:
    """A run's working state (its failure, passages, plan) is its own: the run is the thread's subgraph, which
    LangGraph starts afresh, and the thread keeps only the question, the chat, the turns and the last answer."""
    hot = citing("limits power until it cools", "The unit limits power until it cools [{n}].")
    turn, _ = chat("rag", RuntimeError("planner exploded"), hot, FIRST, WEIGHS)
    first = turn("Why does the unit reduce its power when it is hot?")
    failed = [record.stage for record in first["trace"] if record.error]
    assert failed == ["plan"] and "cools" in first["answer"], "the planner failed: basic answered"
    second = turn(FIRST)
    assert not any(record.error for record in second["trace"]) and "98 kg" in second["answer"]
    assert stages(second)[:4] == ["rewrite_followup", "highlight", "route", "plan"], "no fallback: rag answered"
    assert stages(second).count("plan") == 1 and "gate" in stages(second)
    assert {e.id for e in second["evidence"]}.isdisjoint({e.id for e in first["evidence"]}) or second["evidence"]
    assert [m.type for m in second["messages"]] == ["human", "ai", "human", "ai"]


def test_auto_rewrites_once_before_handing_the_question_on(chat) -> None:
    turn, model = chat(
        "auto",
        WEIGHS,
        STANDALONE,
        TALL,
        model="ollama:qwen2.5:7b",
    )
    turn(FIRST)
    second = turn(FOLLOW_UP)
    assert stages(second)[:5] == ["rewrite_followup", "highlight", "auto", "highlight", "route"]
    assert stages(second).count("rewrite_followup") == 1 and len(model.requests) == 3
    assert f"Question: {STANDALONE}" in model.requests[2][0][-1].content


def test_an_unusable_rewrite_keeps_the_question_as_asked(chat) -> None:
    turn, model = chat("basic", WEIGHS, "It means the grid voltage is out of range.", "Grid voltage [1].")
    turn(FIRST)
    second = turn(SELF_CONTAINED)
    rewrite = second["trace"][0]
    assert rewrite.stage == "rewrite_followup" and rewrite.summary.startswith("kept as asked")
    assert f"Question: {SELF_CONTAINED}" in model.requests[2][0][-1].content


def test_rewriting_can_be_turned_off(chat) -> None:
    turn, model = chat("basic", WEIGHS, TALL, rewrite_followups=False)
    turn(FIRST)
    second = turn(SELF_CONTAINED)
    assert "rewrite_followup" not in stages(second) and len(model.requests) == 2


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ('"How tall is the SB-40?"', "How tall is the SB-40?"),
        ("Rewritten question: How tall is the SB-40?\nIt is 1150 mm.", "How tall is the SB-40?"),
        ("It is 1150 mm high.", None),
        ("", None),
        ("How tall is the SB-40? " * 20, None),
    ],
)
def test_reading_the_rewrite(reply: str, kept: str | None) -> None:
    rewritten = standalone_question(reply)
    assert (rewritten if usable_rewrite(FOLLOW_UP, rewritten) else None) == kept


def test_a_question_without_a_question_mark_may_be_rewritten_without_one() -> None:
    assert usable_rewrite("tell me its height", "Tell me the height of the SB-40")
    assert usable_rewrite("它有多高？", "SB-40 有多高？")


def test_chat_clients_may_send_the_question_as_a_message(chat) -> None:
    """Agent Chat UI and useStream send `messages` ending in the question; `question` callers get the same thread."""
    turn, model = chat(
        "basic",
        WEIGHS,
        STANDALONE,
        TALL,
        "What does error E04 mean?",
        "Error E04 means a fan fault [1].",
    )
    first = turn({"messages": [{"type": "human", "content": FIRST}]})
    assert first["answer"].startswith("It weighs 98 kg") and FIRST in model.requests[0][0][-1].content
    second = turn(STANDALONE)
    third = turn({"messages": [{"role": "user", "content": [{"type": "text", "text": SELF_CONTAINED}]}]})
    asked = [r.details["asked"] for out in (second, third) for r in out["trace"] if r.stage == "rewrite_followup"]
    assert asked == [STANDALONE, SELF_CONTAINED], "the new message is the question, not the last turn's"
    said = [(m.type, m.text) for m in third["messages"]]
    assert said == [
        ("human", FIRST),
        ("ai", first["answer"]),
        ("human", STANDALONE),
        ("ai", second["answer"]),
        ("human", SELF_CONTAINED),
        ("ai", third["answer"]),
    ]
