"""The lookups set's gold pages hold what its rows say they hold (bench/lookups.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from pagegraph.ingest.loaders.pdfium_text import pdfium_text
from tests.conftest import SHARED_DOCS

SET = Path(__file__).resolve().parents[2] / "bench" / "lookups.jsonl"
ROWS = [json.loads(line) for line in SET.read_text().splitlines()]


def test_the_set_has_each_kind_of_lookup() -> None:
    kinds = Counter(row["task_type"] for row in ROWS)
    assert len(ROWS) >= 40 and kinds["table"] >= 16 and kinds["prose"] >= 12
    assert kinds["two_place"] >= 6 and kinds["unanswerable"] >= 6
    assert len({row["id"] for row in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row["answerable"] == (row["task_type"] != "unanswerable") == bool(row["evidence"]), row["id"]
        assert len(row["evidence"]) == len(row["evidence_text"]), row["id"]
        if row["task_type"] == "two_place":
            assert len({e["page"] for e in row["evidence"]}) == 2, row["id"]


@pytest.mark.skipif(not SHARED_DOCS.is_dir(), reason="../shared/eval is absent: the documents are not here")
@pytest.mark.parametrize("row", [r for r in ROWS if r["evidence"]], ids=lambda r: r["id"])
def test_each_gold_page_holds_its_evidence(row: dict) -> None:
    for evidence, text in zip(row["evidence"], row["evidence_text"]):
        document = pdfium.PdfDocument(SHARED_DOCS / evidence["document"])
        try:
            textpage = document[evidence["page"] - 1].get_textpage()
            page = " ".join(pdfium_text(textpage.get_text_bounded()).split())
        finally:
            document.close()
        assert " ".join(text.split()) in page, (row["id"], evidence)
