"""Would BM25 find more in other languages with each text's words stemmed? A probe, not a product path: keyword
search alone (pagegraph's BM25 words, `text.words.tokenize`) over xquad's 2,880 paragraphs in one library, the 100
questions of each language whose Snowball stemmer exists, doc_hit@5 with the words as indexed today beside the
words stemmed by the Snowball stemmer of their text's language (a paragraph's language taken from its folder, a
question's from its row: what a language detector would have to give).

    python -m pip install --target /tmp/snowball snowballstemmer     # not a pagegraph dependency
    PYTHONPATH=/tmp/snowball .venv/bin/python bench/stemming.py [--out stemming.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

XQUAD = Path(__file__).resolve().parents[2] / "shared" / "eval" / "xquad"
SNOWBALL = {
    "ar": "arabic",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "hi": "hindi",
    "ro": "romanian",
    "ru": "russian",
    "tr": "turkish",
}


def doc_hit_at_5(
    questions: list[dict], paragraphs: dict[str, tuple[str, str]], words: Callable[[str, str], list[str]]
) -> dict[str, float]:
    """Per language, the share of its questions whose paragraph is among BM25's first five; `words(text, language)`
    makes a text's BM25 words."""
    import bm25s

    names = list(paragraphs)
    bm25 = bm25s.BM25()
    bm25.index([words(text, language) for text, language in paragraphs.values()], show_progress=False)
    found: dict[str, list[bool]] = {language: [] for language in SNOWBALL}
    for question in questions:
        if question["language"] not in SNOWBALL:
            continue
        gold = set(question["documents"])
        known = [w for w in words(question["question"], question["language"]) if w in bm25.vocab_dict]
        scores = bm25.get_scores(known) if known else np.zeros(len(names))
        found[question["language"]].append(bool(gold & {names[i] for i in np.argsort(-scores)[:5]}))
    return {language: round(float(np.mean(hits)), 3) for language, hits in found.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not XQUAD.is_dir():
        print(f"evaluation data not found: {XQUAD} (../shared is absent)", file=sys.stderr)
        return 1
    try:
        import snowballstemmer
    except ImportError:
        print("snowballstemmer is not installed: see the usage above", file=sys.stderr)
        return 1
    from pagegraph.text.words import tokenize

    stemmers = {language: snowballstemmer.stemmer(name) for language, name in SNOWBALL.items()}
    paragraphs = {path.name: (path.read_text(), path.parent.name) for path in sorted(XQUAD.glob("documents/*/*.txt"))}
    questions = [json.loads(line) for line in (XQUAD / "questions.jsonl").open()]

    def stemmed(text: str, language: str) -> list[str]:
        words = tokenize(text)
        return stemmers[language].stemWords(words) if language in stemmers else words

    figures = {
        "as indexed": doc_hit_at_5(questions, paragraphs, lambda text, _: tokenize(text)),
        "stemmed": doc_hit_at_5(questions, paragraphs, stemmed),
    }
    print(f"{'BM25 doc_hit@5':>16} " + " ".join(f"{language:>5}" for language in SNOWBALL))
    for name, row in figures.items():
        print(f"{name:>16} " + " ".join(f"{row[language]:>5.2f}" for language in SNOWBALL))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
