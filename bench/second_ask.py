"""A second `pagegraph ask` soon after a first one: with the model process kept loaded between commands (its keeper,
`PAGEGRAPH_LLM_IDLE_S`) beside the way it was before, when every command loaded the model again (reproduced by
`pagegraph model stop` before each ask). The quick start's question over the shipped samples, the real embedded
model, cold and warm asks alternated `--rounds` times in one run; prints each ask's wall time and the medians, and
the warm/cold ratio.

    .venv/bin/python bench/second_ask.py [--rounds 3] [--out bench/results/second-ask.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGEGRAPH = Path(sys.executable).with_name("pagegraph")
QUESTION = "What does error code E04 mean, and what should the owner do about it?"


def timed_ask(env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([str(PAGEGRAPH), "ask", QUESTION, "--json"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ask failed: {done.stderr[-2000:]}")
    answer = json.loads(done.stdout)
    if answer["abstained"] or not answer["citations"]:
        raise SystemExit(f"ask gave no cited answer: {answer['answer']}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PAGEGRAPH_INDEX": str(Path(folder) / "index"), "PAGEGRAPH_INGEST_SUMMARIES": "extractive"}
        subprocess.run([str(PAGEGRAPH), "ingest", str(REPO / "samples")], env=env, capture_output=True, check=True)
        timed_ask(env)  # the index and the embedder warm in the page cache for both kinds alike
        cold, warm = [], []
        for round_ in range(args.rounds):
            subprocess.run([str(PAGEGRAPH), "model", "stop"], env=env, capture_output=True, check=True)
            cold.append(timed_ask(env))  # as before: the ask loads the model
            warm.append(timed_ask(env))  # the model the previous ask loaded, still running
            print(f"round {round_ + 1}: model loaded by the ask {cold[-1]:.1f} s, model kept loaded {warm[-1]:.1f} s")
    figures = {
        "rounds": args.rounds,
        "cold_s": [round(s, 2) for s in cold],
        "warm_s": [round(s, 2) for s in warm],
        "cold_p50_s": round(statistics.median(cold), 2),
        "warm_p50_s": round(statistics.median(warm), 2),
        "warm_over_cold": round(statistics.median(warm) / statistics.median(cold), 3),
    }
    print(
        f"p50: model loaded by each ask {figures['cold_p50_s']} s, kept loaded {figures['warm_p50_s']} s "
        f"(ratio {figures['warm_over_cold']})"
    )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
