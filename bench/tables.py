"""PDF tables as Markdown rows, measured on the mmlongbench dev documents: each is ingested into two fresh indexes,
tables off and on (everything else, OCR included, as configured and the same in both), then `pagegraph eval --mode
retrieval --retriever default` in document scope runs on each. Prints page hit@5 on the rows whose evidence
includes a table and on the other rows, and each ingest's pages/s. A second run reuses the indexes (ingest skips
unchanged files).

    .venv/bin/python bench/tables.py [--work .pagegraph/bench-tables] [--out bench/results/tables.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVAL = REPO.parent / "shared" / "eval" / "mmlongbench"
PAGEGRAPH = Path(sys.executable).with_name("pagegraph")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=REPO / ".pagegraph" / "bench-tables")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    questions = EVAL / "dev.jsonl"
    if not questions.exists():
        sys.exit(f"evaluation data not found at {EVAL} (../shared is absent)")
    rows = [json.loads(line) for line in questions.open()]
    tabled = {row["id"] for row in rows if "Table" in (row.get("evidence_sources") or [])}
    documents = sorted({EVAL / "documents" / name for row in rows for name in row["documents"]})

    figures = {"documents": len(documents), "table_rows": len(tabled)}
    for tables in ("off", "on"):
        index = args.work / f"tables-{tables}"
        started = time.perf_counter()
        flag = [] if tables == "on" else ["--no-tables"]
        subprocess.run([str(PAGEGRAPH), "ingest", *map(str, documents), "--index", str(index), *flag], check=True)
        ingest_s = time.perf_counter() - started
        report = args.work / f"eval-{tables}.json"
        command = [str(PAGEGRAPH), "eval", str(questions), "--index", str(index), "--mode", "retrieval"]
        subprocess.run([*command, "--retriever", "default", "--out", str(report)], check=True, capture_output=True)
        scored = [q for q in json.loads(report.read_text())["per_question"] if q.get("hit@5") is not None]
        pages = json.loads(
            subprocess.run(
                [str(PAGEGRAPH), "inspect", "--index", str(index), "--json"], check=True, capture_output=True, text=True
            ).stdout
        )["documents"]

        def mean(selected: list[dict]) -> float:
            return round(sum(q["hit@5"] for q in selected) / len(selected), 3)

        with_table = [q for q in scored if q["id"] in tabled]
        others = [q for q in scored if q["id"] not in tabled]
        figures[f"tables_{tables}"] = {
            "hit@5_table_rows": mean(with_table),
            "hit@5_other_rows": mean(others),
            "hit@5_all": mean(scored),
            "scored_table_rows": len(with_table),
            "scored_other_rows": len(others),
            "ingest_s": round(ingest_s, 1),
            "pages": sum(d["pages"] for d in pages),
        }
        print(f"tables {tables}: {figures[f'tables_{tables}']}", flush=True)
    off, on = figures["tables_off"], figures["tables_on"]
    print(
        f"page hit@5, document scope, default retriever: table rows {off['hit@5_table_rows']} -> "
        f"{on['hit@5_table_rows']} ({off['scored_table_rows']} rows); other rows {off['hit@5_other_rows']} -> "
        f"{on['hit@5_other_rows']} ({off['scored_other_rows']} rows)"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
