"""Citation resolution, document-name matching and document summaries."""

from __future__ import annotations

from langchain_core.messages import HumanMessage

from pagegraph.checks.citations import attribute, is_refusal, resolve_citations
from pagegraph.config import Context
from pagegraph.ingest.summaries import ExtractiveSummarizer, ModelSummarizer, SummarySource
from pagegraph.nodes.common import match_document_names
from pagegraph.prompts.answer import REFUSAL
from pagegraph.state.answering import Evidence
from pagegraph.state.documents import Page, SourceType, TreeNode
from tests.fakes import ScriptedChatModel


def evidence(source: str, pages: tuple[int, int], text: str, section: str = "Specs") -> Evidence:
    return Evidence(
        id=f"{source}:{pages[0]}",
        chunk_ids=[f"{source}:{pages[0]}"],
        source=source,
        section=section,
        start_page=pages[0],
        end_page=pages[1],
        text=text,
        score=1.0,
    )


EVIDENCE = [
    evidence("manual.pdf", (6, 6), "Weight 98 kg. Usable capacity 10.2 kWh."),
    evidence("manual.pdf", (8, 9), "E04 Grid voltage out of range: wait 10 minutes.", "Troubleshooting"),
    evidence("call.vtt", (1, 1), "Dana: the unit pauses to protect itself.", "call"),
]


def test_numbers_ranges_and_labels_resolve_to_evidence_labels() -> None:
    text, cited, invalid = resolve_citations(
        "It weighs 98 kg [1]. E04 [2, 3]. Both [1-2]. See [manual.pdf, p. 8].", EVIDENCE
    )
    assert cited == [1, 2, 3] and invalid == 0
    assert text.startswith("It weighs 98 kg [manual.pdf, Specs, p. 6].")
    assert "[manual.pdf, Troubleshooting, p. 8–9] [call.vtt, p. 1]" in text
    assert text.endswith("See [manual.pdf, Troubleshooting, p. 8–9].")


def test_a_passage_cited_twice_in_a_row_is_printed_once() -> None:
    text, cited, _ = resolve_citations(
        "It weighs 98 kg [1][manual.pdf, p. 6]. E04 [2] [1] [2]. Pauses [3]. Again [3].", EVIDENCE
    )
    assert cited == [1, 2, 3]
    assert text == (
        "It weighs 98 kg [manual.pdf, Specs, p. 6]. E04 [manual.pdf, Troubleshooting, p. 8–9] "
        "[manual.pdf, Specs, p. 6]. Pauses [call.vtt, p. 1]. Again [call.vtt, p. 1]."
    )


def test_citations_of_missing_evidence_are_removed_and_counted() -> None:
    text, cited, invalid = resolve_citations("98 kg [4]. Also [0]. From [other.pdf, p. 2]. Note [sic].", EVIDENCE)
    assert cited == [] and invalid == 3
    assert text == "98 kg. Also. From. Note [sic]."


def test_attribution_labels_each_run_of_sentences_once() -> None:
    context = Context()
    thresholds = (context.reading.attribution_min_tokens, context.reading.attribution_min_overlap)
    text, attributed = attribute(
        "The weight is 98 kg with 10.2 kWh usable capacity. Usable capacity is 10.2 kWh. Nice.", EVIDENCE, *thresholds
    )
    assert attributed == [1]
    assert (
        text
        == "The weight is 98 kg with 10.2 kWh usable capacity. Usable capacity is 10.2 kWh [manual.pdf, Specs, p. 6]. Nice."
    )
    unrelated, none = attribute("Completely different words appear here.", EVIDENCE, *thresholds)
    strict, nothing = attribute("Usable capacity is 10.2 kWh.", EVIDENCE, 10, 0.3)
    assert nothing == [] and "[" not in strict, "sentences shorter than the Context's minimum are not attributed"
    assert none == [] and unrelated == "Completely different words appear here."


def test_refusal_needs_the_sentence_and_no_citation() -> None:
    assert is_refusal(REFUSAL, [])
    assert is_refusal("", [])
    assert is_refusal(f"[sb40-user-manual.pdf, 8 Warranty, p. 8–9] {REFUSAL}", [1]), "a cited refusal is a refusal"
    assert not is_refusal(REFUSAL + " But page 6 says 98 kg", [1])
    assert not is_refusal("It weighs 98 kg.", [])


def test_document_names_match_exactly_then_loosely() -> None:
    known = ["Annual-Report-2023.pdf", "manual.pdf", "manual-v2.pdf", "call.vtt"]
    assert match_document_names(["manual.pdf"], known) == ["manual.pdf"]
    assert match_document_names(["ANNUAL-REPORT-2023.PDF", "annual-report-2023"], known) == ["Annual-Report-2023.pdf"]
    assert match_document_names(["`call.vtt`", "report 2023"], known) == ["call.vtt"]
    assert match_document_names(["v2"], known) == []
    assert match_document_names(["ual-v2"], known) == ["manual-v2.pdf"]
    assert match_document_names(["manual-v"], known) == [], "ambiguous: manual.pdf and manual-v2.pdf"
    assert match_document_names(["nothing.pdf"], known) == []


