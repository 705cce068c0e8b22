"""Choose the document router's weights on mmlongbench dev questions; check them on sec10q (never tuned on).

Every answerable question with document evidence is searched over the whole index (corpus scope) once, with the
graphs' retriever (Context defaults), keeping the rank each of the four document rankings of retrievers.documents
gives every document. Each combination of weights
and RRF constant is then scored by doc_hit@k from those ranks, without searching again. Prints each ranking alone,
the best rows of the grid on the tuning set, and the chosen combination (best mean of doc_hit@1, @3 and @5 on the
tuning set; ties: the earlier in the grid) on both sets.

    .venv/bin/python bench/routing.py --tune .pagegraph/eval-mmlb52-pdfium ../shared/eval/mmlongbench/dev.jsonl \
        --check .pagegraph/eval-sec10q-v2 ../shared/eval/sec10q/questions.jsonl [--out bench/results/routing.json]
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from tune_check import parse_tune_check

KS = (1, 3, 5, 10)
WEIGHTS = (0.0, 0.5, 1.0, 2.0)
RRF_KS = (1, 2, 5, 10, 30, 60)

Question = tuple[set[str], dict[str, dict[str, int]]]


def collect(index_folder: Path, questions_file: Path) -> list[Question]:
    """Per question: its gold documents, and every document's rank under each ranking."""
    from pagegraph.config import Context, Settings
    from pagegraph.eval.questions import load_questions
    from pagegraph.retrievers.hybrid import HybridRetriever
    from pagegraph.store.index import open_index

    rows = []
    with open_index(index_folder, Settings()) as index:
        ranker = HybridRetriever.for_context(index, Context())
        for question in load_questions(questions_file):
            gold = {e.document for e in question.evidence} or set(question.documents)
            if question.answerable and gold:
                rows.append((gold, {d.name: d.ranks for d in ranker.rank_documents(question.question)}))
    return rows


def scores(rows: list[Question], weights: dict[str, float], rrf_k: int) -> dict[str, float]:
    hits = dict.fromkeys(KS, 0)
    for gold, ranks in rows:
        fused = {
            name: sum(w / (rrf_k + signal_ranks[s]) for s, w in weights.items() if w and s in signal_ranks)
            for name, signal_ranks in ranks.items()
        }
        order = sorted(fused, key=lambda name: -fused[name])
        for k in KS:
            hits[k] += bool(gold & set(order[:k]))
    return {f"doc_hit@{k}": round(hits[k] / len(rows), 4) for k in KS}


def main() -> int:
    args = parse_tune_check(__doc__)

    from pagegraph.retrievers.documents import SIGNALS, RoutingWeights

    tune, check = collect(*args.tune), collect(*args.check)
    print(f"tuning questions {len(tune)}, check questions {len(check)}")
    alone = {s: {"tune": scores(tune, {s: 1.0}, 60), "check": scores(check, {s: 1.0}, 60)} for s in SIGNALS}
    for signal, result in alone.items():
        print(f"{signal:>9} alone  tune {result['tune']}  check {result['check']}")
    grid = []
    for values in itertools.product(WEIGHTS, repeat=len(SIGNALS)):
        if not any(values):
            continue
        weights = dict(zip(SIGNALS, values))
        for rrf_k in RRF_KS:
            result = scores(tune, weights, rrf_k)
            objective = sum(result[f"doc_hit@{k}"] for k in (1, 3, 5)) / 3
            grid.append({"weights": weights, "rrf_k": rrf_k, "objective": round(objective, 4), "tune": result})
    grid.sort(key=lambda row: -row["objective"])
    for row in grid[:10]:
        print(f"  {row['weights']} k={row['rrf_k']}: {row['tune']}")
    best = grid[0]
    best["check"] = scores(check, best["weights"], best["rrf_k"])
    default = RoutingWeights()
    landed = {"weights": {s: getattr(default, s) for s in SIGNALS}, "rrf_k": default.rrf_k}
    landed["tune"] = scores(tune, landed["weights"], landed["rrf_k"])
    landed["check"] = scores(check, landed["weights"], landed["rrf_k"])
    print(f"chosen {best['weights']} k={best['rrf_k']}\n  tune {best['tune']}\n  check {best['check']}")
    print(
        f"RoutingWeights() now {landed['weights']} k={landed['rrf_k']}\n  tune {landed['tune']}\n  check {landed['check']}"
    )
    if args.out:
        report = {
            "tune": [str(p) for p in args.tune],
            "check": [str(p) for p in args.check],
            "alone": alone,
            "chosen": best,
            "current_default": landed,
            "grid_top": grid[:20],
        }
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
