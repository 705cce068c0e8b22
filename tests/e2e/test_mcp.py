"""pagegraph's MCP tools as an agent reaches them, with the official `mcp` client SDK: over stdio (`pagegraph mcp`,
started as a desktop client starts it) and over HTTP (`/mcp` on a real `pagegraph serve` with a users file). Answers
come from a scripted model server on loopback."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from langgraph_sdk import get_client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import PAGEGRAPH, REPO, SAMPLES
from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
PUBLIC = "# Visitor guide\n\nVisitors sign in at the front desk and wear a badge at all times.\n"
CONFIDENTIAL = "# Board minutes\n\nThe board approved the badge contract with Acme for 380,000 dollars.\n"
SECRET_WORDS = ("Acme", "380,000", "Board minutes")
PUBLIC_READER = ["--role", "reader", "--ceiling", "public"]
USERS = {"root": ["--role", "admin"], "guest": PUBLIC_READER, "visitor": PUBLIC_READER}  # visitor: the docs' examples
PER_MINUTE = 8
TOOLS = {"search", "ask", "list_documents", "ingest"}


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    scripted = ScriptedOpenAI(reply=lambda prompt: "Visitors wear a badge at all times [1].")
    scripted.start()
    yield scripted
    scripted.stop()


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mcp-documents")
    (folder / "public").mkdir()
    (folder / "board").mkdir()
    (folder / "public" / "visitors.md").write_text(PUBLIC)
    (folder / "board" / "minutes.md").write_text(CONFIDENTIAL)
    return folder


def texts(result) -> str:
    return " ".join(part.text for part in result.content if getattr(part, "text", None))


def test_stdio_tools_search_ask_and_refuse_bad_input(
    tmp_path: Path, cache_dir: Path, documents: Path, model: ScriptedOpenAI
) -> None:
    env = server_env(tmp_path, cache_dir, tmp_path / "no-users.json", **model.settings())
    env.pop("PAGEGRAPH_AUTH_FILE")
    index = tmp_path / "index"

    params = StdioServerParameters(command=str(PAGEGRAPH), args=["mcp", "--index", str(index)], env=env)

    async def session() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            listed = {tool.name: tool for tool in (await mcp.list_tools()).tools}
            assert set(listed) == TOOLS
            for tool in listed.values():
                assert len(tool.description) > 100 and tool.input_schema["properties"] is not None
                assert tool.output_schema, tool.name
            assert listed["search"].input_schema["properties"]["k"]["maximum"] == 20
            empty = await mcp.call_tool("search", {"query": "badge"})
            assert empty.is_error and "pagegraph ingest" in texts(empty), texts(empty)
            added = await mcp.call_tool("ingest", {"paths": [str(documents / "public")], "confidentiality": "public"})
            assert not added.is_error, texts(added)
            assert [f["status"] for f in added.structured_content["files"]] == ["added"]
            found = await mcp.call_tool("search", {"query": "Where do visitors sign in?", "k": 3})
            assert not found.is_error, texts(found)
            passage = found.structured_content["passages"][0]
            assert passage["label"] == "[visitors.md, Visitor guide, p. 1]" and passage["start_page"] == 1
            assert any("front desk" in s["sentence"] for s in passage["sentences"])
            assert json.loads(texts(found)) == found.structured_content, "the text part is the same JSON"
            progress: list[tuple[float, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, message))

            answer = await mcp.call_tool("ask", {"question": "What must visitors wear?"}, progress_callback=on_progress)
            assert not answer.is_error, texts(answer)
            # progress before the result: the stages, and the evidence once it is found (a client that times out a
            # silent call stays with it)
            assert [done for done, _ in progress] == list(range(1, len(progress) + 1)), progress
            said = [message for _, message in progress]
            assert any(m and m.startswith("evidence: ") and "visitors.md" in m for m in said), said
            assert "checking citations" in said, said
            reply = answer.structured_content
            assert "badge" in reply["answer"] and not reply["abstained"]
            assert reply["citations"][0]["label"] == "[visitors.md, Visitor guide, p. 1]"
            assert reply["band"] in ("supported", "uncertain") and reply["evidence"]
            assert isinstance(reply["doubts"], list) and (reply["band"] == "uncertain" or not reply["doubts"])
            unknown = await mcp.call_tool("search", {"query": "badge", "documents": ["nope.md"]})
            assert unknown.is_error and "no document in the index is called 'nope.md'" in texts(unknown)
            assert "visitors.md" in texts(unknown), "the refusal names what the index holds"
            for bad, field in (
                ({"query": "badge", "k": 0}, "k"),
                ({"k": 3}, "query"),
                ({"since": "yesterday"}, "since"),
            ):
                refused = await mcp.call_tool("search", {"query": "badge", **bad} if field == "since" else bad)
                said = texts(refused)  # one line naming the field, without pydantic's echo and link
                assert refused.is_error and said.startswith(f"search: {field}") and "pydantic" not in said, said
            blank = await mcp.call_tool("ask", {"question": "   "})
            assert blank.is_error and "empty" in texts(blank)

    asyncio.run(session())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, model: ScriptedOpenAI, documents: Path):
    folder = tmp_path_factory.mktemp("mcp-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    keys = add_users(folder / "users.json", USERS)
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_UPLOAD_DIR=str(documents),
        PAGEGRAPH_RUNS_PER_USER_PER_MINUTE=str(PER_MINUTE),
        **model.settings(),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    try:

        async def ingest_both() -> None:
            sdk = get_client(url=server.url, api_key=keys["root"])
            for part, confidentiality in (("public", "public"), ("board", "confidential")):
                payload = {"paths": [str(documents / part)], "confidentiality": confidentiality}
                done = await sdk.runs.wait(None, "ingest", input=payload)
                assert [f["status"] for f in done["report"]["files"]] == ["added"], done

        asyncio.run(ingest_both())
        yield {"server": server, "keys": keys, "documents": documents}
    finally:
        server.stop()


def http_session(server: Server, key: str):
    client = httpx2.AsyncClient(headers={"x-api-key": key}, timeout=60)
    return client, streamable_http_client(f"{server.url}/mcp", http_client=client)


def test_over_http_a_public_reader_reads_only_public_text_and_may_not_ingest(site: dict) -> None:
    server, keys = site["server"], site["keys"]

    async def session(key: str) -> dict:
        client, transport = http_session(server, key)
        async with client, transport as (read, write, *_), ClientSession(read, write) as mcp:
            await mcp.initialize()
            assert {tool.name for tool in (await mcp.list_tools()).tools} == TOOLS
            listed = await mcp.call_tool("list_documents", {})
            found = await mcp.call_tool("search", {"query": "Who got the badge contract and for how much?", "k": 5})
            answer = await mcp.call_tool("ask", {"question": "Who got the badge contract and for how much?"})
            again = {"paths": [str(site["documents"] / "public")], "confidentiality": "public"}
            ingest = await mcp.call_tool("ingest", again)
            return {"listed": listed, "found": found, "answer": answer, "ingest": ingest}

    guest = asyncio.run(session(keys["guest"]))
    assert [d["name"] for d in guest["listed"].structured_content["documents"]] == ["visitors.md"]
    for name in ("listed", "found", "answer"):
        assert not guest[name].is_error, (name, texts(guest[name]))
        seen = json.dumps(guest[name].structured_content) + texts(guest[name])
        assert not any(word in seen for word in SECRET_WORDS), (name, seen[:500])
    assert {p["source"] for p in guest["found"].structured_content["passages"]} == {"visitors.md"}
    assert guest["ingest"].is_error and "may not ingest" in texts(guest["ingest"]), texts(guest["ingest"])
    root = asyncio.run(session(keys["root"]))
    names = {d["name"] for d in root["listed"].structured_content["documents"]}
    assert names == {"visitors.md", "minutes.md"}, "the admin reads both, so the guest's view was narrowed"
    assert any("Acme" in p["text"] for p in root["found"].structured_content["passages"])
    assert [f["status"] for f in root["ingest"].structured_content["files"]] == ["unchanged"]


def test_over_http_calls_past_the_rate_limit_get_a_tool_error_with_the_wait(site: dict) -> None:
    server, keys = site["server"], site["keys"]

    async def session() -> list:
        client, transport = http_session(server, keys["guest"])
        async with client, transport as (read, write, *_), ClientSession(read, write) as mcp:
            await mcp.initialize()
            return [await mcp.call_tool("search", {"query": "visitors"}) for _ in range(PER_MINUTE + 1)]

    results = asyncio.run(session())
    refused = [r for r in results if r.is_error]
    assert refused, "calls past the per-minute limit are refused"
    message = texts(refused[0])
    assert "PAGEGRAPH_RUNS_PER_USER_PER_MINUTE" in message and "try again in" in message, message
    assert int(message.rsplit("try again in", 1)[1].split()[0]) > 0


def test_an_oversized_question_is_a_tool_error_naming_the_limit(site: dict) -> None:
    server, keys = site["server"], site["keys"]

    async def session():
        client, transport = http_session(server, keys["root"])
        async with client, transport as (read, write, *_), ClientSession(read, write) as mcp:
            await mcp.initialize()
            return await mcp.call_tool("ask", {"question": "Which desk do visitors use? " * 300})

    result = asyncio.run(session())
    assert result.is_error and "PAGEGRAPH_MAX_QUESTION_CHARS" in texts(result), texts(result)


TOOLS_DOC = REPO / "docs" / "tools.md"
DOC_INDEX = "/home/me/.local/share/pagegraph/index"
DOC_URL = "http://127.0.0.1:2024"
DOC_KEY = "pg_KEYID_SECRET"
DOC_MODEL = '"openai:gpt-4.1-mini"'


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TOOLS_DOC.read_text(), flags=re.S)


async def listed_tools(transport) -> set[str]:
    async with transport as (read, write, *_), ClientSession(read, write) as mcp:
        await mcp.initialize()
        return {tool.name for tool in (await mcp.list_tools()).tools}


async def over_http(url: str, headers: dict[str, str]) -> set[str]:
    async with httpx2.AsyncClient(headers=headers, timeout=60) as client:
        return await listed_tools(streamable_http_client(url, http_client=client))


def test_the_configurations_in_docs_tools_parse_and_run(
    site: dict, tmp_path: Path, cache_dir: Path, model: ScriptedOpenAI
) -> None:
    """Each JSON block of docs/tools.md parses; each stdio entry starts its command and lists the tools; each HTTP
    entry reaches /mcp of a running server with a key; the Python examples run (the agent's with a scripted model)."""
    env = server_env(tmp_path, cache_dir, tmp_path / "no-users.json", PAGEGRAPH_INDEX=str(tmp_path / "index"))
    env.pop("PAGEGRAPH_AUTH_FILE")
    ingested = subprocess.run([str(PAGEGRAPH), "ingest", str(SAMPLES)], env=env, capture_output=True, text=True)
    assert ingested.returncode == 0, ingested.stderr
    entries = []
    for block in doc_blocks("json"):
        config = json.loads(block)
        entries += list((config.get("mcpServers") or config.get("servers")).values())
    assert {"command" in entry for entry in entries} == {True, False}, "stdio and HTTP configurations"
    for entry in entries:
        if "command" in entry:
            assert entry["command"] == "pagegraph" and entry.get("type", "stdio") == "stdio"
            args = [str(tmp_path / "index") if arg == DOC_INDEX else arg for arg in entry["args"]]
            params = StdioServerParameters(command=str(PAGEGRAPH), args=args, env={**env, **entry.get("env", {})})
            assert asyncio.run(listed_tools(stdio_client(params))) == TOOLS, entry
        else:
            assert entry["url"] == f"{DOC_URL}/mcp" and entry.get("type", "http") == "http"
            headers = {
                name: site["keys"]["visitor"] if value == DOC_KEY else value for name, value in entry["headers"].items()
            }
            url = entry["url"].replace(DOC_URL, site["server"].url)
            assert asyncio.run(over_http(url, headers)) == TOOLS, entry
    client_example, agent_example = doc_blocks("python")
    client_example = client_example.replace(DOC_URL, site["server"].url).replace(DOC_KEY, site["keys"]["visitor"])
    done = subprocess.run([sys.executable, "-c", client_example], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "[visitors.md" in done.stdout, done.stderr[-2000:]
    assert DOC_MODEL in agent_example
    scripted = "__import__('tests.unit.test_retriever').unit.test_retriever.ToolCallingModel(fact='2.5 Nm')"
    agent_example = agent_example.replace(DOC_MODEL, scripted)
    done = subprocess.run(
        [sys.executable, "-c", agent_example], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2.5 Nm [sb40-user-manual.pdf" in done.stdout and "p. 4" in done.stdout, done.stdout
