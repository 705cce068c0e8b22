"""The embedded model's process, with a stand-in for llama-server (tests/fake_llama_server.py): the check before
the first question, the fallback without weight repacking, the error that names the CPU and the way out, a crash
that fails one call and is recovered from, and one process shared by the processes of a machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from pagegraph.errors import ModelUnavailableError
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.model_process import (
    ModelServer,
    ServerShape,
    cpu_features,
    read_published,
    stop_model_processes,
)
from pagegraph.llm.weights import LocalModelError

FAKE = Path(__file__).resolve().parents[1] / "fake_llama_server.py"


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An executable that runs the fake server with this Python; its starts are recorded in `starts.jsonl`."""
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("FAKE_LLAMA_STARTS", str(tmp_path / "starts.jsonl"))
    yield binary
    stop_model_processes(tmp_path / "process")


def starts(tmp_path: Path) -> list[dict]:
    path = tmp_path / "starts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def shape(repack: bool = True) -> ServerShape:
    return ServerShape(model_path="model.gguf", n_ctx=1024, slots=2, threads=1, batch=64, repack=repack)


def model(binary: Path, folder: Path, **fields: object) -> LlamaCppChatModel:
    return LlamaCppChatModel(
        model_path="model.gguf",
        model_name="fake",
        n_ctx=1024,
        server_binary=binary,
        process_folder=folder,
        load_timeout_s=60,
        **fields,
    )


