"""Request bodies as the guards in front of the API read them: the whole body read once (and replayed to the route),
its JSON parsed with what no route can take refused first (nesting past a depth, NUL characters, numbers out of
range), and the parts of a request that starts runs the limits look at (questions, batches, crons, created runs)."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_JSON_DEPTH = 64
# A JSON number beyond this is not exact as a double (JavaScript clients lose it) nor fits the runtime's columns.
LARGEST_NUMBER = 2**53
MAX_SQL_INT = 2**31 - 1
YEAR_S = 366 * 24 * 3600
# The API's fields that reach SQL or a date as they are: a negative limit or offset is a database error there, and
# a start a million years away a date overflow.
NUMBER_BOUNDS = {"limit": (0, MAX_SQL_INT), "offset": (0, MAX_SQL_INT), "after_seconds": (0, YEAR_S)}


async def refuse(send: Send, status: int, detail: str, retry_after: int | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def too_large(size: int, limit: int, knob: str) -> str:
    return f"request body of {size:,} bytes is over the limit of {limit:,} bytes ({knob})"


async def read_body(receive: Receive, limit: int) -> tuple[bytes | None, int]:
    """The whole request body, or None (with the bytes read so far) once it passes `limit`."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return bytes(body), len(body)
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return None, len(body)
        if not message.get("more_body"):
            return bytes(body), len(body)


def replayer(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # as a server does: nothing more until the client goes
        return {"type": "http.disconnect"}

    return receive


def json_body(body: bytes) -> Any:
    """A request's or answer's JSON; None for an empty body, one that is not JSON (the API answers that) or one
    nested too deep to parse."""
    try:
        return json.loads(body or b"null")
    except (ValueError, RecursionError):
        return None


def body_problem(body: bytes) -> str | None:
    """Why no route may take `body` as JSON: nested deeper than MAX_JSON_DEPTH, a NUL character in a string or key
    (PostgreSQL stores none, so the request would fail after it was accepted), a number past LARGEST_NUMBER, or one
    of NUMBER_BOUNDS' fields out of its range; None for a body that is not JSON (the route answers that)."""
    try:
        payload = json.loads(body or b"null")
    except RecursionError:
        return f"the request body nests deeper than {MAX_JSON_DEPTH} levels"
    except ValueError:
        return None
    stack: list[tuple[Any, str, int]] = [(payload, "the body", 0)]
    while stack:
        value, at, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"the request body nests deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(value, str) and "\x00" in value:
            return f"{at} holds a NUL character"
        if isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in key:
                    return f"a key in {at} holds a NUL character"
                stack.append((item, key if at == "the body" else f"{at}.{key}", depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{at}[{n}]", depth + 1) for n, item in enumerate(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value) or abs(value) > LARGEST_NUMBER:
                return f"{at} is {value}: numbers may not pass ±{LARGEST_NUMBER:,}"
            field = at.rsplit(".", 1)[-1]
            low, high = NUMBER_BOUNDS.get(field, (-LARGEST_NUMBER, LARGEST_NUMBER))
            if not low <= value <= high:
                return f"{at} is {value:g}; it must be from {low:,} to {high:,}"
    return None


def run_inputs(payload: Any) -> list[dict]:
    """The graph inputs a request that starts runs carries: a run's `input` and its `command.update` (a batch: of
    each of its runs; a cron: its `input`)."""
    inputs = []
    for run in payload if isinstance(payload, list) else [payload]:
        if not isinstance(run, dict):
            continue
        command = run.get("command")
        update = command.get("update") if isinstance(command, dict) else None
        inputs += [given for given in (run.get("input"), update) if isinstance(given, dict)]
    return inputs


def longest_question(payload: Any) -> int:
    """The longest question a request that starts runs carries (`run_inputs`), or a state edit (`values`): a
    `question`, or the text of the last message; 0 for one that carries none."""
    given_all = run_inputs(payload)
    if isinstance(payload, dict) and isinstance(payload.get("values"), dict):
        given_all.append(payload["values"])
    longest = 0
    for given in given_all:
        texts = [given.get("question")]
        messages = given.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
            texts.append(messages[-1].get("content"))
        longest = max([longest, *(len(text) for text in texts if isinstance(text, str))])
    return longest


def owned_cron(payload: Any, user: str) -> bytes | None:
    """A cron request's body with its owner in the cron's own metadata; None for a request that is not a JSON
    object. The runtime keeps a cron's metadata from the request (the auth handler's stamp lands in its run payload
    only), and every later read, search or delete of the cron is filtered by that owner: without it the owner could
    not find or delete their own cron."""
    if not isinstance(payload, dict):
        return None
    metadata = payload.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    return json.dumps({**payload, "metadata": {**metadata, "owner": user}}).encode()


def with_body(scope: Scope, body: bytes) -> Scope:
    """`scope` with its content-length set for a replaced body."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}


def batch_size(payload: Any) -> int:
    return max(1, len(payload)) if isinstance(payload, list) else 1


def created_runs(body: bytes) -> list[tuple[str, str]]:
    """(thread id, run id) of the runs a create call answered with."""
    payload = json_body(body)
    items = payload if isinstance(payload, list) else [payload]
    return [
        (item["thread_id"], item["run_id"])
        for item in items
        if isinstance(item, dict) and item.get("thread_id") and item.get("run_id")
    ]
