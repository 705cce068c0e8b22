"""Every edge of the rag graph, with scripted chat models over a real index of the sample documents."""

from __future__ import annotations

from pathlib import Path
from typing import get_args, get_type_hints

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.nodes.verify import SECTIONS
from pagegraph.prompts.answer import MISSING_SECTION, REFUSAL
from pagegraph.services import Services
from pagegraph.state.graph import (
    STATE_RECORD_TYPES,
    AutoState,
    ChunkTask,
    ExtractState,
    FileTask,
    FindState,
    PageindexState,
    RagState,
    SmallModelState,
    StepTask,
    ThreadState,
    checkpoint_serializer,
)
from pagegraph.state.ingest import IngestState
from pagegraph.store.index import open_index
from tests.fakes import ScriptedChatModel, citing

MANUAL = "sb40-user-manual.pdf"
HOT = citing(
    "limits power until it cools", "When the battery temperature is high, the unit limits power until it cools [{n}]."
)


def stages(output: dict) -> list[str]:
    return [record.stage for record in output["trace"]]


def test_normal_path_cites_retrieved_evidence(ask) -> None:
    output, model = ask("How much does the SB-40 weigh?", citing("98 kg", "The SB-40 weighs 98 kg [{n}]."))
    assert stages(output) == [
        *("highlight", "route", "plan", "retrieve[0]", "gate", "expand_tree", "answer", "judge", "verify")
    ]
    cited = next(e for e in output["evidence"] if "98 kg" in e.text)
    assert output["answer"] == f"The SB-40 weighs 98 kg {cited.label()}."
    assert [(c.label, c.origin) for c in output["citations"]] == [(cited.label(), "model")]
    assert not output["abstained"] and output["confidence"] > 0
    assert output["usage"].calls == 3 and len(model.requests) == len(model.judged) == len(model.rereads) == 1
    prompt = model.requests[0][0][-1].content
    assert f"[1] {output['evidence'][0].label()}" in prompt and "Question: How much does the SB-40 weigh?" in prompt


def test_every_output_field_is_filled_on_every_path(ask) -> None:
    answered, _ = ask("How much does the SB-40 weigh?", "It weighs 98 kg [1].")
    abstained, _ = ask("What is the recipe for sourdough bread?")
    keys = {
        "answer",
        "citations",
        "abstained",
        "abstain_reason",
        "confidence",
        "low_confidence",
        "evidence",
        "trace",
        "usage",
    }
    assert keys <= answered.keys() and keys <= abstained.keys()


def test_irrelevant_question_abstains_without_a_model_call(ask) -> None:
    output, model = ask("What is the recipe for sourdough bread?")
    assert output["abstained"] and not model.requests
    assert (
        "not close to the question" in output["abstain_reason"] or "close to the question" in output["abstain_reason"]
    )
    assert output["answer"].startswith("I could not answer this from the indexed documents")
    assert "pagegraph ingest" in output["answer"]
    assert "--document NAME" not in output["answer"], "every document was searched: naming one would not help"
    assert stages(output) == ["highlight", "route", "plan", "retrieve[0]", "gate", "abstain"]


