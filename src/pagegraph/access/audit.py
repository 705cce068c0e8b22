"""The server's audit log: one line per refused sign-in, refused ingest, declassification attempt, role refusal and
refused scheduled run (its owner left the users file), saying who (user or key ID, never a key), where (route or
graph), from where (source address) and why. Each line goes to the server's log (logger `pagegraph.audit`) and to a
JSON-lines file (`Settings.audit_path`), which admins read at `GET /ui/audit`."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pagegraph.config import get_settings

Event = Literal["sign_in_refused", "ingest_refused", "declassify_refused", "role_refused", "scheduled_run_refused"]
log = logging.getLogger("pagegraph.audit")
_write = threading.Lock()


class AuditEntry(BaseModel):
    at: str = Field(description="UTC time, ISO 8601")
    event: Event
    who: str = Field(description="the user, or `key KEYID` for a key that matched no user, or `no key`")
    route: str = Field(description="the HTTP route or graph refused")
    source: str | None = Field(default=None, description="the client's address, where known")
    reason: str


def audit(event: Event, *, who: str, route: str, reason: str, source: str | None = None) -> None:
    entry = AuditEntry(
        at=datetime.now(UTC).isoformat(timespec="seconds"),
        event=event,
        who=who,
        route=route,
        source=source,
        reason=reason,
    )
    log.warning("audit %s who=%s route=%s source=%s: %s", event, who, route, source or "-", reason)
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
