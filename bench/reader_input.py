"""What the written reader reads, without a model: for each row of a lookups set, the passages the extract graph's
search keeps, with their tables as readings (`with_table_readings`), written to a file; then two such files compared.
Rows whose reader input is the same under two code versions get the same answer from the embedded model, so a change
to search or table reading needs a model run only on the rows it changed.

    PYTHONPATH=OLD/src .venv/bin/python bench/reader_input.py --index IDX_OLD --set bench/lookups.jsonl --out old.json
    .venv/bin/python bench/reader_input.py --index IDX_NEW --set bench/lookups.jsonl --out new.json
    .venv/bin/python bench/reader_input.py --compare old.json new.json --set bench/lookups.jsonl --rows changed.jsonl

`--holds` says, for each answerable row, whether the excerpts the extract graph's first read is shown
(`nodes.read.focused_evidence`, before its token budget) hold the gold answer as the answer eval scores it, and
whether the whole passages a second read may be given do; with `--run`, beside that run's outcome (right, refused,
wrong): whether the reader or what it is shown loses a row.

    .venv/bin/python bench/reader_input.py --holds --index IDX --set bench/lookups.jsonl [--run run.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace


def dump(index_path: Path, set_path: Path, out: Path) -> None:
    from pagegraph.config import Context, Settings
    from pagegraph.nodes.retrieve import search_question
    from pagegraph.retrievers.highlights import with_table_readings
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    rows = [json.loads(line) for line in set_path.read_text().splitlines() if line.strip()]
    settings = Settings()
    context = Context(index=str(index_path))
    read: dict[str, list[str]] = {}
    with open_index(index_path, settings) as index:
        services = Services(settings, index=index)
        for row in rows:
            inputs = {"question": row["question"], "documents": row.get("documents") or []}
            found = search_question(inputs, SimpleNamespace(context=context), services)["retrieved"]
            readable, _ = with_table_readings(
                found[: context.reading.highlight_passages], row["question"], context.reading
            )
            read[row["id"]] = [f"{p.source} p. {p.start_page}-{p.end_page}\n{p.text}" for p in readable]
    out.write_text(json.dumps(read, indent=1))


def holds(index_path: Path, set_path: Path, run_path: Path | None) -> None:
    from collections import Counter

    from pagegraph.config import Context, Settings
    from pagegraph.eval.scoring import score_answer
    from pagegraph.nodes.answer import render_evidence
    from pagegraph.nodes.read import focused_evidence
    from pagegraph.nodes.retrieve import search_question
    from pagegraph.retrievers.highlights import asked_columns
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    rows = [json.loads(line) for line in set_path.read_text().splitlines() if line.strip()]
    outcomes = {}
    if run_path:
        for answer in json.loads(run_path.read_text())["per_question"]:
            right = (answer.get("answer_score") or 0) >= 0.5
            outcomes[answer["id"]] = "right" if right else "refused" if answer["abstained"] else "wrong"
    settings = Settings()
    context = Context(index=str(index_path))
    counts: Counter[tuple[str, str]] = Counter()
    with open_index(index_path, settings) as index:
        services = Services(settings, index=index)
        for row in [r for r in rows if r["answerable"]]:
            inputs = {"question": row["question"], "documents": row.get("documents") or []}
            found = search_question(inputs, SimpleNamespace(context=context), services)["retrieved"]
            top = found[: context.reading.highlight_passages]
            columns = asked_columns(row["question"], context.reading)
            excerpts = focused_evidence({"question": row["question"]}, context, services, top)
            shown = " ".join(render_evidence(n, e, columns) for n, e in enumerate(excerpts, 1))
            whole = " ".join(p.text for p in found)
            gold, form = row["answer"], row.get("answer_format")
            if (score_answer(shown, gold, form, True).score or 0) >= 1:
                where = "in the first read's excerpts"
            elif (score_answer(whole, gold, form, True).score or 0) >= 1:
                where = "in the whole passages only"
            else:
                where = "in no passage read"
            outcome = outcomes.get(row["id"], "-")
            counts[(where, outcome)] += 1
            print(f"{row['id']}: {where}; {outcome}")
    for (where, outcome), count in sorted(counts.items()):
        print(f"{count:3}  {where}, {outcome}")


def compare(before: Path, after: Path, set_path: Path, rows_out: Path | None) -> None:
    old, new = json.loads(before.read_text()), json.loads(after.read_text())
    changed = [row_id for row_id in old if old[row_id] != new.get(row_id)]
    print(f"{len(changed)} of {len(old)} rows read something else: {', '.join(changed)}")
    if rows_out:
        lines = [line for line in set_path.read_text().splitlines() if line.strip()]
        rows_out.write_text("".join(f"{line}\n" for line in lines if json.loads(line)["id"] in set(changed)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path)
    parser.add_argument("--set", type=Path, default=Path(__file__).with_name("lookups.jsonl"))
    parser.add_argument("--out", type=Path, help="where to write what each row reads")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--rows", type=Path, help="with --compare: the changed rows of the set, as a set file")
    parser.add_argument("--holds", action="store_true", help="whether what the reader is shown holds the answer")
    parser.add_argument("--run", type=Path, help="with --holds: an answer run of the set, its outcomes beside")
    args = parser.parse_args()
    if args.holds and args.index:
        holds(args.index, args.set, args.run)
    elif args.compare:
        compare(*args.compare, args.set, args.rows)
    elif args.index and args.out:
        dump(args.index, args.set, args.out)
    else:
        parser.error("give --index and --out, or --compare BEFORE AFTER")


if __name__ == "__main__":
    main()
