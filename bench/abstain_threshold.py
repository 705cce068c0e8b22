"""Calibrate the retrieval abstention threshold on the mmlongbench dev questions.

The `rag` graph abstains before calling the answer model when the best cosine similarity between the question and
any chunk of the documents it searches is below `abstain_threshold`. Three groups, each searched within named
documents as the graph would:
- answerable: each answerable question within its own documents (should pass the gate);
- off-topic: each answerable question within another dev document of a different document type (should abstain);
- unanswerable: the dev rows marked unanswerable within their own documents (same topic, answer missing: the gate
  can barely tell these apart; the answer model's refusal has to).
Prints the similarity distribution of each group and, per candidate threshold, the share of each that would
abstain. The default keeps at least 98% of answerable questions.

    .venv/bin/python bench/abstain_threshold.py --index .pagegraph/eval-mmlb [--out bench/results/abstain-threshold.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"


def off_topic_documents(rows: list) -> list[str | None]:
    """For each answerable question (`EvalQuestion`), a dev document of another type than its own, drawn in order
    with a fixed seed: its off-topic pair; None for an unanswerable one. bench/similarity_scale.py draws the same."""
    doc_type = {d: r.doc_type for r in rows for d in r.documents}
    rng = random.Random(7)
    drawn: list[str | None] = []
    for row in rows:
        others = [d for d, t in doc_type.items() if t != row.doc_type and d not in row.documents]
        drawn.append(rng.choice(others) if row.answerable else None)
    return drawn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index holding the mmlongbench documents")
    parser.add_argument("--keep", type=float, default=0.98, help="share of answerable questions that must pass")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not (EVAL / "dev.jsonl").exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")

    from pagegraph.config import Settings
    from pagegraph.eval.baselines import first_landed_hybrid
    from pagegraph.eval.questions import load_questions
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.store.index import open_index

    rows = load_questions(EVAL / "dev.jsonl")
    groups: dict[str, list[float]] = {"answerable": [], "off-topic": [], "unanswerable": []}
    with open_index(args.index, Settings()) as index:
        hybrid = first_landed_hybrid(index)

        def relevance(question: str, documents: list[str]) -> float:
            return hybrid.search_with_relevance(question, RetrievalFilter(documents=documents))[1]

        for row, other in zip(rows, off_topic_documents(rows), strict=True):
            if other is None:
                groups["unanswerable"].append(relevance(row.question, row.documents))
                continue
            groups["answerable"].append(relevance(row.question, row.documents))
            groups["off-topic"].append(relevance(row.question, [other]))

    def share_below(values: list[float], threshold: float) -> float:
        return sum(v < threshold for v in values) / len(values)

    answerable = sorted(groups["answerable"])
    chosen = round(answerable[int((1 - args.keep) * len(answerable))] - 0.005, 2)
    print("best cosine similarity per question (min / p10 / median / p90):")
    for name, values in groups.items():
        deciles = statistics.quantiles(values, n=10)
        print(
            f"  {name:13s} n={len(values):3d}  {min(values):.3f} / {deciles[0]:.3f} / {statistics.median(values):.3f} / {deciles[-1]:.3f}"
        )
    table = []
    print("threshold  abstains on: answerable  off-topic  unanswerable")
    for threshold in sorted({0.1, 0.15, 0.2, 0.25, 0.3, 0.35, chosen}):
        row = {"threshold": threshold, **{name: round(share_below(v, threshold), 3) for name, v in groups.items()}}
        table.append(row)
        mark = f"  <- keeps {args.keep:.0%} of answerable" if threshold == chosen else ""
        print(
            f"  {threshold:5.2f}    {row['answerable']:10.3f}  {row['off-topic']:9.3f}  {row['unanswerable']:12.3f}{mark}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps({"chosen": chosen, "keep": args.keep, "table": table, "groups": groups}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
