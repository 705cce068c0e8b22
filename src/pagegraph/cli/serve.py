"""`pagegraph serve`: LangGraph server's production runtime (`pagegraph.server.runtime`) with every graph, auth and
durable threads from langgraph.json, offline; on one machine with the PostgreSQL and Redis it starts itself
(`pagegraph.server.embedded`), and the embedded model's process (`pagegraph.llm.model_process`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

import pagegraph
from pagegraph.cli.common import DatabaseOption, IndexOption, app, console, err, fail, index_folder
from pagegraph.config import SERVER_FOLDER, Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.llm import get_chat_model
from pagegraph.llm.factory import resolve_spec
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.model_process import stop_process
from pagegraph.server.embedded import start_embedded
from pagegraph.store.folder_index import SUMMARIZE_LOG
from pagegraph.store.postgres import redacted

LOOPBACK = ("127.0.0.1", "localhost", "::1")
QUIET = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}
NO_TRACING = {"LANGSMITH_TRACING": "false"}  # unless the user asked for LangSmith tracing
SUMMARIZE_EVERY_S = 60
STOP_GRACE_S = 8.0  # SIGINT or SIGTERM stop everything within 10 s
READY_TIMEOUT_S = 180.0
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
    jobs: Annotated[
        int,
        typer.Option(
            min=1,
            max=64,
            help="runs each server process works on at once (LangGraph's jobs per worker). The local model runs "
            "once per machine and is shared: its calls share its slots (PAGEGRAPH_LLM_SLOTS), so more jobs mostly "
            "let searches and abstentions pass a long answer",
        ),
    ] = 4,
    workers: Annotated[int, typer.Option(min=1, max=64, help="server processes on this machine")] = 1,
    verbose: Annotated[bool, typer.Option(help="show the runtime's own log lines (INFO and up)")] = False,
) -> None:
    """Serve every graph over HTTP (LangGraph server's production runtime) for the SDK, Studio and the web page;
    Ctrl-C stops it and everything it started. Threads, runs and crons live in PostgreSQL: the one of
    PAGEGRAPH_SERVER_DATABASE_URL (or PAGEGRAPH_DATABASE_URL), else one it starts in INDEX/server; run streams pass
    through PAGEGRAPH_REDIS_URL, else a Redis it starts on loopback. Replicas on one database share threads and runs."""
    settings = get_settings()
    try:
        path = find_config(config)
        if host not in LOOPBACK and settings.server.auth_file is None:
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
        env["PAGEGRAPH_ALLOWED_HOSTS"] = ",".join([*settings.server.allowed_hosts, host])
    folder = index_folder(index, settings)
    env["PAGEGRAPH_INDEX"] = str(folder)
    if verbose:
        env["PAGEGRAPH_SERVER_LOG_LEVEL"] = "INFO"
    started: list[Callable[[], None]] = []  # what to stop, last started first
    stopper = _Stopper()
    signal.signal(signal.SIGTERM, stopper)
    signal.signal(signal.SIGINT, stopper)
    returncode, problem = 0, ""
    try:
        returncode = _start_and_run(settings, env, folder, path, host, port, jobs, workers, verbose, stopper, started)
    except KeyboardInterrupt:  # a stop asked for while it started
        pass
    except PagegraphError as exc:
        problem = str(exc)
    finally:
        _ignore_stop_signals()
        _stop_all(started)
    if problem:
        raise fail(problem)
    raise typer.Exit(0 if stopper.asked else returncode)  # a stop asked for is a clean exit


class _Stopper:
    """SIGTERM (`kill`, `docker stop`, systemd) and SIGINT (Ctrl-C), from serve's first moment: while serve starts
    they interrupt the start; once the runtime runs they terminate it, and serve stops what it started only after the
    runtime has stopped (its runs put back in the queue), so whoever restarts it never finds the port still taken."""

    def __init__(self) -> None:
        self.asked = False
        self.runtime: subprocess.Popen | None = None
        self.starting_runtime = False

    def __call__(self, signum: int, frame: object) -> None:
        self.asked = True
        if self.runtime is not None:
            self.runtime.terminate()
        elif not self.starting_runtime:  # not inside Popen: an interrupted Popen could leave its child unstopped
            raise KeyboardInterrupt

    def start_runtime(self, command: list[str], **options: Any) -> subprocess.Popen:
        self.starting_runtime = True
        self.runtime = subprocess.Popen(command, **options)
        if self.asked:
            self.runtime.terminate()
        return self.runtime


def _ignore_stop_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_and_run(
    settings: Settings,
    env: dict[str, str],
    folder: Path,
    path: Path,
    host: str,
    port: int,
    jobs: int,
    workers: int,
    verbose: bool,
    stopper: _Stopper,
    started: list[Callable[[], None]],
) -> int:
    """Start the embedded services, the model and the runtime (each appended to `started` as it runs), and wait
    for the runtime to exit; its exit status."""
    embedded = start_embedded(
        folder / SERVER_FOLDER, database=not settings.runtime_database_url(), redis=not settings.server.redis_url
    )
    started.append(embedded.stop)
    if embedded.database_url:
        env["PAGEGRAPH_SERVER_DATABASE_URL"] = embedded.database_url
    if embedded.redis_url:
        env["PAGEGRAPH_REDIS_URL"] = embedded.redis_url
    model = _start_model(settings)
    url = f"http://{'127.0.0.1' if host in LOOPBACK else host}:{port}"
    log_path = folder / SERVER_FOLDER / "server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    database = embedded.described[0] if embedded.database_url else redacted(settings.runtime_database_url() or "")
    streams = "Redis on loopback" if embedded.redis_url else f"Redis {redacted(settings.server.redis_url or '')}"
    users = (
        str(settings.server.auth_file)
        if settings.server.auth_file
        else "none: loopback only, open to this machine's users"
    )
    console.print(
        f"pagegraph serve {url}\n"
        f"  web page  {url}/   API docs {url}/docs   MCP {url}/mcp\n"
        f"  index     {folder}\n"
        f"  users     {users}\n"
        f"  model     {model}\n"
        f"  runtime   langgraph-api (PostgreSQL runtime), {workers} worker(s) × {jobs} jobs; threads in {database}; "
        f"streams through {streams}\n"
        f"  log       {'this terminal' if verbose else log_path}",
        highlight=False,
    )
    if settings.ingest.ingest_summaries == "model":
        summarizer = _start_summarizer(folder, env)
        started.append(lambda: stop_process(summarizer, STOP_GRACE_S))
    command = [sys.executable, "-m", "pagegraph.server.runtime", str(path), host, str(port), str(jobs), str(workers)]
    with log_path.open("a") as log:
        output = {} if verbose else {"stdout": log, "stderr": subprocess.STDOUT}
        server = stopper.start_runtime(command, env=env, cwd=path.parent, **output)
    started.append(lambda: stop_process(server, STOP_GRACE_S))
    _report_ready(server, url, log_path, verbose, stopper)
    return server.wait()


def _report_ready(server: subprocess.Popen, url: str, log_path: Path, verbose: bool, stopper: _Stopper) -> None:
    """'ready' once the server answers /ok; if it exits first, unless stopped, the end of its log, which says why."""
    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S and server.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as reply:
                if reply.status == 200:
                    console.print(f"ready in {time.monotonic() - started:.1f} s; Ctrl-C stops it", highlight=False)
                    return
        except OSError:
            time.sleep(0.2)
    if server.poll() is not None and not (verbose or stopper.asked):
        lines = log_path.read_text(errors="replace").splitlines()[-20:]
        err.print("the server stopped while starting; the end of its log:\n" + "\n".join(lines), highlight=False)


def _stop_all(started: list[Callable[[], None]]) -> None:
    for stop in reversed(started):
        stop()


def _start_model(settings: Settings) -> str:
    """Start the embedded model's process before the server, checked with one short reply: a build that cannot run
    on this CPU stops `serve` with the reason, not the first question. The server's workers and the summarizer find
    this process (llm.model_process) and share it; its keeper stops it once idle (`Settings.models.llm_idle_s`).
    Other models are only named here."""
    model = get_chat_model(None, settings=settings)
    if not isinstance(model, LlamaCppChatModel):
        return resolve_spec(None, settings)
    endpoint = model.endpoint()
    shape = endpoint.shape(model.shape)
    return f"{model.model_name}, llama-server pid {endpoint.pid()} ({shape.slots} calls at once)"


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
