from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from fpdf import FPDF

from pagegraph.ingest.chunking import chunk_document
from pagegraph.ingest.document_dates import document_date
from pagegraph.ingest.filing_cover import filing_cover
from pagegraph.ingest.loaders import load_document
from pagegraph.ingest.prepare import prepare_document
from pagegraph.ingest.tree import build_tree, section_outline
from pagegraph.state.documents import DocumentTags, LoadedDocument, OutlineEntry, Page, SourceType
from pagegraph.store.chunk_text import chunk_header, document_label, search_text
from pagegraph.store.manifest import ChunkingParams, IndexParams

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def prose(n_sentences: int, seed: int = 0) -> str:
    sentences = []
    for i in range(n_sentences):
        words = [WORDS[(seed + i * 7 + j) % len(WORDS)] for j in range(12)]
        sentences.append(" ".join(words).capitalize() + ".")
    paragraphs = [" ".join(sentences[i : i + 5]) for i in range(0, len(sentences), 5)]
    return "\n\n".join(paragraphs)


def make_doc(pages: list[str], outline: list[OutlineEntry] | None = None, title: str = "Doc") -> LoadedDocument:
    return LoadedDocument(
        path="/tmp/doc.pdf",
        name="doc.pdf",
        source_type=SourceType.PDF,
        title=title,
        pages=[Page(number=i + 1, text=t) for i, t in enumerate(pages)],
        outline=outline or [],
        outline_source="bookmarks" if outline else "none",
    )


def chunks_of(doc: LoadedDocument, **params):
    entries, _ = section_outline(doc)
    nodes = build_tree(doc, "d", entries)
    return nodes, chunk_document(doc, nodes, ChunkingParams(**params), DocumentTags(), 1)


def test_tree_nesting_spans_and_pages() -> None:
    pages = ["Intro text\n\n1 Setup\nsetup text", "1.1 Power\npower text\n\n2 Use\nuse text"]
    starts = [0, len(pages[0]) + 2]
    outline = [
        OutlineEntry(title="1 Setup", level=1, offset=pages[0].index("1 Setup")),
        OutlineEntry(title="1.1 Power", level=2, offset=starts[1]),
        OutlineEntry(title="2 Use", level=1, offset=starts[1] + pages[1].index("2 Use")),
    ]
    nodes = build_tree(make_doc(pages, outline), "d", outline)
    by_title = {node.title: node for node in nodes}
    root = nodes[0]
    assert root.level == 0 and root.children_ids == [by_title["1 Setup"].id, by_title["2 Use"].id]
    setup, power, use = by_title["1 Setup"], by_title["1.1 Power"], by_title["2 Use"]
    assert power.parent_id == setup.id and power.title_path == ["Doc", "1 Setup", "1.1 Power"]
    assert (setup.start_page, setup.end_page) == (1, 2)
    assert (power.start_page, power.end_page, use.start_page) == (2, 2, 2)
    assert setup.end_offset == use.start_offset
    assert power.text.startswith("1.1 Power") and power.text.endswith("power text")


def test_fallback_detects_numbered_headings() -> None:
    text = "1 Introduction\nsome words here\n\n2 Methods\nmore words\n\n2.1 Data Sources\ndetails\n\n3 Results\nnumbers"
    doc = make_doc([text])
    entries, source = section_outline(doc)
    assert source == "detected"
    assert [(e.title, e.level) for e in entries] == [
        ("1 Introduction", 1),
        ("2 Methods", 1),
        ("2.1 Data Sources", 2),
        ("3 Results", 1),
    ]