def test_empty_and_missing_index_abstain(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    settings = Settings(cache_dir=cache_dir)
    open_index(tmp_path / "empty", settings, write=True, embedder=embedder).close()
    graph = build_graph(services=Services(settings, chat_model=ScriptedChatModel()))
    empty = graph.invoke({"question": "anything?"}, context=Context(index=str(tmp_path / "empty")))
    assert empty["abstained"] and empty["abstain_reason"] == "no documents indexed"
    missing = graph.invoke({"question": "anything?"}, context=Context(index=str(tmp_path / "nowhere")))
    assert missing["abstained"] and missing["abstain_reason"].startswith("no documents indexed (no index at")


def test_model_refusal_abstains(ask) -> None:
    output, _ = ask("Who designed the SB-40 cabinet?", REFUSAL)
    assert (
        output["abstained"] and output["abstain_reason"] == "the answer model found no answer in the retrieved passages"
    )
    assert output["citations"] == [] and output["confidence"] == 0.0


def test_router_json_broken_then_repaired(ask) -> None:
    output, model = ask(
        "How much does the SB-40 weigh?",
        "I think the manual is best.",
        '{"documents": ["SB40-User-Manual"], "reason": "technical data"}',
        "It weighs 98 kg [1].",
        retrieval={"top_k_files": 1},
    )
    assert stages(output)[:3] == ["highlight", "route", "plan"]
    route = output["trace"][1]
    assert route.ids == [MANUAL] and route.summary.startswith("model chose 1 of 3")
    assert [(a.step, a.error is None) for a in route.attempts] == [("initial", False), ("repair", True)]
    repair_prompt = model.requests[1][0]
    assert (
        repair_prompt[-2].content == "I think the manual is best." and "could not be used" in repair_prompt[-1].content
    )
    assert {e.source for e in output["evidence"]} == {MANUAL}


def test_router_json_broken_twice_falls_back_to_retrieval_ranking(ask) -> None:
    output, _ = ask(
        "Which error code means the grid voltage is out of range?",
        "no idea",
        '{"documents": ["annual-report.pdf"]}',
        "Code E04 [1].",
        retrieval={"top_k_files": 1},
    )
    (route,) = [r for r in output["trace"] if r.stage == "route"]
    assert route.summary == "model output invalid: documents ranked by retrieval" and len(route.attempts) == 2
    assert route.ids and route.ids[0] in {MANUAL, "support-call-2024-03-14.vtt"}
    assert not output["abstained"]


def test_plan_repair_and_parallel_steps(ask) -> None:
    output, model = ask(
        "Why does the unit reduce its power when it is hot, and how do you compare modes?",
        "steps: search things",
        '{"steps": [{"query": "temperature range power reduction"}, {"query": "operating modes", '
        '"documents": ["sb40-user-manual.pdf", "unknown.pdf"]}], "requires_combination": true}',
        "It reduces power outside 5 to 35 degrees [1]. Modes differ [2].",
    )
    (plan,) = [r for r in output["trace"] if r.stage == "plan"]
    assert plan.summary == "reasoning: 2 planned searches" and [a.step for a in plan.attempts] == ["initial", "repair"]
    steps = {r.stage: r for r in output["trace"] if r.stage.startswith("retrieve")}
    assert set(steps) == {"retrieve[0]", "retrieve[1]"}
    assert "'operating modes'" in steps["retrieve[1]"].summary
    assert steps["retrieve[1]"].ids and all(
        i.startswith(steps["retrieve[1]"].ids[0].split(":")[0]) for i in steps["retrieve[1]"].ids
    ), "a step's documents restrict its search to one document"


def test_a_stage_that_raises_falls_back_to_basic(ask) -> None:
    output, _ = ask(
        "Why does the unit reduce its power when it is hot?",
        RuntimeError("planner exploded"),
        HOT,
    )
    failed = next(r for r in output["trace"] if r.error)
    assert failed.stage == "plan" and "planner exploded" in failed.error
    assert stages(output)[-7:] == ["plan", "retrieve[0]", "highlight", "gate", "answer", "judge", "verify"]
    assert not output["abstained"] and output["citations"]


def test_citations_to_evidence_not_retrieved_are_removed(ask) -> None:
    output, _ = ask(
        "How much does the SB-40 weigh?",
        citing("98 kg", "The SB-40 weighs 98 kg [{n}][42]. It is built in Norway [manual-2019.pdf, p. 3]."),
    )
    cited = next(e for e in output["evidence"] if "98 kg" in e.text)
    assert [c.label for c in output["citations"] if c.origin == "model"] == [cited.label()]
    assert "[42]" not in output["answer"] and "manual-2019.pdf" not in output["answer"]
    verify = next(r for r in output["trace"] if r.stage == "verify")
    assert "2 invalid removed" in verify.summary


def test_uncited_sentences_get_attributed_citations(ask) -> None:
    output, _ = ask(
        "Which operating modes does the SB-40 have?",
        "The SB-40 has self-consumption mode, time-of-use mode and backup mode.",
    )
    assert output["citations"] and {c.origin for c in output["citations"]} == {"attributed"}
    assert output["citations"][0].label in output["answer"]
    assert output["citations"][0].section.endswith("Operating modes")


@pytest.mark.parametrize(
    ("output_type", "heading"),
    [
        ("blueprint", "## Architecture"),
        ("pdr", "## Design Decisions"),
        ("workflow", "## Steps"),
        ("build_plan", "## Milestones"),
    ],
)
def test_output_types_ask_for_their_sections(ask, output_type: str, heading: str) -> None:
    markdown = f"# Title\n{heading}\n- The unit has three operating modes [1]."
    output, model = ask("Plan an SB-40 installation.", markdown, inputs={"output_type": output_type})
    assert heading in model.requests[0][0][-1].content
    assert output["answer"].startswith("# Title") and heading in output["answer"]
    assert output["citations"]
    sections = SECTIONS[output_type]
    assert all(f"{marks} {title}" in output["answer"] for marks, title in sections), "each section is there"
    assert output["answer"].count(MISSING_SECTION) == len(sections) - 1, "those the model left out say so"


def test_a_small_model_s_workflow_is_written_by_rag_with_its_sections(ask) -> None:
    reply = "# Workflow\n## Steps\n1. Mount the unit on the wall bracket [1]."
    output, _ = ask("Plan an SB-40 installation.", reply, graph="auto", inputs={"output_type": "workflow"})
    choice = next(r for r in output["trace"] if r.stage == "auto")
    assert choice.ids == ["rag"] and "writes the workflow" in choice.summary
    assert [title for _, title in SECTIONS["workflow"] if f"# {title}" in output["answer"]] == [
        title for _, title in SECTIONS["workflow"]
    ]


def test_basic_graph_alone(ask) -> None:
    output, _ = ask("How much does the SB-40 weigh?", citing("98 kg", "98 kg [{n}]."), graph="basic")
    assert stages(output) == ["retrieve[0]", "highlight", "gate", "answer", "judge", "verify"]
    assert output["citations"][0].origin == "model"


def test_documents_named_in_the_question_restrict_the_search(ask) -> None:
    output, _ = ask("What does E04 mean?", "Grid voltage out of range [1].", inputs={"documents": ["support-call"]})
    assert {e.source for e in output["evidence"]} == {"support-call-2024-03-14.vtt"}
    unknown, _ = ask("What does E04 mean?", inputs={"documents": ["nothing.pdf"]})
    assert unknown["abstained"] and "no document in the index is called 'nothing.pdf'" in unknown["abstain_reason"]
    assert "sb40-user-manual.pdf" in unknown["abstain_reason"], "the refusal names what the index holds"
    mistyped, _ = ask("What does E04 mean?", inputs={"documents": ["sb40-user-manul.pdf"]})
    assert "the closest: sb40-user-manual.pdf" in mistyped["abstain_reason"]
    for key, what in (("projects", "project"), ("source_types", "source type")):
        filtered, _ = ask("What does E04 mean?", inputs={"filters": {key: ["finanse"]}})
        assert filtered["abstained"] and f"no {what} in the index is called 'finanse'" in filtered["abstain_reason"]


def test_chat_thread_keeps_history(sample_index: Path, cache_dir: Path, embedder: Embedder) -> None:
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    model = ScriptedChatModel.replying("It weighs 98 kg [1].", "It is 1150 mm high [1].")
    graph = build_graph(
        services=Services(chat_model=model, index=index), checkpointer=InMemorySaver(serde=checkpoint_serializer())
    )
    thread = {"configurable": {"thread_id": "t1"}}
    context = Context(tree={"use": False}, rewrite_followups=False)
    graph.invoke({"question": "How much does the SB-40 weigh?"}, thread, context=context)
    second = graph.invoke({"question": "What are the dimensions of the SB-40?"}, thread, context=context)
    prompt = model.requests[1][0][-1]
    assert isinstance(prompt, HumanMessage) and "Earlier in this conversation" in prompt.content
    assert "Q: How much does the SB-40 weigh?" in prompt.content
    assert stages(second)[0] == "highlight", "a new turn starts a new trace"
    index.close()


@pytest.mark.parametrize("graph", ["rag", "extract", "small_model", "pageindex", "basic", "auto"])
def test_too_long_questions_are_refused_before_any_model_call(ask, graph: str) -> None:
    long_question = "Why does the unit show error code E04 during commissioning? " * 80  # 4,880 characters
    output, model = ask(long_question, graph=graph)
    assert output["abstained"] and "PAGEGRAPH_MAX_QUESTION_CHARS" in output["abstain_reason"]
    assert not model.requests and output["llm_calls"] == 0
    assert long_question[:300] not in repr(output), "no more than a short prefix of the question is echoed"


def test_the_question_token_limit_follows_the_models_window(cache_dir: Path) -> None:
    from pagegraph.nodes.start import question_refusal

    wordy = "antidisestablishmentarianism " * 120  # 3,480 characters: under the character limit
    services = Services(
        Settings(cache_dir=cache_dir, models={"remote_context_tokens": 2048}), chat_model=ScriptedChatModel()
    )
    refusal = question_refusal(wordy.strip(), services, Context())
    assert refusal and "the limit is 512" in refusal and "2,048-token window" in refusal
    roomy = Services(
        Settings(cache_dir=cache_dir, models={"remote_context_tokens": 32768}), chat_model=ScriptedChatModel()
    )
    assert question_refusal(wordy.strip(), roomy, Context()) is None
    assert question_refusal("", roomy, Context()) == "the question is empty"


def test_a_fallback_streams_the_basic_graphs_own_stages(sample_index: Path, cache_dir: Path, embedder) -> None:
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    model = ScriptedChatModel.replying(RuntimeError("planner exploded"), HOT)
    graph = build_graph("rag", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    try:
        updates = list(
            graph.stream(
                {"question": "Why does the unit reduce its power when it is hot?"},
                context=Context(tree={"use": False}),
                stream_mode="updates",
                subgraphs=True,
            )
        )
    finally:
        index.close()
    graphs = {tuple(part.split(":")[0] for part in namespace) for namespace, _ in updates}
    assert graphs == {(), ("rag",), ("rag", "basic")}  # the thread, its run, the run's fallback
    inside = [node for namespace, update in updates if len(namespace) == 2 for node in update]
    assert inside == ["start", "rewrite_followup", "search", "highlight", "gate", "answer", "judge", "verify"]
    run = [node for namespace, update in updates if len(namespace) == 1 for node in update]
    assert run[-4:] == ["plan", "hand_over", "basic", "take_back"]
    assert [node for namespace, update in updates if not namespace for node in update] == ["rag"]


def test_every_record_a_state_holds_is_restored_from_a_checkpoint() -> None:
    """The checkpoint serializer restores only the listed records: one left out comes back as a plain dict (with a
    warning) from a server thread, and the node that reads it breaks. Records inside records are rebuilt by the
    outer one; messages are LangChain's own, which the serializer always restores."""
    held: set[type[BaseModel]] = set()

    def collect(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            held.add(annotation)
        for argument in get_args(annotation):
            collect(argument)

    states = (ThreadState, RagState, ExtractState, SmallModelState, PageindexState, AutoState, FindState, IngestState)
    for state in (*states, ChunkTask, FileTask, StepTask):
        for annotation in get_type_hints(state).values():
            collect(annotation)
    ours = {record for record in held if record.__module__.startswith("pagegraph.")}
    assert len(ours) > 10 and ours - set(STATE_RECORD_TYPES) == set()
