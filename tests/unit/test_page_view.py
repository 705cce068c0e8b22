"""The citation viewer's PDF pages: rendered once and cached, and a passage of the indexed text found on them."""

from __future__ import annotations

from pathlib import Path

from pagegraph.ingest.loaders import load_document
from pagegraph.server.page_view import page_image, passage_boxes
from tests.pdf_factory import image_only_pdf, text_pdf

PAGES = [
    ("Pricing", "The Falcon plan costs 41 dollars a month for each seat. " * 3),
    ("Discounts", "Teams of more than fifty seats receive a discount of twelve percent on the Falcon plan. " * 4),
]


def test_a_page_is_rendered_once_then_read_from_the_cache(tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "pricing.pdf", PAGES)
    cache = tmp_path / "cache"
    first = page_image(pdf, 2, cache)
    assert first.startswith(b"\x89PNG") and (cache / "2.png").is_file()
    pdf.unlink()
    assert page_image(pdf, 2, cache) == first


def test_a_passage_of_the_indexed_text_is_boxed_line_by_line(tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "pricing.pdf", PAGES)
    text = load_document(pdf).pages[1].text
    start = text.index("Teams")
    passage = text[start : start + 250]
    boxes = passage_boxes(pdf, 2, passage)
    assert len(boxes) >= 2, "a passage over several lines gets a box per line"
    for left, top, right, bottom in boxes:
        assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1
    assert [b[1] for b in boxes] == sorted(b[1] for b in boxes), "lines in reading order, top down"
    heading = passage_boxes(pdf, 2, "Discounts")
    assert len(heading) == 1 and heading[0][3] <= boxes[0][1] + 0.01, "the heading sits above the passage"
    assert passage_boxes(pdf, 2, " ".join(passage.split()).replace("fifty", "fif- ty")) == boxes


def test_text_that_is_not_on_the_page_gets_no_box(tmp_path: Path) -> None:
    pdf = text_pdf(tmp_path / "pricing.pdf", PAGES)
    assert passage_boxes(pdf, 1, "Teams of more than fifty seats") == []
    assert passage_boxes(pdf, 9, "Pricing") == []
    assert passage_boxes(image_only_pdf(tmp_path / "scan.pdf"), 1, "anything at all") == []
