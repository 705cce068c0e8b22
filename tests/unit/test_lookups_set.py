"""The lookups sets' gold pages hold what their rows say they hold (bench/lookups.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from pagegraph.ingest.loaders.pdfium_text import pdfium_text
from tests.conftest import SHARED_DOCS

BENCH = Path(__file__).resolve().parents[2] / "bench"
# the first set, which the pick's thresholds were chosen on, and the second, written over other dev documents
SETS = {name: [json.loads(line) for line in (BENCH / name).read_text().splitlines()]
        for name in ("lookups.jsonl", "lookups-second.jsonl")}  # fmt: skip
ROWS = [row for rows in SETS.values() for row in rows]
SEC10Q_DOCS = SHARED_DOCS.parents[1] / "sec10q" / "documents"


@pytest.mark.parametrize("name", SETS)
def test_the_set_has_each_kind_of_lookup(name: str) -> None:
    rows = SETS[name]
    kinds = Counter(row["task_type"] for row in rows)
    assert len(rows) >= 40 and kinds["table"] >= 16 and kinds["prose"] >= 12
    assert kinds["two_place"] >= 6 and kinds["unanswerable"] >= 6
    assert len({row["id"] for row in ROWS}) == len(ROWS), "ids are unique across the sets"
    for row in rows:
        assert row["answerable"] == (row["task_type"] != "unanswerable") == bool(row["evidence"]), row["id"]
        assert len(row["evidence"]) == len(row["evidence_text"]), row["id"]
        if row["task_type"] == "two_place":
            assert len({e["page"] for e in row["evidence"]}) == 2, row["id"]


@pytest.mark.skipif(not SHARED_DOCS.is_dir(), reason="../shared/eval is absent: the documents are not here")
@pytest.mark.parametrize("row", [r for r in ROWS if r["evidence"]], ids=lambda r: r["id"])
def test_each_gold_page_holds_its_evidence(row: dict) -> None:
    for evidence, text in zip(row["evidence"], row["evidence_text"]):
        folder = SHARED_DOCS if (SHARED_DOCS / evidence["document"]).is_file() else SEC10Q_DOCS
        document = pdfium.PdfDocument(folder / evidence["document"])
        try:
            textpage = document[evidence["page"] - 1].get_textpage()
            page = " ".join(pdfium_text(textpage.get_text_bounded()).split())
        finally:
            document.close()
        assert " ".join(text.split()) in page, (row["id"], evidence)
