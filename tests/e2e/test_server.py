"""LangGraph server end to end: `pagegraph serve` (the production runtime) on a free loopback port in a temporary folder, driven with
langgraph_sdk as a user would. Documents go in through the `ingest` graph; questions are answered by the real
local model.

Two users: ana (projects demo, ceiling confidential) and ben (ceiling internal). The manual is ingested as
confidential, so ben must never receive evidence from it."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

from pagegraph import GRAPH_NAMES
from tests.conftest import REPO, SAMPLES
from tests.e2e.harness import Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
USERS = {
    "ana": ["--role", "editor", "--projects", "demo", "--ceiling", "confidential"],
    "ben": ["--role", "editor", "--projects", "demo", "--ceiling", "internal"],
}
KEYS: dict[str, str] = {}
MANUAL = "sb40-user-manual.pdf"
QUESTION = "How much does the SB-40 weigh?"
CONTEXT: dict = {}  # the default model, the embedded 1.5B
GRAPHS = {*GRAPH_NAMES, "ingest", "search"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    KEYS.update(add_users(folder / "users.json", USERS))
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_INGEST_ROOTS=json.dumps([str(SAMPLES)]),
        PAGEGRAPH_LLM_CONTEXT_TOKENS="4096",
    )
    running = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    running.start()
    yield running
    running.stop()


def client(server: Server, key: str):
    return get_client(url=server.url, api_key=key)


def run(coroutine):
    return asyncio.run(coroutine)


async def ingest(server: Server, key: str, paths: list[Path], confidentiality: str) -> dict:
    sdk = client(server, key)
    payload = {"paths": [str(p) for p in paths], "project": "demo", "confidentiality": confidentiality}
    return await sdk.runs.wait(None, "ingest", input=payload)


def test_documents_go_in_through_the_ingest_graph(server: Server) -> None:
    refused = run(ingest(server, KEYS["ben"], [SAMPLES / MANUAL], "confidential"))
    assert refused["report"] is None and "up to internal" in refused["error"]
    manual = run(ingest(server, KEYS["ana"], [SAMPLES / MANUAL], "confidential"))
    assert manual["error"] is None and [f["status"] for f in manual["report"]["files"]] == ["added"]
    rest = [SAMPLES / "commissioning-guide.md", SAMPLES / "support-call-2024-03-14.vtt"]
    others = run(ingest(server, KEYS["ana"], rest, "internal"))
    assert {f["name"]: f["status"] for f in others["report"]["files"]} == {
        "commissioning-guide.md": "added",
        "support-call-2024-03-14.vtt": "added",
    }
    bad = run(
        client(server, KEYS["ana"]).runs.wait(
            None, "ingest", input={"paths": ["https://example.com/a.pdf"], "project": "demo"}
        )
    )
    assert "only paths and file:// URLs" in bad["error"]


def test_requests_without_a_known_key_are_refused(server: Server) -> None:
    for key in (None, "not-a-key-0123456789"):
        request = urllib.request.Request(f"{server.url}/assistants/search", data=b"{}", method="POST")
        request.add_header("Content-Type", "application/json")
        if key:
            request.add_header("x-api-key", key)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
    for path in ("/info", "/openapi.json", "/docs", "/metrics"):  # what the server runs: signed-in users only
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}{path}", timeout=10)
        assert refused.value.code == 401, path
    with urllib.request.urlopen(f"{server.url}/ok", timeout=10) as health:  # the load balancer's check stays open
        assert health.status == 200


def test_every_graph_is_served_with_its_schemas(server: Server) -> None:
    async def check() -> None:
        sdk = client(server, KEYS["ana"])
        assistants = await sdk.assistants.search()
        assert {a["graph_id"] for a in assistants} == GRAPHS
        for assistant in assistants:
            schemas = await sdk.assistants.get_schemas(assistant["assistant_id"])
            for key in ("input_schema", "output_schema", "state_schema", "context_schema"):
                assert schemas[key] and schemas[key].get("properties"), (assistant["graph_id"], key)
        rag = next(a for a in assistants if a["graph_id"] == "rag")
        context = (await sdk.assistants.get_schemas(rag["assistant_id"]))["context_schema"]
        assert context["properties"]["retrieval"].get("description")  # the knobs come in groups
        assert context["$defs"]["RetrievalKnobs"]["properties"]["top_k_files"].get("description")

    run(check())


def test_answer_stream_state_history_and_a_restart(server: Server) -> None:
    async def ask() -> tuple[str, dict]:
        sdk = client(server, KEYS["ana"])
        thread = await sdk.threads.create()
        output = await sdk.runs.wait(
            thread["thread_id"], "rag", input={"question": QUESTION, "documents": [MANUAL]}, context=CONTEXT
        )
        assert not output["abstained"] and "98" in output["answer"], output["answer"]
        assert output["citations"] and all(c["source"] == MANUAL for c in output["citations"])
        stages, tokens = [], []
        async for part in sdk.runs.stream(
            thread["thread_id"],
            "rag",
            input={"question": "What is the usable capacity of the SB-40?", "documents": [MANUAL]},
            context=CONTEXT,
            stream_mode=["updates", "messages-tuple"],
            stream_subgraphs=True,
        ):
            if part.event.startswith("updates|rag:"):  # the run: the thread's subgraph
                stages.extend(part.data)
            elif part.event.startswith("messages|"):
                chunk, metadata = part.data
                if metadata.get("langgraph_node") == "answer" and chunk.get("content"):
                    tokens.append(chunk["content"])
        # a second question on the thread: the follow-up rewrite runs first
        assert (
            stages[:4] == ["start", "rewrite_followup", "highlight", "route"]
            and "answer" in stages
            and "verify" in stages
        ), stages
        assert len(tokens) > 3, "the answer arrives token by token"
        state = await sdk.threads.get_state(thread["thread_id"])
        assert "capacity" in state["values"]["question"] and state["values"]["answer"]
        history = await sdk.threads.get_history(thread["thread_id"], limit=100)
        assert len(history) >= 6, "three checkpoints a run on the thread: its input, its start, its end"
        assert {h["values"].get("question") for h in history} >= {QUESTION}
        return thread["thread_id"], state["values"]

    thread_id, values = run(ask())
    server.stop()
    server.start()

    async def again() -> None:
        sdk = client(server, KEYS["ana"])
        thread = await sdk.threads.get(thread_id)
        assert thread["metadata"]["owner"] == "ana"
        state = await sdk.threads.get_state(thread_id)
        assert state["values"]["answer"] == values["answer"]

    run(again())


def test_auto_runs_the_graph_it_chose_as_a_subgraph(server: Server) -> None:
    """Under the server's checkpointer, `auto` streams the stages of its choice (extract, for the local model)."""

    async def ask() -> tuple[list[str], list[str], dict]:
        sdk = client(server, KEYS["ana"])
        thread = await sdk.threads.create()
        outer, inner = [], []
        async for part in sdk.runs.stream(
            thread["thread_id"],
            "auto",
            input={"question": QUESTION, "documents": [MANUAL]},
            context=CONTEXT,
            stream_mode="updates",
            stream_subgraphs=True,
        ):
            if part.event.startswith("updates|auto:"):
                (inner if "|extract:" in part.event else outer).extend(part.data)
        return outer, inner, (await sdk.threads.get_state(thread["thread_id"]))["values"]

    outer, inner, values = run(ask())
    assert outer[-2:] == ["extract", "take_back"] and {"search", "read", "verify"} <= set(inner)
    assert "98" in values["answer"] and values["usage"]["calls"] >= 1
    assert [m["type"] for m in values["messages"]] == ["human", "ai"]


