"""Attacks on a real `pagegraph serve` (loopback, free port) by users of three roles, each answered with a refusal;
and what an editor may do still works. Runs answer with a scripted model server on loopback, so each takes well
under a second.

Users: root (admin), ed (editor of project corp, ceiling internal), rita and pat (readers of corp, internal).
The server ingests only from its upload folder; next to it lies a private folder no user may reach."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.conftest import PAGEGRAPH, REPO
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, served_routes, server_env

pytestmark = pytest.mark.slow
USERS = {
    "root": ["--role", "admin"],
    "ed": ["--role", "editor", "--projects", "corp", "--ceiling", "internal"],
    "rita": ["--role", "reader", "--projects", "corp", "--ceiling", "internal"],
    "pat": ["--role", "reader", "--projects", "corp", "--ceiling", "internal"],
}
DOCUMENTS = {
    "merger-plan.md": "# Project Falcon\n\nThe merger with Northwind closes at 41 dollars a share in March.\n",
    "ops-notes.md": "# Ops rota\n\nThe night shift of the ops team starts at 22:00 every weekday.\n",
    "retired.md": "# Retired plan\n\nThe retired plan moved the archive to the basement storage room.\n",
    "handbook.md": "# Corp handbook\n\nExpenses are filed by the fifth day of each month with receipts.\n",
}
SECRET = "# Vault\n\nThe vault code of the server room is 7391 and changes every quarter.\n"
PER_MINUTE = 25
NOT_FOUND = "no such file"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    scripted = ScriptedOpenAI(slow_s=4.0)
    scripted.start()
    yield scripted
    scripted.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model: ScriptedOpenAI) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("secure-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    uploads, private = folder / "uploads", folder / "private"
    (uploads / "links").mkdir(parents=True)
    private.mkdir()
    for name, text in DOCUMENTS.items():
        (uploads / name).write_text(text)
    (private / "secret.md").write_text(SECRET)
    (uploads / "links" / "secret-link.md").symlink_to(private / "secret.md")
    (uploads / "links" / "missing-link.md").symlink_to(private / "missing.md")
    keys = add_users(folder / "users.json", USERS)
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_UPLOAD_DIR=str(uploads),
        PAGEGRAPH_RUNS_PER_USER="2",
        PAGEGRAPH_RUNS_PER_USER_PER_MINUTE=str(PER_MINUTE),
        **model.settings(),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    try:
        admin = run(ingest(server, keys["root"], [uploads / "merger-plan.md"], "corp", "confidential"))
        assert [f["status"] for f in admin["report"]["files"]] == ["added"], admin
        admin = run(ingest(server, keys["root"], [uploads / "ops-notes.md", uploads / "retired.md"], "ops", "internal"))
        assert [f["status"] for f in admin["report"]["files"]] == ["added", "added"], admin
        yield {"server": server, "keys": keys, "uploads": uploads, "private": private, "model": model}
    finally:
        server.stop()


def run(coroutine):
    return asyncio.run(coroutine)


async def ingest(
    server: Server, key: str, paths: list, project: str | None, confidentiality: str = "internal", **extra
) -> dict:
    payload = {"paths": [str(p) for p in paths], "project": project, "confidentiality": confidentiality, **extra}
    return await get_client(url=server.url, api_key=key).runs.wait(None, "ingest", input=payload)


async def ask(server: Server, key: str, question: str, **context) -> dict:
    sdk = get_client(url=server.url, api_key=key)
    return await sdk.runs.wait(None, "basic", input={"question": question}, context=context)


def indexed(site: dict) -> dict[str, dict]:
    """Documents in the server's index and their tags, read straight from its store."""
    with sqlite3.connect(f"file:{site['server'].folder / 'index' / 'store.sqlite'}?mode=ro", uri=True) as db:
        return {name: json.loads(tags) for name, tags in db.execute("SELECT name, tags FROM documents")}


def outcomes(reply: dict) -> dict[str, tuple[str, str]]:
    return {f["path"]: (f["status"], f["reason"]) for f in reply["report"]["files"]}


