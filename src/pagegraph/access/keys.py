"""The users file (`PAGEGRAPH_AUTH_FILE`): who may use the server, with salted hashes of their API keys.

Keys made by `pagegraph users add` read `pg_ID_SECRET`: the ID (also stored, in the clear) finds the user, and the
secret is 192 random bits, so a salted SHA-256 of it is as safe as a slow hash (nobody can guess such a secret) and
costs microseconds: a key of this form is always checked, and a correct one is never refused however many wrong
guesses others made. Keys converted from an old plain-text file have no ID, may be weak and are checked user by user
against salted scrypt hashes (as are keys written by earlier versions), each check costly: those are refused without
a check past the failed sign-ins their address may make.
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
from collections import deque
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
    """A salted hash of `key`: SHA-256 for a key `new_key` made (random, with an ID), scrypt for any other."""
    salt = secrets.token_bytes(16)
    if key_id_of(key):
        return f"sha256${base64.b64encode(salt).decode()}${base64.b64encode(_sha256(key, salt)).decode()}"
    digest = hashlib.scrypt(key.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    encoded = [base64.b64encode(part).decode() for part in (salt, digest)]
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${encoded[0]}${encoded[1]}"


def _sha256(key: str, salt: bytes) -> bytes:
    return hashlib.sha256(salt + key.encode()).digest()


def is_costly(stored: str) -> bool:
    """Whether checking a key against `stored` costs a slow hash (scrypt)."""
    return not stored.startswith("sha256$")


def key_matches(key: str, stored: str) -> bool:
    try:
        if not is_costly(stored):
            _, salt, digest = stored.split("$")
            return hmac.compare_digest(_sha256(key, base64.b64decode(salt)), base64.b64decode(digest))
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
    """Too many failed sign-ins from one address in the last minute; `retry_after` seconds to wait."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# checked for a key that matches no user, as costly as a check of a user's key of its form: failures cost alike
_DUMMY_HASHES = {True: hash_key(f"{KEY_PREFIX}00000000_{secrets.token_urlsafe(24)}"), False: hash_key("-")}
FAILURE_WINDOW_S = 60.0
MAX_SOURCES_COUNTED = 10_000  # addresses whose recent failures are kept; the oldest go first


class UserDirectory:
    """Finds the user an API key belongs to; re-reads the users file when it changes. Failed sign-ins (a wrong key,
    or none) are counted per source address: past `failures_per_minute` in a minute, a failure from that address
    is answered 429 rather than 401, and a key that would cost a slow check is refused without one until the minute
    has passed (guessing a weak secret is slowed down, and so is a CPU sink). A key of `new_key`'s form costs no
    slow check and is always checked: a correct one is never refused."""

    def __init__(self, path: Path, failures_per_minute: int = 10) -> None:
        self.path = path
        self.failures_per_minute = failures_per_minute
        self._lock = threading.Lock()
        self._stamp: tuple[float, int] | None = None
        self._users: list[ApiUser] = []
        self._verified: dict[bytes, ApiUser] = {}
        self._failures: dict[str, deque[float]] = {}

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
        """The user `key` belongs to, or None (a failure counted against `source`). Raises SignInLimited for a
        failure past the address's limit, and before a slow check past it."""
        users = self.users()
        seen = hmac.new(_PROCESS_SECRET, key.encode(), hashlib.sha256).digest()
        with self._lock:
            if seen in self._verified:
                return self._verified[seen]
        key_id = key_id_of(key)
        candidates = [u for u in users if u.key_id == key_id] if key_id else [u for u in users if u.key_id is None]
        if any(is_costly(user.key_hash) for user in candidates) or not (candidates or key_id):
            self._admit(source)
        for user in candidates:
            if key_matches(key, user.key_hash):
                with self._lock:
                    self._verified[seen] = user
                return user
        if not candidates:
            key_matches(key, _DUMMY_HASHES[key_id is not None])
        self.failed(source)
        return None

    def failed(self, source: str | None) -> None:
        """Count a failed sign-in from `source` (a wrong key, or none); raise SignInLimited once past the limit."""
        counted = source or "-"
        with self._lock:
            failures = self._failures.pop(counted, None) or deque()
            self._failures[counted] = failures  # most recent last: the oldest addresses go first past the cap
            failures.append(time.monotonic())
            while len(self._failures) > MAX_SOURCES_COUNTED:
                del self._failures[next(iter(self._failures))]
        self._admit(source, over=True)

    def _admit(self, source: str | None, over: bool = False) -> None:
        """Raise SignInLimited when `source` has made the most failures it may in the last minute (`over`: more)."""
        with self._lock:
            failures = self._failures.get(source or "-") or deque()
            now = time.monotonic()
            while failures and now - failures[0] >= FAILURE_WINDOW_S:
                failures.popleft()
            if len(failures) > self.failures_per_minute or (not over and len(failures) >= self.failures_per_minute):
                wait = int(FAILURE_WINDOW_S - (now - failures[0])) + 1
                raise SignInLimited(
                    f"too many failed sign-ins from this address in the last minute; try again in {wait} s "
                    "(PAGEGRAPH_SIGN_IN_FAILURES_PER_MINUTE)",
                    wait,
                )


@functools.cache
def _directory(path: Path, failures_per_minute: int) -> UserDirectory:
    return UserDirectory(path, failures_per_minute)


def user_directory(settings: Settings) -> UserDirectory:
    """The process's one directory of the configured users file (`settings.auth_file`, which must be set)."""
    assert settings.server.auth_file is not None
    return _directory(settings.server.auth_file.expanduser().resolve(), settings.limits.sign_in_failures_per_minute)
