"""Retrieval figures per language, from `pagegraph eval --mode retrieval` reports over a question set whose rows name
their `language` (xquad: the same questions in 12 languages).

    .venv/bin/pagegraph eval ../shared/eval/xquad/questions.jsonl --docs ../shared/eval/xquad/documents \
        --index .pagegraph/eval-xquad --mode retrieval --scope corpus \
        --retriever default --retriever bm25 --retriever dense --out bench/out/xquad-corpus.json
    .venv/bin/python bench/languages.py bench/out/xquad-corpus.json [more reports ...] [--metric doc_hit@5]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "xquad" / "questions.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", type=Path, nargs="+")
    parser.add_argument("--metric", default="doc_hit@5")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    args = parser.parse_args()
    language = {row["id"]: row["language"] for row in map(json.loads, args.questions.open())}
    table: dict[str, dict[str, float]] = {}
    for report in args.reports:
        values: dict[str, list[float]] = defaultdict(list)
        for row in json.loads(report.read_text())["per_question"]:
            if row.get(args.metric) is not None and row["id"] in language:
                values[f"{report.stem}:{row['retriever']}", language[row["id"]]].append(row[args.metric])
        for (column, lang), found in values.items():
            table.setdefault(column, {})[lang] = statistics.mean(found)
    languages = sorted({lang for column in table.values() for lang in column})
    print(f"{args.metric} by language")
    print(f"{'':40}" + "".join(f"{lang:>7}" for lang in languages) + f"{'lowest':>8}")
    for column, by_language in table.items():
        cells = "".join(f"{by_language.get(lang, float('nan')):7.2f}" for lang in languages)
        print(f"{column:40}{cells}{min(by_language.values()):8.2f}")


if __name__ == "__main__":
    main()
