"""The keeper of the embedded model's process: `python -m pagegraph.llm.model_keeper SHAPE BINARY RECORD LOAD_S IDLE_S
TOKEN`, started by the first process that needs the model (`llm.model_process.endpoint_for`), in a session of its
own so that it outlives that process.

It runs llama-server under `ModelServer`'s supervisor (started again after a crash), publishes its address and how
each ended process ended in RECORD, and stops it (withdrawing RECORD) once no call has used it for IDLE_S seconds:
no slot decoding, and RECORD's `.used` file, which every call touches, not touched. SIGTERM (`pagegraph model stop`)
stops it at once. A model that cannot start is published as a failure with its reason, for the starter to report.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import httpx

from pagegraph.llm.model_process import ModelServer, Published, ServerShape, publish, read_published
from pagegraph.llm.weights import LocalModelError

POLL_S = 0.5
log = logging.getLogger("pagegraph.model_keeper")


def busy(url: str) -> bool:
    """Whether llama-server is decoding or has calls waiting (its /metrics); a process that does not answer is
    taken as busy (loading again after a crash, say)."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=2.0).text
    except httpx.HTTPError:
        return True
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in ("llamacpp:requests_processing", "llamacpp:requests_deferred") and float(value or 0) > 0:
            return True
    return False


class Keeper:
    def __init__(self, shape: ServerShape, binary: Path, record_path: Path, load_s: float, idle_s: float, token: str):
        self.record_path = record_path
        self.idle_s = idle_s
        self.token = token
        self.server = ModelServer(shape, binary, record_path.with_suffix(".log"), load_s)
        self.server.on_start = lambda _: self.publish(ready=True)
        self.stopping = threading.Event()
        self._publishing = threading.Lock()  # the supervisor's thread publishes a start, this one an exit

    def publish(self, ready: bool = False, failure: str | None = None) -> None:
        """The record: the address only while a process answers (`ready`), so that no caller takes a process
        being started again for the one that ended."""
        server = self.server
        with self._publishing:
            self._write(ready or server.ready, failure)

    def _write(self, ready: bool, failure: str | None) -> None:
        server = self.server
        publish(
            self.record_path,
            Published(
                url=server.url if ready and not failure else "",
                pid=server.pid or 0,
                owner_pid=os.getpid(),
                model_path=server.shape.model_path,
                slots=server.shape.slots,
                token=self.token,
                idle_s=self.idle_s,
                exits={str(pid): how for pid, how in server.exits.items()},
                failure=failure,
            ),
        )

    def run(self) -> int:
        try:
            self.server.start()
        except LocalModelError as exc:
            self.publish(failure=str(exc))
            return 1
        used = time.monotonic()
        exits = 0
        try:
            while not self.stopping.wait(POLL_S):
                if self.server.failure:  # the supervisor gave up on a process that kept dying
                    self.publish(failure=self.server.failure)
                    return 1
                if len(self.server.exits) != exits:  # a crash: callers read how it ended while it restarts
                    exits = len(self.server.exits)
                    self.publish()
                if busy(self.server.url):
                    used = time.monotonic()
                    continue
                try:
                    touched = time.time() - self.record_path.with_suffix(".used").stat().st_mtime
                    used = max(used, time.monotonic() - touched)
                except OSError:
                    pass
                if time.monotonic() - used > self.idle_s:
                    log.info("model keeper: idle for %.0f s; stopping the model", self.idle_s)
                    break
            return 0
        finally:
            self.withdraw()
            self.server.stop()

    def withdraw(self) -> None:
        published = read_published(self.record_path)
        if published is not None and published.owner_pid == os.getpid() and not published.failure:
            self.record_path.unlink(missing_ok=True)


def main(arguments: list[str]) -> int:
    shape_json, binary, record, load_s, idle_s, token = arguments
    if os.fork():  # the starter waits for this first process only: the keeper runs on as no one's child
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per poll
    keeper = Keeper(
        ServerShape(**json.loads(shape_json)), Path(binary), Path(record), float(load_s), float(idle_s), token
    )
    signal.signal(signal.SIGTERM, lambda *_: keeper.stopping.set())
    signal.signal(signal.SIGINT, lambda *_: keeper.stopping.set())
    return keeper.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
