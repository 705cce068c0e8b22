"""Pages a question points at, searched first: the pages it names (by physical number, PDF label or printed
number, figure caption) and the report's primary statements a question asks for (a financial metric, a statement
or a line item named)."""

from __future__ import annotations

from pathlib import Path

from pagegraph import build_graph
from pagegraph.config import Context, PageRules, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.hybrid import FusedSearch, HybridRetriever
from pagegraph.retrievers.named_pages import (
    LAST,
    PageReferences,
    absent_references,
    named_pages,
    page_references,
)
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.retrievers.statements import asked_statement_pages, asks_for_metric, statement_pages
from pagegraph.services import Services
from pagegraph.state.documents import Page
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import open_index
from pagegraph.store.page_numbers import printed_numbers, printed_offset
from tests.fakes import ScriptedChatModel
from tests.pdf_factory import page_labelled_pdf, text_pdf

RULES = PageRules()

TOPICS = ["solar yield", "battery health", "grid tariffs", "installer training", "warranty claims", "spare parts"]


def numbers(question: str) -> list[int]:
    return page_references(question, RULES).numbers


def test_the_pages_a_question_names() -> None:
    assert numbers("What is the central component of the figure at Page 17?") == [17]
    assert numbers("What models are introduced on pages 10 and 11?") == [10, 11]
    assert numbers("How many figures are provided in Pages 51-53?") == [51, 52, 53]
    assert numbers("the people in page 6, the buildings in page 14 and the cars on p. 3") == [6, 14, 3]
    assert numbers("What does slide 4 say? And slides nine to ten?") == [4, 9, 10]
    assert numbers("How many people appear on pages three and four?") == [3, 4]
    assert numbers("What is on the first page, the second slide and the last page?") == [1, 2, LAST]
    assert numbers("What color is the car on the cover? And on the back cover?") == [1, LAST]
    assert numbers("Who signed the title page?") == numbers("What is on the front page?") == [1]
    assert numbers("Which pages 1 to 400 mention it?") == [1, 400]  # too long a range: its ends only
    assert not page_references("How many pages does the manual have? Which topics does it cover?", RULES)
    named = page_references("Which steps in Figure 1 map to Fig. 10 and to Table 2?", RULES)
    assert named.captions == [("figure", 1), ("figure", 10), ("table", 2)] and not named.numbers


def numbered(printed_from: int, count: int, front: int) -> list[Page]:
    """`front` unnumbered pages, then `count` pages printing their number on the first line."""
    pages = [Page(number=n, text=f"Cover and contents\nPart {n}") for n in range(1, front + 1)]
    return pages + [
        Page(number=front + i + 1, text=f"Annual review {printed_from + i}\nText of the page.\nMore text.")
        for i in range(count)
    ]


def test_a_named_page_is_the_physical_page_and_the_page_printed_with_that_number() -> None:
    pages = numbered(1, 10, front=3)
    assert printed_offset(pages, RULES.printed_offset_support) == 3
    assert named_pages(pages, PageReferences([4]), RULES) == [4, 7]
    assert (
        named_pages(pages, PageReferences([11]), RULES) == [11]
        and named_pages(pages, PageReferences([14]), RULES) == []
    )
    assert named_pages(pages, PageReferences([LAST]), RULES) == [13]
    labelled = [Page(number=n, label=label, text="") for n, label in enumerate(["i", "ii", "1", "2", "3"], 1)]
    assert named_pages(labelled, PageReferences([1, 3]), RULES) == [1, 3, 5]
    assert (
        printed_offset([Page(number=n, text=f"Line {n * 7}") for n in range(1, 9)], RULES.printed_offset_support)
        is None
    )  # no agreement


def test_a_named_figure_is_the_page_of_its_caption() -> None:
    pages = [
        Page(number=1, text="As Figure 2 shows, yields rose."),
        Page(number=2, text="Yields by month\nFigure 2: Monthly yield.\nTable 2 Tariffs"),
        Page(number=3, text="Fig. 3. Battery health"),
    ]
    assert named_pages(pages, PageReferences(captions=[("figure", 2), ("figure", 3), ("table", 2)]), RULES) == [2, 3]
    assert named_pages(pages, PageReferences(captions=[("table", 9)]), RULES) == []


