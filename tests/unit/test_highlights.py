"""Evidence first: sentences picked without a model call, located in their page's text; the terminal shows stages,
then the evidence, then the answer's tokens, then its sources."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pagegraph import build_graph
from pagegraph.cli.answer_view import JsonLinesView, StreamedAnswer
from pagegraph.cli.ask import _run_question
from pagegraph.config import Context, ReadingKnobs, Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.highlights import answer_shape, locate_in_chunks, pick_highlights, score_sentences
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Highlight
from pagegraph.state.documents import Chunk, Page
from pagegraph.store.index import open_index
from pagegraph.text.sentences import sentences
from tests.fakes import EchoChatModel, Reply, ScriptedChatModel, citing
from tests.terminal import screen_of, terminal_console


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("How much does the SB-40 weigh?", "number"),
        ("What percentage of revenue came from services in 2023?", "number"),
        ("Who wrote the commissioning guide?", "name"),
        ("List the steps of the commissioning procedure.", "list"),
        ("Does the unit restart by itself after E04?", "yes_no"),
        ("Why does the inverter derate in hot weather?", "explanation"),
    ],
)
def test_answer_shapes(question: str, shape: str) -> None:
    assert answer_shape(question) == shape


def test_sentences_keep_offsets_into_their_text() -> None:
    text = (
        "Technical data\nWeight: 98 kg. Height 1150 mm!\n| Capacity | 10 kWh usable |\nOk. A wrapped\nline ends here."
    )
    found = sentences(text, ReadingKnobs())
    expected = ["Weight: 98 kg.", "Height 1150 mm!", "Capacity | 10 kWh usable", "A wrapped\nline ends here."]
    assert [sentence for _, sentence in found] == expected
    assert all(text[at : at + len(sentence)] == sentence for at, sentence in found)


def test_the_dot_of_an_abbreviation_ends_no_sentence() -> None:
    text = (
        "Weight (Mass) — Approx. 0.7 kg (1.5 lbs.)\nSee Fig. 3 and No. 12 of the list. Dr. Smith and J. Doe agree, "
        "e.g. Apple does. Sales rose 5%. 2021 was good. It is in the Form 10-K. Based on it, we agree."
    )
    assert [sentence for _, sentence in sentences(text, ReadingKnobs())] == [
        "Weight (Mass) — Approx. 0.7 kg (1.5 lbs.)",
        "See Fig. 3 and No. 12 of the list.",
        "Dr. Smith and J. Doe agree, e.g. Apple does.",
        "Sales rose 5%.",
        "2021 was good.",
        "It is in the Form 10-K.",  # a designation's letter is no initial
        "Based on it, we agree.",
    ]


WRAPPED = (
    "Covered services for members\n"
    "Massage therapy is covered when it is provided as part of the\n"
    "Northwind Health Plus plan and prescribed by a physician.\n"
    "Benefit limits apply to the services of\n"
    "- licensed chiropractors only\n"
    "Net revenue in millions 1,204\n"
    "Operating income 311"
)


def test_a_sentence_wrapped_before_a_capital_is_shown_whole_and_headings_and_rows_still_end_lines() -> None:
    shown = [sentence for _, sentence in sentences(WRAPPED, ReadingKnobs(), wrapped=True)]
    assert shown == [
        "Covered services for members",
        "Massage therapy is covered when it is provided as part of the\nNorthwind Health Plus plan and prescribed by a "
        "physician.",
        "Benefit limits apply to the services of",
        "licensed chiropractors only",
        "Net revenue in millions 1,204",
        "Operating income 311",
    ]
    # what the reader's excerpts are cut by ends at every line break before a capital, as it did
    read = [sentence for _, sentence in sentences(WRAPPED, ReadingKnobs())]
    assert "Massage therapy is covered when it is provided as part of the" in read


def _best_highlight(question: str, text: str, source: str, section: str, page: int, embedder: Embedder) -> Highlight:
    """The best highlight `pick_highlights` finds in a passage of one chunk, `text`, on page `page` of `source`."""
    passage = Evidence(
        id="c1", chunk_ids=["c1"], source=source, section=section, start_page=page, end_page=page, text=text, score=1.0
    )
    chunk = Chunk(
        id="c1",
        document_id="d",
        source=source,
        position=0,
        text=text,
        start_offset=0,
        end_offset=len(text),
        start_page=page,
        end_page=page,
        section_id="s",
        section_path=[section],
        index_version=1,
    )
    pages = [Page(number=page, text=text)]
    (best,) = pick_highlights(
        question,
        [passage],
        embedder,
        lambda sentence, _: locate_in_chunks(sentence, [chunk], pages, {}),
        count=1,
        reading=ReadingKnobs(),
    )
    return best


def test_the_evidence_shows_a_wrapped_sentence_whole(embedder: Embedder) -> None:
    best = _best_highlight("Is massage therapy covered?", WRAPPED, "plan.pdf", "Covered services", 7, embedder)
    assert best.sentence.endswith("as part of the\nNorthwind Health Plus plan and prescribed by a physician.")
    assert WRAPPED[best.start : best.end] == best.sentence


def test_a_rare_question_word_outweighs_the_name_every_sentence_shares(embedder: Embedder) -> None:
    text = (
        "The SB-40 is a home battery for solar systems. Mount the SB-40 on a wall that holds 120 kg. "
        "The SB-40 stores 10.2 kWh. The SB-40 display shows codes. It weighs 98 kg without the wall bracket."
    )
    best = _best_highlight("How much does the SB-40 weigh?", text, "manual.pdf", "5 Technical data", 4, embedder)
    assert best.sentence == "It weighs 98 kg without the wall bracket."
    assert best.label == "[manual.pdf, 5 Technical data, p. 4]" and text[best.start : best.end] == best.sentence


def test_a_question_the_embedder_cannot_read_weighs_sentences_by_their_words(embedder: Embedder) -> None:
    """MiniLM's cosines of Russian are noise: the weight they had goes to the question's words the sentence holds."""
    text = "Паром отправляется из гавани в шесть утра. Билеты продаются в кассе на причале. Детям скидка."
    passage = Evidence(id="c1", chunk_ids=["c1"], source="ferry.md", start_page=1, end_page=1, text=text, score=1.0)
    reading = ReadingKnobs()
    weights = reading.sentence_weights
    words_alone = reading.model_copy(
        update={
            "sentence_weights": weights.model_copy(update={"dense": 0.0, "lexical": weights.dense + weights.lexical})
        }
    )
    russian = "Где продаются билеты на паром?"
    assert not embedder.reads(russian)
    scored = score_sentences(russian, [passage], embedder, reading)
    assert scored == score_sentences(russian, [passage], embedder, words_alone)
    assert max(scored, key=lambda s: s.score).sentence == "Билеты продаются в кассе на причале."
    english = "Where are ferry tickets sold?"
    english_passage = passage.model_copy(update={"text": "The ferry leaves at six. Tickets are sold at the pier."})
    assert score_sentences(english, [english_passage], embedder, reading) != score_sentences(
        english, [english_passage], embedder, words_alone
    ), "a question it reads: cosines weigh in"


def _graph(sample_index: Path, cache_dir: Path, embedder: Embedder, graph: str, *replies: Reply):
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    model = ScriptedChatModel.replying(*replies)
    compiled = build_graph(graph, services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    return compiled, model, index


@pytest.mark.parametrize("graph", ["rag", "extract", "small_model", "pageindex", "basic", "auto"])
def test_highlights_come_before_any_model_call_with_offsets_into_page_text(
    sample_index: Path, cache_dir: Path, embedder: Embedder, graph: str
) -> None:
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    services = Services(Settings(cache_dir=cache_dir), chat_model=EchoChatModel(), index=index)
    compiled = build_graph(graph, services=services)
    try:
        shown = []
        for namespace, mode, data in compiled.stream(
            {"question": "How much does the SB-40 weigh?"},
            context=Context(tree={"use": False}),
            stream_mode=["updates", "values"],
            subgraphs=True,
        ):
            if mode == "updates" and "highlight" in data:
                shown.append(data["highlight"])
            elif mode == "values" and not namespace:
                trace = data.get("trace") or []
        # the run is the thread's subgraph, whose stages go on while the stream is read: the order is the trace's
        highlights, record = shown[0]["highlights"], shown[0]["trace"][0]
        first_call = next(i for i, r in enumerate(trace) if r.calls)
        assert not record.calls and "highlight" in [r.stage for r in trace[:first_call]]
        assert highlights and any("98" in h.sentence for h in highlights), highlights
        for h in highlights:
            (document,) = [d for d in index.store.documents() if d.name == h.source]
            page = next(p for p in index.store.pages(document.id) if p.number == h.page)
            marked = page.text[h.start : h.end]  # a table row is marked by its cells and shown as its reading
            cells = [cell.strip() for cell in marked.split("|") if cell.strip()]
            assert marked == h.sentence or ("|" in marked and all(c in h.sentence for c in cells)), (marked, h)
            assert f"p. {h.page}" in h.label
    finally:
        index.close()


def test_an_abstaining_run_keeps_its_highlights(sample_index: Path, cache_dir: Path, embedder: Embedder) -> None:
    compiled, model, index = _graph(sample_index, cache_dir, embedder, "rag")
    try:
        output = compiled.invoke({"question": "What is the recipe for sourdough bread?"}, context=Context())
    finally:
        index.close()
    assert output["abstained"] and not model.requests and output["highlights"]


@pytest.mark.parametrize("graph", ["basic", "auto"])  # auto runs the graph it picks as a subgraph
def test_the_terminal_shows_stages_then_evidence_then_tokens_then_sources(
    sample_index: Path, cache_dir: Path, embedder: Embedder, graph: str
) -> None:
    compiled, _, index = _graph(
        sample_index, cache_dir, embedder, graph, citing("98 kg", "The SB-40 weighs 98 kg [{n}].")
    )
    console = terminal_console()
    view = StreamedAnswer(console)
    try:
        output = _run_question(compiled, {"question": "How much does the SB-40 weigh?"}, Context(), False, None, view)
    finally:
        index.close()
    view.finish(output)
    shown = screen_of(console)
    # auto finds its evidence before it picks the graph that searches again
    first = ("Evidence", "· searching") if graph == "auto" else ("· searching", "Evidence")
    label = output["citations"][0].label
    order = [shown.index(part) for part in (*first, "· writing the answer", f"weighs 98 kg {label}", "Sources")]
    assert order == sorted(order), shown
    assert re.search(r"· searching: \d+ passages from (1 document|\d+ documents)\n", shown), shown
    assert shown.count("Evidence") == 1 and label in shown.split("Sources")[1]
    assert "[1]" not in shown and "the model is writing" not in shown, "the model's own words are cleared"


def test_the_search_stage_says_which_words_it_read_as_others(sample_index: Path, cache_dir: Path, embedder: Embedder):
    reply = "The SB-40 weighs 98 kg [1]."
    compiled, _, index = _graph(sample_index, cache_dir, embedder, "basic", reply, reply)
    console = terminal_console()
    try:
        question = {"question": "What is the SB-40's wieght?"}
        output = _run_question(compiled, question, Context(), False, None, StreamedAnswer(console))
        unread = _run_question(compiled, question, Context(retrieval={"correct_spelling": False}), False, None, None)
    finally:
        index.close()
    search = next(r for r in output["trace"] if "passages" in r.details)
    assert search.details["spelling"] == {"wieght": "weight"} and "read 'wieght' as 'weight'" in search.summary
    assert re.search(
        r'· searching: \d+ passages from \d+ documents? \(read "wieght" as "weight"\)\n', screen_of(console)
    )
    assert "spelling" not in next(r for r in unread["trace"] if "passages" in r.details).details


def test_json_lines_give_each_stage_and_the_evidence_before_the_answer(
    sample_index: Path, cache_dir: Path, embedder: Embedder
) -> None:
    compiled, _, index = _graph(
        sample_index, cache_dir, embedder, "extract", citing("98 kg", "The SB-40 weighs 98 kg [{n}].")
    )
    lines: list[str] = []
    view = JsonLinesView(lines.append)
    try:
        output = _run_question(compiled, {"question": "How much does the SB-40 weigh?"}, Context(), False, None, view)
    finally:
        index.close()
    view.finish(output)
    events = [json.loads(line) for line in lines]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in lines), "one object a line"
    kinds = [event["event"] for event in events]
    assert kinds[-1] == "answer" and "evidence" in kinds and kinds.index("evidence") < len(kinds) - 1
    assert "stage" in kinds[: kinds.index("evidence")], "the search stage is told before the evidence"
    evidence = events[kinds.index("evidence")]["highlights"]
    assert any("98 kg" in h["sentence"] for h in evidence) and all(h["label"].startswith("[") for h in evidence)
    assert "98 kg" in events[-1]["answer"] and events[-1]["citations"][0]["label"] in events[-1]["answer"]
