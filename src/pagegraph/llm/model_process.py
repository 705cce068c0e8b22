"""The embedded model's own process: llama.cpp's server (`llama-server`, built by scripts/build_model_server.sh),
reached over HTTP on loopback like any OpenAI-compatible model.

A native crash in llama.cpp (a segfault, an out-of-memory kill) ends that process, not the CLI or the LangGraph
server: the call that was running fails with a clear error and the process is started again. One process serves
every caller on the machine, kept by a small process of its own (`llm.model_keeper`, as Ollama keeps its models):
the first command that needs the model starts the keeper, which publishes the model's address in the cache folder;
every process with the same model (`pagegraph ask`, the server's workers, `eval`) uses that one instead of loading
the weights again, its parallel slots batching their questions. The keeper outlives whoever started it, and stops
the model once no call has used it for `Settings.models.llm_idle_s` (or at `pagegraph model stop`).

Before the first question the keeper asks for a short reply (`ModelServer.start`): a build that crashes on this CPU
is found then, retried once without weight repacking, and otherwise reported with the CPU's features, the build and
the way out.
"""

from __future__ import annotations

import ctypes
import fcntl
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
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
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
    if configured is None and (candidates[0].parent.parent / "share" / "pagegraph" / "llama-server.building").exists():
        raise LocalModelError(
            f"{candidates[0]}: llama.cpp's server is not built yet; if its compile is still running, "
            "`bash scripts/build_model_server.sh --wait` shows how far it is and waits for it (else it builds it)"
        )
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
            self._ready.clear()  # before the exit is noted: whoever reads the exit finds the process not ready
            ended = self.exits[self.process.pid] = describe_exit(returncode)
            log.warning("model process (pid %s) %s; starting it again", self.process.pid, ended)
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

    @property
    def ready(self) -> bool:
        """A process has loaded and answers (false while one is started again)."""
        return self._ready.is_set() and not self.failure

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


