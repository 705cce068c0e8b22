"""Runs per server user: at once, and started in the last minute. Every entry that starts runs (the API's run routes,
crons' creation, the MCP tools) admits them here. With `pagegraph serve` the counts live in the runtime's Redis, so
that every worker and replica enforces one limit (a count per process let N workers run N times the limit); a slot
is a lease that ends when its run does, or after `LEASE_S` if the process holding it died. Without Redis (a test,
one process) they are counted in memory."""

from __future__ import annotations

import functools
import time
import uuid
from collections import defaultdict, deque

import redis

from pagegraph.config import Settings, get_settings

WINDOW_S = 60.0
LEASE_S = 3600.0  # a slot left by a process that died frees itself after this long
KEY_PREFIX = "pagegraph:run-limits"

# KEYS: running, started. ARGV: now, window, lease, at_once (less the user's crons), per_minute, runs, ids...
# Atomic across workers.
ADMIT = """
local now, window, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local at_once, per_minute, runs = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local started = redis.call('ZCARD', KEYS[2])
if started + runs > per_minute then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {'minute', started, oldest[2] or tostring(now)}
end
local running = redis.call('ZCARD', KEYS[1])
if running + runs > at_once then
  return {'at_once', running, '0'}
end
for i = 1, runs do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[6 + i])
  redis.call('ZADD', KEYS[2], now, ARGV[6 + i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(lease))
redis.call('EXPIRE', KEYS[2], math.ceil(window))
return {'ok', 0, '0'}
"""


class RunLimits:
    """Runs per user: at once, and started in the last minute; in Redis when `redis_url` is given."""

    def __init__(self, at_once: int, per_minute: int, redis_url: str | None = None) -> None:
        self.at_once = at_once
        self.per_minute = per_minute
        self.redis = redis.Redis.from_url(redis_url) if redis_url else None
        self._admit = self.redis.register_script(ADMIT) if self.redis is not None else None
        self.running: dict[str, int] = defaultdict(int)
        self.started: dict[str, deque[float]] = defaultdict(deque)

    @classmethod
    def of(cls, settings: Settings) -> RunLimits:
        limits = settings.limits
        return cls(limits.runs_per_user, limits.runs_per_user_per_minute, settings.server.redis_url)

    def admit(self, user: str, runs: int = 1, crons: int = 0) -> tuple[str, int] | None:
        """Take `runs` slots for `user`, whose `crons` each hold one (a cron starts runs of its own, on its
        schedule); or say why not, with the seconds to wait."""
        if self._admit is None:
            return self._admit_here(user, runs, crons)
        now = time.time()
        ids = [uuid.uuid4().hex for _ in range(runs)]
        keys = [f"{KEY_PREFIX}:{user}:running", f"{KEY_PREFIX}:{user}:started"]
        free = self.at_once - crons
        verdict, count, oldest = self._admit(
            keys=keys, args=[now, WINDOW_S, LEASE_S, free, self.per_minute, runs, *ids]
        )
        if verdict == b"minute":
            return self._too_many_started(user, int(count), int(WINDOW_S - (now - float(oldest))) + 1)
        if verdict == b"at_once":
            return self._too_many_running(user, int(count), crons)
        return None

    def release(self, user: str, runs: int = 1) -> None:
        """Give back `runs` of `user`'s slots (any of them: they are alike)."""
        if self.redis is None:
            self.running[user] = max(0, self.running[user] - runs)
            return
        self.redis.zpopmin(f"{KEY_PREFIX}:{user}:running", runs)

    def _admit_here(self, user: str, runs: int, crons: int) -> tuple[str, int] | None:
        now = time.monotonic()
        started = self.started[user]
        while started and now - started[0] >= WINDOW_S:
            started.popleft()
        if len(started) + runs > self.per_minute:
            return self._too_many_started(
                user, len(started), int(WINDOW_S - (now - started[0])) + 1 if started else int(WINDOW_S)
            )
        if self.running[user] + crons + runs > self.at_once:
            return self._too_many_running(user, self.running[user], crons)
        started.extend([now] * runs)
        self.running[user] += runs
        return None

    def _too_many_started(self, user: str, started: int, wait: int) -> tuple[str, int]:
        return (
            f"{user} has started {started} runs in the last minute; the limit is {self.per_minute} "
            "(PAGEGRAPH_RUNS_PER_USER_PER_MINUTE)",
            max(1, wait),
        )

    def _too_many_running(self, user: str, running: int, crons: int) -> tuple[str, int]:
        held = f" and {crons} cron{'s' if crons != 1 else ''}, which start runs of their own" if crons else ""
        return (
            f"{user} has {running} runs going{held}; the limit is {self.at_once} at once (PAGEGRAPH_RUNS_PER_USER)",
            1,
        )


@functools.cache
def user_run_limits() -> RunLimits:
    """This process's per-user run limits, which the API's run routes and the MCP tools share (and, in Redis, every
    other worker and replica of the server)."""
    return RunLimits.of(get_settings())
