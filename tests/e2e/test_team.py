"""The team runtime end to end: two `pagegraph serve` replicas on one PostgreSQL (pgserver, its own) and one Redis
(Debian's redis-server), on loopback, each with its own local folder as on two machines, driven with langgraph_sdk.
Runs answer with a scripted model; the question about the DC terminals keeps its model call open for a while, so
that a run can be joined, cancelled or killed midway."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from tests.conftest import REPO, SAMPLES
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
GUIDE, CALL = "commissioning-guide.md", "support-call-2024-03-14.vtt"
QUESTION = "What torque do the terminal screws take?"
SLOW = "What torque do the DC terminal screws take?"  # its model call takes a while
TORQUE, ERROR = (
    "The terminal screws take 2.5 Nm on AC and 4 Nm on DC [1].",
    "E04 means the grid voltage was out of range [1].",
)
HEARTBEAT_S = 2  # the runtime's run heartbeat: a run whose replica died is taken up again within a few of these


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server; scripts/test.sh does)")
    port = free_port()
    folder = tmp_path_factory.mktemp("redis")
    command = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    server = subprocess.Popen([*command, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode != 0:
        if time.monotonic() > deadline or server.poll() is not None:
            server.kill()
            pytest.fail("redis-server did not start")
        time.sleep(0.2)
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    server.wait(timeout=20)


@pytest.fixture(scope="module")
def team_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of the team's own: the runtime keeps its tables in the public schema."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver is not installed: pip install -e '.[dev]'")
    server = pgserver.get_server(tmp_path_factory.mktemp("team-postgres"), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    scripted = ScriptedOpenAI(
        slow_marker="DC terminal", slow_s=12.0, reply=lambda prompt: ERROR if "E04" in prompt else TORQUE
    )
    scripted.start()
    yield scripted
    scripted.stop()


@pytest.fixture(scope="module")
def team(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, redis_url: str, team_database: str, model: ScriptedOpenAI
) -> Iterator[dict]:
    """Replicas A and B, started together on the new database, and ana's key; the commissioning guide ingested
    through A."""
    root = tmp_path_factory.mktemp("team")
    keys = add_users(root / "users.json", {"ana": ["--role", "editor", "--projects", "demo"]})
    replicas = []
    for name in ("a", "b"):
        folder = root / name
        folder.mkdir()
        shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
        env = server_env(
            folder,  # the index is named "index" on both: one schema in the database
            cache_dir,
            root / "users.json",
            PAGEGRAPH_DATABASE_URL=team_database,
            PAGEGRAPH_REDIS_URL=redis_url,
            PAGEGRAPH_INGEST_ROOTS=json.dumps([str(SAMPLES)]),
            LG_BG_JOB_HEARTBEAT=str(HEARTBEAT_S),
            **model.settings(),
        )
        replicas.append(Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env))
    a, b = replicas
    for replica in replicas:
        replica.launch()
    for replica in replicas:  # both create the runtime's tables at once: neither may fail for the other
        replica.wait_ready()
    ingested = asyncio.run(ingest(a, keys["ana"], GUIDE))
    assert [f["status"] for f in ingested["report"]["files"]] == ["added"], ingested
    yield {"a": a, "b": b, "ana": keys["ana"]}
    for replica in replicas:
        replica.stop()


def sdk(server: Server, key: str):
    return get_client(url=server.url, api_key=key)


async def ingest(server: Server, key: str, name: str) -> dict:
    payload = {"paths": [str(SAMPLES / name)], "project": "demo", "confidentiality": "internal"}
    return await sdk(server, key).runs.wait(None, "ingest", input=payload)


async def settled(client, thread_id: str, run_id: str, timeout_s: float = 180) -> dict:
    deadline = time.monotonic() + timeout_s
    while (run := await client.runs.get(thread_id, run_id))["status"] in ("pending", "running"):
        assert time.monotonic() < deadline, f"run {run_id} still {run['status']} after {timeout_s:g} s"
        await asyncio.sleep(0.5)
    return run


async def running(client, thread_id: str, run_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while (await client.runs.get(thread_id, run_id))["status"] == "pending":
        assert time.monotonic() < deadline, f"run {run_id} not started after {timeout_s:g} s"
        await asyncio.sleep(0.2)


def test_a_document_ingested_through_one_replica_is_answered_by_the_other(team: dict) -> None:
    a, b, key = team["a"], team["b"], team["ana"]

    async def check() -> float:
        warm = await sdk(b, key).runs.wait(None, "rag", input={"question": QUESTION, "documents": [GUIDE]})
        assert warm["citations"], warm  # B has loaded its embedder: what follows times the index, not start-up
        assert [f["status"] for f in (await ingest(a, key, CALL))["report"]["files"]] == ["added"]
        started = time.monotonic()
        question = {"question": "What does the error code E04 on the battery mean?", "documents": [CALL]}
        output = await sdk(b, key).runs.wait(None, "rag", input=question)
        seconds = time.monotonic() - started
        assert not output["abstained"] and {c["source"] for c in output["citations"]} == {CALL}, (
            output["abstain_reason"],
            output["answer"],
        )
        return seconds

    print(f"ingested through A, answered by B in {run(check()):.2f} s (first try, no rebuild, no wait)")


def test_a_run_started_on_one_replica_is_joined_and_cancelled_from_the_other(team: dict) -> None:
    a, b, key = team["a"], team["b"], team["ana"]

    async def check() -> None:
        thread = (await sdk(a, key).threads.create())["thread_id"]
        assert (await sdk(b, key).threads.get(thread))["metadata"]["owner"] == "ana"
        started = await sdk(a, key).runs.create(thread, "rag", input={"question": SLOW, "documents": [GUIDE]})
        events = [part async for part in sdk(b, key).runs.join_stream(thread, started["run_id"])]
        assert "values" in {part.event for part in events}
        assert (await sdk(b, key).runs.get(thread, started["run_id"]))["status"] == "success"
        state = (await sdk(b, key).threads.get_state(thread))["values"]
        assert state["answer"] and {c["source"] for c in state["citations"]} == {GUIDE}

        cancelled = await sdk(a, key).runs.create(thread, "rag", input={"question": SLOW, "documents": [GUIDE]})
        await running(sdk(b, key), thread, cancelled["run_id"])
        await sdk(b, key).runs.cancel(thread, cancelled["run_id"])
        assert (await settled(sdk(a, key), thread, cancelled["run_id"]))["status"] == "interrupted"

    run(check())


def test_a_replica_killed_mid_run_loses_no_thread_and_the_run_ends_once(team: dict, model: ScriptedOpenAI) -> None:
    a, b, key = team["a"], team["b"], team["ana"]
    b.stop()  # A alone takes the run

    async def start() -> tuple[str, str]:
        thread = (await sdk(a, key).threads.create())["thread_id"]
        calls = model.calls
        started = await sdk(a, key).runs.create(thread, "rag", input={"question": SLOW, "documents": [GUIDE]})
        deadline = time.monotonic() + 60
        while model.calls == calls:  # the run's model call is open: mid-run
            assert time.monotonic() < deadline, "the run never called the model"
            await asyncio.sleep(0.2)
        return thread, started["run_id"]

    thread, run_id = run(start())
    a.kill()
    killed = time.monotonic()
    b.start()
    ended = run(settled(sdk(b, key), thread, run_id))
    print(f"killed A mid-run; the run ended {ended['status']} {time.monotonic() - killed:.0f} s later, on B")
    a.start()

    async def after() -> None:
        runs = await sdk(a, key).runs.list(thread)
        assert [(r["run_id"], r["status"]) for r in runs] == [(run_id, ended["status"])]
        assert ended["status"] in ("success", "error")
        values = (await sdk(a, key).threads.get_state(thread))["values"]
        if ended["status"] == "success":
            assert [m["type"] for m in values["messages"]] == ["human", "ai"], "one question, answered once"

    run(after())


def run(coroutine):
    return asyncio.run(coroutine)
