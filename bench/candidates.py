"""Answer candidates without a model: how often the right answer is among the candidates the pick is offered, and
how high. For each answerable row of a lookups set, the question is searched as the extract graph searches it (its
documents in document scope), the candidates are taken from the top passages (`checks.candidates`), and each
candidate's composed answer (`nodes.pick.compose`) is scored against the gold answer as the answer eval scores
answers. Prints the share of rows with a right candidate within the first k, by kind of row, and the rows with none,
each saying whether a passage read held a gold page (the candidates missed it) or none did (the search missed it).
The pick can be no better than this ceiling.

    .venv/bin/python bench/candidates.py --index INDEX [--set bench/lookups.jsonl] [--knob sentences=20] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

CUTS = (1, 3, 5, 10, 20, 26)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--set", type=Path, default=Path(__file__).with_name("lookups.jsonl"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--show", action="store_true", help="print every row's candidates")
    parser.add_argument("--knob", action="append", default=[], help="a picking knob changed: sentences=20")
    args = parser.parse_args()

    from pagegraph.checks.candidates import answer_candidates
    from pagegraph.config import Context, Settings
    from pagegraph.eval.scoring import score_answer
    from pagegraph.nodes.pick import compose
    from pagegraph.nodes.retrieve import search_question
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    rows = [json.loads(line) for line in args.set.read_text().splitlines() if line.strip()]
    settings = Settings()
    changes = dict(knob.split("=", 1) for knob in args.knob)
    context = Context(index=str(args.index)).with_changes(picking=changes)
    ranks: dict[str, int | None] = {}
    read: dict[str, bool] = {}
    kinds: dict[str, str] = {}
    counts = []
    with open_index(args.index, settings) as index:
        services = Services(settings, index=index)
        runtime = SimpleNamespace(context=context)
        for row in rows:
            if not row["answerable"]:
                continue
            inputs = {"question": row["question"], "documents": row.get("documents") or []}
            passages = search_question(inputs, runtime, services)["retrieved"][: context.reading.highlight_passages]
            candidates = answer_candidates(row["question"], passages, index.embedder, context.picking, context.reading)
            counts.append(len(candidates))
            right = [
                n
                for n, c in enumerate(candidates, 1)
                if (score_answer(compose(c), row["answer"], row.get("answer_format"), True).score or 0) >= 0.5
            ]
            ranks[row["id"]], kinds[row["id"]] = (right[0] if right else None), row.get("task_type", "")
            read[row["id"]] = gold_page_read(row, passages)
            if args.show or not right:
                where = "a gold page read" if read[row["id"]] else "no gold page read"
                print(
                    f"{row['id']} rank {right[0] if right else '-'} ({where}) gold {row['answer']!r}: {row['question']}"
                )
                for n, c in enumerate(candidates, 1):
                    print(f"   {n:2} {c.kind:8} {c.score:.3f} {c.value[:60]!r} | {c.measures[:90]}")
    report: dict = {"rows": len(ranks), "median_candidates": sorted(counts)[len(counts) // 2] if counts else 0}
    by_kind: dict[str, list[int | None]] = defaultdict(list)
    for row_id, rank in ranks.items():
        by_kind[kinds[row_id]].append(rank)
    for kind, found in [("all", list(ranks.values())), *sorted(by_kind.items())]:
        report[kind] = {f"@{k}": round(sum(r is not None and r <= k for r in found) / len(found), 3) for k in CUTS}
    missed = [row_id for row_id, rank in ranks.items() if rank is None]
    report["no_right_candidate"] = {
        "rows": len(missed),
        "a_gold_page_read": sum(read[row_id] for row_id in missed),  # the candidates missed it
        "no_gold_page_read": sum(not read[row_id] for row_id in missed),  # the search missed it
    }
    report["gold_page_read"] = round(sum(read.values()) / max(1, len(read)), 3)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"report": report, "ranks": ranks, "gold_page_read": read}, indent=1))


def gold_page_read(row: dict, passages: list) -> bool:
    """Whether a passage read spans one of the row's gold pages."""
    return any(
        passage.source == gold["document"] and passage.start_page <= gold["page"] <= passage.end_page
        for gold in row["evidence"]
        for passage in passages
    )


if __name__ == "__main__":
    main()
