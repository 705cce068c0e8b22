"""Evidence first, in every language: on xquad (the same questions in 12 languages over one library), the share of
each language's questions whose gold answer is written in the first highlighted sentence, and in any of those shown,
as the `highlight` stage picks them from the model-free search of the question (the graphs' first evidence; no chat
model). Run it with two versions of the code on the same index to compare them.

    .venv/bin/python bench/highlight_languages.py --index XQUAD [--per-language 100] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "eval" / "xquad"


def normalised(text: str) -> str:
    """NFKC, case-folded, spaces collapsed and sentence stops trimmed: how an answer span is looked for."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(" .。")


def measure(index_folder: Path, questions: list[dict]) -> dict[str, dict[str, float]]:
    from pagegraph.config import Context, Settings
    from pagegraph.nodes.highlight import highlight
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    found: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"first": [], "any": []})
    settings = Settings()
    with open_index(index_folder, settings) as index:
        services = Services(settings, index=index)
        runtime = SimpleNamespace(context=Context(index=str(index_folder)))
        for row in questions:
            update = highlight({"question": row["question"]}, runtime, services, search=True)
            sentences = [normalised(h.sentence) for h in update["highlights"]]
            answer = normalised(row["answer"])
            found[row["language"]]["first"].append(bool(sentences) and answer in sentences[0])
            found[row["language"]]["any"].append(any(answer in sentence for sentence in sentences))
    return {
        language: {name: round(sum(hits) / len(hits), 3) for name, hits in shares.items()}
        for language, shares in sorted(found.items())
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index of ../shared/eval/xquad/documents")
    parser.add_argument("--per-language", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not XQUAD.is_dir():
        print(f"evaluation data not found: {XQUAD} (../shared is absent)", file=sys.stderr)
        return 1
    taken: dict[str, int] = defaultdict(int)
    questions = []
    for line in (XQUAD / "questions.jsonl").open():
        row = json.loads(line)
        if row.get("answerable", True) and taken[row["language"]] < args.per_language:
            taken[row["language"]] += 1
            questions.append(row)
    figures = measure(args.index, questions)
    print(f"{'answer in':>10} " + " ".join(f"{language:>5}" for language in figures))
    for name in ("first", "any"):
        print(f"{name + ' shown':>10} " + " ".join(f"{shares[name]:>5.2f}" for shares in figures.values()))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
