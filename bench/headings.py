"""Section trees of PDFs without bookmarks: where each document's tree comes from (`ingest.tree.section_outline`:
bookmarks, a filing's items, numbered headings, headings set apart by their type, else page groups) and how many
sections it has, for the documents a question set names. Prints one line a document, then how many trees each source
gave and how many documents have only page groups; `--show N` prints the first N sections of each tree from type.

    .venv/bin/python bench/headings.py [--set ../shared/eval/mmlongbench/dev.jsonl]
        [--documents ../shared/eval/mmlongbench/documents] [--show 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "mmlongbench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=EVAL / "dev.jsonl", help="the question set naming the documents")
    parser.add_argument("--documents", type=Path, default=EVAL / "documents")
    parser.add_argument("--show", type=int, default=0, help="sections shown of each tree read from the type")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.set.exists():
        raise SystemExit(f"{args.set}: no such question set (../shared/eval is not here)")

    from pagegraph.ingest.loaders import load_document
    from pagegraph.ingest.tree import section_outline

    rows = [json.loads(line) for line in args.set.read_text().splitlines() if line.strip()]
    names = sorted({name for row in rows for name in row.get("documents") or [] if name.endswith(".pdf")})
    report: dict[str, dict] = {}
    for name in names:
        started = time.perf_counter()
        doc = load_document(args.documents / name)
        entries, source = section_outline(doc)
        seconds = time.perf_counter() - started
        report[name] = {
            "pages": len(doc.pages),
            "source": source,
            "sections": len(entries),
            "load_s": round(seconds, 2),
        }
        print(f"{name[:48]:48} {len(doc.pages):4} pages  {source:10} {len(entries):4} sections  {seconds:5.1f} s")
        if source == "type" and args.show:
            for entry in entries[: args.show]:
                print(f"      {'  ' * (entry.level - 1)}{entry.title}")
    sources = Counter(row["source"] for row in report.values())
    summary = {"documents": len(report), "trees_by_source": dict(sources), "pages_only": sources.get("pages", 0)}
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "documents": report}, indent=1))


if __name__ == "__main__":
    main()
