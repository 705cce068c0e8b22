"""The type checker over the packages typed so far (pyproject's `[tool.mypy]` files): a method a record lacks or a
value of the wrong type is found here, not at run time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_typed_packages_type_check() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
