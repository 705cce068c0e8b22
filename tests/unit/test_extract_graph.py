"""The extract graph: the small model reads focused excerpts, its answer is checked against the excerpt it cites,
whole passages are read once when that falls short, and abstention weighs refusal, support and similarity."""

from __future__ import annotations

from pagegraph.checks.reading import answer_support, answers_agree, judge_reading, reading_confidence
from pagegraph.config import Context, ReadingKnobs
from pagegraph.retrievers.highlights import focus_passages, score_sentences
from pagegraph.state.answering import Evidence, Reading
from pagegraph.text.dates import period_heading_above
from tests.fakes import citing

WEIGHT = "How much does the SB-40 weigh?"


def _passage(text: str, number: int = 1) -> Evidence:
    return Evidence(
        id=f"c{number}", chunk_ids=[f"c{number}"], source="manual.pdf", start_page=number, end_page=number,
        text=text, score=1.0, rank=number,
    )  # fmt: skip


def test_support_counts_only_what_the_answer_adds_to_the_question() -> None:
    text = "The SB-40 weighs 98 kg without the wall bracket."
    assert answer_support("98 kg", WEIGHT, text, ReadingKnobs()) == 1.0
    assert answer_support("The SB-40 weighs 120 kg", WEIGHT, text, ReadingKnobs()) == 0.5  # "kg" is there, "120" is not
    assert answer_support("The SB-40 weight", WEIGHT, text, ReadingKnobs()) == 0.0  # restates the question


def test_a_count_is_supported_by_an_excerpt_about_what_is_counted() -> None:
    question = "How many warnings does the display show?"
    listing = "The display shows the warnings Overheat, Undervoltage and Overload."
    assert (
        answer_support("3", question, listing, ReadingKnobs()) >= 0.75
    )  # counted, not written: the excerpt is about warnings
    assert answer_support("3", question, "The battery weighs 98 kg.", ReadingKnobs()) == 0.0
    assert answer_support("3: Overheat, Undervoltage, Overload", question, listing, ReadingKnobs()) == 1.0
    assert answer_support("3: Overheat, Blackout", question, listing, ReadingKnobs()) == 0.5


def test_a_reading_is_judged_in_the_excerpt_it_cites() -> None:
    evidence = [_passage("Install on a wall.", 1), _passage("It weighs 98 kg.", 2)]
    cited = judge_reading("98 kg [2]", WEIGHT, evidence, wide=False, knobs=ReadingKnobs())
    assert (cited.refused, cited.support, cited.source) == (False, 1.0, 2)
    miscited = judge_reading("98 kg [1]", WEIGHT, evidence, wide=False, knobs=ReadingKnobs())
    assert (miscited.support, miscited.source, miscited.draft) == (1.0, 2, "98 kg [2]")
    uncited = judge_reading("98 kg", WEIGHT, evidence, wide=False, knobs=ReadingKnobs())
    assert (uncited.support, uncited.source, uncited.draft) == (1.0, 2, "98 kg")  # verify attributes it
    unsupported = judge_reading("75 pounds [2]", WEIGHT, evidence, wide=False, knobs=ReadingKnobs())
    assert (unsupported.support, unsupported.source, unsupported.draft) == (0.0, 2, "75 pounds [2]")
    refused = judge_reading(
        "The documents do not contain the answer.", WEIGHT, evidence, wide=False, knobs=ReadingKnobs()
    )
    assert refused.refused and refused.support == 0.0


def test_confidence_combines_refusal_support_and_similarity() -> None:
    context = Context(confidence={"support_weight": 0.6})
    supported = Reading(draft="98 kg [1]", wide=False, refused=False, support=1.0)
    assert reading_confidence(supported, 0.5, context) == 0.6 * 1.0 + 0.4 * 0.5
    unsupported = supported.model_copy(update={"support": 0.0})
    assert reading_confidence(unsupported, 0.5, context) == 0.4 * 0.5
    refused = supported.model_copy(update={"refused": True})
    assert reading_confidence(refused, 0.9, context) == 0.0