# -- one process per machine, kept by a process of its own ---------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """What a model keeper (`llm.model_keeper`) writes where every process looks for the running model process:
    its address once it answers, how each of its ended processes ended (by pid), or why it could not start."""

    url: str
    pid: int
    owner_pid: int  # the keeper's
    model_path: str
    slots: int
    token: str = ""  # the starter's, to tell its keeper's record from an earlier one
    idle_s: float = 0.0
    exits: dict[str, str] = field(default_factory=dict)
    failure: str | None = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


class Endpoint:
    """Where a chat model sends its calls: the model process a keeper runs for this machine, found by its record."""

    def __init__(self, record_path: Path) -> None:
        self.record_path = record_path

    @property
    def used_path(self) -> Path:
        """Touched by every call: the keeper stops the process once nothing touched it for its idle time."""
        return self.record_path.with_suffix(".used")

    def touch(self) -> None:
        try:
            self.used_path.touch()
        except OSError:
            pass

    def published(self) -> Published | None:
        return read_published(self.record_path)

    def url(self, wait_s: float, not_pid: int | None = None) -> str:
        """The process's address while its keeper has one answering; while it is started again (or, with
        `not_pid`, until another process than that one answers), waits for it up to `wait_s`."""
        deadline = time.monotonic() + wait_s
        while True:
            published = self.published()
            if published is None or not _alive(published.owner_pid):
                raise ModelProcessError(f"the shared model process is gone ({self.record_path} was withdrawn)")
            if published.failure:
                raise ModelProcessError(published.failure)
            if published.url and published.pid != not_pid:
                return published.url
            if time.monotonic() > deadline:
                raise ModelProcessError(
                    f"the model process did not come back within {wait_s:.0f} s "
                    f"(log {self.record_path.with_suffix('.log')})"
                )
            time.sleep(READY_POLL_S)

    def available(self) -> bool:
        """Its keeper is running and has not given up."""
        published = self.published()
        return published is not None and not published.failure and _alive(published.owner_pid)

    def shape(self, asked: ServerShape) -> ServerShape:
        """What the process runs with: `asked` with the slots its keeper published."""
        published = self.published()
        return replace(asked, slots=published.slots) if published else asked

    def pid(self) -> int | None:
        published = self.published()
        return published.pid if published else None

    def keeper_pid(self) -> int | None:
        published = self.published()
        return published.owner_pid if published else None

    def idle_s(self) -> float | None:
        """How long the keeper keeps the model loaded without a call (the setting of the command that started it)."""
        published = self.published()
        return published.idle_s if published else None

    def exit_of(self, pid: int | None, wait_s: float) -> str | None:
        """How the process `pid` ended, once its keeper has noted it (waiting up to `wait_s` for that)."""
        if pid is None:
            return None
        deadline = time.monotonic() + wait_s
        while True:
            published = self.published()
            if published is not None and str(pid) in published.exits:
                return published.exits[str(pid)]
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)

    def end_hung(self) -> None:
        """End a process that did not answer in time; its keeper starts another."""
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


def publish(path: Path, record: Published) -> None:
    """Write `record` in one step: a reader sees the old record or the new one, never half of one."""
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(asdict(record)))
    temporary.replace(path)


_endpoints: dict[str, Endpoint] = {}
_endpoints_lock = threading.Lock()


def endpoint_for(
    shape: ServerShape, binary: Path | None, folder: Path, load_timeout_s: float, idle_s: float
) -> Endpoint:
    """The endpoint for `shape`: the model process this machine's keeper runs (same weights and context per call),
    started if none runs. The keeper outlives the process that started it and stops the model once it has been idle
    for `idle_s` seconds, so that a second command within that time starts answering without loading the model."""
    with _endpoints_lock:
        current = _endpoints.get(shape.key)
        if current is not None and current.available():
            return current
        folder.mkdir(parents=True, exist_ok=True)
        record_path = folder / f"{shape.key}.json"
        with (folder / f"{shape.key}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one starter at a time: the others find its keeper
            published = read_published(record_path)
            if published is None or published.failure or not _alive(published.owner_pid):
                _start_keeper(shape, find_server_binary(binary), record_path, load_timeout_s, idle_s)
        _endpoints[shape.key] = Endpoint(record_path)
        return _endpoints[shape.key]


KEEPER_START_MARGIN_S = 30.0  # beyond two loads (the second without repacking): Python's own start


def _start_keeper(shape: ServerShape, binary: Path, record_path: Path, load_timeout_s: float, idle_s: float) -> None:
    """Start a keeper for `shape` and wait until its model process has answered once; raise LocalModelError with
    the keeper's reason when it could not start one."""
    token = uuid.uuid4().hex
    log_path = record_path.with_suffix(".log")
    command = [sys.executable, "-m", "pagegraph.llm.model_keeper", json.dumps(asdict(shape)), str(binary)]
    command += [str(record_path), str(load_timeout_s), str(idle_s), token]
    with log_path.open("ab") as output:
        # its own session and no terminal or pipe of ours: the keeper and the model outlive this process, and a
        # caller that reads this process's output is not held open by them; it forks away at once (no zombie here)
        starter = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    starter.wait()
    deadline = time.monotonic() + 2 * load_timeout_s + KEEPER_START_MARGIN_S
    while time.monotonic() < deadline:
        published = read_published(record_path)
        if published is not None and published.token == token:
            if published.failure:
                raise LocalModelError(published.failure)
            if published.url and _healthy(published.url):
                return
            if not _alive(published.owner_pid):
                break
        time.sleep(READY_POLL_S)
    raise LocalModelError(f"the embedded model's keeper did not start the model process (its log: {log_path})")


def stop_model_processes(folder: Path, wait_s: float = STOP_GRACE_S * 3) -> list[Published]:
    """Stop every keeper that publishes in `folder` and so its model process (`pagegraph model stop`); the ones
    stopped. A keeper withdraws its record as it stops."""
    stopped = []
    for record_path in sorted(folder.glob("*.json")):
        published = read_published(record_path)
        if published is None or not _alive(published.owner_pid):
            continue
        try:
            os.kill(published.owner_pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        stopped.append(published)
    deadline = time.monotonic() + wait_s
    while any(_alive(p.owner_pid) for p in stopped) and time.monotonic() < deadline:
        time.sleep(0.05)
    with _endpoints_lock:
        _endpoints.clear()
    return stopped
