"""Sign-in that an attacker cannot turn against a user, against a real `pagegraph serve` (loopback, users file):
wrong guesses on a user's key ID never lock out the correct key, a forged X-Forwarded-For from a peer that is not a
trusted proxy changes nothing, keyless requests are limited too, and a sweep of them writes a few audit lines."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO
from tests.e2e.harness import Server, add_users, free_port, server_env

pytestmark = pytest.mark.slow
LIMIT = 10


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("sign-in-server")
    shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
    keys = add_users(folder / "users.json", {"root": ["--role", "admin"], "ana": []})
    env = server_env(
        folder,
        cache_dir,
        folder / "users.json",
        PAGEGRAPH_SIGN_IN_FAILURES_PER_MINUTE=str(LIMIT),
        PAGEGRAPH_AUDIT_LOG=str(folder / "audit.jsonl"),
    )
    server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env)
    server.start()
    try:
        yield {"server": server, "keys": keys, "audit": folder / "audit.jsonl"}
    finally:
        server.stop()


def test_guesses_forged_addresses_and_keyless_sweeps_never_lock_out_a_correct_key(site: dict) -> None:
    url, ana = site["server"].url, site["keys"]["ana"]
    key_id = ana.split("_")[1]
    statuses = []
    with httpx.Client(base_url=url, timeout=30) as http:
        for n in range(12):  # each from a new forged address: the server counts its peer, loopback
            forged = {"x-api-key": f"pg_{key_id}_wrong{n}", "x-forwarded-for": f"203.0.113.{n + 1}"}
            statuses.append(http.get("/threads/search", headers=forged).status_code)
        assert statuses == [401] * LIMIT + [429] * 2, statuses
        limited = http.get("/threads/search", headers={"x-api-key": f"pg_{key_id}_wrong"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
        signed_in = http.post("/threads/search", json={}, headers={"x-api-key": ana})
        assert signed_in.status_code == 200, "the correct key after 12 wrong guesses on its ID, same address"
        keyless = [http.get("/threads/search").status_code for _ in range(1000)]
        assert set(keyless) == {429}, "keyless requests from an address past its failures are limited too"
        assert http.post("/threads/search", json={}, headers={"x-api-key": ana}).status_code == 200
    lines = site["audit"].read_text().splitlines()
    assert 1 <= len(lines) <= 6, lines
