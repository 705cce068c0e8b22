"""The server's audit log: one line per refused sign-in, refused ingest, declassification attempt, role refusal and
refused scheduled run (its owner left the users file), saying who (user or key ID, never a key), where (route or
graph), from where (source address) and why. Each line goes to the server's log (logger `pagegraph.audit`) and to a
JSON-lines file (`Settings.audit_path`), which admins read at `GET /ui/audit`. Refused sign-ins that repeat (the
same who, address and reason within a minute) are written once, and once more with their count when the minute is
over (`RepeatedRefusals`): a sweep of a thousand keyless requests writes a few lines, not a thousand."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pagegraph.config import get_settings

Event = Literal[
    "sign_in_refused",
    "ingest_refused",
    "declassify_refused",
    "role_refused",
    "scheduled_run_refused",
    "documents_removed",
]
log = logging.getLogger("pagegraph.audit")
_write = threading.Lock()


class AuditEntry(BaseModel):
    at: str = Field(description="UTC time, ISO 8601")
    event: Event
    who: str = Field(description="the user, or `key KEYID` for a key that matched no user, or `no key`")
    route: str = Field(description="the HTTP route or graph refused")
    source: str | None = Field(default=None, description="the client's address, where known")
    reason: str
    repeated: int = Field(default=0, description="times the same refusal came again since its last line")


def audit(event: Event, *, who: str, route: str, reason: str, source: str | None = None, repeated: int = 0) -> None:
    entry = AuditEntry(
        at=datetime.now(UTC).isoformat(timespec="seconds"),
        event=event,
        who=who,
        route=route,
        source=source,
        reason=reason,
        repeated=repeated,
    )
    again = f" (and {repeated} more like it)" if repeated else ""
    log.warning("audit %s who=%s route=%s source=%s: %s%s", event, who, route, source or "-", reason, again)
    path = get_settings().audit_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        line = (entry.model_dump_json() + "\n").encode()
        with _write:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(descriptor, line)  # one write of one line: whole even with several workers appending
            finally:
                os.close(descriptor)
    except OSError as exc:
        log.error("audit log %s cannot be written: %s", path, exc)


class RepeatedRefusals:
    """Writes a refusal that repeats once per `window_s`: the first of a kind (event, who, source, reason but its
    numbers) at once,
    then, at the first one after the window, a line with how many came in between. At most `max_kinds` kinds are
    followed (the oldest dropped first), so a sweep from many addresses cannot grow it without bound."""

    def __init__(self, window_s: float = 60.0, max_kinds: int = 10_000) -> None:
        self.window_s = window_s
        self.max_kinds = max_kinds
        self._seen: dict[tuple[str, str, str, str], tuple[float, int]] = {}  # kind -> (line written at, repeats since)
        self._lock = threading.Lock()

    def audit(self, event: Event, *, who: str, route: str, reason: str, source: str | None = None) -> None:
        kind = (event, who, source or "-", re.sub(r"\d+", "N", reason))  # "try again in 41 s" is one kind
        now = time.monotonic()
        with self._lock:
            written, repeats = self._seen.pop(kind, (None, 0))
            if written is not None and now - written < self.window_s:
                self._seen[kind] = (written, repeats + 1)
                return
            self._seen[kind] = (now, 0)
            while len(self._seen) > self.max_kinds:
                del self._seen[next(iter(self._seen))]
        audit(event, who=who, route=route, reason=reason, source=source, repeated=repeats)


def recent(path: Path, limit: int) -> list[AuditEntry]:
    """The last `limit` entries, newest last; lines that do not parse are skipped."""
    try:
        lines = path.read_text(errors="replace").splitlines()[-limit:]
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(AuditEntry.model_validate(json.loads(line)))
        except ValueError:
            continue
    return entries
