"""The embedded model's own process: llama.cpp's server (`llama-server`, built by scripts/build_model_server.sh),
reached over HTTP on loopback like any OpenAI-compatible model.

A native crash in llama.cpp (a segfault, an out-of-memory kill) ends that process, not the CLI or the LangGraph
server: the call that was running fails with a clear error and the process is started again. One process serves
every caller on the machine. Its owner (the first process that needed it: `pagegraph serve`, or a CLI command when
none is running) publishes its address in the cache folder; every other process with the same model (the server's
workers, `pagegraph ask` beside a running server) uses that one instead of loading the weights again, and its
parallel slots batch their questions.

Before the first question the owner asks for a short reply (`ModelServer.start`): a build that crashes on this CPU is
found then, retried once without weight repacking, and otherwise reported with the CPU's features, the build and
the way out.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import httpx

from pagegraph.errors import ModelUnavailableError
from pagegraph.llm.weights import LocalModelError

log = logging.getLogger(__name__)

READY_POLL_S = 0.2
STOP_GRACE_S = 5.0
RESTART_BACKOFF_S = (0.5, 2.0, 5.0)  # between restarts that die again at once; then the owner gives up
STABLE_AFTER_S = 30.0  # a process that ran this long resets the backoff
CHECK_PROMPT = "Reply with the word OK."
# CPU features that decide which llama.cpp code paths run (reported when the model fails at start)
REPORTED_FEATURES = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "sve",
    "i8mm",
    "dotprod",
)
PR_SET_PDEATHSIG = 1


class ModelProcessError(LocalModelError, ModelUnavailableError):
    """The embedded model's process died or stopped answering during a call: that call fails, the next one is
    answered by the process started again."""


@dataclass(frozen=True)
class ServerShape:
    """What a model process is started with. Processes with the same `key` can stand in for one another."""

    model_path: str
    n_ctx: int  # tokens per slot (one question's call)
    slots: int  # calls decoded at once; more queue in the server
    threads: int
    batch: int
    repack: bool  # llama.cpp's repacked weight layouts (faster matrix kernels where the CPU has them)

    @property
    def key(self) -> str:
        return f"{Path(self.model_path).stem}-{self.n_ctx}"


def cpu_features() -> list[str]:
    """The features of this CPU among those that choose llama.cpp's kernels, from /proc/cpuinfo (Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return []
    flags: set[str] = set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in {"flags", "Features"}:
            flags.update(value.split())
    return [feature for feature in REPORTED_FEATURES if feature in flags]


def build_info(binary: Path) -> str:
    """How the server binary was built (scripts/build_model_server.sh records it beside the virtual environment)."""
    record = binary.parent.parent / "share" / "pagegraph" / "llama-server.json"
    try:
        info = json.loads(record.read_text())
        return f"{info.get('flavour', '?')} build of {info.get('source', '?')} for {info.get('machine', '?')}"
    except (OSError, ValueError):
        return f"{binary} (build not recorded)"


def find_server_binary(configured: Path | None) -> Path:
    """PAGEGRAPH_LLAMA_SERVER, else the `llama-server` beside this Python (the virtual environment's), else PATH."""
    candidates = [configured] if configured else [Path(sys.executable).with_name("llama-server")]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if configured is None and (found := _which("llama-server")):
        return found
    raise LocalModelError(
        f"{candidates[0]}: llama.cpp's server is not built; run `bash scripts/setup.sh` (it compiles it: "
        "scripts/build_model_server.sh) or set PAGEGRAPH_LLAMA_SERVER to a llama-server binary"
    )


