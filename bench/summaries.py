"""Extractive document summaries, side by side: each document's stored summary beside the one this code's
`ExtractiveSummarizer` writes, and how many of each open on a cover page's form or a table of contents. With
`--write`, this code's summaries replace the stored ones (in place: give it a copy of the index), so that the router's
profile search can be measured with either (`pagegraph eval --mode retrieval --retriever routing --scope corpus`).

    .venv/bin/python bench/summaries.py --index COPY_OF_INDEX [--write] [--out bench/results/summaries.json]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

# what a summary that quotes a cover or a contents page opens with: a form's capitals, its check boxes, dot leaders
FRONT_MATTER = re.compile(r"SECURITIES AND EXCHANGE COMMISSION|check mark|Table of Contents|\.{4,}|(?:\. ){3,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--write", action="store_true", help="store this code's summaries in the index")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from pagegraph.config import Settings
    from pagegraph.ingest.summaries import ExtractiveSummarizer, SummarySource
    from pagegraph.store.index import open_index

    store = open_index(args.index, Settings(), records_only=True)
    stored = store.summaries()
    summarizer = ExtractiveSummarizer()
    rows = []
    for doc in store.documents():
        source = SummarySource.from_parts(doc.name, doc.title, doc.source_type, store.pages(doc.id), store.tree(doc.id))
        new = summarizer.summarize(source)
        old = stored.get(doc.id)
        rows.append({"document": doc.name, "stored": old.summary if old else "", "this code": new.summary})
        if args.write:
            store.set_summary(doc.id, new)
    for row in rows:
        print(f"== {row['document']}\n  stored:    {row['stored'][:200]}\n  this code: {row['this code'][:200]}")
    counts = {key: sum(bool(FRONT_MATTER.search(row[key][:300])) for row in rows) for key in ("stored", "this code")}
    print(f"summaries opening on a cover or contents page, of {len(rows)}: {counts}")
    if args.out:
        args.out.write_text(json.dumps({"front_matter": counts, "rows": rows}, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
