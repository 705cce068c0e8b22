"""Write docs/configuration.md, the configuration reference, from `Settings` and `Context` themselves, so it cannot
drift from the code: `python scripts/config_reference.py --write`; `--check` exits 1 when the file is out of date
(tests/unit/test_docs.py runs it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any
from unittest import mock

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from pagegraph.config import Context, Settings

TARGET = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
HEADER = """# Configuration reference

Generated from `pagegraph.config` by `python scripts/config_reference.py --write` (a test fails when it is out of
date). How the knobs are chosen and what they change: [asking](asking.md), [retrieval](retrieval.md),
[ingesting](ingesting.md), [server](server.md).

## Settings

Machine-level settings, read from `PAGEGRAPH_*` environment variables or a `.env` file in the working directory
(`.env.example` lists the common ones). A list takes `a:b` (or commas, or a JSON list); a bad value stops every
command with one line naming the variable. In Python they come in groups, as in the table: `PAGEGRAPH_DATABASE_URL` is
`settings.storage.database_url`, and `Settings(storage={"database_url": URL})` sets it.

| variable | default | meaning |
|---|---|---|
"""
CONTEXT = """
## Context

Per-run knobs: `Context(...)` in Python, the context form in Studio, `context` in a server run
(`runs.create(..., context={...})`). `pagegraph ask --model` sets `model`; the rest keep these defaults on the
command line. Knobs come in groups: `Context(retrieval={"top_k_files": 5})`, `{"retrieval": {"top_k_files": 5}}` as
JSON. A key of the flat layout before the groups (`top_k_files`) is refused, naming its group (the layout changed at
0.1, before a 1.0 promises to keep one).

| key | default | meaning |
|---|---|---|
"""


def _default(field: FieldInfo) -> Any:
    if field.default_factory is None:
        return field.default
    # paths under the user's home: shown with ~, as the XDG defaults they are (not this machine's XDG variables)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    with mock.patch.dict(os.environ, clean, clear=True):
        value = field.default_factory()
    return Path("~") / Path(value).relative_to(Path.home()) if isinstance(value, Path) else value


def _shown(value: Any) -> str:
    if value is None or value is PydanticUndefined:
        return "unset"
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, list | tuple):
        value = ",".join(map(str, value)) if value else "(none)"
    if isinstance(value, bool):
        value = str(value).lower()
    return f"`{value}`".replace("|", "\\|")


def _meaning(field: FieldInfo) -> str:
    return (field.description or "").replace("|", "\\|").replace("\n", " ")


def reference() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        if not _is_group(field):
            rows.append(f"| `PAGEGRAPH_{name.upper()}` | {_shown(_default(field))} | {_meaning(field)} |")
            continue
        rows.append(f"| **{name}** | | {_meaning(field)} |")
        rows += [
            f"| `PAGEGRAPH_{setting.upper()}` | {_shown(_default(inner))} | {_meaning(inner)} |"
            for setting, inner in field.annotation.model_fields.items()
        ]
    groups = {name: field for name, field in Context.model_fields.items() if _is_group(field)}
    knobs = [
        f"| `{name}` | {_shown(_default(field))} | {_meaning(field)} |"
        for name, field in Context.model_fields.items()
        if name not in groups
    ]
    for group, field in groups.items():
        knobs.append(f"| **{group}** | | {_meaning(field)} |")
        knobs += [
            f"| `{group}.{name}` | {_shown(_default(knob))} | {_meaning(knob)} |"
            for name, knob in field.annotation.model_fields.items()
        ]
    return HEADER + "\n".join(rows) + "\n" + CONTEXT + "\n".join(knobs) + "\n"


def _is_group(field: FieldInfo) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write docs/configuration.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/configuration.md is out of date")
    args = parser.parse_args()
    text = reference()
    if args.write:
        TARGET.write_text(text)
    elif args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            sys.exit(f"{TARGET} is out of date: run `python scripts/config_reference.py --write`")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
