"""`pagegraph serve`: LangGraph server with every graph, auth and durable threads from langgraph.json, offline: on one
machine `langgraph dev` (no browser); with a database and Redis the team runtime (`pagegraph.server.runtime`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Optional

import typer

import pagegraph
from pagegraph.cli.common import DatabaseOption, IndexOption, app, console, fail, index_folder
from pagegraph.config import Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.llm import get_chat_model
from pagegraph.llm.factory import resolve_spec
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.model_process import stop_owned
from pagegraph.indexing.index import SUMMARIZE_LOG
from pagegraph.indexing.postgres import redacted

LOOPBACK = ("127.0.0.1", "localhost", "::1")
QUIET = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}
NO_TRACING = {"LANGSMITH_TRACING": "false"}  # unless the user asked for LangSmith tracing
SUMMARIZE_EVERY_S = 60
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def server_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: offline and quiet; tracing off unless LANGSMITH_* was set."""
    tracing = {} if any(key.startswith("LANGSMITH_") for key in environ) else NO_TRACING
    return {**tracing, **environ, **OFFLINE, **QUIET}


def find_config(config: Path | None) -> Path:
    """--config, else langgraph.json in the current folder, else the one of the pagegraph checkout."""
    candidates = (
        [config] if config else [Path.cwd() / "langgraph.json", Path(pagegraph.__file__).parents[2] / "langgraph.json"]
    )
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise PagegraphError(f"{candidates[0]}: no langgraph.json (run from the pagegraph checkout or pass --config)")


def port_is_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # as the server binds: a port whose last server just closed (TIME_WAIT) is free, a listening one is not
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


@app.command()
def serve(
    port: Annotated[int, typer.Option(help="port to listen on")] = 2024,
    host: Annotated[
        str, typer.Option(help="interface to bind; other than loopback only with auth configured")
    ] = "127.0.0.1",
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    config: Annotated[Optional[Path], typer.Option(help="langgraph.json to serve (default: the checkout's)")] = None,
    reload: Annotated[bool, typer.Option(help="restart when the code changes (development)")] = False,
    jobs: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="runs the server works on at once (LangGraph's jobs per worker). The local model is loaded once "
            "and shared: its calls queue, so more jobs mostly let searches and abstentions pass a long answer",
        ),
    ] = 4,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="server processes on this machine, each with its own jobs and model (team runtime only: "
            "PAGEGRAPH_DATABASE_URL and PAGEGRAPH_REDIS_URL set)",
        ),
    ] = 1,
) -> None:
    """Serve every graph over HTTP (LangGraph server) for the SDK and LangGraph Studio; Ctrl-C stops it. With
    PAGEGRAPH_DATABASE_URL and PAGEGRAPH_REDIS_URL set, the team runtime: replicas on one database share threads and
    runs."""
    settings = get_settings()
    team = bool(settings.database_url and settings.redis_url)
    try:
        if workers > 1 and not team:
            raise PagegraphError(
                f"--workers {workers}: several server processes need the team runtime (PAGEGRAPH_DATABASE_URL and "
                "PAGEGRAPH_REDIS_URL); the single-machine server keeps its runs in one process"
            )
        path = find_config(config)
        if host not in LOOPBACK and settings.auth_file is None:
            raise PagegraphError(
                f"--host {host}: without a users file (PAGEGRAPH_AUTH_FILE) anyone who reaches the "
                "port could read every document; configure users or stay on 127.0.0.1"
            )
        if not port_is_free(host, port):
            raise PagegraphError(f"port {port} on {host} is in use: pick another with --port")
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    env = server_environment(os.environ)
    if host not in LOOPBACK and host not in ("0.0.0.0", "::"):
        env["PAGEGRAPH_ALLOWED_HOSTS"] = ",".join([*settings.allowed_hosts, host])
    folder = index_folder(index, settings)
    env["PAGEGRAPH_INDEX"] = str(folder)
    if team:
        if reload:
            raise fail("--reload: the team runtime does not reload; use the single-machine server to develop")
        command = [sys.executable, "-m", "pagegraph.server.runtime", str(path), host, str(port), str(jobs)]
        command += [str(workers)]
        where = f"database {redacted(settings.database_url)}, Redis {redacted(settings.redis_url)}"
    else:
        command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser", "--host", host]
        command += ["--port", str(port), "--config", str(path), "--n-jobs-per-worker", str(jobs)]
        command += [] if reload else ["--no-reload"]
        where = f"index {folder}"
    url = f"http://{'127.0.0.1' if host in LOOPBACK else host}:{port}"
    console.print(f"serving {path} at {url} ({where})", highlight=False)
    console.print(
        f"web page: {url}/  (works offline; sign in with your API key when a users file is set)", highlight=False
    )
    console.print(
        f"Studio: https://smith.langchain.com/studio/?baseUrl={url} (with PAGEGRAPH_ALLOWED_ORIGINS="
        f"https://smith.langchain.com)  API docs: {url}/docs",
        highlight=False,
    )
    try:
        console.print(f"model: {_start_model(settings)}", highlight=False)
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    summarizer = _start_summarizer(folder, env) if settings.ingest_summaries == "model" else None
    server = subprocess.Popen(command, env=env, cwd=path.parent)
    # `kill`, `docker stop` or systemd stop this process: the server stops too (saving its threads), and this
    # process exits only once it has, so whoever restarts it never finds the port still taken
    signal.signal(signal.SIGTERM, lambda signum, frame: server.terminate())
    try:
        returncode = server.wait()
    except KeyboardInterrupt:  # the terminal sent Ctrl-C to the server as well
        server.wait()
        returncode = 0
    finally:
        if summarizer is not None:
            summarizer.terminate()
            summarizer.wait()
        stop_owned()
    raise typer.Exit(returncode)


def _start_model(settings: Settings) -> str:
    """Start the embedded model's process before the server, checked with one short reply: a build that cannot run
    on this CPU stops `serve` with the reason, not the first question. The server's workers and the summarizer find
    this process (llm.model_process) and share it; it stops with `serve`. Other models are only named here."""
    model = get_chat_model(None, settings=settings)
    if not isinstance(model, LlamaCppChatModel):
        return resolve_spec(None, settings)
    endpoint = model.endpoint()
    shape = endpoint.server.shape if endpoint.server is not None else model.shape
    return (
        f"{model.model_name} in llama-server pid {endpoint.pid()} ({shape.slots} questions at once; "
        f"{'its own' if endpoint.owned else 'shared with a process that was running'})"
    )


def _start_summarizer(folder: Path, env: dict[str, str]) -> subprocess.Popen:
    """`pagegraph summarize --watch` beside the server: documents ingested through it get model summaries in the
    background (its own process and model; it writes one summary at a time and never holds the index's lock)."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / SUMMARIZE_LOG
    command = [str(Path(sys.executable).with_name("pagegraph")), "summarize", "--index", str(folder)]
    command += ["--watch", str(SUMMARIZE_EVERY_S)]
    console.print(f"writing model summaries in the background (PAGEGRAPH_INGEST_SUMMARIES=model); log {log}")
    with log.open("a") as output:
        return subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
