"""The rag graph on mmlongbench dev questions with the configured model (default: the embedded local model).

Each question is asked within its own documents (the row's `documents`, as `pagegraph ask --document`). Reports,
on answerable rows with gold pages, the share of answers whose citations include a gold evidence page, and on
unanswerable rows the abstention rate; also the abstention rate on answerable rows and seconds per question.
A sample keeps the run within reach of a 2-core machine (~40 s a question): `--answerable N --unanswerable M`
draws them with a fixed seed. Rows are written as they finish to --out (JSONL) and a rerun skips rows already
there, so an interrupted run resumes.

    .venv/bin/python bench/answers.py --index .pagegraph/eval-mmlb --answerable 30 --unanswerable 30 \\
        [--graph small_model] --out bench/out/answers-dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from itertools import zip_longest
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index holding the mmlongbench documents")
    parser.add_argument("--answerable", type=int, default=30, help="answerable rows with gold pages to sample")
    parser.add_argument("--unanswerable", type=int, default=30, help="unanswerable rows to sample")
    parser.add_argument("--model", default=None, help="model spec (default: PAGEGRAPH_MODEL)")
    parser.add_argument("--graph", default="rag", help="rag, small_model, basic or auto")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if not (EVAL / "dev.jsonl").exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")

    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.eval.questions import load_questions
    from pagegraph.indexing.index import Index
    from pagegraph.services import Services

    rows = load_questions(EVAL / "dev.jsonl")
    rng = random.Random(11)
    answerable = [r for r in rows if r.answerable and any(e.page for e in r.evidence)]
    unanswerable = [r for r in rows if not r.answerable]
    picked = rng.sample(answerable, min(args.answerable, len(answerable)))
    refused = rng.sample(unanswerable, min(args.unanswerable, len(unanswerable)))
    # alternate the two groups so that a run stopped early still measures both
    sample = [row for pair in zip_longest(picked, refused) for row in pair if row is not None]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["id"]: json.loads(line) for line in args.out.open()} if args.out.exists() else {}
    settings = Settings()
    with Index(args.index, settings) as index, args.out.open("a") as out:
        graph = build_graph(args.graph, services=Services(settings, index=index))
        context = Context(model=args.model)
        for number, row in enumerate(sample, 1):
            if row.id in done:
                continue
            started = time.perf_counter()
            output = graph.invoke({"question": row.question, "documents": row.documents}, context=context)
            gold = {(e.document, e.page) for e in row.evidence if e.page}
            cited = {(c.source, page) for c in output["citations"] for page in range(c.start_page, c.end_page + 1)}
            result = {
                "id": row.id,
                "answerable": row.answerable,
                "abstained": output["abstained"],
                "abstain_reason": output["abstain_reason"],
                "cites_gold_page": bool(gold & cited) if gold else None,
                "citations": [c.label for c in output["citations"]],
                "origins": [c.origin for c in output["citations"]],
                "confidence": output["confidence"],
                "graph": args.graph,
                "llm_calls": output["llm_calls"],
                "seconds": round(time.perf_counter() - started, 1),
                "answer": output["answer"][:500],
                "gold_answer": row.answer,
            }
            done[row.id] = result
            out.write(json.dumps(result) + "\n")
            out.flush()
            print(
                f"{number}/{len(sample)} {row.id} answerable={row.answerable} abstained={result['abstained']} "
                f"gold_page_cited={result['cites_gold_page']} {result['seconds']} s",
                flush=True,
            )
    results = [done[r.id] for r in sample if r.id in done]
    report(results)
    return 0


def report(results: list[dict]) -> None:
    answerable = [r for r in results if r["answerable"]]
    unanswerable = [r for r in results if not r["answerable"]]
    if answerable:
        cited = sum(bool(r["cites_gold_page"]) for r in answerable)
        abstained = sum(r["abstained"] for r in answerable)
        print(
            f"answerable rows: {len(answerable)}; citations include a gold page: {cited / len(answerable):.3f} "
            f"({cited}); abstained: {abstained / len(answerable):.3f} ({abstained})"
        )
    if unanswerable:
        abstained = sum(r["abstained"] for r in unanswerable)
        print(f"unanswerable rows: {len(unanswerable)}; abstained: {abstained / len(unanswerable):.3f} ({abstained})")
    if results:
        print(f"seconds per question: median {statistics.median(r['seconds'] for r in results):.1f}")
        calls = [r["llm_calls"] for r in results if "llm_calls" in r]
        if calls:
            print(f"model calls per question: mean {statistics.mean(calls):.2f}")


if __name__ == "__main__":
    sys.exit(main())
