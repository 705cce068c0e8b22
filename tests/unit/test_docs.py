"""The documentation matches the code: the configuration reference is generated from `Settings`/`Context`, the
README stays a short manual, and every link between the pages lands on a file and heading that exist."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO

PAGES = [REPO / "README.md", REPO / "ARCHITECTURE.md", *sorted((REPO / "docs").glob("*.md"))]
README_MOST_LINES = 300


def anchors(text: str) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_configuration_reference_is_generated_from_the_code() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "config_reference.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_readme_is_a_short_manual() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= README_MOST_LINES


def test_every_link_between_pages_lands() -> None:
    broken = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
