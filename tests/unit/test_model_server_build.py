"""The set-up's llama-server build as a user meets it: progress of a compile running in the background, no compile
where another model server is named, and a clear word from pagegraph while the compile has not finished."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from pagegraph.llm import model_process
from pagegraph.llm.weights import LocalModelError

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "build_model_server.sh"


def _script(*args: str, venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in {"PAGEGRAPH_MODEL", "PAGEGRAPH_LLAMA_SERVER"}}
    environment.update(PAGEGRAPH_VENV=str(venv), PAGEGRAPH_BUILD_CACHE=str(venv / "cache"), **env)
    return subprocess.run(
        ["bash", str(SCRIPT), *args], env=environment, capture_output=True, text=True, timeout=60, check=False
    )


def test_progress_of_a_background_compile_says_how_far_and_how_long_is_left(tmp_path: Path) -> None:
    state = tmp_path / "share" / "pagegraph"
    state.mkdir(parents=True)
    log = state / "build.log"
    log.write_text("-- Configuring done\n")
    compiling = subprocess.Popen(["sleep", "30"])
    try:
        (state / "llama-server.building").write_text(f"{compiling.pid} {log} {int(time.time()) - 10}\n")
        shown = _script("--progress", venv=tmp_path)
        assert shown.returncode == 0 and "fetching and configuring its source" in shown.stdout, shown
        log.write_text("-- Configuring done\n[1/200] Building C object a.o\n[50/200] Building CXX object b.o\n")
        # started 100 s ago, a quarter done: three times as long again at that rate
        (state / "llama-server.building").write_text(f"{compiling.pid} {log} {int(time.time()) - 100}\n")
        shown = _script("--progress", venv=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert re.search(r"compiling, 25 %, about 5:0\d left", shown.stdout), shown.stdout
    finally:
        compiling.kill()
        compiling.wait()
    # no compile running: nothing to say
    assert _script("--progress", venv=tmp_path).stdout == ""


def test_another_model_server_named_builds_nothing(tmp_path: Path) -> None:
    started = _script("--start", venv=tmp_path, PAGEGRAPH_MODEL="openai:qwen2.5")
    assert started.returncode == 0, started.stderr
    assert "PAGEGRAPH_MODEL=openai:qwen2.5: llama-server is not built" in started.stdout
    assert not (tmp_path / "share").exists() and not (tmp_path / "bin" / "llama-server").exists()
    assert _script("--wait", venv=tmp_path, PAGEGRAPH_MODEL="openai:qwen2.5").returncode == 0


def test_pagegraph_says_the_compile_has_not_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(model_process.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(LocalModelError, match=r"not built; run `bash scripts/setup.sh`"):
        model_process.find_server_binary(None)
    (tmp_path / "share" / "pagegraph").mkdir(parents=True)
    (tmp_path / "share" / "pagegraph" / "llama-server.building").write_text(f"{os.getpid()} log 0\n")
    with pytest.raises(LocalModelError, match=r"not built yet.*build_model_server.sh --wait"):
        model_process.find_server_binary(None)
