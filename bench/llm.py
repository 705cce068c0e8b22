"""Speed of the embedded local models: load time, prompt tokens/s and generation tokens/s.

Each round sends a ~1000-token prompt (the sample manual's pages, a different page order each round so that
llama.cpp's prefix cache cannot reuse the previous round) through pagegraph's chat model, streaming, and times the
first token (prompt evaluation) and the rest (generation). Medians over the rounds; thread counts side by side so
that their ratio is measured in the same run.

    .venv/bin/python bench/llm.py [--models local,local-fast] [--threads 1,2] [--rounds 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GENERATED_TOKENS = 128


def prompts(rounds: int) -> list[str]:
    from pagegraph.indexing.loaders import load_document

    pages = [p.text for p in load_document(REPO / "samples" / "sb40-user-manual.pdf").pages[1:7]]
    texts = []
    for shift in range(rounds):
        order = pages[shift % len(pages) :] + pages[: shift % len(pages)]
        texts.append("\n\n".join(order) + "\n\nSummarise the manual above in detail, section by section.")
    return texts


def measure(spec: str, threads: int, rounds: int) -> dict[str, object]:
    from langchain_core.messages import HumanMessage

    from pagegraph.config import Settings
    from pagegraph.llm import get_chat_model
    from pagegraph.llm.factory import LOCAL_MODELS
    from pagegraph.llm.weights import ensure_weights

    settings = Settings(llm_threads=threads)
    ensure_weights(LOCAL_MODELS[spec], settings.cache_dir)
    started = time.perf_counter()
    model = get_chat_model(spec, settings=settings, max_tokens=GENERATED_TOKENS, streaming=True)
    model.loaded()
    load_s = time.perf_counter() - started
    prompt_rates, generation_rates, prompt_sizes = [], [], []
    for text in prompts(rounds):
        first = None
        usage = None
        started = time.perf_counter()
        for chunk in model.stream([HumanMessage(content=text)]):
            if first is None and chunk.content:
                first = time.perf_counter()
            usage = chunk.usage_metadata or usage
        ended = time.perf_counter()
        assert first is not None and usage is not None
        prompt_sizes.append(usage["input_tokens"])
        prompt_rates.append(usage["input_tokens"] / (first - started))
        generation_rates.append((usage["output_tokens"] - 1) / (ended - first))
    row = {
        "model": spec,
        "threads": threads,
        "load_s": round(load_s, 2),
        "prompt_tokens": int(statistics.median(prompt_sizes)),
        "prompt_tok_s": round(statistics.median(prompt_rates), 1),
        "generation_tok_s": round(statistics.median(generation_rates), 1),
        "rounds": rounds,
    }
    print(
        f"{spec:10s} threads={threads}  load {row['load_s']:5.2f} s  "
        f"prompt {row['prompt_tok_s']:6.1f} tok/s ({row['prompt_tokens']} tokens)  "
        f"generation {row['generation_tok_s']:5.1f} tok/s",
        flush=True,
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="local,local-fast")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rows = [
        measure(spec, int(threads), args.rounds)
        for spec in args.models.split(",")
        for threads in args.threads.split(",")
    ]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"generated_tokens": GENERATED_TOKENS, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
