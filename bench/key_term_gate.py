"""What the gate's key-term rule turns away on a question set (the mmlongbench dev rows by default), without any
model.

Each row is searched as the graphs search it (`search_question`): within its own documents, or with --scope corpus
in the whole index, routed as the graphs route. Then it runs through the `gate` node with `gate.key_terms` on and
off. Prints, per group of rows (those --rows lists, by default the answer benchmark's, and all the others), how many
answerable and unanswerable rows the rule alone turns away, and each turned-away row with the terms neither the
passages nor their documents mention. Turning away an unanswerable row is right; turning away an answerable one is
a false abstention whatever the model would have answered.

    .venv/bin/python bench/key_term_gate.py --index .pagegraph/eval-mmlb52-pdfium [--scope corpus] [--out FILE]
    .venv/bin/python bench/key_term_gate.py --questions ../shared/eval/sec10q/questions.jsonl --index INDEX
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=DEV, help="question set (JSONL, as pagegraph eval reads)")
    parser.add_argument("--index", type=Path, required=True, help="an index holding the question set's documents")
    parser.add_argument("--rows", type=Path, default=REPO / "bench" / "answer_rows.txt", help="the held-apart rows")
    parser.add_argument(
        "--scope", choices=("document", "corpus"), default="document", help="search each row's documents, or all"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.questions.exists():
        sys.exit(f"evaluation data not found at {args.questions} (../shared is absent)")

    from langgraph.runtime import Runtime

    from pagegraph.config import Context, Settings
    from pagegraph.eval.questions import load_questions, read_row_ids
    from pagegraph.nodes.gate import gate
    from pagegraph.nodes.retrieve import search_question
    from pagegraph.services import Services

    held = set(read_row_ids(args.rows))
    services = Services(Settings())
    on = Runtime(context=Context(index=str(args.index)))
    off = Runtime(context=Context(index=str(args.index), gate={"key_terms": False}))
    groups: dict[str, dict[str, list[dict]]] = {}
    for row in load_questions(args.questions):
        state: dict = {"question": row.question, "documents": row.documents if args.scope == "document" else []}
        state.update(search_question(state, on, services))
        verdict = gate(state, on, services)
        turned_away = "abstain_reason" in verdict and "abstain_reason" not in gate(state, off, services)
        details = verdict["trace"][0].details or {}
        group = groups.setdefault(
            args.rows.name if row.id in held else "other rows", {"answerable": [], "unanswerable": []}
        )
        group["answerable" if row.answerable else "unanswerable"].append(
            {
                "id": row.id,
                "turned_away": turned_away,
                "named": details.get("unmentioned", []) + details.get("absent", []),
            }
        )

    report: dict = {"questions": str(args.questions), "index": str(args.index), "scope": args.scope, "groups": {}}
    for name, group in groups.items():
        summary = {}
        for kind, rows in group.items():
            away = [r for r in rows if r["turned_away"]]
            summary[kind] = {
                "rows": len(rows),
                "turned_away": len(away),
                "share": round(len(away) / max(len(rows), 1), 3),
            }
            for r in away:
                print(f"{name:>16}  {kind:<12}  {r['id']}  {', '.join(r['named'])}")
        report["groups"][name] = {"summary": summary, "rows": group}
        print(
            f"{name}: "
            + "; ".join(f"{k} {v['turned_away']}/{v['rows']} ({v['share']:.0%})" for k, v in summary.items())
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
