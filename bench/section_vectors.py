"""Where the tree walk starts: which section vectors put a gold page among the sections closest to the question.

The tree retriever (`expand_tree`, `hybrid+tree`) starts from the sections whose vectors are closest to the
question. Two ways to get those vectors, compared on the same index and rows without a model call:

- `chunks` (what ingest stores now): the normalised mean of the vectors of the chunks a section's text overlaps;
- `summary` (what ingest stored before): the embedding of the section's title path and its stored summary, one
  more embedder call per section.

For each answerable mmlongbench dev row asked of one document with an outline, sections (level > 0, or leaves with
--leaves) are taken closest first until they cover `budget` pages; the row scores when one of those pages is a gold
page. Equal page budgets keep a recipe that favours long sections from looking better than it is. Rows are split by
document into two halves (alternate documents in name order), so a difference can be seen to hold on both.

    .venv/bin/python bench/section_vectors.py --index .pagegraph/eval-mmlb52-pdfium [--leaves] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"
BUDGETS = (3, 6, 10, 15)


def covered(order: list[int], spans: list[tuple[int, int]], budget: int) -> set[int]:
    """The pages of the sections taken in `order` until the next would go over `budget` pages (the first is always
    taken)."""
    pages: set[int] = set()
    for k in order:
        new = set(range(spans[k][0], spans[k][1] + 1))
        if pages and len(pages | new) > budget:
            break
        pages |= new
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--leaves", action="store_true", help="start from leaf sections only")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"evaluation data not found at {DEV} (../shared is absent)")

    from pagegraph.config import Settings
    from pagegraph.ingest.tree_summaries import section_vectors
    from pagegraph.store.index import open_index

    rows = [json.loads(line) for line in DEV.open()]
    rows = [r for r in rows if r["answerable"] and r["evidence"] and len(r["documents"]) == 1]
    with open_index(args.index, Settings(index=args.index)) as index:
        documents = {doc.name: doc for doc in index.store.documents()}
        half_of = {name: i % 2 for i, name in enumerate(sorted(documents))}
        cache: dict[str, dict] = {}

        def recipes(doc) -> dict:
            if doc.id not in cache:
                nodes = index.store.tree(doc.id)
                by_id = {node.id: node for node in nodes}
                sections = index.store.sections(doc.id)
                stored = list(index.store.iter_chunks(doc.id))
                embeddings = np.array([vector for _, vector in stored], dtype=np.float32)
                chunks = [chunk for chunk, _ in stored]
                texts = [" > ".join(by_id[s.node_id].title_path or [s.title]) + "\n" + s.summary for s in sections]
                keep = [
                    k
                    for k, s in enumerate(sections)
                    if s.level > 0 and (not args.leaves or not by_id[s.node_id].children_ids)
                ]
                cache[doc.id] = {
                    "keep": keep,
                    "spans": [(s.start_page, s.end_page) for s in sections],
                    "chunks": section_vectors(sections, nodes, chunks, embeddings) if sections else None,
                    "summary": index.embedder.embed(texts) if sections else None,
                }
            return cache[doc.id]

        scores: dict[str, dict[str, list[bool]]] = {}
        for row in rows:
            doc = documents.get(row["documents"][0])
            if doc is None:
                continue
            found = recipes(doc)
            if len(found["keep"]) < 2:
                continue
            question = index.embedder.embed([row["question"]])[0]
            gold = {e["page"] for e in row["evidence"]}
            for recipe in ("chunks", "summary"):
                similarity = found[recipe] @ question
                order = sorted(found["keep"], key=lambda k: -similarity[k])
                for budget in BUDGETS:
                    hit = bool(covered(order, found["spans"], budget) & gold)
                    for part in ("all", f"half {half_of[doc.name] + 1}"):
                        scores.setdefault(f"{recipe} {part}", {}).setdefault(str(budget), []).append(hit)
    table = {
        key: {"rows": len(by_budget[str(BUDGETS[0])]), **{b: round(float(np.mean(v)), 3) for b, v in by_budget.items()}}
        for key, by_budget in sorted(scores.items())
    }
    print(
        f"gold page among the closest sections' pages, by page budget {BUDGETS} ({'leaves' if args.leaves else 'all levels'})"
    )
    for key, figures in table.items():
        print(f"  {key:<16} rows {figures['rows']:>3}  " + "  ".join(f"{b}p {figures[str(b)]:.3f}" for b in BUDGETS))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"command": " ".join(sys.argv), "index": str(args.index), "leaves": args.leaves, "hit": table}
        args.out.write_text(json.dumps(payload, indent=2) + "\n")


if __name__ == "__main__":
    main()
