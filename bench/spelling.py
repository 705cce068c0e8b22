"""Searching a question's unseen words as the index's nearest spelling (Context.retrieval.correct_spelling), on and off, on
mmlongbench dev questions (within their documents and over the whole index) and sec10q (over the whole index, never
tuned on); `on` is kept only if it has the better sum of mmlongbench's three figures (ties: off). The words each
question set has corrected are listed, so what the rule does can be read, not only scored.

    .venv/bin/python bench/spelling.py --tune .pagegraph/eval-mmlb52-pdfium ../shared/eval/mmlongbench/dev.jsonl \
        --check .pagegraph/eval-sec10q-v2 ../shared/eval/sec10q/questions.jsonl [--out bench/results/spelling.json]
"""

from __future__ import annotations

from pathlib import Path

from fusion import tune_and_check
from tune_check import parse_tune_check


def corrections(index_folder: Path, questions_file: Path) -> list[tuple[str, str]]:
    """(word as written, word searched) for every word the rule changes in the set's questions."""
    from pagegraph.config import RetrievalKnobs, Settings
    from pagegraph.eval.questions import load_questions
    from pagegraph.retrievers.spelling import spelling_corrections
    from pagegraph.store.index import open_index

    with open_index(index_folder, Settings()) as index:
        questions = load_questions(questions_file)
        letters = RetrievalKnobs().spelling_min_letters
        return [pair for q in questions for pair in spelling_corrections(q.question, index, letters).items()]


def main() -> int:
    args = parse_tune_check(__doc__)
    from pagegraph.config import Context

    for name, (index_folder, questions_file) in (("tune", args.tune), ("check", args.check)):
        changed = corrections(index_folder, questions_file)
        print(f"{name}: {len(changed)} words searched as another: " + ", ".join(f"{a} -> {b}" for a, b in changed))
    candidates = {
        "spelling off": Context(retrieval={"correct_spelling": False}),
        "spelling on": Context(retrieval={"correct_spelling": True}),
    }
    return tune_and_check(
        args,
        candidates,
        ("document", "corpus"),
        lambda figures: figures["document hit@5"] + figures["corpus hit@5"] + figures["corpus doc_hit@5"],
    )


if __name__ == "__main__":
    raise SystemExit(main())