def test_a_pdf_without_bookmarks_gets_sections_from_its_larger_type_and_topic_lines(tmp_path: Path) -> None:
    pdf = FPDF()
    body = "The plan covers the service when a licensed provider gives it. " * 6
    for chapter, topics in (("Covered services", ["Massage Therapy", "Acupuncture"]), ("Claims", ["Appeals"])):
        pdf.add_page()
        pdf.set_font("Helvetica", size=20)
        pdf.multi_cell(0, 10, chapter, new_x="LMARGIN", new_y="NEXT")
        for topic in topics:
            pdf.set_font("Helvetica", size=14)
            pdf.multi_cell(0, 8, f"How the plan pays for {topic.lower()}", new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("Helvetica", size=10)
            pdf.multi_cell(0, 5, f"COVERED SERVICES: {topic}", new_x="LMARGIN", new_y="NEXT")
            pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=16)  # a running footer in large type: no heading
        pdf.multi_cell(0, 8, "Northwind Health Plus", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    pdf.multi_cell(0, 5, body, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=16)
    pdf.multi_cell(0, 8, "Northwind Health Plus", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "plan.pdf"))
    doc = load_document(tmp_path / "plan.pdf")
    entries, source = section_outline(doc)
    assert source == "type"
    assert [(e.title, e.level) for e in entries] == [
        ("Covered services", 1),
        ("How the plan pays for massage therapy", 2),
        ("COVERED SERVICES: Massage Therapy", 3),
        ("How the plan pays for acupuncture", 2),
        ("COVERED SERVICES: Acupuncture", 3),
        ("Claims", 1),
        ("How the plan pays for appeals", 2),
        ("COVERED SERVICES: Appeals", 3),
    ]
    nodes = build_tree(doc, "d", entries)
    assert [n.start_page for n in nodes if n.title == "Claims"] == [2]


def test_fallback_page_groups_for_long_unstructured_documents() -> None:
    doc = make_doc([f"page {i} text without headings" for i in range(1, 46)])
    entries, source = section_outline(doc)
    nodes = build_tree(doc, "d", entries)
    assert source == "pages"
    groups = [node for node in nodes if node.level == 1]
    assert groups[0].title == "Pages 1–3" and len(groups) == 15
    leaves = [node for node in nodes if node.level == 2]
    assert len(leaves) == 45 and leaves[44].start_page == 45


def test_page_chunks_never_cross_pages_and_respect_size() -> None:
    doc = make_doc([prose(30, seed=p) for p in range(3)])
    _, chunks = chunks_of(doc, strategy="page", chunk_size=500, chunk_overlap=100)
    assert all(c.start_page == c.end_page for c in chunks)
    assert all(len(c.text) <= 500 for c in chunks)
    assert {c.start_page for c in chunks} == {1, 2, 3}
    for chunk in chunks:
        assert doc.text[chunk.start_offset : chunk.end_offset] == chunk.text
    # neighbours on one page overlap, and never start mid-word
    same_page = [(a, b) for a, b in zip(chunks, chunks[1:]) if a.start_page == b.start_page]
    assert same_page and all(b.start_offset < a.end_offset for a, b in same_page)
    assert all(doc.text[c.start_offset - 1].isspace() for c in chunks if c.start_offset > 0)


def test_document_chunks_may_span_pages_and_record_the_range() -> None:
    doc = make_doc(["Short first page ending mid-thought and", "continuing on the second page. " + prose(3)])
    _, chunks = chunks_of(doc, strategy="document", chunk_size=1000, chunk_overlap=0)
    assert (chunks[0].start_page, chunks[0].end_page) == (1, 2)


def test_token_limit_cuts_chunks_to_the_embedder_window() -> None:
    doc = make_doc([prose(40)])
    count_words = lambda text: len(text.split())  # noqa: E731  a stand-in for the word-piece counter
    entries, _ = section_outline(doc)
    nodes = build_tree(doc, "d", entries)
    params = ChunkingParams(chunk_size=1000, chunk_overlap=100, max_tokens=60)
    chunks = chunk_document(doc, nodes, params, DocumentTags(), 1, count_tokens=count_words)
    # what is embedded, the header included, fits the window
    assert max(count_words(search_text(c, document_label(doc.name, doc.title))) for c in chunks) <= 60
    assert max(len(c.text) for c in chunks) > 250


@pytest.mark.parametrize(
    ("name", "title", "label"),
    [
        ("ACME_2023_10K.pdf", "0000764478-23-000006", "ACME 2023 10K"),  # an accession number says nothing
        ("e639029d16094ea71d964e2fb953952b.pdf", "e639029d16094ea71d964e2fb953952b", ""),  # a hash neither
        ("2303.05039v2.pdf", "Improving Recommendation Systems", "2303.05039v2 - Improving Recommendation Systems"),
        ("User_Manual_V1.1.pdf", "User Manual", "User Manual V1.1"),  # the title adds nothing
        ("2023 Q2 ACME.pdf", "acme-20230401", "2023 Q2 ACME"),
    ],
)
def test_document_label(name: str, title: str, label: str) -> None:
    assert document_label(name, title) == label


