"""`pagegraph serve` on one machine stopped mid-run, by SIGKILL (as when the machine dies) and by SIGTERM (as an
operator stops it), then started again on the same index: every thread is there with its state, the cut-off run is
retried or marked failed and never left `running`, and a new question answers. Runs answer with a scripted model;
the question about the DC terminals keeps its model call open, so that a stop lands mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from tests.conftest import REPO, SAMPLES
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
GUIDE = "commissioning-guide.md"
QUESTION = "What torque do the terminal screws take?"
SLOW = "What torque do the DC terminal screws take?"
HEARTBEAT_S = 2  # a run whose server died is taken up again within a few heartbeats


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    scripted = ScriptedOpenAI(slow_marker="DC terminal", slow_s=15.0, reply=lambda prompt: "4 Nm on DC [1].")
    scripted.start()
    yield scripted
    scripted.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model: ScriptedOpenAI) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("restart")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    keys = add_users(folder / "users.json", {"ana": ["--role", "editor", "--projects", "demo"]})
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_INGEST_ROOTS=json.dumps([str(SAMPLES)]),
        LG_BG_JOB_HEARTBEAT=str(HEARTBEAT_S),
        **model.settings(),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    client = get_client(url=server.url, api_key=keys["ana"])
    done = asyncio.run(client.runs.wait(None, "ingest", input={"paths": [GUIDE], "project": "demo"}))
    assert [f["status"] for f in done["report"]["files"]] == ["added"], done
    yield {"server": server, "key": keys["ana"], "model": model}
    server.stop()


async def threads_with_answers(client, count: int) -> list[str]:
    threads = []
    for _ in range(count):
        thread = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread, "basic", input={"question": QUESTION})
        threads.append(thread)
    return threads


async def start_slow_run(client, model: ScriptedOpenAI) -> tuple[str, str]:
    thread = (await client.threads.create())["thread_id"]
    calls = model.calls
    started = await client.runs.create(thread, "basic", input={"question": SLOW})
    deadline = time.monotonic() + 60
    while model.calls == calls:  # the run's model call is open: mid-run
        assert time.monotonic() < deadline, "the run never called the model"
        await asyncio.sleep(0.2)
    return thread, started["run_id"]


async def settled(client, thread: str, run_id: str, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = await client.runs.get(thread, run_id)
        if found["status"] not in ("pending", "running"):
            return found
        await asyncio.sleep(1)
    raise AssertionError(f"run {run_id} still {found['status']} {timeout_s:.0f} s after the restart")


@pytest.mark.parametrize("stop", ["SIGKILL", "SIGTERM"])
def test_a_restart_loses_no_thread_and_leaves_no_run_running(site: dict, stop: str) -> None:
    server, model = site["server"], site["model"]

    def client():
        return get_client(url=server.url, api_key=site["key"])

    answered = asyncio.run(threads_with_answers(client(), 2))
    thread, run_id = asyncio.run(start_slow_run(client(), model))
    stopped = time.monotonic()
    if stop == "SIGKILL":
        server.kill()
    else:
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=30)
        assert time.monotonic() - stopped < 10, "SIGTERM stops serve and what it started within 10 s"
    server.start()

    async def after() -> None:
        ended = await settled(client(), thread, run_id)
        assert ended["status"] in ("success", "error"), ended
        for kept in answered:
            values = (await client().threads.get_state(kept))["values"]
            assert [m["type"] for m in values["messages"]] == ["human", "ai"], values
            assert "4 Nm" in values["answer"]
        assert not [r for t in [*answered, thread] for r in await client().runs.list(t) if r["status"] == "running"]
        fresh = await client().runs.wait(None, "basic", input={"question": QUESTION})
        assert "4 Nm" in fresh["answer"]

    asyncio.run(after())


def nothing_left(server: Server) -> bool:
    """No process of serve's session is left: the runtime, PostgreSQL and Redis it started all stopped with it."""
    try:
        os.killpg(server.process.pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("moment", ["while its services start", "as its server first answers"])
def test_a_stop_while_serve_starts_stops_everything_it_started(
    tmp_path: Path, cache_dir: Path, model: ScriptedOpenAI, moment: str
) -> None:
    """SIGTERM before serve has reported 'ready' (an operator's `kill` or a test's teardown right after /ok answered)
    stops the runtime, not only serve: the port is free again and nothing it started is left running."""
    shutil.copy(REPO / "langgraph.json", tmp_path / "langgraph.json")
    add_users(tmp_path / "users.json", {"ana": ["--role", "reader", "--projects", "demo"]})
    env = server_env(tmp_path, cache_dir, tmp_path / "users.json", **model.settings())
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=tmp_path, env=env)
    server.launch()
    deadline = time.monotonic() + 120
    while True:
        assert server.process.poll() is None and time.monotonic() < deadline, "serve did not start"
        if moment == "while its services start":
            if (tmp_path / "index" / "server" / "postgres").exists():  # its PostgreSQL is being created
                break
        else:
            try:
                with urllib.request.urlopen(f"{server.url}/ok", timeout=1):
                    break
            except OSError:
                pass
        time.sleep(0.02)
    server.stop()  # SIGTERM; fails unless serve exits within 30 s and the port is no longer listening
    assert server.process.returncode == 0, (server.folder / "server.log").read_text()[-2000:]
    deadline = time.monotonic() + 10
    while not nothing_left(server):
        assert time.monotonic() < deadline, "a process serve started outlived it"
        time.sleep(0.2)
