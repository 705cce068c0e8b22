"""Bounded load on a real `pagegraph serve` (loopback only): 4 users × 10 runs of the `basic` graph each, answered by
a scripted OpenAI-compatible model on loopback (instant replies), first on a quiet server, then while another user's
run waits on a slow model call. Latency p50/p95 per phase and server job count, side by side in one run, and the
server's memory (RSS of its process tree) after the runs.

The bound it checks: with a long run going, the short runs' p95 stays under half the long run's length (they are
not queued behind it). With `--jobs 1` (LangGraph's own default) they are.

    .venv/bin/python bench/server_load.py [--jobs 1,4] [--runs 10] [--users 4] [--slow-s 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.harness import ScriptedOpenAI, Server, add_users, free_port, server_env  # noqa: E402

QUESTIONS = [
    "How much does the SB-40 weigh?",
    "What does error code E04 mean?",
    "What is the usable capacity of the SB-40?",
    "What torque do the AC terminals need?",
]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its descendants, in MB."""
    listed = subprocess.run(["ps", "-eo", "pid=,ppid=,rss="], capture_output=True, text=True, check=True).stdout
    rows = [tuple(int(x) for x in line.split()) for line in listed.splitlines() if line.strip()]
    family, grew = {pid}, True
    while grew:
        grew = False
        for child, parent, _ in rows:
            if parent in family and child not in family:
                family.add(child)
                grew = True
    return sum(rss for child, _, rss in rows if child in family) / 1024


async def user_runs(url: str, key: str, runs: int, offset: int, empty: list[dict]) -> list[float]:
    """Seconds per run; runs that came back without an answer are kept in `empty`."""
    from langgraph_sdk import get_client

    sdk = get_client(url=url, api_key=key)
    seconds = []
    for number in range(runs):
        question = QUESTIONS[(offset + number) % len(QUESTIONS)]
        began = time.perf_counter()
        output = await sdk.runs.wait(None, "basic", input={"question": question})
        seconds.append(time.perf_counter() - began)
        if not output.get("answer"):
            empty.append(output)
    return seconds


async def phase(url: str, keys: dict[str, str], users: list[str], runs: int, long_user: str | None) -> dict:
    from langgraph_sdk import get_client

    long_task = None
    if long_user:
        sdk = get_client(url=url, api_key=keys[long_user])
        long_began = time.perf_counter()
        long_task = asyncio.create_task(
            sdk.runs.wait(None, "basic", input={"question": f"SLOW-QUESTION: {QUESTIONS[0]}"})
        )
        await asyncio.sleep(0.5)  # the long run has started and is waiting on the model
    began = time.perf_counter()
    empty: list[dict] = []
    per_user = await asyncio.gather(*(user_runs(url, keys[u], runs, i, empty) for i, u in enumerate(users)))
    wall = time.perf_counter() - began
    latencies = [s for user in per_user for s in user]
    result = {
        "runs": len(latencies),
        "wall_s": round(wall, 2),
        "p50_s": round(statistics.median(latencies), 3),
        "p95_s": round(percentile(latencies, 0.95), 3),
        "max_s": round(max(latencies), 3),
        "without_answer": len(empty),
    }
    if long_task is not None:
        await long_task
        result["long_run_s"] = round(time.perf_counter() - long_began, 2)
    return result


def measure(jobs: int, args: argparse.Namespace, cache_dir: Path, model: ScriptedOpenAI) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"pagegraph-load-{jobs}-"))
    try:
        shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
        users = [f"user{n}" for n in range(1, args.users + 1)]
        specs = {"admin": ["--role", "admin"], "long": ["--role", "reader"]}
        specs.update({user: ["--role", "reader"] for user in users})
        keys = add_users(folder / "users.json", specs)
        env = server_env(
            folder,
            cache_dir,
            folder / "users.json",
            PAGEGRAPH_INGEST_ROOTS=json.dumps([str(REPO / "samples")]),
            PAGEGRAPH_RUNS_PER_USER_PER_MINUTE="1000",
            **model.settings(),
        )
        server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env, jobs=jobs)
        server.start()
        try:
            from langgraph_sdk import get_client

            async def prepare() -> None:
                sdk = get_client(url=server.url, api_key=keys["admin"])
                done = await sdk.runs.wait(None, "ingest", input={"paths": [str(REPO / "samples")]})
                assert done["error"] is None, done
                await asyncio.gather(*(user_runs(server.url, keys[u], 1, 0, []) for u in users))  # warm up

            asyncio.run(prepare())
            quiet = asyncio.run(phase(server.url, keys, users, args.runs, None))
            busy = asyncio.run(phase(server.url, keys, users, args.runs, "long"))
            rss = tree_rss_mb(server.process.pid)
        except Exception:
            print((folder / "server.log").read_text()[-4000:], file=sys.stderr)
            raise
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bound = busy["long_run_s"] / 2
    return {
        "jobs": jobs,
        "quiet": quiet,
        "with_long_run": busy,
        "server_rss_mb": round(rss),
        "bound_s": round(bound, 2),
        "within_bound": busy["p95_s"] <= bound,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default="1,4", help="server job counts to compare, comma-separated")
    parser.add_argument("--runs", type=int, default=10, help="runs per user per phase")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--slow-s", type=float, default=10.0, help="how long the long run's model call takes")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    for key, value in {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1"}.items():
        os.environ.setdefault(key, value)
    cache_dir = Path(os.environ.get("PAGEGRAPH_CACHE_DIR") or Path.home() / ".cache" / "pagegraph")
    model = ScriptedOpenAI(slow_s=args.slow_s)
    model.start()
    try:
        results = [measure(int(jobs), args, cache_dir, model) for jobs in args.jobs.split(",")]
    finally:
        model.stop()
    print(
        f"{args.users} users x {args.runs} runs of `basic`, scripted model; long run: one model call of {args.slow_s:.0f} s"
    )
    print("jobs | quiet p50 / p95 | with a long run p50 / p95 (max) | long run | bound (p95 <= long/2) | server RSS")
    for r in results:
        q, b = r["quiet"], r["with_long_run"]
        print(
            f"{r['jobs']:>4} | {q['p50_s']:.2f} / {q['p95_s']:.2f} s | {b['p50_s']:.2f} / {b['p95_s']:.2f} s "
            f"({b['max_s']:.2f}) | {b['long_run_s']:.1f} s | {'held' if r['within_bound'] else 'MISSED'} "
            f"({r['bound_s']:.1f} s) | {r['server_rss_mb']} MB"
        )
        if q["without_answer"] or b["without_answer"]:
            print(f"     runs without an answer: {q['without_answer']} quiet, {b['without_answer']} with a long run")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"users": args.users, "runs": args.runs, "results": results}, indent=2))


if __name__ == "__main__":
    main()