def test_chunk_header_names_document_deepest_sections_and_speakers() -> None:
    path = ["Root title", "1 Install", "1.2 Wiring", "1.2.3 Earth"]
    assert chunk_header("ACME manual", path) == "ACME manual | 1.2 Wiring > 1.2.3 Earth"
    assert chunk_header("ACME manual", ["Root title"], ["Dana", "Sam"]) == "ACME manual | speakers: Dana, Sam"
    assert chunk_header("", ["Root title"]) == ""
    doc = load_document(SAMPLES / "support-call-2024-03-14.vtt")
    _, chunks = chunks_of(doc, chunk_size=400, chunk_overlap=50)
    text = search_text(chunks[0], document_label(doc.name, doc.title))
    assert text.startswith("support call 2024-03-14") and "speakers: Dana, Sam" in text.split("\n")[0]
    assert text.endswith(chunks[0].text)


def test_tiny_sections_merge_into_their_neighbour() -> None:
    body = prose(10)
    text = f"1 Chapter\n\n1.1 Part\n{body}"
    outline = [OutlineEntry(title="1 Chapter", level=1, offset=0), OutlineEntry(title="1.1 Part", level=2, offset=11)]
    nodes, chunks = chunks_of(make_doc([text], outline), chunk_size=2000, chunk_overlap=0)
    assert chunks[0].text.startswith("1 Chapter")
    assert chunks[0].section_path[-1] == "1.1 Part"


def test_transcript_chunks_carry_times_and_speakers() -> None:
    doc = load_document(SAMPLES / "support-call-2024-03-14.vtt")
    _, chunks = chunks_of(doc, chunk_size=400, chunk_overlap=50)
    assert len(chunks) > 1
    assert chunks[0].start_time == 2.0 and chunks[0].speakers[:2] == ["Dana", "Sam"]
    assert chunks[-1].end_time == 81.0
    # transcript chunks end at the end of a speaker line
    assert all(doc.text[c.end_offset : c.end_offset + 1] in ("", "\n") for c in chunks)


def test_invalid_chunking_parameters() -> None:
    with pytest.raises(ValueError, match="overlap"):
        ChunkingParams(chunk_size=400, chunk_overlap=300)
    with pytest.raises(ValueError, match="too small"):
        ChunkingParams(chunk_size=50)


def test_sections_do_not_spill_onto_the_running_header_of_the_next_page() -> None:
    doc = load_document(SAMPLES / "sb40-user-manual.pdf")
    entries, _ = section_outline(doc)
    pages = {node.title: (node.start_page, node.end_page) for node in build_tree(doc, "d", entries)}
    assert pages["1 About this manual"] == (2, 2)
    assert pages["3 Installation"] == (4, 4)
    assert pages["3.3 Wiring"] == (4, 4)
    assert pages["8 Warranty"] == (9, 9)


def filing_pages() -> list[str]:
    contents = "Table of Contents\nPART I\nItem 1. Business 3\nItem 1A. Risk Factors 5\nPART II\n"
    contents += "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations 9\n"
    contents += "Item 8. Financial Statements and Supplementary Data 12\nExhibit index\n"
    contents += "31.2 Certification of CFO pursuant to Rule 13a-14(a)\n32.1 Section 1350 Certifications"
    return [
        contents,
        f"PART I\nItem 1. Business\n{prose(12, 1)}",
        f"Item 1A—Risk Factors\n{prose(12, 2)}\nSee Item 8 of this Report.",
        f"PART II\nITEM 7. MANAGEMENT'S DISCUSSION AND ANALYSIS\n{prose(12, 3)}",
        f"Item 8: Financial Statements and Supplementary Data\n{prose(12, 4)}",
        f"Exhibit 31.2\nCERTIFICATION\n{prose(6, 5)}",
        f"Exhibit 32.1\nCERTIFICATION PURSUANT TO 18 U.S.C. SECTION 1350\n{prose(6, 6)}",
    ]


def test_a_filing_gets_its_parts_items_and_exhibits_as_sections() -> None:
    doc = make_doc(filing_pages(), title="ACME 10-K")
    entries, source = section_outline(doc)
    assert source == "filing"
    assert [(e.level, e.title) for e in entries] == [
        (1, "Part I"),
        (2, "Item 1. Business"),
        (2, "Item 1A. Risk Factors"),
        (1, "Part II"),
        (2, "Item 7. MANAGEMENT'S DISCUSSION AND ANALYSIS"),
        (2, "Item 8. Financial Statements and Supplementary Data"),
        (1, "Exhibit 31.2"),
        (1, "Exhibit 32.1"),
    ], "the contents list is no section; an item is where its heading starts a line in the body"
    _, chunks = chunks_of(doc)
    last = [c for c in chunks if c.start_page == 7]
    assert last and all(c.section_path[-1] == "Exhibit 32.1" for c in last), [c.section_path for c in last]
    risks = [c for c in chunks if c.start_page == 3]
    assert risks and all(c.section_path[1:] == ["Part I", "Item 1A. Risk Factors"] for c in risks)