def test_focused_excerpts_keep_the_best_sentences_with_their_neighbours(embedder) -> None:
    first = _passage(
        "The SB-40 is a home battery. The SB-40 is installed indoors. It weighs 98 kg without the bracket. "
        "The SB-40 bracket is sold separately. The SB-40 warranty is ten years. Recycling the SB-40 is free.",
        1,
    )
    second = _passage("Error E04 means grid voltage out of range. The unit restarts by itself.", 2)
    scored = score_sentences(WEIGHT, [first, second], embedder, ReadingKnobs())
    (focused,) = focus_passages([first, second], scored, best=1, context=1, span_chars=600)
    assert focused.id == "c1" and focused.label() == first.label()
    assert focused.text == (
        "The SB-40 is installed indoors. It weighs 98 kg without the bracket. The SB-40 bracket is sold separately."
    )
    two = focus_passages([first, second], scored, best=3, context=0, span_chars=600)
    assert all(" … " not in p.text or p.id == "c1" for p in two) and "98 kg" in two[0].text


QUARTER_PAGE = (
    "Three Months Ended December 31, 2022 Compared with Three Months Ended December 31, 2021\n"
    "Productivity and Business Processes\n"
    "Revenue increased $1.1 billion or 7%.\n"
    "• LinkedIn revenue increased $345 million or 10% driven by Talent Solutions.\n"
    "Six Months Ended December 31, 2022 Compared with Six Months Ended December 31, 2021\n"
    "| Segment | Revenue |\n"
    "Revenue increased $2.3 billion or 8%.\n"
)


def test_an_excerpt_shows_the_heading_of_periods_its_page_sets_over_its_paragraph(embedder) -> None:
    # the passage is a chunk that starts below the heading; the page holds it
    passage = _passage(QUARTER_PAGE[QUARTER_PAGE.index("Revenue increased $1.1") :], 1)
    question = "By how much did LinkedIn revenue increase in the three months ended December 31, 2022?"
    scored = score_sentences(question, [passage], embedder, ReadingKnobs())

    def heading_of(sentence: str, _: Evidence) -> str | None:
        found = period_heading_above(QUARTER_PAGE, QUARTER_PAGE.index(sentence), 120)
        return found[1] if found else None

    (focused,) = focus_passages([passage], scored, best=1, context=0, span_chars=600, heading_of=heading_of)
    assert focused.text.startswith("Three Months Ended December 31, 2022 Compared with Three Months Ended")
    assert "LinkedIn revenue increased $345 million" in focused.text
    # a table between a paragraph and the heading above it: none is shown
    assert period_heading_above(QUARTER_PAGE, QUARTER_PAGE.index("Revenue increased $2.3"), 120) is None
    (plain,) = focus_passages([passage], scored, best=1, context=0, span_chars=600)
    assert not plain.text.startswith("Three Months")


def test_two_answers_agree_on_a_shared_figure_or_most_words() -> None:
    assert answers_agree("98 kg [1]", "It weighs 98 kg without the bracket [3].", WEIGHT)
    assert not answers_agree("98 kg [1]", "75 pounds [2]", WEIGHT)
    question = "What does error E04 mean?"
    assert answers_agree("Grid voltage out of range [1]", "The grid voltage is out of range [2].", question)
    assert not answers_agree("Grid voltage out of range [1]", "The battery is overheating [2].", question)
    assert answers_agree("Error E04 [1]", "Grid voltage out of range [2].", question)  # nothing of its own to compare


def test_a_confirming_read_that_agrees_keeps_the_answer(ask) -> None:
    output, model = ask(WEIGHT, "98 kg [1]", "It weighs 98 kg [1].", graph="extract", reading={"confirm_answers": True})
    first, second = (request[0][1].content for request in model.requests)
    assert len(second) > len(first)  # whole passages the second time
    assert (
        not output["abstained"] and "98 kg" in output["answer"] and output["llm_calls"] == 4
    )  # the judge, its second reading


def test_a_confirming_read_that_differs_abstains(ask) -> None:
    output, _ = ask(WEIGHT, "98 kg [1]", "It weighs 120 kg [1].", graph="extract", reading={"confirm_answers": True})
    assert output["abstained"] and "different answers" in output["abstain_reason"]
    (weigh,) = [r for r in output["trace"] if r.stage == "weigh"]
    assert weigh.details["disagrees"] is True


