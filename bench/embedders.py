"""The embedder chosen by measurement (issue 77, item 3): the same documents indexed with each embedder and searched
side by side. mmlongbench dev (corpus and document scope; every question, and each half of its documents as
bench/route_share.py splits them, fixed seed), sec10q (corpus and document scope) and xquad (corpus scope, per
language): page hit@5 and doc_hit@5 of `default` beside LangChain's Ensemble, BM25, dense and the router. What an
embedder costs at ingest is bench/ingest.py's figure (`--also-embedder multilingual-e5`).

    .venv/bin/pagegraph ingest ../shared/eval/mmlongbench/documents --index MMLB_E5 --embedder multilingual-e5
    .venv/bin/python bench/embedders.py --mmlongbench MMLB --sec10q SEC --xquad XQUAD --out minilm.json
    .venv/bin/python bench/embedders.py --mmlongbench MMLB_E5 --sec10q SEC_E5 --xquad XQUAD_E5 --out e5.json
    .venv/bin/python bench/embedders.py --compare minilm.json e5.json

With --rules-off, `default` is measured beside itself with each of bench/rules_halves.py's rules switched off in
turn (no routing, page ranking off, ...): which stage costs where `default` trails dense search alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fusion import measure
from route_share import document_halves
from rules_halves import RULES_OFF

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
BASELINES = ("bm25", "dense", "routing", "ensemble")
XQUAD_BASELINES = ("dense", "ensemble")


def figures(args: argparse.Namespace) -> dict[str, dict[str, dict[str, float]]]:
    from pagegraph.config import Context

    default = {"default": Context()}
    if args.rules_off:
        default |= {name: Context(retrieval=off) for name, off in RULES_OFF.items()}
    found: dict[str, dict[str, dict[str, float]]] = {}
    if args.mmlongbench:
        questions = EVAL / "mmlongbench" / "dev.jsonl"
        first, second = document_halves(questions, args.seed)
        scopes = ("corpus", "document")
        found["mmlongbench dev"] = measure(args.mmlongbench, questions, scopes, default, None, BASELINES)
        found["mmlongbench dev, first half"] = measure(args.mmlongbench, questions, scopes, default, first, BASELINES)
        found["mmlongbench dev, second half"] = measure(args.mmlongbench, questions, scopes, default, second, BASELINES)
    if args.sec10q:
        questions = EVAL / "sec10q" / "questions.jsonl"
        found["sec10q"] = measure(args.sec10q, questions, ("corpus", "document"), default, None, BASELINES)
    if args.xquad:
        questions = EVAL / "xquad" / "questions.jsonl"
        by_language: dict[str, set[str]] = {}
        for row in map(json.loads, questions.read_text().splitlines()):
            by_language.setdefault(row["language"], set()).update(row["documents"])
        for language, documents in sorted(by_language.items()):
            found[f"xquad {language}"] = measure(
                args.xquad, questions, ("corpus",), default, documents, XQUAD_BASELINES
            )
    return found


def embedder_of(index: Path) -> str:
    return json.loads((index / "manifest.json").read_text())["params"]["embedding_model"]


def compare(paths: list[Path]) -> None:
    runs = {path.stem: json.loads(path.read_text()) for path in paths}
    sets = list(next(iter(runs.values()))["figures"])
    for name, run in runs.items():
        print(f"{name}: {', '.join(sorted(set(run['embedders'].values())))}")
    for question_set in sets:
        print(f"\n{question_set}")
        for retriever in next(iter(runs.values()))["figures"][question_set]:
            for name, run in runs.items():
                cells = run["figures"][question_set].get(retriever, {})
                shown = "  ".join(f"{metric} {value:.3f}" for metric, value in cells.items() if value is not None)
                print(f"  {retriever:>14} {name:>12}  {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mmlongbench", type=Path, help="an index of ../shared/eval/mmlongbench/documents")
    parser.add_argument("--sec10q", type=Path, help="an index of ../shared/eval/sec10q/documents")
    parser.add_argument("--xquad", type=Path, help="an index of ../shared/eval/xquad/documents")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rules-off", action="store_true", help="beside `default`, each rule of bench/rules_halves.py switched off"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs="+", help="print two or more --out files side by side")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return 0
    if not EVAL.exists():
        sys.exit(f"evaluation data not found: {EVAL} (../shared is absent)")
    indexes = {name: getattr(args, name) for name in ("mmlongbench", "sec10q", "xquad") if getattr(args, name)}
    found = {"embedders": {name: embedder_of(index) for name, index in indexes.items()}, "figures": figures(args)}
    print(json.dumps(found, indent=1))
    if args.out:
        args.out.write_text(json.dumps(found, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
