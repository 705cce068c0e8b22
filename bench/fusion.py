"""Choose the BM25 weight of the convex score fusion (Context.retrieval.alpha) on mmlongbench dev questions; check it on
sec10q, which is never tuned on.

For each candidate weight, the hybrid retriever as the graphs configure it (convex fusion, document routing, page
ranking, window 1) searches every answerable question: mmlongbench within its named documents and over
the whole index (page hit@5), sec10q over the whole index (doc_hit@5, its evidence is document level). The chosen
weight has the best mean of the two mmlongbench figures (ties: the lower weight). BM25 alone, dense alone and the
landed rank fusion are printed beside it.

    .venv/bin/python bench/fusion.py --tune .pagegraph/eval-mmlb52-pdfium ../shared/eval/mmlongbench/dev.jsonl \
        --check .pagegraph/eval-sec10q-v2 ../shared/eval/sec10q/questions.jsonl [--out bench/results/fusion.json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tune_check import parse_tune_check

if TYPE_CHECKING:
    from pagegraph.config import Context

ALPHAS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def measure(
    index_folder: Path,
    questions_file: Path,
    scopes: tuple[str, ...],
    candidates: dict[str, Context],
    documents: set[str] | None = None,
    baselines: tuple[str, ...] = ("bm25", "dense", "hybrid+window", "routing", "ensemble"),
) -> dict[str, dict[str, float]]:
    """Per retriever and scope: hit@5 and doc_hit@5 over the answerable questions (those on `documents` alone, when
    given); the candidates are the graphs' retriever under each context, beside the `baselines`: by default BM25
    alone, dense alone, the landed rank fusion, LangChain's EnsembleRetriever and the document router (its doc_hit@5
    alone)."""
    from pagegraph.config import Settings
    from pagegraph.eval.metrics import gold_for, question_metrics, summarise
    from pagegraph.eval.questions import load_questions
    from pagegraph.eval.retrieval import RetrievalEvalConfig, make_searches
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.store.index import open_index

    results: dict[str, dict[str, float]] = {}
    with open_index(index_folder, Settings()) as index:
        page_counts = {doc.name: doc.n_pages for doc in index.store.documents()}
        questions = [
            q
            for q in load_questions(questions_file)
            if q.answerable and (documents is None or set(q.documents) <= documents)
        ]
        searches = make_searches(index, RetrievalEvalConfig(retrievers=list(baselines)))
        for name, context in candidates.items():
            config = RetrievalEvalConfig(retrievers=["default"], context=context)
            searches[name] = make_searches(index, config)["default"]
        for scope in scopes:
            for name, search in searches.items():
                rows = []
                for question in questions:
                    gold = gold_for(question, page_counts)
                    if question.answerable and (gold.pages or gold.documents):
                        flt = RetrievalFilter(documents=question.documents) if scope == "document" else None
                        rows.append(question_metrics(search(question.question, flt), gold, [5]))
                summary = summarise(rows, [], [5])
                if name != "routing":  # documents only
                    results.setdefault(name, {})[f"{scope} hit@5"] = summary["hit@5"]
                results.setdefault(name, {})[f"{scope} doc_hit@5"] = summary["doc_hit@5"]
    return results


def tune_and_check(
    args: argparse.Namespace,
    candidates: dict[str, Context],
    tune_scopes: tuple[str, ...],
    objective: Callable[[dict[str, float]], float],
) -> int:
    """Measure the candidates on --tune (`tune_scopes`) and --check (corpus scope), print every figure, choose the
    candidate with the best `objective` of its tuning figures (ties: the earlier one), write it all to --out."""
    tune = measure(*args.tune, scopes=tune_scopes, candidates=candidates)
    check = measure(*args.check, scopes=("corpus",), candidates=candidates)
    width = max(map(len, tune))
    for name in tune:
        print(f"{name:>{width}}  tune {tune[name]}  check {check[name]}")
    order = list(candidates)
    best = max(order, key=lambda name: (objective(tune[name]), -order.index(name)))
    print(f"chosen: {best}")
    if args.out:
        args.out.write_text(json.dumps({"tune": tune, "check": check, "chosen": best}, indent=2) + "\n")
    return 0


def main() -> int:
    args = parse_tune_check(__doc__)
    from pagegraph.config import Context

    candidates = {f"convex {alpha}": Context(retrieval={"alpha": alpha}) for alpha in ALPHAS}
    return tune_and_check(
        args, candidates, ("document", "corpus"), lambda figures: figures["document hit@5"] + figures["corpus hit@5"]
    )


if __name__ == "__main__":
    raise SystemExit(main())
