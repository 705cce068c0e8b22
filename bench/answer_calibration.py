"""Calibrate the extract graph's abstention on dev rows that are not the answer benchmark's.

Runs the extract graph (local model, document scope) on the rows of bench/calibration_rows.txt with
`answer_threshold` 0, so that only a refusal abstains, and keeps each row's signals: refusal, the answer's support
in its excerpt, the best passage's similarity. Then, for each support weight and threshold, prints what abstaining
below the combined confidence would give: answer accuracy, false abstentions on answerable rows and abstentions on
unanswerable ones. At --weight (Context.confidence.support_weight), the chosen threshold is the one with the highest abstain
recall among those whose accuracy and false-abstain rate are within --tolerance of the best any threshold reaches
(ties: the higher threshold). Rows are saved as they finish; --resume continues a killed run.

    .venv/bin/python bench/answer_calibration.py --index .pagegraph/eval-mmlb --out bench/results/answer-calibration.json [--resume]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
THRESHOLDS = tuple(round(0.05 * step, 2) for step in range(0, 17))


def outcome(rows: list[dict], weight: float, threshold: float) -> dict:
    """Accuracy, false-abstain rate and abstain recall had the graph abstained below `threshold` (the confidence
    the weigh stage computes, with `weight` as its support weight)."""
    from pagegraph.checks.reading import reading_confidence
    from pagegraph.config import Context
    from pagegraph.state.answering import Reading

    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    context = Context(confidence={"support_weight": weight})

    def abstains(row: dict) -> bool:
        signals = row["abstain_signals"]
        if row["abstained"] or signals is None or signals["refused"]:
            return True
        reading = Reading(draft="", wide=signals["wide"], refused=False, support=signals["support"])
        return reading_confidence(reading, signals["relevance"], context) < threshold

    scored = [r for r in answerable if r["answer_score"] is not None]
    return {
        "weight": weight,
        "threshold": threshold,
        "answer_accuracy": round(sum(0.0 if abstains(r) else r["answer_score"] for r in scored) / len(scored), 4),
        "false_abstain_rate": round(sum(map(abstains, answerable)) / len(answerable), 4),
        "abstain_recall": round(sum(map(abstains, unanswerable)) / len(unanswerable), 4) if unanswerable else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index holding the mmlongbench documents")
    parser.add_argument("--rows", type=Path, default=REPO / "bench" / "calibration_rows.txt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--resume", action="store_true", help="keep the rows already in --out")
    parser.add_argument("--weight", type=float, default=0.5, help="support weight the threshold is chosen for")
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"evaluation data not found at {DEV} (../shared is absent)")

    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.eval.answers import retrieval_answerer, run_answer_eval
    from pagegraph.eval.questions import load_questions, read_row_ids, select_rows
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    questions = select_rows(load_questions(DEV), read_row_ids(args.rows), args.rows)
    rows: list[dict] = json.loads(args.out.read_text())["rows"] if args.resume and args.out.exists() else []
    settings = Settings()

    def save() -> dict:
        curve = [outcome(rows, w, t) for w in WEIGHTS for t in THRESHOLDS] if rows else []
        at_weight = [c for c in curve if c["weight"] == args.weight]
        chosen = None
        if at_weight:
            accuracy = max(c["answer_accuracy"] for c in at_weight) - args.tolerance
            false_abstain = min(c["false_abstain_rate"] for c in at_weight) + args.tolerance
            allowed = [
                c for c in at_weight if c["answer_accuracy"] >= accuracy and c["false_abstain_rate"] <= false_abstain
            ]
            chosen = max(allowed, key=lambda c: (c["abstain_recall"] or 0.0, c["threshold"]))
        body = {"rows_file": str(args.rows), "chosen": chosen, "curve": curve, "rows": rows}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(body, indent=1) + "\n")
        return body

    with open_index(args.index, settings) as index:
        services = Services(settings, index=index)
        context = Context(index=str(args.index), confidence={"answer_threshold": 0.0})
        answerer = retrieval_answerer(build_graph("extract", services=services), context, "document")
        page_counts = {doc.name: doc.n_pages for doc in index.store.documents()}

        def on_row(row: dict) -> None:
            save()
            print(f"{len(rows)}/{len(questions)} {row['id']}: score {row['answer_score']}, "
                  f"signals {row['abstain_signals']}, {row['latency_ms'] / 1000:.1f} s", flush=True)  # fmt: skip

        try:
            run_answer_eval(questions, {"extract": answerer}, page_counts, rows, on_row)
        finally:
            services.close()
    body = save()
    print("weight threshold  accuracy  false_abstain  abstain_recall")
    for point in body["curve"]:
        if point["weight"] in (0.25, 0.5, 0.75) and point["threshold"] <= 0.6:
            print(f"  {point['weight']:4.2f}   {point['threshold']:5.2f}   {point['answer_accuracy']:7.3f}"
                  f"  {point['false_abstain_rate']:12.3f}  {point['abstain_recall']}")  # fmt: skip
    print(
        f"chosen at weight {args.weight} (within {args.tolerance} of the best accuracy and false-abstain rate): {body['chosen']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
