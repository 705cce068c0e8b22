"""The type checker over all of pagegraph, strictly over the stores, the state and the graphs (pyproject's
`[tool.mypy]`): a method a store lacks or a value of the wrong type is found here, not at run time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pagegraph_type_checks() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
