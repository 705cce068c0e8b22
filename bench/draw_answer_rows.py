"""Draw the fixed answer benchmark rows once: 30 answerable, text-friendly rows with gold pages and 10 unanswerable
rows of ../shared/eval/mmlongbench/dev.jsonl, spread over documents by a seeded sampler (round-robin over the
documents in a shuffled order, one shuffled row at a time from each). Writes their ids to bench/answer_rows.txt.

    .venv/bin/python bench/draw_answer_rows.py [--seed 16] [--out bench/answer_rows.txt]

The extract graph's abstention was calibrated on other rows, drawn the same way without the benchmark's:

    .venv/bin/python bench/draw_answer_rows.py --seed 23 --exclude bench/answer_rows.txt --out bench/calibration_rows.txt

The confidence bands were checked on a second set of 60 rows drawn from the rows neither file holds (`--pool-without`
leaves rows out before drawing, so the set has the size asked for):

    .venv/bin/python bench/draw_answer_rows.py --seed 39 --answerable 45 --unanswerable 15 \
        --pool-without bench/answer_rows.txt --pool-without bench/calibration_rows.txt --out bench/confidence_rows.txt
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"


def spread(rows: list, count: int, rng: random.Random) -> list:
    """`count` rows taken one per document in turn (documents and rows in a seeded order)."""
    by_document: dict[str, list] = defaultdict(list)
    for row in rows:
        by_document[row.documents[0]].append(row)
    documents = sorted(by_document)
    rng.shuffle(documents)
    for document in documents:
        rng.shuffle(by_document[document])
    picked = []
    while len(picked) < count and any(by_document.values()):
        for document in documents:
            if by_document[document] and len(picked) < count:
                picked.append(by_document[document].pop())
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "answer_rows.txt")
    parser.add_argument("--exclude", type=Path, help="a rows file whose ids are left out (drawn, then dropped)")
    parser.add_argument(
        "--pool-without",
        type=Path,
        action="append",
        default=[],
        help="a rows file whose ids are left out before drawing",
    )
    parser.add_argument("--answerable", type=int, default=30)
    parser.add_argument("--unanswerable", type=int, default=10)
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"evaluation data not found at {DEV} (../shared is absent)")
    from pagegraph.eval.questions import load_questions, read_row_ids

    pooled_out = {row_id for path in args.pool_without for row_id in read_row_ids(path)}
    rows = [r for r in load_questions(DEV) if r.id not in pooled_out]
    rng = random.Random(args.seed)
    answerable = spread(
        [r for r in rows if r.answerable and r.text_friendly and any(e.page for e in r.evidence)], args.answerable, rng
    )
    unanswerable = spread([r for r in rows if not r.answerable], args.unanswerable, rng)
    command = f"python bench/draw_answer_rows.py --seed {args.seed}"
    if (args.answerable, args.unanswerable) != (30, 10):
        command += f" --answerable {args.answerable} --unanswerable {args.unanswerable}"
    command += "".join(f" --pool-without {path}" for path in args.pool_without)
    if args.exclude:
        excluded = set(read_row_ids(args.exclude))
        answerable = [r for r in answerable if r.id not in excluded]
        unanswerable = [r for r in unanswerable if r.id not in excluded]
        command += f" --exclude {args.exclude}"
    header = [
        f"# Answer benchmark rows: row ids of ../shared/eval/mmlongbench/dev.jsonl, drawn once by `{command}`:",
        f"# {args.answerable} answerable, text_friendly rows with gold pages and {args.unanswerable} unanswerable rows, "
        "taken one per document in turn",
        "# (documents and rows in a seeded order)"
        + (
            f"; those of the excluded file dropped: {len(answerable)} and {len(unanswerable)} left."
            if args.exclude
            else "."
        ),
        f"# Run them with `pagegraph eval ../shared/eval/mmlongbench/dev.jsonl --mode answer --rows bench/{args.out.name}`.",
    ]
    lines = [*header, *(f"{r.id}  # answerable, {r.documents[0]}" for r in answerable)]
    lines += [f"{r.id}  # unanswerable, {r.documents[0]}" for r in unanswerable]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(answerable)} answerable and {len(unanswerable)} unanswerable rows written to {args.out}")


if __name__ == "__main__":
    main()
