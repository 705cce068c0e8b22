"""A second `pagegraph ask` soon after a first one: with the model process kept loaded between commands (its keeper,
`PAGEGRAPH_LLM_IDLE_S`) beside the way it was before, when every command loaded the model again (reproduced by
`pagegraph model stop` before each ask). The quick start's question over the shipped samples, the real embedded
model, cold and warm asks alternated `--rounds` times in one run; prints each ask's time to the answer's first token
(`ask` writing to a pipe says "· writing the answer" then) and to its end, their medians and the warm/cold ratios.

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


def timed_ask(env: dict[str, str]) -> tuple[float, float]:
    """Seconds to the answer's first token (when `ask`, writing to a pipe, says "· writing the answer") and to the
    end of the ask."""
    started = time.perf_counter()
    process = subprocess.Popen([str(PAGEGRAPH), "ask", QUESTION], env=env, stdout=subprocess.PIPE, text=True)
    first_token, lines = None, []
    for line in process.stdout:
        lines.append(line)
        if first_token is None and "writing the answer" in line:
            first_token = time.perf_counter() - started
    if process.wait() != 0 or first_token is None or "sb40-user-manual.pdf" not in "".join(lines):
        raise SystemExit(f"ask gave no cited answer: {''.join(lines)[-2000:]}")
    return first_token, time.perf_counter() - started


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
            print(
                f"round {round_ + 1}: first token / whole ask: model loaded by the ask {cold[-1][0]:.1f} / "
                f"{cold[-1][1]:.1f} s, model kept loaded {warm[-1][0]:.1f} / {warm[-1][1]:.1f} s"
            )
    figures: dict[str, object] = {"rounds": args.rounds}
    for measure, at in (("first_token", 0), ("whole_ask", 1)):
        cold_p50, warm_p50 = statistics.median(c[at] for c in cold), statistics.median(w[at] for w in warm)
        figures[measure] = {
            "cold_s": [round(c[at], 2) for c in cold],
            "warm_s": [round(w[at], 2) for w in warm],
            "cold_p50_s": round(cold_p50, 2),
            "warm_p50_s": round(warm_p50, 2),
            "warm_over_cold": round(warm_p50 / cold_p50, 3),
        }
        print(
            f"{measure} p50: model loaded by each ask {cold_p50:.1f} s, kept loaded {warm_p50:.1f} s "
            f"(ratio {warm_p50 / cold_p50:.2f})"
        )
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
