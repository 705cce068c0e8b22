"""The users file (`PAGEGRAPH_AUTH_FILE`): who may use the server, with salted scrypt hashes of their API keys.

Keys made by `pagegraph users add` read `pg_ID_SECRET`: the ID (also stored, in the clear) finds the user, so a
request costs one scrypt check, once per key and process (verified keys are remembered in memory under a
process-secret HMAC). Keys converted from an old plain-text file have no ID and are checked user by user.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
import time
from collections import defaultdict, deque
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from pagegraph.access.records import ApiUser
from pagegraph.config import Settings
from pagegraph.errors import PagegraphError

KEY_PREFIX = "pg_"
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
_USERS = TypeAdapter(list[ApiUser])
_PROCESS_SECRET = secrets.token_bytes(32)


def hash_key(key: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(key.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    encoded = [base64.b64encode(part).decode() for part in (salt, digest)]
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encoded[0]}${encoded[1]}"


def key_matches(key: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            key.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def new_key() -> tuple[str, str]:
    """A fresh API key and its public ID."""
    key_id = secrets.token_hex(4)
    return f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(24)}", key_id


def key_id_of(key: str) -> str | None:
    if not key.startswith(KEY_PREFIX):
        return None
    key_id, sep, _ = key[len(KEY_PREFIX) :].partition("_")
    return key_id if sep else None


def convert_command(path: Path) -> str:
    return f"pagegraph users convert {path}"


def read_users(path: Path) -> list[ApiUser]:
    """The users of a users file; a file that still holds plain-text keys is refused with the command that converts
    it."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PagegraphError(f"users file {path} does not exist (create it with `pagegraph users add NAME`)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PagegraphError(f"users file {path}: not JSON ({exc})") from None
    rows = body.get("users") if isinstance(body, dict) else None
    if isinstance(rows, list) and any(isinstance(row, dict) and "api_key" in row for row in rows):
        raise PagegraphError(
            f"users file {path} stores API keys in plain text, which is no longer accepted: run "
            f"`{convert_command(path)}` to keep only salted hashes (the keys themselves stay valid)"
        )
    try:
        return _USERS.validate_python(rows)
    except ValidationError as exc:
        raise PagegraphError(
            f'users file {path}: expected {{"users": [{{"name", "key_hash", "role", "projects", "ceiling"}}]}} ({exc})'
        ) from None


def write_users(path: Path, users: list[ApiUser]) -> None:
    """Replace the users file in one step (a reader never sees half of it), readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"users": [user.model_dump(exclude_none=True) for user in users]}
    descriptor, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=2)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def convert_plain_file(path: Path) -> list[str]:
    """Replace each plain-text key of an old users file by its salted hash; returns the names converted."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        rows = body["users"]
        converted = []
        for row in rows:
            if "api_key" in row:
                key = str(row.pop("api_key"))
                if len(key) < 16:
                    raise PagegraphError(f"users file {path}: {row.get('name')}'s key is shorter than 16 characters")
                row["key_hash"] = hash_key(key)
                row["key_id"] = key_id_of(key)
                converted.append(str(row.get("name")))
        users = _USERS.validate_python([{k: v for k, v in row.items() if v is not None} for row in rows])
    except FileNotFoundError:
        raise PagegraphError(f"users file {path} does not exist") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
        raise PagegraphError(f'users file {path}: expected {{"users": [...]}} ({exc})') from None
    write_users(path, users)
    return converted


class SignInLimited(PagegraphError):
    """Too many failed sign-ins with one key ID in the last minute; `retry_after` seconds to wait."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


_DUMMY_HASH = hash_key(secrets.token_urlsafe(24))  # checked for a key whose ID matches no user: failures cost alike
FAILURE_WINDOW_S = 60.0


class UserDirectory:
    """Finds the user an API key belongs to; re-reads the users file when it changes. Failed sign-ins are counted
    per source address and key ID: past `failures_per_minute` in a minute, that pair is refused without a check
    until the minute has passed (a wrong key costs a scrypt check; guessing one user's secret is slowed down, and so
    is a CPU sink)."""

    def __init__(self, path: Path, failures_per_minute: int = 10) -> None:
        self.path = path
        self.failures_per_minute = failures_per_minute
        self._lock = threading.Lock()
        self._stamp: tuple[float, int] | None = None
        self._users: list[ApiUser] = []
        self._verified: dict[bytes, ApiUser] = {}
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def users(self) -> list[ApiUser]:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            raise PagegraphError(f"users file {self.path} does not exist") from None
        stamp = (info.st_mtime, info.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._users = read_users(self.path)
                self._verified.clear()
                self._stamp = stamp
            return self._users

    def named(self, name: str) -> ApiUser | None:
        """The user called `name` in the file as it is now."""
        return next((user for user in self.users() if user.name == name), None)

    def find(self, key: str, source: str | None = None) -> ApiUser | None:
        """The user `key` belongs to, or None. Failures are counted per source address and key ID (a key ID that
        matches no user counts as one ID): guesses from one address slow down that address only, so an attacker
        cannot lock a user's valid key out from elsewhere."""
        users = self.users()
        seen = hmac.new(_PROCESS_SECRET, key.encode(), hashlib.sha256).digest()
        with self._lock:
            if seen in self._verified:
                return self._verified[seen]
        key_id = key_id_of(key)
        candidates = [u for u in users if u.key_id == key_id] if key_id else [u for u in users if u.key_id is None]
        counted = f"{source or '-'} {key_id if candidates and key_id else '(no such key ID)'}"
        self._admit(counted)
        for user in candidates:
            if key_matches(key, user.key_hash):
                with self._lock:
                    self._verified[seen] = user
                return user
        if not candidates:
            key_matches(key, _DUMMY_HASH)
        with self._lock:
            self._failures[counted].append(time.monotonic())
        return None

    def _admit(self, counted: str) -> None:
        with self._lock:
            failures = self._failures[counted]
            now = time.monotonic()
            while failures and now - failures[0] >= FAILURE_WINDOW_S:
                failures.popleft()
            if len(failures) >= self.failures_per_minute:
                wait = int(FAILURE_WINDOW_S - (now - failures[0])) + 1
                raise SignInLimited(
                    f"too many failed sign-ins from this address with this key in the last minute; try again in "
                    f"{wait} s (PAGEGRAPH_SIGN_IN_FAILURES_PER_MINUTE)",
                    wait,
                )


@functools.cache
def _directory(path: Path, failures_per_minute: int) -> UserDirectory:
    return UserDirectory(path, failures_per_minute)


def user_directory(settings: Settings) -> UserDirectory:
    """The process's one directory of the configured users file (`settings.auth_file`, which must be set)."""
    assert settings.server.auth_file is not None
    return _directory(settings.server.auth_file.expanduser().resolve(), settings.limits.sign_in_failures_per_minute)
