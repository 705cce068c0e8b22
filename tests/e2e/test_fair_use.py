"""No user can degrade another's service, against a real `pagegraph serve` (loopback, users file, two workers) and a
scripted model whose calls for the slow question take 8 s each, counted at the model: a reader who cancels and
restarts slow runs cannot make another user wait, a cancelled run stops calling the model, and the per-user run
limit is one limit across the workers."""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
SLOW = "When does the night shift start?"  # its calls reach the model (no gate abstains) and each takes 8 s
ROUNDS = 3


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("cancel-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    uploads = folder / "uploads"
    uploads.mkdir()
    (uploads / "rota.md").write_text("# Rota\n\nThe night shift starts at 22:00 every weekday.\n")
    keys = add_users(folder / "users.json", {"root": ["--role", "admin"], "rita": []})
    model = ScriptedOpenAI(slow_marker="night shift", slow_s=8.0)
    model.start()
    env = server_env(folder, cache_dir, folder / "users.json", PAGEGRAPH_UPLOAD_DIR=str(uploads), **model.settings())
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env, workers=2)
    server.start()
    time.sleep(5)  # both workers up (one answers /ok first)
    try:
        with httpx.Client(base_url=server.url, headers={"x-api-key": keys["root"]}, timeout=120) as http:
            added = http.post(
                "/runs/wait", json={"assistant_id": "ingest", "input": {"paths": [str(uploads / "rota.md")]}}
            )
            assert added.json()["report"]["files"][0]["status"] == "added", added.text
        yield {"server": server, "keys": keys, "model": model}
    finally:
        server.stop()
        model.stop()


def test_a_reader_cancelling_and_restarting_slow_runs_neither_stalls_others_nor_keeps_the_model_busy(
    site: dict,
) -> None:
    model = site["model"]
    reader = httpx.Client(base_url=site["server"].url, headers={"x-api-key": site["keys"]["rita"]}, timeout=60)
    admin = httpx.Client(base_url=site["server"].url, headers={"x-api-key": site["keys"]["root"]}, timeout=120)
    waits, started = [], 0
    with reader, admin:
        for _ in range(ROUNDS):
            runs = []
            for _ in range(2):
                thread = reader.post("/threads", json={}).json()["thread_id"]
                made = reader.post(f"/threads/{thread}/runs", json={"assistant_id": "rag", "input": {"question": SLOW}})
                assert made.status_code in (200, 429), made.text  # 429: the cancelled ones still wind down
                if made.status_code == 200:
                    runs.append((thread, made.json()["run_id"]))
            started += len(runs)
            time.sleep(2.5)
            for thread, run in runs:
                reader.post(f"/threads/{thread}/runs/{run}/cancel")
            for _ in range(3):
                asked = time.monotonic()
                assert admin.get("/ui/me").status_code == 200
                waits.append(time.monotonic() - asked)
        assert model.calls >= 1, "the runs reached the model before they were cancelled"
        time.sleep(20)  # what the cancelled runs still do: the calls under way (8 s each) end, and nothing follows
    assert started >= 2 and max(waits) < 2.0, (started, waits)
    # each run was cancelled during its first call (the plan's, whose scripted reply is no plan: a repair call would
    # follow in the same stage): that call is the only one it makes
    assert model.calls <= started, f"{model.calls} model calls for {started} runs cancelled during their first"
    print(f"{started} runs cancelled, {model.calls} model calls; admin waits p50 {statistics.median(waits):.2f} s")


def test_the_runs_a_user_may_have_at_once_are_one_limit_across_the_workers(site: dict) -> None:
    """Six slow runs asked at once, each on a connection of its own (the workers take connections in turn): two are
    started, whichever worker took them (PAGEGRAPH_RUNS_PER_USER, 2), the rest get 429."""
    url, key = site["server"].url, site["keys"]["rita"]
    time.sleep(12)  # the reader's runs of the test before have ended
    statuses, runs = [], []
    for _ in range(6):
        with httpx.Client(base_url=url, headers={"x-api-key": key}, timeout=60) as fresh:
            thread = fresh.post("/threads", json={}).json()["thread_id"]
            made = fresh.post(f"/threads/{thread}/runs", json={"assistant_id": "rag", "input": {"question": SLOW}})
            statuses.append(made.status_code)
            if made.status_code == 200:
                runs.append((thread, made.json()["run_id"]))
    with httpx.Client(base_url=url, headers={"x-api-key": key}, timeout=60) as http:
        for thread, run in runs:
            http.post(f"/threads/{thread}/runs/{run}/cancel")
    assert sorted(statuses) == [200, 200, 429, 429, 429, 429], statuses
