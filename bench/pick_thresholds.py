"""Where a pick should give way to the written reader (`picking.answer_from`) and from where it is shown as supported
(`picking.supported`), chosen on one lookups run and checked on another. Reads an answer run that compared the picking reader, keeping every pick (`auto@picking.answer_from=0`),
with the written one (`auto@picking.use=false`) on the same rows, and prints for each threshold what the two
together would have given: a pick below it answered as the written reader answered that row. Figures as
`bench/lookups.py` reports them (accuracy, refusals, the supported band's size and precision).

    .venv/bin/pagegraph eval bench/lookups.jsonl --mode answer --graph "auto@picking.answer_from=0" \\
        --graph "auto@picking.use=false" --scope document --index INDEX --out run.json
    .venv/bin/python bench/pick_thresholds.py --run run.json [--picking GRAPH] [--written GRAPH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lookups import row_right

THRESHOLDS = (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.01)
SUPPORTED = (0.6, 0.7, 0.8, 0.9)
WRITTEN = "auto@picking.use=false"


def combined(picks: dict[str, dict], written: dict[str, dict], answer_from: float, supported: float) -> list[dict]:
    """Each row as the picking reader with `picking.answer_from` and `picking.supported` set so answers it: its pick
    where the pick was composed at or above `answer_from` (or refused), banded supported only from `supported` (a run
    made with a lower one is banded again; its confidence is the pick's), else the written reader's row."""
    rows = []
    for row_id, row in picks.items():
        pick = row.get("pick")
        kept = pick is None or not pick["picked"] or pick["probability"] >= answer_from
        if not kept and row_id in written:
            rows.append(written[row_id])
        elif pick is not None and pick["picked"] and row["band"] == "supported" and row["confidence"] < supported:
            rows.append({**row, "band": "uncertain"})
        else:
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--picking", default="auto@picking.answer_from=0", help="the run's graph keeping every pick")
    parser.add_argument("--written", default=WRITTEN, help="the run's graph answering with the written reader")
    args = parser.parse_args()
    by_graph: dict[str, dict[str, dict]] = {}
    for row in json.loads(args.run.read_text())["per_question"]:
        by_graph.setdefault(row["graph"], {})[row["id"]] = row
    picks, written = by_graph[args.picking], by_graph.get(args.written, {})
    print("answer_from supported  rows accuracy unanswerable_refused answerable_refused supported(n, precision) picked")
    for answer_from in THRESHOLDS:
        for supported in SUPPORTED:
            rows = combined(picks, written, answer_from, supported)
            answerable = [r for r in rows if r["answerable"]]
            unanswerable = [r for r in rows if not r["answerable"]]
            banded = [r for r in rows if r["band"] == "supported"]
            picked = sum(r["graph"] == args.picking and bool((r.get("pick") or {}).get("picked")) for r in rows)
            print(
                f"{answer_from:11.2f} {supported:9.2f} {len(rows):5} {sum(map(row_right, rows)) / len(rows):8.3f} "
                f"{sum(r['abstained'] for r in unanswerable) / max(1, len(unanswerable)):20.3f} "
                f"{sum(r['abstained'] for r in answerable) / max(1, len(answerable)):18.3f} "
                f"{len(banded):12} {sum(map(row_right, banded)) / max(1, len(banded)):10.3f} {picked:6}"
            )


if __name__ == "__main__":
    main()
