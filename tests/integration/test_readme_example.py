"""The README's Python example runs as written (real embedder and local model) and prints a cited answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

pytestmark = pytest.mark.slow
MARKER = "<!-- the block below runs as a test (tests/integration/test_readme_example.py) -->"


def readme_example() -> str:
    text = (REPO / "README.md").read_text()
    after = text[text.index(MARKER) + len(MARKER) :]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, "the README lost its Python example"
    return match.group(1)


def test_readme_python_example(tmp_path: Path) -> None:
    (tmp_path / "samples").symlink_to(SAMPLES)
    (tmp_path / "example.py").write_text(readme_example())
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "3 added []"
    assert "98 kg" in result.stdout
    cited_pages = set()
    for line in lines:
        parts = line.split()
        if len(parts) == 4 and parts[0] == "sb40-user-manual.pdf" and parts[1].isdigit() and parts[2].isdigit():
            cited_pages |= set(range(int(parts[1]), int(parts[2]) + 1))
    assert 6 in cited_pages, f"the weight is on page 6 of the manual: {result.stdout}"
