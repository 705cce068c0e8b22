"""What the server tests share: `pagegraph serve` on a free loopback port in a temporary folder, a users file made
with `pagegraph users add`, and a scripted OpenAI-compatible model server on loopback for runs that must be fast."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pagegraph.prompts.judge import JUDGE_SYSTEM
from tests.conftest import PAGEGRAPH

QUIET = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1", "LANGSMITH_TRACING": "false"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    url: str
    folder: Path
    env: dict[str, str]
    jobs: int = 4
    workers: int = 1
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """`pagegraph serve` started, not waited for."""
        log = (self.folder / "server.log").open("a")
        port = self.url.rsplit(":", 1)[1]
        command = [str(PAGEGRAPH), "serve", "--port", port, "--jobs", str(self.jobs), "--workers", str(self.workers)]
        command += ["--config", str(self.folder / "langgraph.json")]
        self.process = subprocess.Popen(
            command, cwd=self.folder, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self) -> None:
        """Until the server answers /ok; a server that exits first fails the test with its log."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"server exited: {(self.folder / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/ok", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        pytest.fail("server did not answer /ok within 120 s")

    def kill(self) -> None:
        """SIGKILL to `pagegraph serve` and everything it started, as when its machine dies."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM to `pagegraph serve`, as an operator's `kill` would: the runtime saves its threads on the way
        out, and serve exits only after its server has stopped listening."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                pytest.fail("pagegraph serve did not stop within 30 s of SIGTERM")
            host, port = self.url.removeprefix("http://").rsplit(":", 1)
            with socket.socket() as probe:
                assert probe.connect_ex((host, int(port))) != 0, "pagegraph serve exited before its server"


def server_env(folder: Path, cache_dir: Path, users_file: Path, **settings: str) -> dict[str, str]:
    return {
        **os.environ,
        **QUIET,
        "PAGEGRAPH_INDEX": str(folder / "index"),
        "PAGEGRAPH_CACHE_DIR": str(cache_dir),
        "PAGEGRAPH_INGEST_SUMMARIES": "extractive",
        "PAGEGRAPH_AUTH_FILE": str(users_file),
        # the sweeps send many keyless requests from loopback; the sign-in limit has its own tests (test_sign_in)
        "PAGEGRAPH_SIGN_IN_FAILURES_PER_MINUTE": "10000",
        **settings,
    }


def add_users(users_file: Path, specs: dict[str, list[str]]) -> dict[str, str]:
    """Each user added with `pagegraph users add NAME OPTIONS...`; their keys, as printed once."""
    keys = {}
    for name, options in specs.items():
        done = subprocess.run(
            [str(PAGEGRAPH), "users", "add", name, "--file", str(users_file), *options],
            capture_output=True,
            text=True,
            check=True,
        )
        keys[name] = done.stdout.strip().splitlines()[-1]
    return keys


@dataclass
class ScriptedOpenAI:
    """An OpenAI-compatible chat server on loopback that answers at once with a fixed sentence citing passage 1
    (or `reply(prompt)` when given), after `slow_s` seconds when the prompt holds `slow_marker` and after
    `every_call_s` otherwise. The judge's closed check is answered Yes, with the top log-probabilities it asks
    for. Counts the calls it served."""

    slow_marker: str = "SLOW-QUESTION"
    slow_s: float = 8.0
    every_call_s: float = 0.0
    reply: Callable[[str], str] | None = None
    calls: int = 0
    port: int = field(default_factory=free_port)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _complete(self, request: Request) -> Response:
        body = await request.json()
        self.calls += 1
        prompt = json.dumps(body.get("messages"))
        await asyncio.sleep(self.slow_s if self.slow_marker in prompt else self.every_call_s)
        judging = JUDGE_SYSTEM in prompt
        if judging:
            text = "Yes"
        else:
            text = self.reply(prompt) if self.reply else "The documents answer it [1]."
        logprobs = None
        if judging and body.get("logprobs"):
            alternatives = [{"token": "Yes", "logprob": -0.05}, {"token": "No", "logprob": -3.0}]
            logprobs = {"content": [{"token": "Yes", "logprob": -0.05, "top_logprobs": alternatives}]}
        common = {"id": f"c{self.calls}", "created": 0, "model": body.get("model", "scripted")}
        if not body.get("stream"):
            return JSONResponse(
                {
                    **common,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "logprobs": logprobs,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17},
                }
            )

        async def events():
            for at, piece in enumerate((text[:12], text[12:], None)):
                delta = {"role": "assistant", "content": piece} if piece is not None else {}
                choice = {"index": 0, "delta": delta, "finish_reason": None if piece else "stop"}
                chunk = {
                    **common,
                    "object": "chat.completion.chunk",
                    "choices": [{**choice, "logprobs": logprobs if at == 0 else None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def start(self) -> None:
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline:
                pytest.fail("the scripted model server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def settings(self) -> dict[str, str]:
        """Server environment that makes this the model of every run."""
        return {"PAGEGRAPH_MODEL": "openai:scripted", "PAGEGRAPH_OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": "x"}


ROUTE_LISTING = """
import json, os, sys
from pathlib import Path
from langgraph_cli.config import validate_config_file
from starlette.routing import Mount, Route, WebSocketRoute
from pagegraph.server.runtime import runtime_environment

os.environ.update(runtime_environment(validate_config_file(Path(sys.argv[1])), "postgresql://unused", "redis://unused", 1))
from langgraph_api.server import app

def walk(routes, prefix=""):
    for route in routes:
        if isinstance(route, Mount):
            yield from walk(route.routes, prefix + route.path) if route.routes else [(prefix + route.path + "/{path}", ["GET"])]
        elif isinstance(route, WebSocketRoute):
            yield prefix + route.path, ["WEBSOCKET"]
        elif isinstance(route, Route):
            yield prefix + route.path, sorted(route.methods or [])
        else:
            raise SystemExit(f"a route of a kind the sweep does not know: {route!r}")

print(json.dumps(list(walk(app.routes))))
"""


def served_routes(config: Path) -> list[tuple[str, list[str]]]:
    """Every route of the app `pagegraph serve` runs, read from its ASGI router (langgraph-api's routes, the web
    page's and their mounts), with the methods each takes; WEBSOCKET for a websocket route."""
    done = subprocess.run(
        [sys.executable, "-c", ROUTE_LISTING, str(config)], capture_output=True, text=True, timeout=120, check=True
    )
    return [(path, methods) for path, methods in json.loads(done.stdout.splitlines()[-1])]
