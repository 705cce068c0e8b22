"""The embedded model shared by a real `pagegraph serve` (loopback only): the 4 sample questions one after another,
then the same 4 at once, answered by the real local model in its llama-server process; for each `--workers` count
in one run. Prints wall time, throughput, per-question p50/p95, and the memory of what serve started: its server
workers, the one model process, PostgreSQL and Redis (RSS, MB).

Before the model had a process of its own, each server worker loaded the weights itself; "model copies" gives the
number of llama-server processes found (1 whatever the workers), and the line "per-worker model (before)" the
memory that design would have taken: the workers' RSS plus one model's RSS per worker.

    .venv/bin/python bench/model_sharing.py [--workers 1,2] [--graph auto] [--out FILE]
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

from bench.server_load import QUESTIONS, percentile  # noqa: E402
from tests.e2e.harness import Server, free_port  # noqa: E402

PAGEGRAPH = Path(sys.executable).with_name("pagegraph")


def processes(root: int, folder: Path) -> list[tuple[int, str, float]]:
    """(pid, command, RSS in MB) of `root` and its descendants, and of the PostgreSQL serve started for `folder`
    (pg_ctl leaves it a daemon of its own) with its children."""
    listed = subprocess.run(["ps", "-eo", "pid=,ppid=,rss=,args="], capture_output=True, text=True, check=True)
    rows = []
    for line in listed.stdout.splitlines():
        pid, ppid, rss, command = line.split(None, 3)
        rows.append((int(pid), int(ppid), float(rss) / 1024, command))
    family = {root} | {pid for pid, _, _, command in rows if str(folder) in command}
    grew = True
    while grew:
        grew = False
        for pid, ppid, _, _ in rows:
            if ppid in family and pid not in family:
                family.add(pid)
                grew = True
    return [(pid, command, rss) for pid, _, rss, command in rows if pid in family]


def memory(root: int, folder: Path) -> dict[str, float]:
    parts = {"model": 0.0, "server workers": 0.0, "postgres + redis": 0.0, "serve itself": 0.0, "model copies": 0}
    for pid, command, rss in processes(root, folder):
        if "llama-server" in command:
            parts["model"] += rss
            parts["model copies"] += 1
        elif command.startswith("postgres") or "/postgres " in command or "redis-server" in command:
            parts["postgres + redis"] += rss
        elif pid == root:
            parts["serve itself"] += rss
        else:
            parts["server workers"] += rss
    return {name: round(value, 1) for name, value in parts.items()}


async def ask(url: str, graph: str, question: str) -> float:
    from langgraph_sdk import get_client

    began = time.perf_counter()
    output = await get_client(url=url).runs.wait(None, graph, input={"question": question})
    if not output or "answer" not in output:
        raise RuntimeError(f"no answer to {question!r}: {output}")
    return time.perf_counter() - began


def summary(latencies: list[float], wall: float) -> dict[str, float]:
    return {
        "wall_s": round(wall, 1),
        "questions_per_min": round(60 * len(latencies) / wall, 2),
        "p50_s": round(statistics.median(latencies), 1),
        "p95_s": round(percentile(latencies, 0.95), 1),
    }


async def phases(url: str, graph: str) -> dict[str, dict[str, float]]:
    await ask(url, graph, QUESTIONS[0])  # warm: the index, the embedder, the model's first prompt
    began = time.perf_counter()
    one_by_one = [await ask(url, graph, question) for question in QUESTIONS]
    sequential = summary(one_by_one, time.perf_counter() - began)
    began = time.perf_counter()
    together = await asyncio.gather(*(ask(url, graph, question) for question in QUESTIONS))
    return {"one after another": sequential, "at once": summary(list(together), time.perf_counter() - began)}


def measure(workers: int, graph: str, index: Path) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"pagegraph-sharing-{workers}-"))
    try:
        shutil.copy(REPO / "langgraph.json", folder / "langgraph.json")
        shutil.copytree(index, folder / "index")
        env = {
            **os.environ,
            "PAGEGRAPH_INDEX": str(folder / "index"),
            "PAGEGRAPH_INGEST_SUMMARIES": "extractive",
            "PAGEGRAPH_RUNS_PER_USER": str(len(QUESTIONS)),  # the 4 at once are one user's
        }
        env.pop("PAGEGRAPH_AUTH_FILE", None)
        server = Server(url=f"http://127.0.0.1:{free_port()}", folder=folder, env=env, workers=workers)
        server.start()
        try:
            figures = asyncio.run(phases(server.url, graph))
            rss = memory(server.process.pid, folder)
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    before = rss["server workers"] + rss["model"] * workers + rss["postgres + redis"] + rss["serve itself"]
    after = rss["server workers"] + rss["model"] + rss["postgres + redis"] + rss["serve itself"]
    return {
        "workers": workers,
        **figures,
        "rss_mb": rss,
        "total_mb": round(after),
        "per_worker_model_mb": round(before),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--graph", default="auto")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    index = Path(tempfile.mkdtemp(prefix="pagegraph-sharing-index-")) / "index"
    subprocess.run(
        [str(PAGEGRAPH), "ingest", str(REPO / "samples"), "--index", str(index), "--project", "demo"],
        check=True,
        capture_output=True,
        env={**os.environ, "PAGEGRAPH_INGEST_SUMMARIES": "extractive"},
    )
    try:
        results = [measure(int(workers), args.graph, index) for workers in args.workers.split(",")]
    finally:
        shutil.rmtree(index.parent, ignore_errors=True)
    print(f"{len(QUESTIONS)} questions of `{args.graph}`, the embedded model through `pagegraph serve`")
    print("workers | phase             | wall    | questions/min | p50     | p95")
    for r in results:
        for name in ("one after another", "at once"):
            f = r[name]
            print(
                f"{r['workers']:>7} | {name:17s} | {f['wall_s']:5.1f} s | {f['questions_per_min']:13.2f} | "
                f"{f['p50_s']:5.1f} s | {f['p95_s']:5.1f} s"
            )
    print(
        "workers | model copies | model MB | workers MB | postgres+redis MB | total MB | per-worker model (before) MB"
    )
    for r in results:
        m = r["rss_mb"]
        print(
            f"{r['workers']:>7} | {m['model copies']:>12} | {m['model']:8.0f} | {m['server workers']:10.0f} | "
            f"{m['postgres + redis']:17.0f} | {r['total_mb']:8} | {r['per_worker_model_mb']}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"graph": args.graph, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