def test_readers_may_not_ingest(site: dict) -> None:
    reply = run(ingest(site["server"], site["keys"]["rita"], [site["uploads"] / "handbook.md"], "corp"))
    assert reply["report"] is None and "role reader" in reply["error"]
    assert "handbook.md" not in indexed(site)


def test_re_labelling_a_document_out_of_reach_is_refused(site: dict) -> None:
    server, ed, uploads = site["server"], site["keys"]["ed"], site["uploads"]
    for named in (uploads / "merger-plan.md", "merger-plan.md", f"file://{uploads / 'merger-plan.md'}"):
        reply = run(ingest(server, ed, [named], "corp", "internal"))
        assert reply["error"] is None
        assert outcomes(reply) == {"merger-plan.md": ("failed", NOT_FOUND)}
    missing = run(ingest(server, ed, [uploads / "no-such-plan.md"], "corp", "internal"))
    assert outcomes(missing) == {"no-such-plan.md": ("failed", NOT_FOUND)}, "a hidden document reads as a missing one"
    other_project = run(ingest(server, ed, [uploads / "ops-notes.md"], "corp", "internal"))
    assert outcomes(other_project) == {"ops-notes.md": ("failed", NOT_FOUND)}
    tags = indexed(site)
    assert tags["merger-plan.md"]["confidentiality"] == "confidential" and tags["ops-notes.md"]["project"] == "ops"
    found = run(ask(server, ed, "At what price per share does the merger with Northwind close?"))
    assert all(e["source"] != "merger-plan.md" for e in found["evidence"])
    assert "41 dollars" not in json.dumps(found)


def test_reading_the_servers_disk_is_refused(site: dict) -> None:
    server, ed, uploads, private = site["server"], site["keys"]["ed"], site["uploads"], site["private"]
    secret, missing = private / "secret.md", private / "missing.md"
    attempts = [str(secret), str(missing), "../private/secret.md", f"file://{secret}", "links/secret-link.md"]
    reply = run(ingest(server, ed, attempts, "corp", "internal"))
    assert reply["error"] is None
    assert {status for status, _ in outcomes(reply).values()} == {"failed"}
    assert {reason for _, reason in outcomes(reply).values()} == {NOT_FOUND}, "existing and missing look the same"
    assert "7391" not in json.dumps(reply)
    folder = run(ingest(server, ed, [uploads / "links"], "corp", "internal"))
    assert outcomes(folder) == {
        "links/secret-link.md": ("failed", "a link out of the ingest folders"),
        "links/missing-link.md": ("failed", "a link out of the ingest folders"),
    }
    assert not {"secret.md", "secret-link.md", "missing-link.md"} & set(indexed(site))
    found = run(ask(server, ed, "What is the vault code of the server room?"))
    assert "7391" not in json.dumps(found)


def test_pruning_leaves_documents_the_editor_cannot_see(site: dict) -> None:
    server, keys, uploads = site["server"], site["keys"], site["uploads"]
    (uploads / "retired.md").unlink()
    reply = run(ingest(server, keys["ed"], [], "corp", prune=True))
    assert reply["error"] is None and "retired" not in json.dumps(reply)
    assert "retired.md" in indexed(site)
    by_admin = run(ingest(server, keys["root"], [], None, prune=True))
    assert outcomes(by_admin) == {"retired.md": ("removed", "")}
    assert "retired.md" not in indexed(site)


