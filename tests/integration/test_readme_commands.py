"""Every `pagegraph` command the README shows runs as written, except those that need the chat model or keep
running (ask, chat, serve, summarize, eval: their own tests cover them): lines starting with `.venv/bin/pagegraph`
in its bash blocks, run in order in a folder holding `samples/`, with its `export` lines applied (and those a
command prints for the user to paste, as `pagegraph db start` does)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PAGEGRAPH, REPO, SAMPLES

pytestmark = pytest.mark.slow
NEEDS_A_MODEL_OR_KEEPS_RUNNING = {"ask", "chat", "serve", "summarize", "eval"}


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith((".venv/bin/pagegraph ", "export "))]


def test_the_readme_shows_the_commands_of_its_tour() -> None:
    shown = {shlex.split(line)[1] for line in readme_commands() if line.startswith(".venv")}
    assert {"ingest", "inspect", "ask", "chat", "serve", "users"} <= shown


def test_every_command_the_readme_shows_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "samples").symlink_to(SAMPLES)
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    ran, printed = [], []
    try:
        for line in readme_commands():
            if line.startswith("export "):
                name, value = line.removeprefix("export ").split("=", 1)
                env[name] = os.path.expanduser(value).replace(os.path.expanduser("~"), env["HOME"])
                continue
            words = shlex.split(line)
            if words[1] in NEEDS_A_MODEL_OR_KEEPS_RUNNING:
                continue
            done = subprocess.run(
                [str(PAGEGRAPH), *words[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            ran.append(words[1])
            printed.append(" ".join(done.stdout.split()))
            for name, value in re.findall(r"^\s*export (\w+)=(.+)$", done.stdout, re.MULTILINE):  # pasted, as it says
                env[name] = shlex.split(value)[0]
    finally:
        if (tmp_path / "home" / ".local" / "share" / "pagegraph" / "postgres" / "postmaster.pid").exists():
            subprocess.run([str(PAGEGRAPH), "db", "stop"], env=env, capture_output=True, timeout=120)
    assert {"ingest", "inspect", "search", "users", "db"} <= set(ran)
    assert any("Ingested into schema pagegraph_tour in postgresql://" in out for out in printed), "db start's URL"
    assert (tmp_path / "home" / ".config" / "pagegraph" / "users.json").exists()