def test_users_see_only_their_threads_and_documents(server: Server) -> None:
    async def check() -> None:
        ana, ben = client(server, KEYS["ana"]), client(server, KEYS["ben"])
        thread = await ana.threads.create()
        with pytest.raises(NotFoundError):
            await ben.threads.get(thread["thread_id"])
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await ben.runs.wait(thread["thread_id"], "rag", input={"question": QUESTION}, context=CONTEXT)
        assert refused.value.response.status_code == 404
        assert thread["thread_id"] not in {t["thread_id"] for t in await ben.threads.search()}

        refused = await ben.runs.wait(None, "rag", input={"question": QUESTION, "documents": [MANUAL]}, context=CONTEXT)
        assert refused["abstained"] and not refused["evidence"] and not refused["citations"]
        everywhere = await ben.runs.wait(None, "rag", input={"question": QUESTION}, context=CONTEXT)
        assert all(e["source"] != MANUAL for e in everywhere["evidence"])
        assert all(c["source"] != MANUAL for c in everywhere["citations"])
        assert MANUAL not in everywhere["answer"]
        sneaky = await ben.runs.wait(
            None,
            "rag",
            input={"question": QUESTION, "filters": {"max_confidentiality": "confidential"}},
            context=CONTEXT,
        )
        assert all(e["source"] != MANUAL for e in sneaky["evidence"])

        allowed = await ana.runs.wait(None, "rag", input={"question": QUESTION, "documents": [MANUAL]}, context=CONTEXT)
        assert not allowed["abstained"] and allowed["citations"][0]["source"] == MANUAL

        mine = await ana.assistants.create("rag", context={"retrieval": {"top_k_files": 2}}, name="ana's rag")
        assert mine["assistant_id"] not in {a["assistant_id"] for a in await ben.assistants.search()}
        with pytest.raises(NotFoundError):
            await ben.assistants.get(mine["assistant_id"])
        assert {"rag", "extract"} <= {a["graph_id"] for a in await ben.assistants.search(limit=50)}  # the graphs

    run(check())