def test_an_editor_adds_retags_and_prunes_within_their_reach(site: dict) -> None:
    server, ed, uploads = site["server"], site["keys"]["ed"], site["uploads"]
    added = run(ingest(server, ed, ["handbook.md"], "corp", "internal"))
    assert outcomes(added) == {"handbook.md": ("added", "")}
    lowered = run(ingest(server, ed, [uploads / "handbook.md"], "corp", "public"))
    assert outcomes(lowered)["handbook.md"][0] == "failed" and "--declassify" in outcomes(lowered)["handbook.md"][1]
    assert indexed(site)["handbook.md"]["confidentiality"] == "internal", "no declassification nobody asked for"
    with httpx.Client(base_url=server.url, timeout=30) as http:
        entries = http.get("/ui/audit?limit=200", headers={"x-api-key": site["keys"]["root"]}).json()["entries"]
    assert any(e["event"] == "declassify_refused" and "handbook.md" in e["reason"] for e in entries), entries[-3:]
    not_admin = run(ingest(server, ed, [uploads / "handbook.md"], "corp", "public", declassify=True))
    assert "admin" in not_admin["error"]
    retagged = run(ingest(server, site["keys"]["root"], [uploads / "handbook.md"], "corp", "public", declassify=True))
    assert outcomes(retagged) == {"handbook.md": ("retagged", "")}
    assert indexed(site)["handbook.md"]["confidentiality"] == "public"
    found = run(ask(server, site["keys"]["rita"], "By which day of the month are expenses filed?"))
    assert [e["source"] for e in found["evidence"]][:1] == ["handbook.md"]
    refused = run(ingest(server, ed, ["handbook.md"], "corp", "confidential"))
    assert "up to internal" in refused["error"] and indexed(site)["handbook.md"]["confidentiality"] == "public"
    (uploads / "draft.md").write_text("# Draft\n\nA draft the editor adds, then deletes from the uploads.\n")
    assert outcomes(run(ingest(server, ed, ["draft.md"], "corp"))) == {"draft.md": ("added", "")}
    (uploads / "draft.md").unlink()
    assert outcomes(run(ingest(server, ed, [], "corp", prune=True))) == {"draft.md": ("removed", "")}
    (uploads / "notes.md").write_text("# Notes\n\nNotes the editor adds, then removes by name.\n")
    assert outcomes(run(ingest(server, ed, ["notes.md"], "corp"))) == {"notes.md": ("added", "")}
    removed = run(ingest(server, ed, [], "corp", remove=["notes.md"]))
    assert removed["error"] is None and outcomes(removed) == {"notes.md": ("removed", "")}
    assert "notes.md" not in indexed(site)
    assert [e["reason"] for e in audit_entries(site, "documents_removed", "ed")] == ["notes.md"]


def test_a_bad_context_value_gets_its_clear_message(site: dict) -> None:
    with pytest.raises(Exception, match="server users answer from the server's index") as failed:
        run(ask(site["server"], site["keys"]["rita"], "What is the rota?", index="/etc"))
    assert "internal error" not in str(failed.value)


def test_oversized_requests_are_refused_with_the_limit_named(site: dict, model: ScriptedOpenAI) -> None:
    server, rita = site["server"], site["keys"]["rita"]
    huge = {"assistant_id": "basic", "input": {"question": "why? " * 400_000}}
    reply = httpx.post(f"{server.url}/runs/wait", json=huge, headers={"x-api-key": rita}, timeout=60)
    assert reply.status_code == 413 and "PAGEGRAPH_MAX_REQUEST_BYTES" in reply.json()["detail"]
    calls = model.calls
    long_question = "Which shift starts first? " * 400  # 10,400 characters: under the body limit
    with httpx.Client(base_url=server.url, headers={"x-api-key": rita}, timeout=60) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        asked = {"assistant_id": "basic", "input": {"question": long_question}}
        refused = http.post(f"/threads/{thread}/runs/wait", json=asked)
        assert refused.status_code == 413 and "PAGEGRAPH_MAX_QUESTION_CHARS" in refused.json()["detail"]
        assert len(refused.text) < 5000, "the question is not echoed back"
        assert http.get(f"/threads/{thread}/runs").json() == [], "no run stored the question"
    assert model.calls == calls, "refused before any model call"


