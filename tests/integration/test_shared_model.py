"""Two `pagegraph ask` commands on one machine share the real embedded model: the one that started it exits first, and
the other answers on it, with citations, without loading a model of its own (issue: the shared model died with the
command that started it)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.llm.model_process import read_published
from tests.conftest import PAGEGRAPH, SAMPLES

pytestmark = pytest.mark.slow
QUESTION = "What does error code E04 mean, and what should the owner do about it?"


def ask(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(PAGEGRAPH), "ask", QUESTION, "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_a_second_ask_answers_on_the_model_the_first_started_after_the_first_exits(tmp_path: Path) -> None:
    env = {**os.environ, "PAGEGRAPH_INDEX": str(tmp_path / "index"), "PAGEGRAPH_INGEST_SUMMARIES": "extractive"}
    ingested = subprocess.run(
        [str(PAGEGRAPH), "ingest", str(SAMPLES)], env=env, capture_output=True, text=True, timeout=600
    )
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    subprocess.run([str(PAGEGRAPH), "model", "stop"], env=env, capture_output=True, timeout=120, check=True)
    folder = Settings().model_process_folder()
    first = ask(env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and first.poll() is None:
        records = [read_published(path) for path in folder.glob("*.json")]
        started = [record for record in records if record is not None and record.url]
        if started:
            break
        time.sleep(0.5)
    (model,) = started
    second = ask(env)
    first_out, first_err = first.communicate(timeout=900)
    assert first.returncode == 0, first_err[-2000:]
    assert second.poll() is None, "the second command is still at work when the one that started the model exits"
    second_out, second_err = second.communicate(timeout=900)
    assert second.returncode == 0, second_err[-2000:]
    for printed in (first_out, second_out):
        answer = json.loads(printed)
        assert not answer["abstained"] and "E04" in answer["answer"] + json.dumps(answer["evidence"]), answer["answer"]
        assert any(c["source"] == "sb40-user-manual.pdf" for c in answer["citations"]), answer["citations"]
    still = [read_published(path) for path in folder.glob("*.json")]
    assert [record.pid for record in still if record] == [model.pid], "one model process served both"
    os.kill(model.owner_pid, 0)  # its keeper runs on for the next command, until idle
