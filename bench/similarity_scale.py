"""Fit another embedder's similarity scale onto MiniLM's (`llm.embedder.SIMILARITY_SCALE`).

The abstention threshold, the answer confidence and the sentence weights were calibrated on MiniLM's cosines.
Another model's cosines sit elsewhere (multilingual-e5's crowd between 0.7 and 0.9, unrelated texts included), so an
index maps its model's cosines onto MiniLM's scale with a line, fitted here on the English xquad rows (MiniLM reads
English). For each question, both indexes give the best similarity of any chunk of its own paragraph (answerable)
and of two paragraphs of other articles (off-topic). The line maps the other model's quantiles (2 % to 98 %, both
groups together) onto MiniLM's by least squares. It is fitted on the questions of odd position and checked on the
even ones: the share of answerable questions kept, and of off-topic ones refused, at the abstention threshold, by
MiniLM and by the other model through the line.

    .venv/bin/python bench/similarity_scale.py --minilm .pagegraph/eval-xquad --other .pagegraph/eval-xquad-e5 \
        [--out bench/results/similarity-scale-e5.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
XQUAD = REPO.parent / "shared" / "eval" / "xquad"
OFF_TOPIC = 2
ARTICLE_SPAN = 20  # paragraphs this far apart in the set's order come from other articles


def best_similarities(folder: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """The best cosine of any chunk of the document to the question, for each (question, document), raw."""
    from pagegraph.config import Settings
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.store.index import open_index

    with open_index(folder, Settings()) as index:
        found = []
        for question, document in pairs:
            vector = index.embedder.embed_queries([question])[0]
            hits = index.dense_search(vector, 1, RetrievalFilter(documents=[document]), exact_below=10**9)
            found.append(hits[0][1] if hits else 0.0)
        return np.array(found)


def fit(minilm: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """(floor, ceiling): the other model's cosines that the least-squares line through both quantiles maps to 0 and 1
    on MiniLM's scale."""
    levels = np.linspace(0.02, 0.98, 49)
    slope, intercept = np.polyfit(np.quantile(other, levels), np.quantile(minilm, levels), 1)
    return -intercept / slope, (1 - intercept) / slope


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minilm", type=Path, required=True, help="an index of the xquad documents built with MiniLM")
    parser.add_argument("--other", type=Path, required=True, help="the same documents in an index of the other model")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not (XQUAD / "questions.jsonl").exists():
        sys.exit(f"evaluation data not found at {XQUAD} (../shared is absent)")

    from pagegraph.config import GateKnobs

    threshold = GateKnobs().abstain_threshold
    rows = [row for line in (XQUAD / "questions.jsonl").open() if (row := json.loads(line))["language"] == "en"]
    paragraphs = sorted(path.name for path in (XQUAD / "documents" / "en").glob("*.txt"))
    rng = random.Random(7)
    pairs, answerable, half = [], [], []
    for position, row in enumerate(rows):
        own = row["documents"][0]
        at = paragraphs.index(own)
        others = [name for i, name in enumerate(paragraphs) if abs(i - at) >= ARTICLE_SPAN]
        for document in [own, *rng.sample(others, OFF_TOPIC)]:
            pairs.append((row["question"], document))
            answerable.append(document == own)
            half.append(position % 2)
    answerable_rows, half_rows = np.array(answerable), np.array(half)
    minilm, other = best_similarities(args.minilm, pairs), best_similarities(args.other, pairs)
    floor, ceiling = fit(minilm[half_rows == 1], other[half_rows == 1])
    mapped = (other - floor) / (ceiling - floor)

    check = half_rows == 0
    figures = {"floor": round(float(floor), 4), "ceiling": round(float(ceiling), 4), "threshold": threshold}
    for name, values in (("minilm", minilm), ("other raw", other), ("other mapped", mapped)):
        kept = float(np.mean(values[check & answerable_rows] >= threshold))
        refused = float(np.mean(values[check & ~answerable_rows] < threshold))
        medians = [float(np.median(values[check & group])) for group in (answerable_rows, ~answerable_rows)]
        figures[name] = {
            "answerable_kept": round(kept, 3),
            "off_topic_refused": round(refused, 3),
            "median_answerable": round(medians[0], 3),
            "median_off_topic": round(medians[1], 3),
        }
        print(
            f"{name:>13}: answerable kept {kept:.2f}, off-topic refused {refused:.2f} at {threshold}; medians "
            f"{medians[0]:.2f} / {medians[1]:.2f} (checked on {int(check.sum())} pairs)"
        )
    print(f"SIMILARITY_SCALE entry: ({floor:.4f}, {ceiling:.4f}), fitted on {int((~check).sum())} pairs")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
