"""Whether a change of code moves any answer, without the embedded model: each row of a lookups set answered by the
`extract` and `rag` graphs over an index, with the stand-in model of `search_once.py` (its every reply, the judge's
too, a function of all it was shown), and each answer's text, citations, band, confidence, abstention and highlights
written to a file; then two such files compared. The same file from two code versions on one index: the graphs
searched, read and checked alike.

    PYTHONPATH=OLD/src .venv/bin/python bench/scripted_answers.py --index IDX --set bench/lookups.jsonl --out old.json
    .venv/bin/python bench/scripted_answers.py --index IDX --set bench/lookups.jsonl --out new.json
    .venv/bin/python bench/scripted_answers.py --compare old.json new.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from search_once import ShownModel

GRAPHS = ("extract", "rag")


def shown(output: dict[str, Any]) -> dict[str, Any]:
    return {
        "answer": output.get("answer"),
        "citations": [c.label for c in output.get("citations") or []],
        "band": output.get("band"),
        "confidence": output.get("confidence"),
        "abstained": output.get("abstained"),
        "abstain_reason": output.get("abstain_reason"),
        "highlights": [h.sentence for h in output.get("highlights") or []],
        "evidence": [e.id for e in output.get("evidence") or []],
    }


def dump(index_path: Path, set_path: Path, out: Path) -> None:
    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    rows = [json.loads(line) for line in set_path.read_text().splitlines() if line.strip()]
    answers: dict[str, dict[str, Any]] = {}
    with open_index(index_path, Settings()) as index:
        for name in GRAPHS:
            graph = build_graph(name, services=Services(Settings(), chat_model=ShownModel(), index=index))
            for row in rows:
                inputs = {"question": row["question"], "documents": row.get("documents") or []}
                output = graph.invoke(inputs, context=Context(index=str(index_path)))
                answers[f"{name} {row['id']}"] = shown(output)
                print(name, row["id"], (output.get("answer") or "")[:60].replace("\n", " "), flush=True)
    out.write_text(json.dumps(answers, indent=1, default=str))


def compare(first: Path, second: Path) -> int:
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    moved = sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))
    for key in moved:
        print(f"{key}:\n  {a.get(key)}\n  {b.get(key)}")
    print(f"{len(moved)} of {len(a.keys() | b.keys())} answers differ")
    return 1 if moved else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path)
    parser.add_argument("--set", type=Path, default=Path("bench/lookups.jsonl"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2)
    args = parser.parse_args()
    if args.compare:
        raise SystemExit(compare(*args.compare))
    if args.index is None or args.out is None:
        parser.error("--index and --out, or --compare A B")
    dump(args.index, args.set, args.out)


if __name__ == "__main__":
    main()
