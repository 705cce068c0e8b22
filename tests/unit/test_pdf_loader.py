from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph.errors import DocumentError
from pagegraph.ingest.loaders import load_document
from tests.pdf_factory import corrupt_pdf, empty_pdf, image_only_pdf, password_pdf, text_pdf, truncated_pdf

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_sample_manual_pages_outline_and_table() -> None:
    doc = load_document(SAMPLES / "sb40-user-manual.pdf")
    assert [page.number for page in doc.pages] == list(range(1, len(doc.pages) + 1))
    assert doc.outline_source == "bookmarks"
    titles = [(entry.title, entry.level) for entry in doc.outline]
    assert ("3 Installation", 1) in titles and ("3.2 Mounting", 2) in titles
    troubleshooting = next(e for e in doc.outline if e.title == "7 Troubleshooting")
    assert doc.text[troubleshooting.offset :].startswith("7 Troubleshooting")
    page = next(p for p in doc.pages if "E04" in p.text)
    assert "Grid voltage out of range" in page.text


def test_generated_pdf_outline_points_at_pages(tmp_path: Path) -> None:
    path = text_pdf(tmp_path / "three.pdf", [("Alpha", "first body"), ("Beta", "second body"), ("Gamma", "third body")])
    doc = load_document(path)
    starts = doc.page_starts()
    assert [entry.offset for entry in doc.outline] == starts
    assert [page.text.split("\n")[0] for page in doc.pages] == ["Alpha", "Beta", "Gamma"]


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda d, good: corrupt_pdf(d / "corrupt.pdf"), "corrupt PDF"),
        (lambda d, good: truncated_pdf(d / "truncated.pdf", good), "truncated"),
        (lambda d, good: password_pdf(d / "locked.pdf", good), "encrypted with a password"),
        (lambda d, good: empty_pdf(d / "empty.pdf"), "no pages"),
        (lambda d, good: image_only_pdf(d / "scan.pdf"), "image-only PDF"),
    ],
    ids=["corrupt", "truncated", "password", "empty", "image-only"],
)
def test_bad_pdfs_fail_with_reason(tmp_path: Path, make, reason: str) -> None:
    good = text_pdf(tmp_path / "good.pdf", [("Heading", "Some body text " * 50)] * 3)
    bad = make(tmp_path, good)
    with pytest.raises(DocumentError) as error:
        load_document(bad)
    assert str(error.value).startswith(f"{bad.name}: ")
    assert reason in str(error.value)


def test_unexpected_loader_errors_become_a_reason_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pagegraph.ingest import prepare
    from pagegraph.state.documents import DocumentTags
    from pagegraph.store.manifest import IndexParams

    def explode(path: Path, heading_pattern: str, read: object) -> None:
        raise RuntimeError("parser bug")

    monkeypatch.setattr(prepare, "load_document", explode)
    result, seconds = prepare.timed_prepare(tmp_path / "x.pdf", "0" * 64, DocumentTags(), IndexParams(), None)
    assert result == "unexpected error while reading (RuntimeError: parser bug)" and seconds >= 0
