"""Fit another embedder's similarity scale onto MiniLM's (`llm.embedder.SIMILARITY_SCALE`).

The abstention threshold, the answer confidence and the sentence weights were calibrated on MiniLM's cosines.
Another model's cosines sit elsewhere (multilingual-e5's crowd between 0.7 and 0.9, unrelated texts included), so an
index maps its model's cosines onto MiniLM's scale with a line, fitted here on the English xquad rows (MiniLM reads
English). For each question, both indexes give the best similarity of any chunk of its own paragraph (answerable)
and of two paragraphs of other articles (off-topic). The line maps the other model's quantiles (2 % to 98 %, both
groups together) onto MiniLM's by least squares. It is fitted on the questions of odd position and checked on the
even ones: the share of answerable questions kept, and of off-topic ones refused, at the abstention threshold, by
MiniLM and by the other model through the line.

With --mmlongbench, the same over whole documents too: each answerable mmlongbench dev question of one document
against it and against another dev document of another type (bench/abstain_threshold.py's off-topic pairs). A
long document's best chunk is the best of many, which lifts a compressed scale's off-topic cosines more than
MiniLM's: the figures are printed for each set apart, through the scale in use (`SIMILARITY_SCALE`), the line
fitted on each set and the line fitted on both together.

    .venv/bin/python bench/similarity_scale.py --minilm .pagegraph/eval-xquad --other .pagegraph/eval-xquad-e5 \
        [--mmlongbench MMLB MMLB_E5] [--out bench/results/similarity-scale-e5.json]
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
MMLONGBENCH = REPO.parent / "shared" / "eval" / "mmlongbench"
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


def xquad_pairs() -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """(question, paragraph) pairs of the English xquad rows, whether each is the question's own, and each row's
    half (its position's parity)."""
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
    return pairs, np.array(answerable), np.array(half)


def mmlongbench_pairs() -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The same for the answerable mmlongbench dev questions of one document: its own, and the document of another
    type that bench/abstain_threshold.py pairs it with."""
    from abstain_threshold import off_topic_documents

    from pagegraph.eval.questions import load_questions

    rows = load_questions(MMLONGBENCH / "dev.jsonl")
    drawn = [(row, other) for row, other in zip(rows, off_topic_documents(rows), strict=True) if other]
    pairs, answerable, half = [], [], []
    for position, (row, other) in enumerate(pair for pair in drawn if len(pair[0].documents) == 1):
        for document, own in ((row.documents[0], True), (other, False)):
            pairs.append((row.question, document))
            answerable.append(own)
            half.append(position % 2)
    return pairs, np.array(answerable), np.array(half)


def gate_figures(values: np.ndarray, answerable: np.ndarray, threshold: float) -> dict[str, float]:
    """Answerable pairs kept and off-topic ones refused at `threshold`, and each group's median."""
    return {
        "answerable_kept": round(float(np.mean(values[answerable] >= threshold)), 3),
        "off_topic_refused": round(float(np.mean(values[~answerable] < threshold)), 3),
        "median_answerable": round(float(np.median(values[answerable])), 3),
        "median_off_topic": round(float(np.median(values[~answerable])), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minilm", type=Path, required=True, help="an index of the xquad documents built with MiniLM")
    parser.add_argument("--other", type=Path, required=True, help="the same documents in an index of the other model")
    parser.add_argument(
        "--mmlongbench", type=Path, nargs=2, metavar=("MINILM", "OTHER"), help="indexes of the mmlongbench documents"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not (XQUAD / "questions.jsonl").exists():
        sys.exit(f"evaluation data not found at {XQUAD} (../shared is absent)")

    from pagegraph.config import GateKnobs
    from pagegraph.llm.embedder import SIMILARITY_SCALE, on_minilm_scale
    from pagegraph.store.manifest import read_manifest

    threshold = GateKnobs().abstain_threshold
    sets = {"xquad": (args.minilm, args.other, *xquad_pairs())}
    if args.mmlongbench:
        sets["mmlongbench"] = (*args.mmlongbench, *mmlongbench_pairs())
    measured = {}
    for name, (minilm_index, other_index, pairs, answerable, half) in sets.items():
        minilm, other = best_similarities(minilm_index, pairs), best_similarities(other_index, pairs)
        measured[name] = (minilm, other, answerable, half)
    lines = {"in use": SIMILARITY_SCALE[read_manifest(args.other).params.embedding_model]}
    fitted_on = {name: (minilm[half == 1], other[half == 1]) for name, (minilm, other, _, half) in measured.items()}
    lines.update({name: fit(*values) for name, values in fitted_on.items()})
    if len(measured) > 1:
        lines["both"] = fit(*(np.concatenate(values) for values in zip(*fitted_on.values(), strict=True)))
    figures: dict = {
        "threshold": threshold,
        "lines": {k: [round(float(v), 4) for v in line] for k, line in lines.items()},
    }
    for name, (minilm, other, answerable, half) in measured.items():
        check = half == 0
        figures[name] = {"minilm": gate_figures(minilm[check], answerable[check], threshold)}
        for line_name, line in lines.items():
            mapped = on_minilm_scale(other[check], line)
            figures[name][f"other, {line_name} line"] = gate_figures(mapped, answerable[check], threshold)
        for row_name, row in figures[name].items():
            print(
                f"{name:>11} {row_name:>18}: answerable kept {row['answerable_kept']:.2f}, off-topic refused "
                f"{row['off_topic_refused']:.2f} at {threshold}; medians {row['median_answerable']:.2f} / "
                f"{row['median_off_topic']:.2f} (checked on {int(check.sum())} pairs)"
            )
    for line_name, (floor, ceiling) in lines.items():
        print(f"SIMILARITY_SCALE entry, {line_name}: ({floor:.4f}, {ceiling:.4f})")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