def test_a_confirming_read_that_refuses_leaves_the_focused_answer(ask) -> None:
    refusal = "The documents do not contain the answer."
    output, _ = ask(WEIGHT, "98 kg [1]", refusal, graph="extract", reading={"confirm_answers": True})
    assert not output["abstained"] and "98 kg" in output["answer"] and output["citations"]
    assert [r for r in output["trace"] if r.stage == "read"][-1].summary.endswith("the focused answer stands")


def test_the_first_read_shows_excerpts_and_a_supported_answer_is_verified(ask) -> None:
    output, model = ask(WEIGHT, "98 kg [1]", graph="extract", confidence={"answer_threshold": 0.3})
    (request,) = model.requests
    prompt = request[0][1].content
    assert "98 kg" in prompt and len(prompt) < 3000, prompt
    assert not output["abstained"] and "98 kg" in output["answer"] and output["citations"]
    assert output["llm_calls"] == 3  # the read, the judge, its second reading


def test_an_unsupported_first_read_widens_once_then_abstains(ask) -> None:
    output, model = ask(WEIGHT, "75 pounds [1]", "75 pounds [1]", graph="extract", confidence={"answer_threshold": 0.5})
    first, second = (request[0][1].content for request in model.requests)
    assert len(second) > len(first)  # whole passages the second time
    assert output["abstained"] and "not supported" in output["abstain_reason"]
    assert output["highlights"]


def test_a_refusal_after_widening_abstains(ask) -> None:
    refusal = "The documents do not contain the answer."
    output, model = ask(WEIGHT, refusal, refusal, graph="extract")
    assert output["abstained"] and len(model.requests) == 2
    assert "found no answer" in output["abstain_reason"]
    # nothing was named: the user is told which documents the passages came from, and how to name another
    came_from = next(
        line for line in output["answer"].splitlines() if line.startswith("The passages found came from: ")
    )
    assert "sb40-user-manual.pdf" in came_from
    assert "ask again naming it (`--document NAME`)" in output["answer"]


def test_an_abstention_within_named_documents_only_suggests_ingesting(ask) -> None:
    refusal = "The documents do not contain the answer."
    output, _ = ask(WEIGHT, refusal, refusal, graph="extract", inputs={"documents": ["sb40-user-manual.pdf"]})
    assert output["abstained"] and "The passages found came from: sb40-user-manual.pdf." in output["answer"]
    assert "--document" not in output["answer"] and "pagegraph ingest PATH" in output["answer"]


def test_auto_reads_with_extract_for_small_models(ask) -> None:
    output, _ = ask(WEIGHT, "98 kg [1]", graph="auto", model="local-fast")
    assert output["trace"][1].stage == "auto" and output["trace"][1].ids == ["extract"]
    assert "98 kg" in output["answer"] and not output["abstained"]
    output, _ = ask(WEIGHT, "98 kg [1].", graph="auto", model="ollama:qwen2.5:7b")
    assert output["trace"][1].ids == ["rag"] and output["trace"][3].stage == "route"


def test_auto_searches_a_question_once_and_answers_as_extract_does(ask, monkeypatch) -> None:
    """auto's search for the highlights it shows first is the one extract reads: the hybrid search and the
    highlight stage run once, and the answer, evidence and highlights are those of extract run alone."""
    from pagegraph.retrievers.hybrid import HybridRetriever

    searches = []
    search = HybridRetriever.search_with_relevance

    def counted(self, query, *args, **kwargs):
        searches.append(query)
        return search(self, query, *args, **kwargs)

    monkeypatch.setattr(HybridRetriever, "search_with_relevance", counted)
    alone, _ = ask(WEIGHT, "98 kg [1]", graph="extract", model="local-fast")
    assert searches == [WEIGHT]
    auto, _ = ask(WEIGHT, "98 kg [1]", graph="auto", model="local-fast")
    assert searches == [WEIGHT, WEIGHT], "one search for auto's question, none again in extract"
    for key in ("answer", "citations", "evidence", "highlights", "confidence", "band", "second_reading"):
        assert auto[key] == alone[key], key
    reused = [r.summary for r in auto["trace"] if r.stage in ("retrieve[0]", "highlight")]
    assert "already run" in reused[1] and "already run" in reused[2], reused