def test_a_document_s_date_comes_from_its_text_before_its_file() -> None:
    filing = make_doc(["UNITED STATES\nFORM 10-K\nFor the fiscal year ended December 31, 2018\nCommission file 1-3285"])
    exported = filing.model_copy(update={"created": date(2023, 1, 5)})
    assert document_date(exported, today=date(2026, 1, 1)) == date(2018, 12, 31)
    paper = make_doc(["Take a Step Back\narXiv:2310.06117v2 [cs.LG] 12 Mar 2024\nAbstract", "Published May 1, 2024"])
    assert document_date(paper, today=date(2026, 1, 1)) == date(2024, 3, 12), "the first page's first date"
    undated = make_doc(["A note without dates.", "Meeting on June 3, 2020."]).model_copy(
        update={"created": date(2021, 2, 1)}
    )
    assert document_date(undated, today=date(2026, 1, 1)) == date(2021, 2, 1), "the file's date when the text has none"
    future = undated.model_copy(update={"created": date(2031, 2, 1)})
    assert document_date(future, today=date(2026, 1, 1)) is None, "an implausible file date is no date"


COVER = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION
Washington, D.C. 20549
____________________
FORM 10-Q
____________________
(Mark One)
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the quarterly period ended April 1, 2023
Commission File Number: 000-06217
____________________
INTEL CORPORATION
(Exact name of registrant as specified in its charter)
Delaware 94-1672743"""


def test_a_filing_is_named_by_its_cover_page() -> None:
    cover = filing_cover(make_doc([COVER]))
    assert cover is not None and cover.title == "Intel Corporation, Form 10-Q, quarterly period ended April 1, 2023"
    unnoted = COVER.replace("____________________\nINTEL", "INTEL").replace(
        "(Exact name of registrant as specified in its charter)\n", ""
    )
    assert filing_cover(make_doc([unnoted])) == cover, "no note under the name: the line after the file number"
    amended = filing_cover(make_doc(["Table of contents", COVER.replace("FORM 10-Q", "Form 10-K/A")]))
    assert amended is not None and amended.form == "10-K/A", "on its second page, amended"
    ruled = COVER.replace("____________________\nFORM 10-Q", "____ FORM 10-Q").replace(
        "____________________\nINTEL", "____ INTEL"
    )
    assert filing_cover(make_doc([ruled])) == cover, "a rule run into the form's and the name's lines"
    three_m = filing_cover(make_doc([COVER.replace("INTEL CORPORATION", "3M COMPANY")]))
    assert three_m is not None and three_m.company == "3M Company"
    nameless = COVER.replace("____________________\nINTEL CORPORATION\n", "")
    assert filing_cover(make_doc([nameless])) is None, "the file number above the note is no name"
    report = "SECURITIES AND EXCHANGE COMMISSION filings\nAs our Form 10-K for 2022 says, INTEL CORPORATION grew."
    assert filing_cover(make_doc([report])) is None, "a form named in a sentence is no cover"
    assert filing_cover(make_doc([COVER.replace("SECURITIES AND EXCHANGE", "STATE")])) is None


def test_a_filing_s_chunks_are_searched_by_the_company_its_cover_names(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    for page in (COVER, prose(30)):
        pdf.add_page()
        pdf.multi_cell(0, 5, page)
    path = tmp_path / "2023 Q1 INTC.pdf"
    pdf.output(str(path))
    prepared = prepare_document(path, "0" * 64, DocumentTags(), IndexParams())
    assert prepared.record.title == "Intel Corporation, Form 10-Q, quarterly period ended April 1, 2023"
    label = document_label(prepared.record.name, prepared.record.title)
    assert label == "2023 Q1 INTC - Intel Corporation, Form 10-Q, quarterly period ended April 1, 2023"
    assert all(search_text(chunk, label).startswith(label) for chunk in prepared.chunks)
    assert prepared.record.tags.date == date(2023, 4, 1)
