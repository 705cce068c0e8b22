"""When a quote may stand in for a refusal (`checks.quotes`), measured without a model: each row's top highlights
as the `highlight` stage picks them, and for each setting of `quote_min_score` × `quote_min_terms` on a grid, how
many answerable rows would get a quote that holds the gold answer (right), one that does not (wrong), and how many
unanswerable rows would get one at all. Choose on one question set, check on another.

    .venv/bin/python bench/quotes.py --index INDEX --questions bench/lookups.jsonl [--out bench/results/quotes.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SCORES = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75]
SHARES = [0.4, 0.5, 0.6, 0.7, 0.8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--rows", type=Path, help="only the rows whose ids this file lists")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from answer_runs import top_highlights

    from pagegraph.checks.quotes import quotable_highlight
    from pagegraph.config import Context, Settings
    from pagegraph.eval.questions import load_questions, read_row_ids, select_rows
    from pagegraph.eval.scoring import score_answer

    questions = load_questions(args.questions)
    if args.rows:
        questions = select_rows(questions, read_row_ids(args.rows), args.rows)
    context = Context()
    found = []
    with top_highlights(args.index, Settings(), context.confidence.quote_candidates) as highlights:
        for question in questions:
            found.append((question, highlights(question)))
    grid = []
    for score in SCORES:
        for share in SHARES:
            knobs = context.confidence.model_copy(update={"quote_min_score": score, "quote_min_terms": share})
            counts = {"right": 0, "wrong": 0, "unanswerable_quoted": 0}
            for question, picked in found:
                quote = quotable_highlight(question.question, picked, knobs, context.gate, context.reading)
                if quote is None:
                    continue
                if not question.answerable:
                    counts["unanswerable_quoted"] += 1
                    continue
                held = score_answer(quote.sentence, question.answer, question.answer_format, True).score >= 0.5
                counts["right" if held else "wrong"] += 1
            grid.append({"min_score": score, "min_terms": share, **counts})
            print(json.dumps(grid[-1]))
    answerable = sum(q.answerable for q, _ in found)
    print(f"{len(found)} rows ({answerable} answerable, {len(found) - answerable} unanswerable)")
    if args.out:
        args.out.write_text(json.dumps({"questions": str(args.questions), "rows": len(found), "grid": grid}, indent=1))


if __name__ == "__main__":
    main()