SOURCE = SummarySource.from_parts(
    "manual.pdf",
    "SB-40 Manual",
    SourceType.PDF,
    [
        Page(
            number=1,
            text="# ignored heading\nThe SB-40 is a home battery for solar homes. It stores up to ten kilowatt hours.",
        )
    ],
    [
        TreeNode(
            id="r",
            document_id="d",
            parent_id=None,
            position=0,
            level=0,
            title="SB-40 Manual",
            title_path=[],
            start_page=1,
            end_page=1,
            start_offset=0,
            end_offset=1,
        ),
        TreeNode(
            id="a",
            document_id="d",
            parent_id="r",
            position=1,
            level=1,
            title="1 Safety",
            title_path=[],
            start_page=1,
            end_page=1,
            start_offset=0,
            end_offset=1,
        ),
        TreeNode(
            id="b",
            document_id="d",
            parent_id="r",
            position=2,
            level=1,
            title="2 Installation",
            title_path=[],
            start_page=1,
            end_page=1,
            start_offset=0,
            end_offset=1,
        ),
        TreeNode(
            id="c",
            document_id="d",
            parent_id="b",
            position=3,
            level=2,
            title="2.1 Site",
            title_path=[],
            start_page=1,
            end_page=1,
            start_offset=0,
            end_offset=1,
        ),
    ],
)


def test_extractive_summary_from_outline_and_first_sentences() -> None:
    summary = ExtractiveSummarizer().summarize(SOURCE)
    assert summary.method == "extractive" and summary.document_type == "PDF document"
    assert summary.key_topics == ["Safety", "Installation"]
    assert summary.summary.startswith("SB-40 Manual. The SB-40 is a home battery")
    assert summary.use_for == "questions about Safety, Installation"


def test_a_filings_summary_quotes_its_body_not_its_cover_or_contents() -> None:
    cover = (
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
        "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
        "Indicate by check mark whether the registrant is a well-known seasoned issuer, as defined in Rule 405.\n"
        "Indicate by check mark whether the registrant is not required to file reports pursuant to Section 13.\n"
        "Indicate by check mark whether the registrant has filed all reports required to be filed by Section 13.\n"
        "For more information contact investor relations at ir@solarbattery.example or www.solarbattery.example.\n"
    )
    contents = "Table of Contents\nItem 1. Business .......... 3\nRisk Factors and Uncertainties 12 Item 2.\n"
    body = [
        "Item 1. Business\nWe design and sell home batteries that store solar power for households. Our batteries "
        "keep homes running through outages.",
        "Risk Factors\nDemand for home batteries depends on solar installations in the households we serve.",
        "Our batteries are sold through installers of solar power systems. Installers also service the batteries.",
        "Net sales of batteries grew as more households added solar power. Note: amounts in millions.",
    ]
    pages = [Page(number=n, text=text) for n, text in enumerate([cover, contents, *body], 1)]
    source = SummarySource.from_parts("solar-10k.pdf", "Solar Battery 10-K", SourceType.PDF, pages, [])
    stored = ExtractiveSummarizer().summarize(source)
    summary = stored.summary
    assert "SECURITIES AND EXCHANGE COMMISSION" in stored.opening, "the router still reads what names the filing"
    assert summary.startswith("Solar Battery 10-K. We design and sell home batteries that store solar power"), summary
    assert not any(form in summary for form in ("SECURITIES", "check mark", "Contents", "contact", "Note:")), summary


def test_extractive_summary_of_a_chinese_document_has_sentences_and_topics() -> None:
    text = "渡轮每天清晨六点从北港出发，船票在码头的售票处购买。渡轮在晚上八点返回北港。港口有两个码头。"
    source = SummarySource(name="ferry.md", title="港口渡轮", source_type=SourceType.MARKDOWN, outline=[], text=text)
    summary = ExtractiveSummarizer().summarize(source)
    assert (
        summary.summary.startswith("港口渡轮. 渡轮每天清晨六点从北港出发")
        and "渡轮在晚上八点返回北港。" in summary.summary
    )
    assert {"渡轮", "北港", "码头"} <= set(summary.key_topics), "its most frequent character pairs"


def test_model_summary_and_its_fallback() -> None:
    model = ScriptedChatModel.replying(
        '{"document_type": "user manual", "summary": "How to install and run the SB-40.", '
        '"key_topics": ["safety", "installation"], "use_for": "installation questions"}'
    )
    summary = ModelSummarizer(model).summarize(SOURCE)
    assert (summary.method, summary.document_type, summary.key_topics) == (
        "model",
        "user manual",
        ["safety", "installation"],
    )
    assert summary.model == "ScriptedChatModel"
    prompt = model.requests[0][0][-1]
    assert isinstance(prompt, HumanMessage) and "1 Safety" in prompt.content and "home battery" in prompt.content
    broken = ScriptedChatModel.replying("no idea", "still no idea")
    assert ModelSummarizer(broken).summarize(SOURCE).method == "extractive"


def test_page_groups_and_bare_numbers_are_no_topics() -> None:
    outline = ["Pages 1–8", "  Page 1", "  Page 2", "Pages 9–16", "4.", "10."]
    text = "The heat pump warms water for the house. The heat pump runs on electricity. Service the pump yearly."
    source = SummarySource(name="pump.pdf", title="Pump", source_type=SourceType.PDF, outline=outline, text=text)
    summary = ExtractiveSummarizer().summarize(source)
    assert not any("Page" in topic or topic.strip(".").isdigit() for topic in summary.key_topics), summary
    assert "pump" in summary.key_topics and "Pages" not in summary.use_for
