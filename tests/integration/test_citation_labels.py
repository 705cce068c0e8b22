"""Citation labels over the trees of real documents (the evaluation's 10-Ks, filings, papers and manuals): the
section a label names is one a reader would recognise, never an SEC accession number, a report code, a file name or
a page node's "Page 3" beside "p. 3"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pagegraph.ingest.loaders import load_document
from pagegraph.ingest.tree import build_tree, section_outline
from pagegraph.state.answering import Evidence
from tests.conftest import SHARED_DOCS

pytestmark = pytest.mark.slow
FILINGS = SHARED_DOCS.parent.parent / "sec10q" / "documents"
# What a reader cannot recognise as a section, written independently of the rule the labels follow.
UNRECOGNISABLE = [
    re.compile(r"^\d{10}-\d{2}-\d{6}$"),  # an SEC accession number
    re.compile(r"^[\W\d_]*$"),  # digits and punctuation only
    re.compile(r"^\S*\d\S*$"),  # one token holding digits: a code or a hash
    re.compile(r"\.(pdf|docx?|txt|md)$", re.IGNORECASE),  # a file name
    re.compile(r"^Pages? \d"),  # a page node, beside the label's own "p. N"
]


def section_in(label: str, source: str) -> str | None:
    """The section a citation label names, or None when it names the file and the page only."""
    parts = label.strip("[]").split(", ")
    assert parts[0] == source, label
    return ", ".join(parts[1:-1]) or None


def node_labels(path: Path) -> list[str]:
    """The citation label of every node of the document's tree, as a passage of that node is cited."""
    loaded = load_document(path)
    nodes = build_tree(loaded, "d", section_outline(loaded)[0])
    return [
        Evidence(
            id=node.id,
            chunk_ids=[],
            source=loaded.name,
            section=node.title,
            start_page=node.start_page,
            end_page=node.end_page,
            text="",
            score=0.0,
        ).label()
        for node in nodes
    ]


def test_citation_labels_over_the_evaluation_documents_name_no_identifier(shared_docs: Path) -> None:
    documents = sorted(shared_docs.glob("*.pdf")) + (sorted(FILINGS.glob("*.pdf")) if FILINGS.is_dir() else [])
    labels, unrecognisable, shown = 0, [], 0
    for path in documents:
        for label in node_labels(path):
            labels += 1
            section = section_in(label, path.name)
            if section is None:
                continue
            shown += 1
            if any(pattern.search(section) for pattern in UNRECOGNISABLE):
                unrecognisable.append(label)
    print(f"{len(documents)} documents, {labels} node labels, {shown} naming a section, {len(unrecognisable)} not")
    assert labels > 1000 and shown > labels // 3, "the trees' labels name their sections"
    assert unrecognisable == []


def test_a_root_named_by_an_accession_number_is_cited_by_file_and_page() -> None:
    evidence = Evidence(
        id="c",
        chunk_ids=[],
        source="acme-10k.pdf",
        section="0001065280-16-000047",
        start_page=3,
        end_page=3,
        text="",
        score=0.0,
    )
    assert evidence.label() == "[acme-10k.pdf, p. 3]"
    page = evidence.model_copy(update={"section": "Page 3 (iii)"})
    assert page.label() == "[acme-10k.pdf, p. 3]"
    named = evidence.model_copy(update={"section": "Item 7. Management's Discussion and Analysis"})
    assert named.label() == "[acme-10k.pdf, Item 7. Management's Discussion and Analysis, p. 3]"
