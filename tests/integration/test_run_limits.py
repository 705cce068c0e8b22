"""The per-user run limits, kept in Redis as `pagegraph serve` keeps them: two processes' limits (two workers) on one
Redis are one limit; a slot given back is free at once; the per-minute count is shared too."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
import redis

from pagegraph.server.embedded import redis_binary
from pagegraph.server.run_limits import RunLimits
from tests.e2e.harness import free_port


@pytest.fixture
def redis_url(tmp_path) -> Iterator[str]:  # noqa: ANN001
    port = free_port()
    command = [str(redis_binary()), "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(tmp_path)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 20
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                server.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=20)


def test_two_workers_limits_on_one_redis_are_one_limit(redis_url: str) -> None:
    first, second = RunLimits(2, 5, redis_url), RunLimits(2, 5, redis_url)
    assert first.admit("rita") is None and second.admit("rita") is None
    refused = first.admit("rita")
    assert refused is not None and "rita has 2 runs going; the limit is 2 at once" in refused[0]
    assert second.admit("ana") is None, "another user has slots of her own"
    second.release("rita")
    assert first.admit("rita") is None, "a slot given back through another worker is free at once"
    first.release("rita", 2)
    assert second.admit("rita", 2) is None
    second.release("rita", 2)
    refused = first.admit("rita")  # 5 started in the last minute, whichever worker started them
    assert refused is not None and "started 5 runs in the last minute" in refused[0] and 0 < refused[1] <= 61


def test_without_redis_the_limits_are_this_process_s() -> None:
    limits = RunLimits(1, 10)
    assert limits.admit("rita") is None and limits.admit("rita") is not None
    limits.release("rita")
    assert limits.admit("rita") is None


def test_a_users_crons_hold_run_slots(redis_url: str) -> None:
    for limits in (RunLimits(2, 10, redis_url), RunLimits(2, 10)):
        assert limits.admit("pat", crons=1) is None
        refused = limits.admit("pat", crons=1)
        assert refused is not None and "pat has 1 runs going and 1 cron, which start runs" in refused[0]
        limits.release("pat")
