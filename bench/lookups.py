"""The lookups sets: `bench/lookups.jsonl`, 44 questions of the kinds a user asks, written over 9 of the mmlongbench dev
documents (18 table cells, 12 prose facts, 6 two-place questions on two pages, 8 unanswerable ones), and
`bench/lookups-second.jsonl`, 50 more over 5 other mmlongbench dev documents and 2 sec10q filings (20, 16, 6, 8), each
gold page checked against the page's text (`evidence_text`, tested by tests/unit/test_lookups_set.py). Reads answer runs of it and
prints, side by side, accuracy by kind, each band's precision and share, how often unanswerable questions are refused
and answerable ones wrongly refused, and how many answers state a value no passage given to the model holds.

    .venv/bin/pagegraph ingest LOOKUP_DOCS --index INDEX          # the 9 documents the set names
    .venv/bin/pagegraph eval bench/lookups.jsonl --index INDEX --mode answer --graph auto --scope document \\
        --out run.json                                             # --resume run.json goes on after a stop
    .venv/bin/python bench/lookups.py --run run.json [--run other.json] [--out bench/results/lookups.json]
        [--set bench/lookups-second.jsonl]

A run that compares graphs (`--graph auto --graph auto@picking.use=false`: the picking reader beside the writing
one) is reported graph by graph.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

SET = Path(__file__).with_name("lookups.jsonl")
RIGHT = 0.5  # an answer scoring this or more is right (the evaluator's calibration rule)


def row_right(row: dict) -> bool:
    return row["abstained"] if not row["answerable"] else not row["abstained"] and row["answer_score"] >= RIGHT


def stated_nowhere(row: dict) -> list[str]:
    """The values of a row's answer that no passage given to the model holds (another period's or column's value
    is held, in another cell)."""
    return ((row.get("confidence_signals") or {}).get("value_check") or {}).get("missing") or []


def figures(rows: list[dict], kinds: dict[str, str]) -> dict:
    by_kind: dict[str, list[bool]] = {}
    for row in rows:
        by_kind.setdefault(kinds[row["id"]], []).append(row_right(row))
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    bands = Counter(r["band"] for r in rows)
    right_in_band = Counter(r["band"] for r in rows if row_right(r))
    return {
        "rows": len(rows),
        "accuracy": round(sum(map(row_right, rows)) / len(rows), 3),
        "accuracy_answerable": round(sum(map(row_right, answerable)) / max(1, len(answerable)), 3),
        "by_kind": {kind: f"{sum(v)}/{len(v)}" for kind, v in sorted(by_kind.items())},
        "bands": {band: {"n": n, "precision": round(right_in_band[band] / n, 3)} for band, n in sorted(bands.items())},
        "unanswerable_refused": round(sum(r["abstained"] for r in unanswerable) / max(1, len(unanswerable)), 3),
        "answerable_refused": round(sum(r["abstained"] for r in answerable) / max(1, len(answerable)), 3),
        "value_in_no_passage": sum(not r["abstained"] and bool(stated_nowhere(r)) for r in rows),
        # seconds per question; graphs compared in one run answered each question in turn, on the same machine
        "seconds_p50": round(statistics.median(r["latency_ms"] for r in rows) / 1000, 1),
        "model_calls_mean": round(sum(r["llm_calls"] for r in rows) / len(rows), 2),
        "errors": sum(bool(r.get("error")) for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, action="append", required=True, help="an answer run of the set")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--set", type=Path, default=SET, help="the lookups set the run answered")
    args = parser.parse_args()
    kinds = {row["id"]: row["task_type"] for row in map(json.loads, args.set.read_text().splitlines())}
    report = {}
    for path in args.run:
        by_graph: dict[str, list[dict]] = {}
        for row in json.loads(path.read_text())["per_question"]:
            if row["id"] in kinds:
                by_graph.setdefault(row["graph"], []).append(row)
        for graph, rows in by_graph.items():  # a run comparing graphs side by side: each on its own
            report[f"{path} {graph}"] = figures(rows, kinds)
            print(path, graph, json.dumps(report[f"{path} {graph}"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
