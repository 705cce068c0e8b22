"""Whether retrieval's own figures rank answers better than, or beside, the landed confidence (issue 39's "retrieval
margins"). For each answered row of a replay report (`bench/answer_check.py --out`), the `extract` graph is run up to
its gate (model-free) and these signals are read: the best passage similarity (`relevance`), the top passage's fused
score and its margin over the second's, and the top highlight's score and its margin. Printed per run: the AURC of
the answers ranked by each signal alone, by the landed confidence times each, and the best AURC the answers allow.

    .venv/bin/python bench/retrieval_signals.py --index .pagegraph/eval-mmlb-dev28 \\
        --replay bench/results/answer-judge-replay-periods.json --run bench/results/answers-40-answer-tokens.json \\
        [--run ...] [--questions FILE] [--out FILE]
"""

from __future__ import annotations

import json
from pathlib import Path

from answer_runs import answered_rows, questions_by_id, run_arguments


def margin(scores: list[float]) -> float:
    return scores[0] - scores[1] if len(scores) > 1 else 0.0


SIGNALS = {
    "similarity": lambda read: read["relevance"],
    "fused_score": lambda read: read["scores"][0] if read["scores"] else 0.0,
    "fused_margin": lambda read: margin(read["scores"]),
    "highlight_score": lambda read: read["highlights"][0] if read["highlights"] else 0.0,
    "highlight_margin": lambda read: margin(read["highlights"]),
}


def main() -> None:
    parser = run_arguments(__doc__, highlights=3)
    parser.add_argument("--replay", type=Path, required=True, help="bench/answer_check.py's report on the runs")
    args = parser.parse_args()

    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.eval.calibration import aurc, best_aurc
    from pagegraph.indexing.index import open_index
    from pagegraph.services import Services

    questions = questions_by_id(args.questions)
    replay = json.loads(args.replay.read_text())["runs"]
    settings = Settings()
    report: dict = {}
    with open_index(args.index, settings) as index:
        graph = build_graph("extract", services=Services(settings, index=index))
        context = Context(index=str(args.index))
        for path in args.run:
            judged = {row["id"]: row for row in replay[str(path)]["judged"]["per_row"]}
            reads = []
            for row in answered_rows(path, questions):
                shown = judged[row["id"]]
                if shown["band"] == "not_found":
                    continue
                question = questions[row["id"]]
                read = {"confidence": shown["confidence"], "right": shown["right"], "relevance": 0.0}
                inputs = {"question": question.question, "documents": question.documents}
                for update in graph.stream(inputs, context=context, stream_mode="updates"):
                    if "search" in update:
                        found = update["search"] or {}
                        read["relevance"] = (found.get("relevance") or [0.0])[0]
                        read["scores"] = [passage.score for passage in found.get("retrieved") or []]
                    if "highlight" in update:
                        read["highlights"] = [h.score for h in update["highlight"]["highlights"]]
                        break
                reads.append(read)
            figures = {
                "answers": len(reads),
                "right": sum(read["right"] for read in reads),
                "best_aurc": best_aurc([read["right"] for read in reads]),
                "confidence": aurc([(read["confidence"], read["right"]) for read in reads]),
            }
            for name, signal in SIGNALS.items():
                figures[name] = aurc([(signal(read), read["right"]) for read in reads])
                figures[f"confidence x {name}"] = aurc(
                    [(read["confidence"] * max(signal(read), 0.0), read["right"]) for read in reads]
                )
            report[str(path)] = figures
            print(path.name, json.dumps(figures), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
