"""Malformed input against a real `pagegraph serve` (loopback, users file, scripted model): every operation of its
OpenAPI document gets schemathesis's generated requests, valid and invalid (wrong types, missing fields, odd
values), and every graph gets inputs and state updates of any JSON shape from hypothesis. Nothing answers 5xx, and
the server still answers a question afterwards."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.conftest import REPO
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
EXAMPLES = 6  # per operation and mode: every route is reached with a handful of bodies, and the test stays bounded
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("fuzzed-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    uploads = folder / "uploads"
    uploads.mkdir()
    (uploads / "rota.md").write_text("# Rota\n\nThe night shift starts at 22:00 every weekday.\n")
    keys = add_users(folder / "users.json", {"root": ["--role", "admin"]})
    model = ScriptedOpenAI()
    model.start()
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_UPLOAD_DIR=str(uploads),
        PAGEGRAPH_RUNS_PER_USER_PER_MINUTE="10000",  # the rate limit has its own tests; here it would only stall
        **model.settings(),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    try:
        with httpx.Client(base_url=server.url, headers={"x-api-key": keys["root"]}, timeout=120) as http:
            added = http.post(
                "/runs/wait", json={"assistant_id": "ingest", "input": {"paths": [str(uploads / "rota.md")]}}
            )
            assert added.status_code == 200 and added.json()["report"]["files"][0]["status"] == "added", added.text
            yield {"server": server, "http": http}
    finally:
        server.stop()
        model.stop()


def still_answers(http: httpx.Client) -> None:
    assert http.get("/ok").status_code == 200
    reply = http.post(
        "/runs/wait", json={"assistant_id": "basic", "input": {"question": "When does the night shift start?"}}
    )
    assert reply.status_code == 200 and reply.json().get("answer"), reply.text[:500]


def test_no_operation_answers_generated_requests_with_a_5xx(served: dict) -> None:
    http = served["http"]
    document = http.get("/openapi.json")
    assert document.status_code == 200, document.text[:300]
    schema = schemathesis.openapi.from_dict(document.json())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40, "the sweep reaches langgraph-api's whole API"
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                probe_operation(served, operation, mode, failures, statuses)
            except Unsatisfiable:  # nothing in the operation to break: no parameters, no body
                assert mode is GenerationMode.NEGATIVE, operation.label
    assert not failures, "\n".join(sorted(set(failures))[:40])
    assert sum(statuses.values()) >= 2 * len(operations), statuses
    print(f"{len(operations)} operations, answers by status: {dict(sorted(statuses.items()))}")
    still_answers(http)


def probe_operation(served: dict, operation, mode: GenerationMode, failures: list[str], statuses: Counter) -> None:
    """Generated requests of one kind (valid or not) for one operation, sent as the admin; 5xx answers noted."""

    @FUZZ
    @given(case=operation.as_strategy(generation_mode=mode))
    def probe(case: schemathesis.Case) -> None:
        response = case.call(base_url=served["server"].url, headers=dict(served["http"].headers), timeout=60)
        statuses[response.status_code] += 1
        if response.status_code >= 500:
            failures.append(
                f"{case.method} {case.formatted_path} {mode.value} → {response.status_code}: "
                f"{response.text[:200]} (body {str(case.body)[:200]})"
            )

    probe()


CRASHES = {"AttributeError", "TypeError", "KeyError", "IndexError", "ValidationError"}
GRAPHS = ["basic", "search", "rag", "auto", "small_model", "pageindex", "extract", "ingest"]


def test_graph_inputs_and_state_updates_of_any_shape_never_answer_5xx(served: dict) -> None:
    """Every graph's input keys and state keys, each given any JSON value, as a run's input and as a state update
    of a thread (with and without a node to write as): 2xx or a 4xx naming the problem, never a 5xx, and no run
    that a malformed input crashed."""
    http = served["http"]
    failures: list[str] = []
    statuses: Counter[str] = Counter()
    for graph in GRAPHS:
        probe_graph(http, graph, failures, statuses)
    assert not failures, "\n".join(failures[:40])
    thread = http.post("/threads", json={"metadata": {"graph_id": "basic"}}).json()["thread_id"]
    assert http.post(f"/threads/{thread}/state", json={"values": {"question": "When?"}}).status_code == 200
    refused = http.post(f"/threads/{thread}/state", json={"values": {"retrieved": 5}})
    assert refused.status_code == 422 and "'retrieved'" in refused.json()["detail"], refused.text
    refused = http.post("/runs/wait", json={"assistant_id": "basic", "input": {"question": {"text": "When?"}}})
    assert refused.status_code == 422 and "question: Input should be a valid string" in refused.json()["detail"]
    print(f"graph inputs and state updates, answers: {dict(sorted(statuses.items()))}")
    still_answers(http)


def probe_graph(http: httpx.Client, graph: str, failures: list[str], statuses: Counter) -> None:
    schemas = http.get(f"/assistants/{graph}/schemas").json()
    inputs = sorted((schemas.get("input_schema") or {}).get("properties") or {})
    state = sorted((schemas.get("state_schema") or {}).get("properties") or {})
    nodes = [node["id"] for node in http.get(f"/assistants/{graph}/graph").json()["nodes"]]
    thread = http.post("/threads", json={"metadata": {"graph_id": graph}}).json()["thread_id"]

    @FUZZ
    @given(
        given_input=st.dictionaries(st.sampled_from(inputs or ["question"]), JSON, max_size=3),
        update=st.dictionaries(st.sampled_from(state or ["question"]), JSON, min_size=1, max_size=3),
        as_node=st.none() | st.sampled_from(nodes) | st.text(max_size=10),
    )
    def probe(given_input: dict, update: dict, as_node: str | None) -> None:
        run = http.post("/runs/wait", json={"assistant_id": graph, "input": given_input})
        statuses[f"run {run.status_code}{' error' if '__error__' in run.text else ''}"] += 1
        if run.status_code >= 500:
            failures.append(f"{graph} input {given_input!r:.200} → {run.status_code}: {run.text[:200]}")
        elif run.status_code == 200 and isinstance(error := run.json().get("__error__"), dict):
            if error.get("error") in CRASHES:  # a malformed input must be refused, not crash a node
                failures.append(f"{graph} input {given_input!r:.200} crashed the run: {error}")
        body = {"values": update, **({"as_node": as_node} if as_node is not None else {})}
        written = http.post(f"/threads/{thread}/state", json=body)
        statuses[f"state {written.status_code}"] += 1
        if written.status_code >= 500:
            failures.append(f"{graph} state {body!r:.200} → {written.status_code}: {written.text[:200]}")
        elif written.status_code >= 400:
            assert written.json().get("detail"), written.text[:200]

    probe()


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_the_inputs_a_replay_found_answer_4xx_and_leave_threads_readable(served: dict) -> None:
    """What a replay against the server answered 500 with: bodies nested 10,000 deep, a chat-style input, huge and
    negative numbers, NUL bytes, a passage-shaped state update. Each gets a 4xx naming the problem (or, for the chat
    input, an answer), and every thread stays readable."""
    # a connection per request: a 500 drops the connection it came on
    http = httpx.Client(
        base_url=served["server"].url,
        headers=served["http"].headers,
        timeout=120,
        limits=httpx.Limits(max_keepalive_connections=0),
    )
    thread = http.post("/threads", json={"metadata": {"graph_id": "basic"}}).json()["thread_id"]
    cron = http.post(
        "/runs/crons", json={"assistant_id": "search", "schedule": "0 0 1 1 *", "input": {"question": "x"}}
    )
    assert cron.status_code == 200, cron.text
    nested = deep(10_000)
    bodies = {
        ("POST", "/runs/wait"): nested,
        ("POST", "/runs/batch"): nested,
        ("POST", f"/threads/{thread}/state"): nested,
        ("PATCH", f"/runs/crons/{cron.json()['cron_id']}"): nested,
        ("POST", "/mcp"): nested,
        ("POST", "/runs/wait", "after"): json.dumps(
            {"assistant_id": "basic", "input": {"question": "When?"}, "after_seconds": 1e14}
        ),
        ("POST", "/runs/wait", "nul"): json.dumps({"assistant_id": "basic", "input": {"question": "When\u0000?"}}),
        ("POST", "/runs/wait", "ingest nul"): json.dumps(
            {"assistant_id": "ingest", "input": {"paths": ["/tmp/a\u0000b"]}}
        ),
        ("POST", "/store/items/search"): json.dumps({"limit": -1}),
        ("POST", "/threads/search"): json.dumps({"offset": 1e20}),
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    failures = []
    for (method, path, *_), body in bodies.items():
        answer = http.request(method, path, content=body, headers=headers)
        if not (400 <= answer.status_code < 500 and "detail" in answer.text or "error" in answer.text):
            failures.append(f"{method} {path} {body[:60]} → {answer.status_code}: {answer.text[:200]}")
    chat = http.post(
        "/runs/wait",
        json={
            "assistant_id": "basic",
            "input": {"messages": [{"role": "user", "content": "When does the night shift start?"}]},
        },
    )
    if not (chat.status_code == 200 and chat.json().get("answer")):
        failures.append(f"chat input → {chat.status_code}: {chat.text[:200]}")
    searched = http.post("/runs/wait", json={"assistant_id": "search", "input": {"question": "night shift"}})
    passage = searched.json()["retrieved"][0]
    for graph in ("basic", "rag", "auto", "extract", "small_model", "pageindex", "search"):
        broken = http.post("/threads", json={"metadata": {"graph_id": graph}}).json()["thread_id"]
        edited = http.post(f"/threads/{broken}/state", json={"values": {"retrieved": [passage]}, "as_node": "search"})
        if edited.status_code >= 500:
            failures.append(f"{graph} passage as_node search → {edited.status_code}: {edited.text[:200]}")
        run = http.post(
            f"/threads/{broken}/runs/wait",
            json={"assistant_id": graph, "input": None, "command": {"update": {"retrieved": [passage]}}},
        )
        if run.status_code >= 500:
            failures.append(f"{graph} passage command.update → {run.status_code}: {run.text[:200]}")
        for part in ("state", "history"):
            read = http.get(f"/threads/{broken}/{part}")
            if read.status_code != 200:
                failures.append(f"{graph} {part} → {read.status_code}: {read.text[:200]}")
        again = http.post(
            f"/threads/{broken}/runs/wait",
            json={"assistant_id": graph, "input": {"question": "When does the night shift start?"}},
        )
        if not (again.status_code == 200 and "__error__" not in again.json()):
            failures.append(f"{graph} run after the edits → {again.status_code}: {again.text[:200]}")
    assert not failures, "\n".join(failures)
    still_answers(http)
