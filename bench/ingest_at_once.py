"""Several `pagegraph ingest` processes on the same documents at once, into one PostgreSQL index, beside one process
alone on the same documents (each run into a new index, dropped after).

Prints each run's wall time, how many documents each process added, and whether every document was committed
exactly once with no chunk embedded twice. The processes share the machine's cores: each gets
PAGEGRAPH_EMBEDDING_THREADS = cores / processes (the one process all of them), as a user running several ingests
on one machine would set it; on several machines each ingest has its own.

    .venv/bin/python bench/ingest_at_once.py --database-url URL [--limit 20] [--processes 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"
PAGEGRAPH = Path(sys.executable).with_name("pagegraph")


def dev_documents(limit: int) -> list[Path]:
    names = sorted({d for line in (EVAL / "dev.jsonl").open() for d in json.loads(line)["documents"]})
    return [EVAL / "documents" / name for name in names][:limit]


def ingest_at_once(documents: list[Path], database_url: str, processes: int, threads: int) -> dict:
    """N ingest processes started together on the same documents into a new index: wall time and what each did."""
    from pagegraph.config import Settings
    from pagegraph.store.index import delete_index, open_index

    folder = Path("/tmp") / f"bench-at-once-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "PAGEGRAPH_DATABASE_URL": database_url,
        "PAGEGRAPH_EMBEDDING_THREADS": str(threads),
        "PAGEGRAPH_CACHE_DIR": str(REPO / ".pagegraph" / "cache"),
    }
    command = [str(PAGEGRAPH), "ingest", *map(str, documents), "--index", str(folder)]
    started = time.perf_counter()
    running = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(processes)
    ]
    outputs = [process.communicate()[0] for process in running]
    seconds = time.perf_counter() - started
    if any(process.returncode for process in running):
        sys.exit("an ingest failed:\n" + "\n".join(outputs))
    settings = Settings(index=folder, storage={"database_url": database_url})
    with open_index(folder, settings) as index:
        committed = {doc.name: doc.n_chunks for doc in index.documents()}
    delete_index(folder, settings)
    added = [len(re.findall(r": added,", out)) for out in outputs]
    embedded = sum(int(m) for out in outputs for m in re.findall(r"embedding: (\d+) chunks", out))
    return {
        "processes": processes,
        "threads_each": threads,
        "seconds": round(seconds, 1),
        "added_by_each": added,
        "documents_committed": len(committed),
        "each_committed_once": sum(added) == len(committed) == len(documents),
        "chunks_committed": sum(committed.values()),
        "chunks_embedded": embedded,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--limit", type=int, default=20, help="the first N mmlongbench dev documents")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not (EVAL / "dev.jsonl").exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")
    documents = dev_documents(args.limit)
    cores = os.cpu_count() or 1
    runs = [
        ingest_at_once(documents, args.database_url, 1, cores),
        ingest_at_once(documents, args.database_url, args.processes, max(1, cores // args.processes)),
    ]
    for figures in runs:
        print(
            f"{figures['processes']} process(es), {figures['threads_each']} embedding threads each: "
            f"{figures['seconds']} s; added {figures['added_by_each']}; {figures['documents_committed']} documents "
            f"committed, each once: {figures['each_committed_once']}; chunks committed {figures['chunks_committed']}, "
            f"embedded {figures['chunks_embedded']}"
        )
    print(f"{args.processes} at once / one alone: {runs[1]['seconds'] / runs[0]['seconds']:.2f} of the time")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"documents": len(documents), "cores": cores, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