def test_a_process_that_crashes_with_repacking_is_started_without_it(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash-with-repack")
    server = ModelServer(shape(), fake_binary, tmp_path / "server.log", load_timeout_s=60)
    server.start()
    try:
        assert not server.shape.repack
        assert [("--no-repack" in start["args"]) for start in starts(tmp_path)] == [False, True]
    finally:
        server.stop()


def test_a_build_that_cannot_answer_says_which_cpu_build_and_way_out(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    server = ModelServer(shape(), fake_binary, tmp_path / "server.log", load_timeout_s=60)
    with pytest.raises(LocalModelError) as raised:
        server.start()
    message = str(raised.value)
    assert "SIGSEGV" in message and "at its first reply" in message, message
    assert "PAGEGRAPH_LLAMA_BUILD=portable" in message and str(tmp_path / "server.log") in message, message
    assert all(feature in message for feature in cpu_features()), message
    assert server.process is not None and server.process.poll() is not None, "no process is left behind"


def test_a_process_that_dies_while_loading_is_reported(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "die-at-load")
    with pytest.raises(LocalModelError, match="exited with status 1 while loading the model"):
        ModelServer(shape(repack=False), fake_binary, tmp_path / "server.log", load_timeout_s=60).start()


def test_a_crash_fails_one_call_and_the_next_is_answered(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    monkeypatch.setenv("FAKE_LLAMA_DELAY_S", "3")
    local = model(fake_binary, tmp_path / "process")
    crashed = local.endpoint().pid()
    assert crashed is not None
    with ThreadPoolExecutor(1) as pool:
        call = pool.submit(local.invoke, [HumanMessage(content="hi")])
        time.sleep(1.0)  # the call is being answered
        os.kill(crashed, signal.SIGSEGV)
        with pytest.raises(ModelUnavailableError, match=r"died with SIGSEGV \(a crash in llama.cpp\) during this call"):
            call.result(timeout=30)
    monkeypatch.setenv("FAKE_LLAMA_DELAY_S", "0")
    assert local.invoke([HumanMessage(content="hi again")]).content == "OK"
    assert local.endpoint().pid() not in (None, crashed)


def test_a_hung_process_is_ended_and_started_again(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    local = model(fake_binary, tmp_path / "process", timeout_s=1.0)
    local.invoke([HumanMessage(content="hi")])
    hung = local.endpoint().pid()
    assert hung is not None
    os.kill(hung, signal.SIGSTOP)
    with pytest.raises(ModelUnavailableError, match="gave no reply within 1 s"):
        local.invoke([HumanMessage(content="hi")])
    assert local.invoke([HumanMessage(content="hi again")]).content == "OK"
    assert local.endpoint().pid() != hung


def test_the_model_process_outlives_the_command_that_started_it(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first command starts the model and exits; a second one, started after, uses the same process (no second
    start, no load) until `pagegraph model stop` ends it."""
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    folder = tmp_path / "process"
    first = (
        "from pathlib import Path; from langchain_core.messages import HumanMessage;"
        "from pagegraph.llm.local import LlamaCppChatModel;"
        "m = LlamaCppChatModel(model_path='model.gguf', model_name='fake', n_ctx=1024,"
        f" server_binary=Path({str(fake_binary)!r}), process_folder=Path({str(folder)!r}));"
        "print(m.invoke([HumanMessage(content='hi')]).content)"
    )
    started = subprocess.run([sys.executable, "-c", first], capture_output=True, text=True, timeout=60)
    assert started.stdout.split() == ["OK"], started.stderr
    (record,) = folder.glob("*.json")
    published = read_published(record)
    assert published is not None and published.owner_pid != os.getpid()
    local = model(fake_binary, folder)
    assert local.invoke([HumanMessage(content="hi")]).content == "OK"
    assert len(starts(tmp_path)) == 1, "the second command started no model of its own"
    assert local.endpoint().pid() == published.pid
    (stopped,) = stop_model_processes(folder)
    assert stopped.pid == published.pid and not record.exists(), "the keeper withdraws its address as it stops"
    with pytest.raises(ProcessLookupError):
        os.kill(published.pid, 0)


def test_an_idle_model_process_stops_by_itself_and_starts_again_when_asked(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    folder = tmp_path / "process"
    local = model(fake_binary, folder, idle_s=1.0)
    local.invoke([HumanMessage(content="hi")])
    (record,) = folder.glob("*.json")
    deadline = time.monotonic() + 20
    while record.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not record.exists(), "an idle model process is stopped and its address withdrawn"
    assert local.invoke([HumanMessage(content="hi again")]).content == "OK"
    assert len(starts(tmp_path)) == 2


def test_a_call_that_finds_the_process_restarting_is_answered(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    local = model(fake_binary, tmp_path / "process")
    local.invoke([HumanMessage(content="hi")])
    killed = local.endpoint().pid()
    os.kill(killed, signal.SIGKILL)
    assert local.invoke([HumanMessage(content="hi again")]).content == "OK"
    assert local.endpoint().pid() != killed


def test_a_model_that_cannot_start_is_reported_to_the_command_that_asked(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    with pytest.raises(LocalModelError, match=r"could not start: llama-server died with SIGSEGV"):
        model(fake_binary, tmp_path / "process").invoke([HumanMessage(content="hi")])


def test_a_cancelled_run_closes_the_embedded_models_reply_between_tokens(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a run that can be cancelled (the server's), even a call nobody streams is streamed, so that cancelling
    the run closes it between tokens and the model stops generating it."""
    from typing_extensions import TypedDict

    from pagegraph.llm.calls import invoke_model
    from tests.runs import cancelled_after, one_stage_graph

    monkeypatch.setenv("FAKE_LLAMA_MODE", "ok")
    monkeypatch.setenv("FAKE_LLAMA_STREAM_TOKENS", "40")
    monkeypatch.setenv("FAKE_LLAMA_TOKEN_DELAY_S", "0.1")
    monkeypatch.setenv("FAKE_LLAMA_TOKENS", str(tmp_path / "tokens"))
    local = model(fake_binary, tmp_path / "process")
    local.invoke([HumanMessage(content="load")])  # started (and checked) before the run

    class State(TypedDict, total=False):
        answer: str

    def read(state: State) -> dict:
        reply, _ = invoke_model(local, [HumanMessage(content="hi")], purpose="read")
        return {"answer": reply.content}

    took = cancelled_after(one_stage_graph(State, read), 1.0)
    sent = len((tmp_path / "tokens").read_text().splitlines())
    time.sleep(0.5)
    assert took < 1.0, f"the cancellation waited {took:.1f} s for a reply of 4 s"
    assert sent < 20 and len((tmp_path / "tokens").read_text().splitlines()) <= sent + 1, "the model stopped"
