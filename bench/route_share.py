"""Choose how a library-wide search shares its first passages among the documents it routed to
(Context.retrieval.routed_share) on one half of the mmlongbench dev documents; report it on the other half (split by
document, fixed seed) and on another question set (--check, e.g. sec10q), never tuned on.

Without sharing, the passages of the routed documents compete on fused score alone, and a document the router ranked
among its first few can be left out of the top 5. Each candidate power searches every answerable question over the
whole index (corpus scope): page hit@5 and doc_hit@5, beside BM25 alone, dense alone, the landed rank fusion,
LangChain's EnsembleRetriever and the document router (its doc_hit@5 alone). The
chosen power has the best sum of the tuning half's two figures (ties: the smaller power; 0 is today's order).

    .venv/bin/python bench/route_share.py --index .pagegraph/eval-mmlb-dev28 \\
        --questions ../shared/eval/mmlongbench/dev.jsonl [--seed 0] \\
        [--check .pagegraph/eval-sec10q ../shared/eval/sec10q/questions.jsonl] [--out bench/results/route-share.json]
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from fusion import measure
from tune_check import parse_halves

POWERS = (0.0, 0.5, 1.0, 2.0, 4.0)


def document_halves(questions_file: Path, seed: int) -> tuple[set[str], set[str]]:
    """The documents the questions name, shuffled with `seed` and cut in two."""
    documents = sorted(
        {d for line in questions_file.read_text().splitlines() if line for d in json.loads(line)["documents"]}
    )
    random.Random(seed).shuffle(documents)
    return set(documents[: len(documents) // 2]), set(documents[len(documents) // 2 :])


def main() -> int:
    args = parse_halves(__doc__)
    from pagegraph.config import Context

    candidates = {f"routed_share {power}": Context(retrieval={"routed_share": power}) for power in POWERS}
    tune_half, held_half = document_halves(args.questions, args.seed)
    figures = {
        "tune": measure(args.index, args.questions, ("corpus",), candidates, tune_half),
        "held out": measure(args.index, args.questions, ("corpus",), candidates, held_half),
    }
    if args.check:
        figures["check"] = measure(*args.check, scopes=("corpus",), candidates=candidates)
    width = max(map(len, figures["tune"]))
    for name in figures["tune"]:
        print(f"{name:>{width}}  " + "  ".join(f"{part} {figures[part][name]}" for part in figures))
    order = list(candidates)
    tuned = figures["tune"]
    best = max(order, key=lambda n: (tuned[n]["corpus hit@5"] + tuned[n]["corpus doc_hit@5"], -order.index(n)))
    print(f"chosen on the tuning half: {best}")
    if args.out:
        halves = {"tune": sorted(tune_half), "held out": sorted(held_half)}
        args.out.write_text(json.dumps({**figures, "chosen": best, "documents": halves}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