def test_runs_per_user_are_limited_at_once_and_per_minute(site: dict) -> None:
    server, keys = site["server"], site["keys"]

    async def at_once() -> None:
        ed = get_client(url=server.url, api_key=keys["ed"])
        slow = {"question": "SLOW-QUESTION: by which day of the month are expenses filed?"}
        threads = [await ed.threads.create() for _ in range(3)]
        running = [await ed.runs.create(t["thread_id"], "basic", input=slow) for t in threads[:2]]
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await ed.runs.create(threads[2]["thread_id"], "basic", input=slow)
        assert refused.value.response.status_code == 429
        assert "PAGEGRAPH_RUNS_PER_USER" in refused.value.response.json()["detail"]
        async with httpx.AsyncClient(base_url=server.url, headers={"x-api-key": keys["ed"]}, timeout=60) as http:
            entries = {
                "/runs/batch": [{"assistant_id": "basic", "input": slow}],
                "/runs/wait": {"assistant_id": "basic", "input": slow},
            }
            for path, body in entries.items():
                reply = await http.post(path, json=body)
                assert reply.status_code == 429 and int(reply.headers["retry-after"]) > 0, (path, reply.text[:300])
        other = await ask(server, keys["rita"], "By which day of the month are expenses filed?")
        assert other["evidence"], "another user's run is not held up by ed's limit"
        for thread, started in zip(threads, running):
            await ed.runs.join(thread["thread_id"], started["run_id"])
        await asyncio.sleep(0.5)
        again = await ed.runs.create(threads[2]["thread_id"], "basic", input={"question": "What is the rota?"})
        await ed.runs.join(threads[2]["thread_id"], again["run_id"])

    async def per_minute() -> None:
        pat = get_client(url=server.url, api_key=keys["pat"])
        for _ in range(PER_MINUTE):
            assert (await pat.runs.wait(None, "basic", input={"question": ""}))["abstained"]
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await pat.runs.wait(None, "basic", input={"question": ""})
        assert refused.value.response.status_code == 429
        assert "PAGEGRAPH_RUNS_PER_USER_PER_MINUTE" in refused.value.response.json()["detail"]
        assert int(refused.value.response.headers["retry-after"]) > 0

    run(at_once())
    run(per_minute())


def test_a_reader_editing_their_thread_state_reads_nothing_beyond_their_rights(site: dict) -> None:
    """The attack of an interrupt before the run and a state edit that drops the filters, over HTTP: the
    confidential sentence is in no streamed event and not in the thread's state (the run's `start` narrows them
    again; its later stages are out of reach: the run is the thread's subgraph, fresh each time)."""
    server, rita = site["server"], site["keys"]["rita"]
    question = "At what price per share does the merger with Northwind close?"
    with httpx.Client(base_url=server.url, headers={"x-api-key": rita}, timeout=60) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        first = {"assistant_id": "extract", "input": {"question": "hello"}, "interrupt_before": ["extract"]}
        assert http.post(f"/threads/{thread}/runs/wait", json=first).status_code == 200
        edit = {"values": {"question": question, "filters": None, "documents": ["merger-plan.md"]}}
        edited = http.post(f"/threads/{thread}/state", json=edit)
        assert edited.status_code == 200, edited.text
        resume = {
            "assistant_id": "extract",
            "input": None,
            "stream_mode": ["updates", "values", "messages-tuple"],
            "stream_subgraphs": True,
        }
        with http.stream("POST", f"/threads/{thread}/runs/stream", json=resume) as streamed:
            events = "".join(streamed.iter_text())
        state = http.get(f"/threads/{thread}/state").text
    assert "event: values" in events and question in state, "the edited run did run"
    assert "41 dollars" not in events and "41 dollars" not in state


def test_other_sites_pages_cannot_drive_the_server(site: dict) -> None:
    server, rita = site["server"], site["keys"]["rita"]
    evil = {"origin": "http://evil.example", "x-api-key": rita}
    body = json.dumps({"assistant_id": "basic", "input": {"question": "What is the rota?"}})
    cross = httpx.post(f"{server.url}/runs/wait", content=body, headers={**evil, "content-type": "text/plain"})
    assert cross.status_code == 403 and "PAGEGRAPH_ALLOWED_ORIGINS" in cross.json()["detail"]
    preflight = httpx.options(
        f"{server.url}/runs/wait", headers={**evil, "access-control-request-method": "POST"}, timeout=30
    )
    assert preflight.status_code == 403
    own = {"origin": server.url, "x-api-key": rita}
    simple = httpx.post(f"{server.url}/runs/wait", content=body, headers={**own, "content-type": "text/plain"})
    assert simple.status_code == 403 and "application/json" in simple.json()["detail"]
    same = httpx.post(f"{server.url}/runs/wait", content=body, headers={**own, "content-type": "application/json"})
    assert same.status_code == 200, same.text
    assert not any(name.lower().startswith("access-control-") for name in same.headers)