def test_pages_figures_and_tables_a_document_does_not_have() -> None:
    pages = numbered(1, 10, front=3)  # 13 pages, printed 1-10 after three unnumbered ones
    assert absent_references(pages, PageReferences([4, 13, 14, 40, LAST]), RULES, paged=True) == ["page 14", "page 40"]
    assert absent_references(pages, PageReferences([40]), RULES, paged=False) == []  # a writer's page breaks
    assert absent_references([], PageReferences([LAST]), RULES, paged=True) == ["the last page"]
    captioned = [
        Page(number=1, text="As Figure 2 shows, yields rose (see also Fig. 3)."),
        Page(number=2, text="Figure 2: Monthly yield.\nTable 1 Tariffs\nFig. 5b. Storage"),
    ]
    references = PageReferences(captions=[("figure", 3), ("figure", 5), ("figure", 7), ("table", 1), ("table", 2)])
    assert absent_references(captioned, references, RULES, paged=True) == ["Figure 7", "Table 2"]
    # a document that numbers no figures may show them as pictures: it is not judged
    assert absent_references(pages, PageReferences(captions=[("figure", 7)]), RULES, paged=True) == []


def test_the_named_page_leads_the_hits(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    bodies = [("Cover", "Annual review of the SB-40 fleet."), ("Contents", "Topics of this review, one a page.")]
    bodies += [
        (f"Annual review {i}", f"This page covers {topic} across the fleet.") for i, topic in enumerate(TOPICS, 1)
    ]
    pdf = text_pdf(tmp_path / "review.pdf", bodies)
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([pdf]).failed
        flt = RetrievalFilter(documents=["review.pdf"])

        def first_pages(question: str, **context: object) -> list[int]:
            search = HybridRetriever.for_context(index, Context(retrieval={"window": 0, **context})).search
            return [index.catalog.location(h.chunk_id)[1] for h in search(question, flt)][:2]

        # the fourth page of the file, then the page printed "4" ("warranty claims")
        assert first_pages("What does the table on page 4 show?") == [4, 6]
        assert first_pages("What does the table on page 4 show?", named_pages=False) != [4, 6]
        assert first_pages("What does the table show about spare parts?")[0] == 8

        # across a library, the named page is looked for in the router's first document, not the best hit's
        other = text_pdf(tmp_path / "tariffs.pdf", [("Tariffs", "What the table on page 4 shows: grid tariffs.")])
        assert not Ingestor(index).run([other]).failed
        retriever = HybridRetriever.for_context(index, Context(retrieval={"window": 0}))
        question = "What does the table on page 4 show?"
        best = retriever.fused(question)[0]
        assert index.catalog.location(best.chunk_id)[0] == "tariffs.pdf"
        routed = FusedSearch([best], 0.5, RetrievalFilter(), first_routed="review.pdf")
        assert [index.catalog.location(h.chunk_id)[:2] for h in retriever._pages_first(question, routed, None)][:2] == [
            ("review.pdf", 4),
            ("review.pdf", 6),
        ]


def statement_text(title: str) -> str:
    rows = "\n".join(f"Line item {i} {i * 1000:,} {i * 900:,}" for i in range(1, 25))
    return f"ACME INC.\nCONSOLIDATED {title}\n(In millions)\n{rows}"


def statements_at(pages: list[Page], rules: PageRules = RULES) -> list[int]:
    """The statements' first pages: balance sheet, income statement, cash flows."""
    return [page.number for page in statement_pages(pages, rules).values()]


def statement(title: str, number: int) -> Page:
    return Page(number=number, text=statement_text(title))


def test_a_financial_metric_question_gets_the_primary_statements() -> None:
    assert asks_for_metric("What is the FY2021 inventory turnover ratio for Acme?")
    assert asks_for_metric("What was the gross margin?") and asks_for_metric("What is the return on equity?")
    assert not asks_for_metric("Who audits the company?")
    assert asks_for_metric("What is cash_ratio in FY2021?") and asks_for_metric("What is Acme's debt_to_equity?")
    assert asks_for_metric("What is Interest to Average Total Debt?") and asks_for_metric(
        "cash flow to current liabilities"
    )
    assert not asks_for_metric("How much did Acme pay to reduce its debt?") and not asks_for_metric("Who sold to Acme?")
    assert not asks_for_metric("How did Acme respond to sales falling?") and not asks_for_metric(
        "Acme's exposure to debt"
    )
    index_page = Page(number=2, text="Index to Consolidated Financial Statements\nConsolidated Balance Sheets 4")
    report = [Page(number=1, text="Annual report"), index_page, statement("STATEMENTS OF OPERATIONS", 3)]
    report += [statement("BALANCE SHEETS", 4), statement("STATEMENTS OF CASH FLOWS", 5), statement("BALANCE SHEETS", 6)]
    assert statements_at(report) == [4, 3, 5]  # balance sheet, income statement, cash flows: each first page
    assert statements_at(report[:3]) == []  # one statement alone: not a financial report


def test_a_statement_page_is_titled_with_it_not_an_index_or_a_sentence_naming_it() -> None:
    figures = " ".join(f"{i * 100:,}" for i in range(1, 45))
    contents = "INDEX\nPage\nc) Balance Sheets 5\n" + figures  # a title line, under the index's heading
    mention = (
        "Research costs are charged to operations and are shown on a separate line of the\n"
        "Consolidated Statements of Cash Flows and in the notes that follow, by segment and by year.\n" + figures
    )
    report = [Page(number=1, text=contents), Page(number=2, text=mention)]
    report += [Page(number=3, text=f"INCOME STATEMENTS\n{figures}"), Page(number=4, text=f"BALANCE SHEETS\n{figures}")]
    report += [Page(number=5, text=f"Cash flow statement for the year ended June 30, 2024\n{figures}")]
    assert statements_at(report) == [4, 3, 5]
    assert statements_at(report, RULES.model_copy(update={"statement_title_words": 20})) == [4, 3, 2]
    # indexes whose entries end with the page they point at; the balance sheet's entry alone is short enough for a title
    lettered = "Item 8. Financial Statements\nConsolidated Balance Sheets at June 30, 2024 and 2023 F-4\n"
    lettered += "Consolidated Statements of Cash Flows for the Years Ended June 30, 2024, 2023 and 2022 and notes F-8\n"
    dotted = "Balance sheets . . . . . . . 45\n"
    indexes = [Page(number=1, text=lettered + figures), Page(number=2, text=dotted + figures)]
    assert statements_at(indexes + report[2:]) == [4, 3, 5]


def test_a_question_naming_a_statement_or_one_of_its_line_items_gets_that_statement() -> None:
    filler = "\n".join(f"Line item {i} {i * 1000:,} {i * 900:,}" for i in range(1, 20))

    def page(number: int, title: str, rows: str) -> Page:
        return Page(number=number, text=f"ACME INC.\nCONSOLIDATED {title}\n(In millions)\n{rows}\n{filler}")

    balance = "| | June 30, 2024 | June 30, 2023 |\n| Goodwill | 1,250 | 1,180 |\n| Total assets | 15,400 | 14,900 |"
    income = "Revenue 42,100 40,700\nNet earnings 1,310 1,205\nTotal 1 2"
    cash = "Net earnings 1,310 1,205\nCommon stock, $0.10 par value: repurchased 880 1,020"
    report = [Page(number=1, text="Acme annual report: revenue and goodwill grew.")]
    report += [page(2, "BALANCE SHEETS", balance), page(3, "STATEMENTS OF EARNINGS", income)]
    report += [page(4, "STATEMENTS OF CASH FLOWS", cash)]

    def asked(question: str, pages: list[Page] = report) -> list[int]:
        return asked_statement_pages(question, statement_pages(pages, RULES))

    assert asked("What goodwill did Acme have at June 30, 2024?") == [2]  # a row; the dates head columns
    assert asked("What were Acme's revenues in fiscal 2023?") == [3]  # plural or singular
    assert asked("What were Acme's net earnings in 2023?") == [3, 4]  # a row of both: each page
    assert asked("What goodwill and total assets did Acme report?") == [2]  # the row named in most words
    assert asked("How much common stock did Acme buy back?") == [4]  # the label ends where its details start
    assert asked("According to the cash flow statement, what did Acme spend?") == [4]  # a statement named
    assert asked("From its balance sheet, what were Acme's revenues?") == [2, 3]  # named first, then the row
    assert asked("What is Acme's inventory turnover ratio?") == [2, 3, 4]  # a metric: every statement
    assert asked("What were Acme's earnings?") == []  # "Net earnings" is not named whole
    assert asked("What was the total in January?") == [] and asked("Who audits Acme?") == []
    assert asked("What goodwill did Acme have?", report[:2]) == []  # one statement alone: not a financial report


def test_statements_lead_a_metric_question_within_the_named_report(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    bodies = [("Acme annual report", "Our business sells tools and services."), ("Risk factors", "Prices may rise.")]
    bodies += [(f"CONSOLIDATED {title}", statement_text(title)) for title in ("BALANCE SHEETS", "STATEMENTS OF INCOME")]
    bodies += [("Outlook", "We expect the inventory turnover ratio to improve as tools sell faster.")]
    pdf = text_pdf(tmp_path / "acme-10k.pdf", bodies)
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([pdf]).failed
        question = "What is the inventory turnover ratio of Acme?"

        def first_pages(flt: RetrievalFilter | None, asked: str = question, **context: object) -> list[int]:
            # three hits, fewer than the report's pages: routing can settle on the report alone (a library of
            # documents this short is routed only when told to)
            knobs = {"window": 0, "max_chunks": 3, "route_chunks_above": 0, **context}
            search = HybridRetriever.for_context(index, Context(retrieval=knobs)).search
            return [index.catalog.location(h.chunk_id)[1] for h in search(asked, flt)][:2]

        assert first_pages(RetrievalFilter(documents=["acme-10k.pdf"])) == [3, 4]
        assert first_pages(RetrievalFilter(documents=["acme-10k.pdf"]), statement_pages=False)[0] == 5
        outlook = "What does the income statement say about tools selling faster?"  # names a statement
        assert first_pages(RetrievalFilter(documents=["acme-10k.pdf"]), outlook)[0] == 4
        assert first_pages(RetrievalFilter(documents=["acme-10k.pdf"]), outlook, statement_pages=False)[0] == 5
        assert first_pages(None) == [3, 4]  # across the library: in the places of the guessed report's pages, all
        line_item = "What did Outlook say of line item 7?"  # a row of both statements, and another page's heading
        assert first_pages(RetrievalFilter(documents=["acme-10k.pdf"]), line_item, statement_pages=False)[0] == 5
        assert first_pages(None, line_item) == [3, 4]  # a line item: its statements, in the best hit's document
        # a search reads a report's statement pages from the store once per open index, not each time
        reads: list[int] = []
        acme = index.documents()[0].id
        assert index.read_from_pages(acme, "count", lambda pages: reads.append(len(pages)) or len(pages)) == 5
        assert index.read_from_pages(acme, "count", lambda pages: reads.append(len(pages)) or len(pages)) == 5
        assert reads == [5]

        others = [text_pdf(tmp_path / f"{topic}.pdf", [(topic, f"A guide to {topic}.")]) for topic in TOPICS[:3]]
        assert not Ingestor(index).run(others).failed
        ranked = HybridRetriever.for_context(index, Context(retrieval={"route_documents": 2})).rank_documents(question)
        assert ranked[0].name == "acme-10k.pdf" and ranked[1].score < 0.6 * ranked[0].score
        # the router clearly leads with the report: searched as if the question had named it
        assert first_pages(None, route_documents=2) == [3, 4]
        # routed with another: the report is a guess, and a metric's statements take only its own pages' places
        retriever = HybridRetriever.for_context(index, Context(retrieval={"window": 0}))
        guide = retriever.fused("A guide", RetrievalFilter(documents=["solar yield.pdf"]))[0]
        outlook_page = retriever.fused("tools sell faster", RetrievalFilter(documents=["acme-10k.pdf"]))[0]
        assert index.catalog.location(outlook_page.chunk_id)[:2] == ("acme-10k.pdf", 5)

        def pages_first(asked: str, hits: list[ScoredChunk]) -> list[tuple[str, int]]:
            guessed = FusedSearch(hits, 0.5, RetrievalFilter(), first_routed="acme-10k.pdf")
            return [index.catalog.location(h.chunk_id)[:2] for h in retriever._pages_first(asked, guessed, None)]

        report = [("acme-10k.pdf", page) for page in (3, 4, 5)]
        assert pages_first(question, [guide, outlook_page])[:4] == [("solar yield.pdf", 1), *report]
        assert pages_first(question, [outlook_page, guide])[:4] == [report[0], ("solar yield.pdf", 1), *report[1:]]
        # a line item named leads: one page the question asks for by name
        assert pages_first(line_item, [guide, outlook_page])[:3] == [*report[:2], ("solar yield.pdf", 1)]


def test_printed_numbers_are_the_labels_else_the_printed_offset() -> None:
    assert printed_numbers(numbered(1, 4, front=2), RULES.printed_offset_support) == {3: "1", 4: "2", 5: "3", 6: "4"}
    labelled = [Page(number=n, label=label, text="") for n, label in enumerate(["i", "ii", "1", "4"], 1)]
    assert printed_numbers(labelled, RULES.printed_offset_support) == {1: "i", 2: "ii", 3: "1"}
    assert printed_numbers(numbered(1, 4, front=0), RULES.printed_offset_support) == {}, "printed as placed"


def test_a_page_has_a_printed_number_only_where_it_is_its_own() -> None:
    # an earnings release: four pages numbered as placed, then an appendix printed "A-1" ... "A-4"
    release = [Page(number=n, text=f"Results\nText of the page.\n{n}") for n in range(1, 5)]
    release += [Page(number=4 + n, text=f"Appendix table\nNet revenue 1,234\nA-{n}") for n in range(1, 5)]
    assert printed_numbers(release, RULES.printed_offset_support) == {5: "A-1", 6: "A-2", 7: "A-3", 8: "A-4"}
    # a page whose number is lost (a full-page table) between two numbered pages keeps the sequence's; the pages
    # after the last numbered one print none and get none
    pages = numbered(1, 6, front=2)
    pages[4] = Page(number=5, text="A full-page table\n| 1 | 2 |")
    pages += [Page(number=9, text="Exhibit list\nNo number here.")]
    assert printed_numbers(pages, RULES.printed_offset_support) == {3: "1", 4: "2", 5: "3", 6: "4", 7: "5", 8: "6"}


def test_a_page_labelled_pdf_cites_the_printed_number_and_keeps_the_pdf_page(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    (tmp_path / "docs").mkdir()
    front = [("Cover", "Pump manual, edition 3."), ("Contents", "Operation, maintenance, parts.")]
    body = [("Operation", "The pump delivers 42 litres per minute at full speed."), ("Parts", "Seals and valves.")]
    page_labelled_pdf(tmp_path / "docs" / "pump.pdf", front + body, front=2)
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([tmp_path / "docs"]).failed
        model = ScriptedChatModel.replying("The pump delivers 42 litres per minute [1].", judge_yes=0.99)
        graph = build_graph("extract", services=Services(settings, chat_model=model, index=index))
        output = graph.invoke({"question": "How many litres per minute does the pump deliver?"}, context=Context())
    (stating,) = [h for h in output["highlights"] if "42 litres per minute" in h.sentence]
    assert stating.page == 3 and stating.label == "[pump.pdf, Operation, p. 1]", stating
    assert any(h.label.endswith("p. i]") for h in output["highlights"]), "the cover is printed i"
    (citation,) = output["citations"]  # the passage (the page before and after in its window), printed ii–2
    assert citation.label == "[pump.pdf, Operation, p. ii–2]" and citation.label in output["answer"]
    assert (citation.start_page, citation.end_page) == (2, 4), "the PDF's pages, for the page view and evaluation"
    quote = citation.quote  # the sentence stating the answer's value: the page view opens the PDF's third page
    assert quote.page == 3 and quote.label == "[pump.pdf, Operation, p. 1]"


def test_an_appendix_page_printed_a_2_is_cited_as_printed_beside_its_file_page(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    (tmp_path / "docs").mkdir()
    release = [(f"Results {n}", f"Quarterly commentary, part {n}.\n{n}") for n in range(1, 5)]
    appendix = [
        ("Reconciliation", "Net revenue by division.\nA-1"),
        ("Division results", "Frito-Lay North America net revenue was 6,254 million dollars.\nA-2"),
        ("Notes", "Definitions of the measures.\nA-3"),
    ]
    text_pdf(tmp_path / "docs" / "release.pdf", release + appendix)
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([tmp_path / "docs"]).failed
        model = ScriptedChatModel.replying("Its net revenue was 6,254 million dollars [1].", judge_yes=0.99)
        graph = build_graph("extract", services=Services(settings, chat_model=model, index=index))
        output = graph.invoke({"question": "What was Frito-Lay North America net revenue?"}, context=Context())
    (stating,) = [h for h in output["highlights"] if "6,254" in h.sentence]
    assert stating.page == 6 and stating.label.endswith("p. A-2]"), stating
    assert not any(h.label.endswith("p. 2]") and h.page != 2 for h in output["highlights"]), "no label names page 2"
