"""Speed of the embedded local models: load time, prompt tokens/s and generation tokens/s.

Each round sends a ~1000-token prompt (the sample manual's pages, a different page order each round so that
llama.cpp's prefix cache cannot reuse the previous round) through pagegraph's chat model, streaming, and times the
first token (prompt evaluation) and the rest (generation), then times the same prompt's reply held to a JSON
schema by a grammar (as `nodes.pick` and structured output are; the prompt is read from the prefix cache, so this is
the generation rate under a grammar). Medians over the rounds; thread counts, llama-server
builds (`--servers NAME=PATH,...`) and weight repacking (`--repack on,off`) side by side so that their ratios are
measured in the same run. Each row starts its own model process (the load time includes the check reply).

    .venv/bin/python bench/llm.py [--models local,local-fast] [--threads 1,2] [--repack on] [--rounds 3]
        [--servers native=.venv/bin/llama-server,portable=/tmp/portable/llama-server] [--out FILE]
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
SUMMARY_SCHEMA = {
    "type": "json_object",
    "schema": {
        "type": "object",
        "properties": {"sections": {"type": "array", "items": {"type": "string"}}},
        "required": ["sections"],
    },
}


def prompts(rounds: int) -> list[str]:
    from pagegraph.ingest.loaders import load_document

    pages = [p.text for p in load_document(REPO / "samples" / "sb40-user-manual.pdf").pages[1:7]]
    texts = []
    for shift in range(rounds):
        order = pages[shift % len(pages) :] + pages[: shift % len(pages)]
        texts.append("\n\n".join(order) + "\n\nSummarise the manual above in detail, section by section.")
    return texts


def measure(spec: str, threads: int, rounds: int, server: str, binary: Path | None, repack: bool) -> dict[str, object]:
    from langchain_core.messages import HumanMessage

    from pagegraph.config import Settings
    from pagegraph.llm import get_chat_model
    from pagegraph.llm.factory import LOCAL_MODELS
    from pagegraph.llm.model_process import stop_model_processes
    from pagegraph.llm.weights import ensure_weights

    settings = Settings(models={"llm_threads": threads, "llm_repack": repack, "llama_server": binary})
    ensure_weights(LOCAL_MODELS[spec], settings.cache_dir)
    stop_model_processes(settings.model_process_folder())  # each row its own process, with its own build and flags
    started = time.perf_counter()
    model = get_chat_model(spec, settings=settings, max_tokens=GENERATED_TOKENS, streaming=True)
    endpoint = model.endpoint()
    load_s = time.perf_counter() - started
    fell_back = endpoint.shape(model.shape).repack != repack  # the build crashed at its first reply with repacking
    prompt_rates, generation_rates, grammar_rates, prompt_sizes = [], [], [], []
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
        # the same prompt again (read from llama.cpp's prefix cache), its reply held to a JSON schema by a grammar
        started = time.perf_counter()
        reply = model.invoke([HumanMessage(content=text)], response_format=SUMMARY_SCHEMA)
        grammar_rates.append(reply.usage_metadata["output_tokens"] / (time.perf_counter() - started))
    row = {
        "model": spec,
        "server": server,
        "repack": repack,
        "fell_back": fell_back,
        "threads": threads,
        "load_s": round(load_s, 2),
        "prompt_tokens": int(statistics.median(prompt_sizes)),
        "prompt_tok_s": round(statistics.median(prompt_rates), 1),
        "generation_tok_s": round(statistics.median(generation_rates), 1),
        "grammar_tok_s": round(statistics.median(grammar_rates), 1),
        "rounds": rounds,
    }
    print(
        f"{spec:10s} {server:9s} repack={'on ' if repack else 'off'} threads={threads}  load {row['load_s']:5.2f} s  "
        f"prompt {row['prompt_tok_s']:6.1f} tok/s ({row['prompt_tokens']} tokens)  "
        f"generation {row['generation_tok_s']:5.1f} tok/s  under a grammar {row['grammar_tok_s']:5.1f} tok/s{'  (crashed with repacking: measured without)' if fell_back else ''}",
        flush=True,
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="local,local-fast")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repack", default="on")
    parser.add_argument("--servers", default="", help="NAME=PATH of llama-server builds; default: the built one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    servers = dict(item.split("=", 1) for item in args.servers.split(",") if item) or {"built": ""}
    rows = [
        measure(spec, int(threads), args.rounds, name, Path(path) if path else None, repack == "on")
        for name, path in servers.items()
        for spec in args.models.split(",")
        for repack in args.repack.split(",")
        for threads in args.threads.split(",")
    ]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"generated_tokens": GENERATED_TOKENS, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