def _which(name: str) -> Path | None:
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def die_with_parent() -> None:
    """Run in the child before exec: the kernel stops it when the thread that started it ends (Linux), so that a
    model process never outlives an owner killed with SIGKILL."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def stop_process(process: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM, and SIGKILL after `grace_s` seconds if it is still there."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "is running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        cause = {
            "SIGSEGV": "a crash in llama.cpp",
            "SIGKILL": "killed, e.g. out of memory",
            "SIGABRT": "aborted",
            "SIGILL": "an instruction this CPU lacks",
        }.get(name, "stopped by a signal")
        return f"died with {name} ({cause})"
    return f"exited with status {returncode}"


class ModelServer:
    """One llama-server process, kept running by a supervisor thread until `stop`.

    Every start happens on the supervisor thread: the child is tied to it (`die_with_parent`), and it lives as long
    as this object. A process that dies is started again at once; one that keeps dying right after its start is
    given up after `RESTART_BACKOFF_S` tries, and the next call reports why."""

    def __init__(self, shape: ServerShape, binary: Path, log_path: Path, load_timeout_s: float) -> None:
        self.shape = shape
        self.binary = binary
        self.log_path = log_path
        self.load_timeout_s = load_timeout_s
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.exits: dict[int, str] = {}  # how each ended process ended, by pid, for the error of the call it failed
        self.failure: str | None = None  # set when the supervisor gave up
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_start: Callable[[ModelServer], None] | None = None

    # -- the supervisor ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the process, wait until the model is loaded and has written a short reply. Raises
        LocalModelError naming the CPU, the build and the way out when it cannot."""
        self._thread = threading.Thread(target=self._supervise, name="pagegraph-model-process", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self.failure:
            self.stop()
            raise LocalModelError(self.failure)

    def _supervise(self) -> None:
        failures = 0
        checked = False
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self._spawn()
                self._wait_ready()
                if not checked:
                    self._check_reply()
                    checked = True
            except _PortTaken:
                continue
            except _StartFailed as exc:
                if not checked and self.shape.repack:
                    # repacked weight layouts are the CPU-specific fast path: the one first suspected
                    log.warning("model process: %s; starting again without weight repacking", exc)
                    self.shape = replace(self.shape, repack=False)
                    continue
                self.failure = self._start_failure(exc)
                self._kill()
                self._ready.set()
                return
            self._publish_ready()
            returncode = self.process.wait() if self.process else 0
            if self._stopping.is_set():
                break
            assert self.process is not None
            ended = self.exits[self.process.pid] = describe_exit(returncode)
            log.warning("model process (pid %s) %s; starting it again", self.process.pid, ended)
            self._ready.clear()
            failures = 0 if time.monotonic() - started > STABLE_AFTER_S else failures + 1
            if failures > len(RESTART_BACKOFF_S):
                self.failure = (
                    f"the model process {ended} {failures} times in a row right after starting (log {self.log_path})"
                )
                self._ready.set()
                return
            if failures:
                self._stopping.wait(RESTART_BACKOFF_S[failures - 1])
        self._ready.set()

    def _command(self) -> list[str]:
        shape = self.shape
        command = [str(self.binary), "--model", shape.model_path, "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--ctx-size", str(shape.n_ctx * shape.slots), "--parallel", str(shape.slots)]
        command += ["--threads", str(shape.threads), "--threads-batch", str(shape.threads)]
        command += ["--batch-size", str(shape.batch), "--no-webui", "--metrics"]
        return command + ([] if shape.repack else ["--no-repack"])

    def _spawn(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as output:
            output.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(self._command())}\n".encode())
            output.flush()
            self.process = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
                start_new_session=True,  # Ctrl-C in a terminal reaches the owner, which stops it in order
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.load_timeout_s
        assert self.process is not None
        while time.monotonic() < deadline and not self._stopping.is_set():
            if self.process.poll() is not None:
                raise _StartFailed(f"{describe_exit(self.process.returncode)} while loading the model")
            try:
                healthy = httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200
            except httpx.HTTPError:
                healthy = False
            if healthy:
                self._check_identity()
                return
            time.sleep(READY_POLL_S)
        if not self._stopping.is_set():
            self._kill()
            raise _StartFailed(f"did not load the model within {self.load_timeout_s:.0f} s", slow=True)

    def _check_identity(self) -> None:
        """The port was free when chosen, but another program may have taken it before llama-server bound it: the
        server that answers must serve our weights; otherwise ours is started again on another port."""
        try:
            ours = httpx.get(f"{self.url}/props", timeout=2.0).json().get("model_path") == self.shape.model_path
        except (httpx.HTTPError, ValueError, AttributeError):
            ours = False
        if not ours:
            self._kill()
            self.port = _free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            raise _PortTaken

    def _check_reply(self) -> None:
        """One short generation: where a CPU-specific kernel crashes, it crashes at the first decode."""
        request = {"messages": [{"role": "user", "content": CHECK_PROMPT}], "max_tokens": 4, "temperature": 0}
        try:
            reply = httpx.post(f"{self.url}/v1/chat/completions", json=request, timeout=self.load_timeout_s)
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            assert self.process is not None
            try:
                self.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._kill()
                slow = isinstance(exc, httpx.TimeoutException)
                raise _StartFailed(f"gave no first reply ({type(exc).__name__}: {exc})", slow=slow) from exc
            raise _StartFailed(f"{describe_exit(self.process.returncode)} at its first reply") from exc

    def _start_failure(self, failed: _StartFailed) -> str:
        features = ", ".join(cpu_features()) or "unknown"
        way_out = (
            f"A slow or busy machine: give it longer with PAGEGRAPH_LLM_LOAD_TIMEOUT_S (now {self.load_timeout_s:.0f})"
            if failed.slow
            else "Rebuild it without CPU-specific code paths: `PAGEGRAPH_LLAMA_BUILD=portable bash "
            "scripts/build_model_server.sh`"
        )
        return (
            f"the embedded model could not start: llama-server {failed} (CPU {platform.machine()} with {features}; "
            f"{build_info(self.binary)}; log {self.log_path}). {way_out}; or point PAGEGRAPH_MODEL at another model "
            "(ollama:NAME, openai:NAME)"
        )

    def _publish_ready(self) -> None:
        if self.on_start is not None:
            self.on_start(self)
        self._ready.set()

    # -- for callers ------------------------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def wait_ready(self, timeout: float) -> None:
        """Block until a process answers (after a restart, once it has loaded); raise when the supervisor gave up."""
        if not self._ready.wait(timeout):
            raise ModelProcessError(f"the model process did not come back within {timeout:.0f} s (log {self.log_path})")
        if self.failure:
            raise ModelProcessError(self.failure)

    def kill(self) -> None:
        """End a process that stopped answering; the supervisor starts another, and calls wait for it."""
        self._ready.clear()
        self._kill()

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()

    def stop(self) -> None:
        self._stopping.set()
        if self.process is not None:
            stop_process(self.process, STOP_GRACE_S)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(STOP_GRACE_S)
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process, STOP_GRACE_S)  # one the supervisor started while this stop began


