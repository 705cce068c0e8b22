"""Choose when a library-wide search routes to its best document alone (Context.retrieval.route_alone) on mmlongbench dev
questions; check it on sec10q, which is never tuned on.

A search over the whole library routes to the best-ranked documents (retrievers.documents); when the second scores
under `route_alone` × the first's routing score, the first alone is searched, as if the question had named it. For
each candidate share, the graphs' retriever searches every answerable question over the whole index: mmlongbench
gives page hit@5 and doc_hit@5, sec10q doc_hit@5 (its evidence is document level). The chosen share has the best
sum of mmlongbench's two figures (ties: the lower share); 0 never routes to one document alone.

    .venv/bin/python bench/route_alone.py --tune .pagegraph/eval-mmlb52-pdfium ../shared/eval/mmlongbench/dev.jsonl \
        --check .pagegraph/eval-sec10q-v2 ../shared/eval/sec10q/questions.jsonl [--out bench/results/route-alone.json]
"""

from __future__ import annotations

from fusion import tune_and_check
from tune_check import parse_tune_check

SHARES = (0.0, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9)


def main() -> int:
    args = parse_tune_check(__doc__)
    from pagegraph.config import Context

    candidates = {f"route_alone {share}": Context(retrieval={"route_alone": share}) for share in SHARES}
    return tune_and_check(
        args, candidates, ("corpus",), lambda figures: figures["corpus hit@5"] + figures["corpus doc_hit@5"]
    )


if __name__ == "__main__":
    raise SystemExit(main())
