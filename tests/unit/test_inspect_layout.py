"""`pagegraph inspect` shows every document's name whole, whatever the terminal's width: a name is what
`--document` takes."""

from __future__ import annotations

import pytest

import pagegraph.cli.common
from pagegraph.cli.inspect import show_document_rows

NAMES = ["Northwind_Health_Plus_Benefits_Details.pdf", "2023 Q2 AAPL.pdf", "Contoso_Electronics_Company_Overview.md"]
ROWS = [
    {
        "name": name,
        "type": "pdf",
        "pages": "103",
        "chunks": "412",
        "tree": "31 from type",
        "summaries": "extractive; summarize would add 30",
        "tags": "access=internal date=2023-05-01",
    }
    for name in NAMES
]


@pytest.mark.parametrize("width", [36, 60, 80, 120, 200])
def test_every_name_is_shown_whole(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On one line where the terminal is as wide as the name, folded onto the next where it is narrower."""
    console = pagegraph.cli.common.console
    monkeypatch.setattr(console, "width", width)
    with console.capture() as captured:
        show_document_rows(ROWS)
    out = captured.get()
    assert "…" not in out and all(len(line) <= width for line in out.splitlines()), out
    lines = out.splitlines()
    for name in NAMES:
        assert any(name in line for line in lines) if len(name) <= width else name in "".join(lines), out
