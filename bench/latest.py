"""Choose `Context.retrieval.latest_within` — how near the router's first score a dated document must be for a
question asking for the latest to search the newest of them first — on one half of a filings set's companies, and
report it on the other half (sec10q: split by company, the ticker that ends each file's name; fixed seed) and on
mmlongbench dev (--check), never tuned on.

Library (corpus) scope, answerable questions: doc_hit@5 of `default` with each value (0: today's order), over all of
a half's questions and over those asking for the latest (`text.dates.asks_for_latest`). The chosen value has the best
doc_hit@5 on the tuning half's questions (ties: the smaller value).

    .venv/bin/python bench/latest.py --index SEC10Q --questions ../shared/eval/sec10q/questions.jsonl \\
        [--check MMLB ../shared/eval/mmlongbench/dev.jsonl] [--seed 0] [--out bench/results/latest.json]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SHARES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)


def company_halves(questions_file: Path, seed: int) -> tuple[set[str], set[str]]:
    """The documents the questions name, grouped by the last word of their file names (a filing's ticker), the
    groups shuffled with `seed` and cut in two."""
    documents = {d for line in questions_file.read_text().splitlines() if line for d in json.loads(line)["documents"]}
    companies = sorted({Path(d).stem.split()[-1] for d in documents})
    random.Random(seed).shuffle(companies)
    first = set(companies[: len(companies) // 2])
    return {d for d in documents if Path(d).stem.split()[-1] in first}, {
        d for d in documents if Path(d).stem.split()[-1] not in first
    }


def doc_hits(index_folder: Path, questions_file: Path, halves: dict[str, set[str] | None]) -> dict[str, dict]:
    """doc_hit@5 (and the count) per share, half, and all / latest questions."""
    from pagegraph.config import Context, Settings
    from pagegraph.eval.metrics import gold_for, question_metrics
    from pagegraph.eval.questions import load_questions
    from pagegraph.eval.retrieval import RetrievalEvalConfig, make_searches
    from pagegraph.store.index import open_index
    from pagegraph.text.dates import asks_for_latest

    found: dict[str, dict] = {}
    with open_index(index_folder, Settings()) as index:
        page_counts = {doc.name: doc.n_pages for doc in index.store.documents()}
        questions = [q for q in load_questions(questions_file) if q.answerable]
        for share in SHARES:
            config = RetrievalEvalConfig(retrievers=["default"], context=Context(retrieval={"latest_within": share}))
            search = make_searches(index, config)["default"]
            hits = {}
            for question in questions:
                gold = gold_for(question, page_counts)
                if gold.pages or gold.documents:
                    hits[question.id] = question_metrics(search(question.question, None), gold, [5])["doc_hit@5"]
            for half, documents in halves.items():
                rows = [q for q in questions if q.id in hits and (documents is None or set(q.documents) <= documents)]
                latest = [q for q in rows if asks_for_latest(q.question)]
                found.setdefault(str(share), {})[half] = {
                    "all": round(sum(hits[q.id] for q in rows) / len(rows), 3),
                    "latest": round(sum(hits[q.id] for q in latest) / len(latest), 3) if latest else None,
                    "questions": len(rows),
                    "latest questions": len(latest),
                }
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--check", nargs=2, type=Path, metavar=("INDEX", "QUESTIONS"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tune, held = company_halves(args.questions, args.seed)
    figures = {"tune": sorted(tune), "held out": sorted(held)}
    figures["sec"] = doc_hits(args.index, args.questions, {"tune": tune, "held out": held, "all": None})
    if args.check:
        figures["check"] = doc_hits(args.check[0], args.check[1], {"all": None})
    chosen = max(SHARES, key=lambda share: (figures["sec"][str(share)]["tune"]["all"], -share))
    figures["chosen"] = chosen
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
