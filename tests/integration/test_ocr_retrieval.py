"""A scan of a shared PDF, made here (each page rendered to an image and written back as an image-only PDF), is
searched about as well as the original once OCR has read it: `pagegraph eval --mode retrieval` on both, same run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pagegraph.cli import app
from pagegraph.ingest.ocr import OcrOptions, ocr_unavailable
from pagegraph.store.sqlite import SqliteStore
from tests.pdf_factory import scanned_pdf

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(ocr_unavailable(OcrOptions()) is not None, reason=str(ocr_unavailable(OcrOptions()))),
]
DOCUMENT = "e79deb02a0c0e87511080836c5d4347b.pdf"  # 17 pages, 18 dev questions


def evaluate(folder: Path, questions: Path, rows: Path, index: Path, out: Path) -> dict:
    result = CliRunner().invoke(
        app,
        ["eval", str(questions), "--index", str(index), "--docs", str(folder), "--mode", "retrieval"]
        + ["--retriever", "hybrid+window", "--rows", str(rows), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["summary"]["hybrid+window"]


def test_a_scanned_copy_is_found_almost_as_often_as_the_text_pdf(
    shared_docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path
) -> None:
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    questions = shared_docs.parent / "dev.jsonl"
    ids = [row["id"] for row in map(json.loads, questions.read_text().splitlines()) if row["documents"] == [DOCUMENT]]
    rows = tmp_path / "rows.txt"
    rows.write_text("\n".join(map(str, ids)) + "\n")
    text, scan = tmp_path / "text", tmp_path / "scan"
    text.mkdir()
    scan.mkdir()
    shutil.copy(shared_docs / DOCUMENT, text / DOCUMENT)
    scanned_pdf(scan / DOCUMENT, shared_docs / DOCUMENT, dpi=200)

    original = evaluate(text, questions, rows, tmp_path / "text-index", tmp_path / "text.json")
    scanned = evaluate(scan, questions, rows, tmp_path / "scan-index", tmp_path / "scan.json")
    print(f"hit@5 over {len(ids)} questions: text PDF {original['hit@5']:.3f}, scan {scanned['hit@5']:.3f}")
    assert scanned["hit@5"] >= 0.9 * original["hit@5"]

    def texts(index: Path) -> list[bool]:
        store = SqliteStore(index, read_only=True)
        try:
            return [bool(page.text.strip()) for page in store.pages(store.documents()[0].id)]
        finally:
            store.close()

    assert texts(tmp_path / "scan-index") == texts(tmp_path / "text-index"), "every page with text is read"
