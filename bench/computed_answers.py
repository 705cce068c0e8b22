"""Score computed answers on their result alone.

A computed answer (extract graph, `Context.calculate`) shows its result on the first line, then the arithmetic and
the figures it used. The evaluation scores a number found anywhere in an answer, so a figure of the arithmetic that
equals the gold value would count. This prints, per graph of `pagegraph eval --mode answer` reports, the answer
accuracy as reported and scored on each answer's first line only, and the same for the rows answered by a
computation.

    .venv/bin/python bench/computed_answers.py bench/results/answers-40-calculation.json [more reports]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from pagegraph.eval.scoring import score_answer


def first_line_score(row: dict) -> float:
    scored = score_answer(row["answer"].split("\n")[0], row["gold_answer"], row["answer_format"], True)
    return scored.score if scored.score is not None else 0.0


def summary(rows: list[dict]) -> dict:
    scored = [r for r in rows if r["answerable"] and r["answer_score"] is not None]
    computed = [r for r in scored if "\nComputed: " in r["answer"] or "\n- " in r["answer"]]

    def mean(values: list[float]) -> float | None:
        return round(statistics.fmean(values), 3) if values else None

    return {
        "answerable": len(scored),
        "accuracy": mean([r["answer_score"] for r in scored]),
        "accuracy_first_line": mean([first_line_score(r) for r in scored]),
        "computed": len(computed),
        "computed_accuracy": mean([r["answer_score"] for r in computed]),
        "computed_accuracy_first_line": mean([first_line_score(r) for r in computed]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.reports:
        rows = json.loads(path.read_text())["per_question"]
        for graph in dict.fromkeys(r["graph"] for r in rows):
            print(path.name, graph, json.dumps(summary([r for r in rows if r["graph"] == graph])))


if __name__ == "__main__":
    main()