def test_auto_handing_a_question_to_rag_searches_it_once_for_the_evidence_shown_first(ask, monkeypatch) -> None:
    """rag's own highlight stage, which searches the question when rag runs alone, takes the search auto ran."""
    from pagegraph.nodes import highlight as highlight_stage

    searched = []
    search = highlight_stage.search_question

    def counted(state, *args, **kwargs):
        searched.append(state["question"])
        return search(state, *args, **kwargs)

    monkeypatch.setattr(highlight_stage, "search_question", counted)
    alone, _ = ask(WEIGHT, "98 kg [1].", graph="rag", model="ollama:qwen2.5:7b")
    assert searched == [WEIGHT]
    auto, _ = ask(WEIGHT, "98 kg [1].", graph="auto", model="ollama:qwen2.5:7b")
    assert auto["trace"][1].ids == ["rag"]
    assert searched == [WEIGHT, WEIGHT], "one search for auto's question, none again in rag's highlight stage"
    shown = [r.summary for r in auto["trace"] if r.stage == "highlight"]
    assert len(shown) == 2 and "already run" in shown[1], shown
    assert auto["highlights"] == alone["highlights"] and auto["answer"] == alone["answer"]


def test_a_handed_over_search_of_another_question_documents_filter_or_route_is_not_reused() -> None:
    from pagegraph.nodes.retrieve import handed_search
    from pagegraph.state.answering import Presearch, RoutedDocument, RouteDecision
    from pagegraph.state.filters import RetrievalFilter

    state = {"question": WEIGHT, "documents": [], "filters": None, "route": None}
    found = Presearch(question=WEIGHT, documents=[], filters=None, retrieved=[], relevance=0.5, highlights=[])
    assert handed_search({**state, "presearch": found}) is found
    assert handed_search(state) is None
    assert handed_search({**state, "question": "Who makes it?", "presearch": found}) is None
    assert handed_search({**state, "documents": ["sb40-user-manual.pdf"], "presearch": found}) is None
    assert handed_search({**state, "filters": RetrievalFilter(projects=["x"]), "presearch": found}) is None
    routed = RouteDecision(documents=[RoutedDocument(name="sb40-user-manual.pdf")], method="ranking")
    assert handed_search({**state, "route": routed, "presearch": found}) is None


def test_a_failing_read_falls_back_to_basic(ask) -> None:
    output, _ = ask(WEIGHT, RuntimeError("model crashed"), citing("98 kg", "98 kg [{n}]."), graph="extract")
    assert any(r.stage == "read" and r.error == "RuntimeError: model crashed" for r in output["trace"])
    assert [r.stage for r in output["trace"]][-4:] == ["gate", "answer", "judge", "verify"]
    assert not output["abstained"] and "98 kg" in output["answer"]


def test_the_terminal_leaves_only_the_final_read_on_screen(sample_index, cache_dir, embedder) -> None:
    from pagegraph import build_graph
    from pagegraph.cli.answer_view import StreamedAnswer
    from pagegraph.cli.ask import _run_question
    from pagegraph.config import Settings
    from pagegraph.services import Services
    from pagegraph.store.index import open_index
    from tests.fakes import ScriptedChatModel
    from tests.terminal import screen_of, terminal_console

    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    model = ScriptedChatModel.replying("75 pounds [1]", "It weighs 98 kg.")  # uncited: judged where it is found
    compiled = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    console = terminal_console()
    view = StreamedAnswer(console)
    try:
        output = _run_question(compiled, {"question": WEIGHT}, Context(), False, None, view)
    finally:
        index.close()
    view.finish(output)
    written, shown = console.file.getvalue(), screen_of(console)
    assert "75 pounds" in written and "75 pounds" not in shown, "the first read was shown, then cleared"
    order = [shown.index(part) for part in ("Evidence", "· writing", "answering again", "It weighs 98 kg", "Sources")]
    assert order == sorted(order), shown
    assert not output["abstained"] and "98 kg" in output["answer"]
