"""Tree navigation helpers on a small in-memory tree, and the pageindex graph with scripted model replies."""

from __future__ import annotations

import json
import re

from langchain_core.messages import HumanMessage

from pagegraph.llm.structured import structured_call
from pagegraph.retrievers.tree_nodes import (
    DocumentTree,
    NodeChoice,
    build_selection_view,
    get_node_by_id,
    read_selection,
)
from pagegraph.state.documents import DocumentRecord, NodeSummary, SourceType
from tests.fakes import ScriptedChatModel

DOC = "d1"


def section(n: int, parent: int | None, children: list[int], level: int, title: str, pages: tuple[int, int]):
    return NodeSummary(
        node_id=f"{DOC}:n{n}",
        parent_id=None if parent is None else f"{DOC}:n{parent}",
        children_ids=[f"{DOC}:n{c}" for c in children],
        level=level,
        is_leaf=not children,
        is_summary=True,
        title=title,
        summary=f"About {title.lower()}.",
        start_page=pages[0],
        end_page=pages[1],
    )


def small_tree() -> DocumentTree:
    sections = [
        section(0, None, [1, 2], 0, "Manual", (1, 9)),
        section(1, 0, [3, 4], 1, "Installation", (2, 4)),
        section(3, 1, [], 2, "Mounting", (2, 3)),
        section(4, 1, [], 2, "Wiring", (4, 4)),
        section(2, 0, [], 1, "Specifications", (5, 6)),
    ]
    document = DocumentRecord.model_construct(id=DOC, name="manual.pdf", source_type=SourceType.PDF)
    texts = {f"{DOC}:n3": "Use four M8 anchors.", f"{DOC}:n4": "Tighten to 2.5 Nm.", f"{DOC}:n2": "Weight 98 kg."}
    return DocumentTree(document=document, sections=sections, texts=texts)


def test_selection_view_lists_sections_in_tree_order() -> None:
    view, shown = build_selection_view(small_tree())
    assert shown == ["n0", "n1", "n3", "n4", "n2"]
    lines = view.splitlines()
    assert lines[0] == "n0 | Manual | p. 1–9 | About manual."
    assert lines[2] == "n3 |     Mounting | p. 2–3 | About mounting."


def test_selection_view_keeps_the_top_levels_within_the_budget() -> None:
    words = lambda text: len(text.split())  # noqa: E731
    full, _ = build_selection_view(small_tree(), count=words)
    budget = sum(words(line) + 1 for line in full.splitlines() if not line.startswith(("n3 ", "n4 ")))
    view, shown = build_selection_view(small_tree(), token_budget=budget, count=words)
    assert shown == ["n0", "n1", "n2"] and view.endswith("(2 deeper sections not shown)")
    _, paths = build_selection_view(small_tree(), with_path=True)
    assert paths == ["n0", "n1", "n3", "n4", "n2"]


def test_get_node_by_id() -> None:
    tree = small_tree()
    wiring = get_node_by_id(tree, "n4")
    assert (wiring.title, wiring.text, wiring.start_page, wiring.text_missing) == (
        "Wiring",
        "Tighten to 2.5 Nm.",
        4,
        False,
    )
    assert get_node_by_id(tree, f"{DOC}:n4") == wiring
    inner = get_node_by_id(tree, "n1")
    assert inner.text_missing and inner.text == "About installation."
    assert get_node_by_id(tree, "n99") is None


AVAILABLE = ["n0", "n1", "n3", "n4", "n2"]


def selection(*replies: str, n: int, repairs: int = 1):
    """The sections read from scripted replies to one selection call."""
    model = ScriptedChatModel.replying(*replies)
    result = structured_call(model, NodeChoice, [HumanMessage("q")], default=None, purpose="t", repairs=repairs)
    return read_selection(result, AVAILABLE, n)


def test_selection_of_valid_json() -> None:
    chosen = selection('{"node_ids": ["n4", "n2", "n3", "n1", "n0"]}', n=5)
    assert chosen.ids == ["n4", "n2", "n3", "n1", "n0"] and chosen.parsed_by == "json"
    assert chosen.filled == 0 and chosen.unknown == []