def test_a_dns_rebinding_host_is_refused(site: dict) -> None:
    server, rita = site["server"], site["keys"]["rita"]
    port = server.url.rsplit(":", 1)[1]
    rebound = httpx.get(f"{server.url}/ui/documents", headers={"host": f"evil.example:{port}", "x-api-key": rita})
    assert rebound.status_code == 403 and "PAGEGRAPH_ALLOWED_HOSTS" in rebound.json()["detail"]
    local = httpx.get(f"{server.url}/ui/documents", headers={"host": f"localhost:{port}", "x-api-key": rita})
    assert local.status_code == 200


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model: ScriptedOpenAI) -> Iterator[Server]:
    """A server with no users file: every request is the local owner's, so other pages are what must be kept out."""
    folder = tmp_path_factory.mktemp("open-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    env = server_env(folder, cache_dir, folder / "users.json", **model.settings())
    del env["PAGEGRAPH_AUTH_FILE"]
    env.pop("PAGEGRAPH_ALLOWED_ORIGINS", None)
    env.pop("PAGEGRAPH_ALLOWED_HOSTS", None)
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    yield server
    server.stop()


def test_without_users_other_sites_pages_and_rebound_hosts_are_refused(open_server: Server) -> None:
    url, port = open_server.url, open_server.url.rsplit(":", 1)[1]
    form = httpx.post(
        f"{url}/runs/wait",
        content=json.dumps({"assistant_id": "ingest", "input": {"paths": ["/etc/passwd"]}}),
        headers={"origin": "http://evil.example", "content-type": "text/plain"},
    )
    assert form.status_code == 403
    assert httpx.get(f"{url}/ui/documents", headers={"host": f"rebind.example:{port}"}).status_code == 403
    assert httpx.get(f"{url}/ui/documents", headers={"origin": "http://evil.example"}).status_code == 403
    assert httpx.get(f"{url}/ui/documents").status_code == 200  # a local program (no page, no foreign host)


def test_crons_count_against_the_runs_a_user_may_have_at_once(site: dict) -> None:
    async def attempt() -> None:
        pat = get_client(url=site["server"].url, api_key=site["keys"]["pat"])
        yearly = {"schedule": "0 3 1 1 *", "input": {"question": "What is the rota?"}}
        made = [await pat.crons.create("basic", **yearly) for _ in range(2)]  # PAGEGRAPH_RUNS_PER_USER is 2
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await pat.crons.create("basic", **yearly)
        assert refused.value.response.status_code == 429
        assert "PAGEGRAPH_RUNS_PER_USER" in refused.value.response.json()["detail"]
        for cron in made:
            await pat.crons.delete(cron["cron_id"])
        again = await pat.crons.create("basic", **yearly)
        await pat.crons.delete(again["cron_id"])
        # a cron holds one of rita's two slots: one run of her own at a time, so the cron's and hers never make 3
        # (rita: pat has started her runs of this minute)
        rita = get_client(url=site["server"].url, api_key=site["keys"]["rita"])
        cron = await rita.crons.create("basic", **yearly)
        slow = {"question": "SLOW-QUESTION: by which day of the month are expenses filed?"}
        threads = [await rita.threads.create() for _ in range(2)]
        running = await rita.runs.create(threads[0]["thread_id"], "basic", input=slow)
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await rita.runs.create(threads[1]["thread_id"], "basic", input=slow)
        assert refused.value.response.status_code == 429
        assert "1 runs going and 1 cron" in refused.value.response.json()["detail"]
        await rita.runs.cancel(threads[0]["thread_id"], running["run_id"], wait=True)
        await rita.crons.delete(cron["cron_id"])

    run(attempt())


def test_a_scheduled_search_reads_what_its_owner_may_read_now(site: dict) -> None:
    """Crons run as their owner with the owner's rights read at each run: rita's finds the corp rota she may read,
    never the ops rota (another project) or the confidential plan (above her ceiling); a cron whose owner left the
    users file stops, and a cron sent with someone else's user in its config still runs as its creator."""
    server, keys = site["server"], site["keys"]
    rota = site["uploads"] / "corp-rota.md"
    rota.write_text("# Corp desk rota\n\nThe night shift of the corp desk starts at 23:00 on Fridays.\n")
    added = run(ingest(server, keys["root"], [rota], "corp", "internal"))
    assert [f["status"] for f in added["report"]["files"]] == ["added"], added
    cora = add_users(server.folder / "users.json", {"cora": USERS["rita"]})["cora"]
    question = {"question": "When does the night shift start? Merger price?"}
    forged = {"configurable": {"langgraph_auth_user": {"identity": "root", "pagegraph_access": {"role": "admin"}}}}

    async def schedule_and_wait() -> tuple[str | None, list]:
        if time.localtime().tm_sec > 50:  # every cron's first run is at the next minute: start well before it
            await asyncio.sleep(62 - time.localtime().tm_sec)
        made = {}
        for name, key in (("rita", keys["rita"]), ("cora", cora)):
            sdk = get_client(url=server.url, api_key=key)
            thread = (await sdk.threads.create())["thread_id"]
            cron = await sdk.crons.create_for_thread(
                thread, "search", schedule="* * * * *", input=question, config=forged
            )
            made[name] = (sdk, thread, cron["cron_id"])
        remove = [str(PAGEGRAPH), "users", "remove", "cora", "--file", str(server.folder / "users.json")]
        await asyncio.to_thread(subprocess.run, remove, check=True, capture_output=True)
        rita, thread, cron_id = made["rita"]
        try:
            status, deadline = None, time.monotonic() + 150
            while status is None and time.monotonic() < deadline:
                await asyncio.sleep(3)
                done = [r["status"] for r in await rita.runs.list(thread) if r["status"] in ("success", "error")]
                status = done[0] if done else None
            return status, (await rita.threads.get_state(thread))["values"].get("retrieved") or []
        finally:
            await rita.crons.delete(cron_id)

    status, retrieved = run(schedule_and_wait())
    assert status == "success"
    sources = {passage["source"] for passage in retrieved}
    assert "corp-rota.md" in sources and not sources & {"ops-notes.md", "merger-plan.md", "retired.md"}, sources
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not audit_entries(site, "scheduled_run_refused", "cora"):
        time.sleep(1)
    assert audit_entries(site, "scheduled_run_refused", "cora"), "cora's cron ran after she left the users file"


def audit_entries(site: dict, event: str, user: str) -> list[dict]:
    with httpx.Client(base_url=site["server"].url, headers={"x-api-key": site["keys"]["root"]}) as http:
        entries = http.get("/ui/audit?limit=200").json()["entries"]
    return [e for e in entries if e["event"] == event and e["who"] == user]


def long_text(sentences: int) -> str:
    """A document that takes a while to embed: numbered sections of distinct sentences."""
    lines = []
    for n in range(sentences):
        if n % 40 == 0:
            lines.append(f"\n## Section {n // 40}\n")
        lines.append(f"Record {n} notes that shipment {n * 7 % 1009} left dock {n % 13} with {n % 97} crates.")
    return "# Shipping ledger\n" + "\n".join(lines) + "\n"


def test_cancelling_an_ingest_stops_it_and_frees_the_index_at_once(site: dict) -> None:
    server, root, uploads = site["server"], site["keys"]["root"], site["uploads"]
    (uploads / "ledger.md").write_text(long_text(30_000))  # minutes of embedding on two cores

    async def cancel() -> float:
        sdk = get_client(url=server.url, api_key=root)
        thread = await sdk.threads.create()
        payload = {"paths": ["ledger.md"], "project": "ops", "confidentiality": "internal"}
        started = await sdk.runs.create(thread["thread_id"], "ingest", input=payload)
        for _ in range(120):
            if (await sdk.runs.get(thread["thread_id"], started["run_id"]))["status"] == "running":
                break
            await asyncio.sleep(0.25)
        await asyncio.sleep(3)  # into the parse or the embedding
        began = asyncio.get_running_loop().time()
        await sdk.runs.cancel(thread["thread_id"], started["run_id"], wait=True)
        waited = asyncio.get_running_loop().time() - began
        assert (await sdk.runs.get(thread["thread_id"], started["run_id"]))["status"] == "interrupted"
        return waited

    assert run(cancel()) < 20
    # the cancelled run winds down within one embedding batch: the next ingest finds the index free in seconds
    (uploads / "next.md").write_text("# Next\n\nThe next ingest finds the index free within seconds.\n")
    began = time.monotonic()
    after = run(ingest(server, root, [uploads / "next.md"], "ops"))
    while after["error"] and "being written" in after["error"] and time.monotonic() - began < 30:
        time.sleep(1)
        after = run(ingest(server, root, [uploads / "next.md"], "ops"))
    assert outcomes(after) == {"next.md": ("added", "")}, after
    assert "ledger.md" not in indexed(site) and "next.md" in indexed(site)


OPEN_ROUTES = {"/", "/ok", "/favicon.ico", "/ui/static/{path}"}


def websocket_refused(url: str) -> bool:
    """Whether the server refuses to open a websocket at `url` (its handshake answered 401 or 403)."""
    try:
        with connect(url.replace("http://", "ws://", 1), open_timeout=10):
            return False
    except InvalidStatus as exc:
        return exc.response.status_code in (401, 403)


def test_every_route_but_the_page_shell_and_ok_needs_a_key(site: dict) -> None:
    """Each route the app serves (its ASGI router, not only the OpenAPI document), called with every method it takes
    and no key: refused with 401 before it runs, except the page shell, its static files and /ok. The development
    server's own routes do not exist, for anyone."""
    server = site["server"]
    routes = served_routes(server.folder / "langgraph.json")
    paths = {path for path, _ in routes}
    assert {"/mcp", "/runs/crons", "/runs/batch", "/store/items/search", "/ui/uploads"} <= paths, paths
    # the development server's routes, and entries that would start runs around the limits, are not served
    assert not any(path.startswith(("/internal", "/deploy", "/a2a")) for path in paths), paths
    assert not any(path.endswith(("/commands", "/stream/events")) for path in paths), paths
    answered = {}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for path, methods in routes:
            concrete = re.sub(r"\{[^}]+\}", lambda m: "x.png" if m.group(0) == "{page}" else str(uuid.uuid4()), path)
            for method in methods:
                if method == "WEBSOCKET":
                    assert websocket_refused(server.url + concrete), path
                    continue
                reply = http.request(method, concrete, json={} if method in ("POST", "PUT", "PATCH") else None)
                answered[f"{method} {path}"] = reply.status_code
                if path in OPEN_ROUTES and method in ("GET", "HEAD"):
                    assert reply.status_code in (200, 404), (method, path, reply.text[:200])
                else:
                    assert reply.status_code == 401, (method, path, reply.status_code, reply.text[:200])
    assert len(answered) > 70
    with httpx.Client(base_url=server.url, headers={"x-api-key": site["keys"]["root"]}, timeout=30) as http:
        for path in ("/internal/truncate", "/internal/debug/thread/x", "/deploy"):
            assert http.post(path, json={}).status_code in (404, 405), path


def test_every_entry_refuses_an_oversized_question_with_413(site: dict) -> None:
    """A question past PAGEGRAPH_MAX_QUESTION_CHARS is refused before any run stores it, whichever entry carries
    it: a run's input, a batch, a command's state update, a cron (an MCP tool call answers a tool error:
    tests/e2e/test_mcp.py)."""
    server, rita = site["server"], site["keys"]["rita"]
    long_question = "Which shift starts first? " * 240  # 6,240 characters, under the body limit
    with httpx.Client(base_url=server.url, headers={"x-api-key": rita}, timeout=60) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        entries = {
            "/runs/wait": {"assistant_id": "basic", "input": {"question": long_question}},
            "/runs/batch": [
                {"assistant_id": "basic", "input": {"question": "ok"}},
                {"assistant_id": "basic", "input": {"question": long_question}},
            ],
            f"/threads/{thread}/runs/wait": {
                "assistant_id": "basic",
                "command": {"update": {"question": long_question}},
            },
            "/runs/crons": {"assistant_id": "basic", "schedule": "0 3 1 1 *", "input": {"question": long_question}},
        }
        for path, body in entries.items():
            reply = http.post(path, json=body)
            assert reply.status_code == 413, (path, reply.status_code, reply.text[:300])
            assert "PAGEGRAPH_MAX_QUESTION_CHARS" in reply.json()["detail"]
        assert http.get(f"/threads/{thread}/runs").json() == [], "no run stored the question"
        cron = http.post(
            "/runs/crons", json={"assistant_id": "basic", "schedule": "0 3 1 1 *", "input": {"question": "ok"}}
        )
        cron_id = cron.json()["cron_id"]
        update = http.patch(f"/runs/crons/{cron_id}", json={"input": {"question": long_question}})
        assert update.status_code == 413, update.text[:300]
        http.delete(f"/runs/crons/{cron_id}")
        # a state edit is a write of the thread too: a run resumed from it (input null) would hand the model a
        # 900,000-character prompt
        calls = site["model"].calls
        huge = {"values": {"question": "x" * 900_000}, "as_node": "start"}
        edited = http.post(f"/threads/{thread}/state", json=huge)
        assert edited.status_code == 413 and "PAGEGRAPH_MAX_QUESTION_CHARS" in edited.json()["detail"], edited.text
        http.post(f"/threads/{thread}/runs/wait", json={"assistant_id": "basic", "input": None})
        assert site["model"].calls == calls, "the model never saw it"


def test_refusals_are_in_the_audit_log_which_only_admins_read(site: dict) -> None:
    server, keys = site["server"], site["keys"]
    guessed = "pg_deadbeef_" + "s3cret" * 4
    assert httpx.get(f"{server.url}/threads/search", headers={"x-api-key": guessed}).status_code in (401, 405)
    httpx.post(f"{server.url}/threads/search", json={}, headers={"x-api-key": guessed})
    refused = run(ingest(server, keys["rita"], [site["uploads"] / "handbook.md"], "corp"))
    assert "role reader" in (refused["error"] or ""), refused
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.get("/ui/audit", headers={"x-api-key": keys["rita"]}).status_code == 403
        entries = http.get("/ui/audit?limit=200", headers={"x-api-key": keys["root"]}).json()["entries"]
    seen = {(entry["event"], entry["who"]) for entry in entries}
    assert ("sign_in_refused", "key deadbeef") in seen, entries[-5:]
    assert ("ingest_refused", "rita") in seen and ("role_refused", "rita") in seen, entries[-5:]
    assert all("s3cret" not in json.dumps(entry) for entry in entries), "no secret is ever written"
    log = (server.folder / "index" / "server" / "server.log").read_text()
    assert "audit sign_in_refused who=key deadbeef" in log


def test_a_healthy_start_prints_one_screen_without_a_traceback(site: dict) -> None:
    """What `pagegraph serve` prints on a healthy start: the address, index, users, model, runtime and log, then
    'ready' — one screen, no traceback (the runtime's own lines go to its log)."""
    printed = (site["server"].folder / "server.log").read_text()
    start = printed[: printed.index("Ctrl-C stops it") + len("Ctrl-C stops it")]
    assert "Traceback" not in start and len(start.splitlines()) <= 16, start
    for line in ("pagegraph serve http://127.0.0.1:", "  users     ", "  model     ", "  runtime   ", "ready in "):
        assert line in start, (line, start)