class _StartFailed(Exception):
    def __init__(self, reason: str, slow: bool = False) -> None:
        super().__init__(reason)
        self.slow = slow  # it did not fail: it took longer than it was given


class _PortTaken(Exception):
    pass


# -- one process per machine ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """What an owner writes where other processes look for a running model process."""

    url: str
    pid: int
    owner_pid: int
    model_path: str
    slots: int


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Endpoint:
    """Where a chat model sends its calls: a process this one owns, or one another process published."""

    def __init__(self, record_path: Path, server: ModelServer | None = None) -> None:
        self.record_path = record_path
        self.server = server

    @property
    def owned(self) -> bool:
        return self.server is not None

    def url(self, wait_s: float) -> str:
        if self.server is not None:
            self.server.wait_ready(wait_s)
            return self.server.url
        published = read_published(self.record_path)
        if published is None:
            raise ModelProcessError(f"the shared model process is gone ({self.record_path} was removed)")
        return published.url

    def available(self) -> bool:
        """For a published process: its owner is still running it."""
        if self.server is not None:
            return not self.server.failure
        published = read_published(self.record_path)
        return published is not None and _alive(published.owner_pid)

    def shape(self, asked: ServerShape) -> ServerShape:
        """What the process runs with: this process's own, or `asked` with the slots its owner published."""
        if self.server is not None:
            return self.server.shape
        published = read_published(self.record_path)
        return replace(asked, slots=published.slots) if published else asked

    def pid(self) -> int | None:
        if self.server is not None:
            return self.server.pid
        published = read_published(self.record_path)
        return published.pid if published else None

    def exit_of(self, pid: int | None, wait_s: float) -> str | None:
        """How the process `pid` ended, when this process owns it and it has (waiting up to `wait_s` for that)."""
        if self.server is None or pid is None:
            return None
        deadline = time.monotonic() + wait_s
        while pid not in self.server.exits and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.server.exits.get(pid)

    def end_hung(self) -> None:
        """End a process that did not answer in time; its owner's supervisor starts another."""
        if self.server is not None:
            self.server.kill()
            return
        if (pid := self.pid()) is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def read_published(path: Path) -> Published | None:
    try:
        data = json.loads(path.read_text())
        return Published(**data)
    except (OSError, ValueError, TypeError):
        return None


_endpoints: dict[str, Endpoint] = {}
_endpoints_lock = threading.Lock()


def endpoint_for(shape: ServerShape, binary: Path | None, folder: Path, load_timeout_s: float) -> Endpoint:
    """The endpoint for `shape` in this process: a running process published by another owner when there is one
    (same weights and context per call), else one this process starts, publishes and stops when it exits."""
    with _endpoints_lock:
        current = _endpoints.get(shape.key)
        if current is not None and current.available():
            return current
        record_path = folder / f"{shape.key}.json"
        published = read_published(record_path)
        if published is not None and _alive(published.owner_pid) and published.owner_pid != os.getpid():
            try:
                if httpx.get(f"{published.url}/health", timeout=2.0).status_code == 200:
                    _endpoints[shape.key] = Endpoint(record_path)
                    return _endpoints[shape.key]
            except httpx.HTTPError:
                pass
        server = ModelServer(shape, find_server_binary(binary), folder / f"{shape.key}.log", load_timeout_s)
        server.on_start = lambda started: _publish(record_path, started)
        server.start()
        if not _endpoints:
            atexit.register(stop_owned)
        _endpoints[shape.key] = Endpoint(record_path, server)
        return _endpoints[shape.key]


def _publish(path: Path, server: ModelServer) -> None:
    record = Published(
        url=server.url,
        pid=server.pid or 0,
        owner_pid=os.getpid(),
        model_path=server.shape.model_path,
        slots=server.shape.slots,
    )
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(asdict(record)))
    temporary.replace(path)


def stop_owned() -> None:
    """Stop every model process this process started and withdraw what it published (at exit, and by `serve`)."""
    with _endpoints_lock:
        for endpoint in _endpoints.values():
            if endpoint.server is None:
                continue
            published = read_published(endpoint.record_path)
            if published is not None and published.owner_pid == os.getpid():
                endpoint.record_path.unlink(missing_ok=True)
            endpoint.server.stop()
        _endpoints.clear()