def test_selection_after_a_repair_call() -> None:
    chosen = selection("I would read n2 and the wiring", '["n2", "n4"]', n=2)
    assert chosen.ids == ["n2", "n4"] and chosen.parsed_by == "repair"


def test_selection_reads_ids_from_prose_when_no_reply_validates() -> None:
    chosen = selection("Sections n2 and n4 look right.", "still no", n=2)
    assert chosen.ids == ["n2", "n4"] and chosen.parsed_by == "text"


def test_selection_drops_unknown_ids_and_fills_up() -> None:
    chosen = selection('{"node_ids": ["n4", "n42", "n4", 2]}', n=5)
    assert chosen.ids == ["n4", "n2", "n0", "n1", "n3"]
    assert chosen.unknown == ["n42"] and chosen.filled == 3
    assert selection("nothing useful", n=3, repairs=0).ids == ["n0", "n1", "n3"]


def pick(*titles: str):
    """A scripted select reply: the ids of the sections with these titles, read from the view the model got."""

    def reply(messages) -> str:
        view = str(messages[-1].content)
        ids = [re.search(rf"^(n\d+) \|\s+{re.escape(t)} \|", view, re.M).group(1) for t in titles]
        return json.dumps({"node_ids": ids})

    return reply


def test_pageindex_graph_reads_the_chosen_sections_and_cites_them(ask) -> None:
    output, model = ask(
        "How much does the SB-40 weigh?",
        pick("5 Technical specifications", "3 Installation", "3.1 Site requirements", "2 Safety", "8 Warranty"),
        "The SB-40 weighs 98 kg [1].",
        graph="pageindex",
        inputs={"documents": ["sb40-user-manual.pdf"]},
    )
    assert output["llm_calls"] == 4 and not output["abstained"]  # choose, answer, judge, second reading
    first = output["evidence"][0]
    assert first.section == "5 Technical specifications" and "| Weight | 98 kg |" in first.text
    assert [e.section for e in output["evidence"]] == [
        "5 Technical specifications",
        "3 Installation",
        "3.1 Site requirements",
        "2 Safety",
        "8 Warranty",
    ]
    assert [c.label for c in output["citations"]] == ["[sb40-user-manual.pdf, 5 Technical specifications, p. 6]"]
    assert output["answer"].startswith(
        "The SB-40 weighs 98 kg [sb40-user-manual.pdf, 5 Technical specifications, p. 6]"
    )
    history = {r.stage: r.details for r in output["trace"] if r.details}
    assert history["find_files"]["selected"] == ["sb40-user-manual.pdf"]
    selected = history["select[0]"]
    assert selected["parsed_by"] == "json" and len(selected["selected"]) == 5 and selected["filled"] == 0
    assert all(node["text_missing"] is False for node in selected["nodes"])
    prompt = str(model.requests[0][0][-1].content)
    assert "Sections of sb40-user-manual.pdf:" in prompt and "5 Technical specifications | p. 6 | " in prompt


def test_pageindex_ranks_files_and_fills_a_short_selection(ask) -> None:
    output, _ = ask(
        "What does error code E04 mean?",
        *['{"node_ids": ["n999"]}'] * 3,
        "E04 means the grid voltage was out of range [1].",
        graph="pageindex",
    )
    history = {r.stage: r.details for r in output["trace"] if r.details}
    assert len(history["find_files"]["ranked"]) == 3 and len(history["find_files"]["selected"]) == 3
    selects = [d for stage, d in history.items() if stage.startswith("select[")]
    assert all(d["unknown_ids"] == ["n999"] for d in selects)
    assert all(d["filled"] == len(d["selected"]) for d in selects)


def test_pageindex_abstains_without_files(ask) -> None:
    output, _ = ask("Anything?", graph="pageindex", inputs={"documents": ["no-such-file.pdf"]})
    assert output["abstained"]
