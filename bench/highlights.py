"""Evidence first: how soon, and how good, the highlighted sentences are.

1. In process, index and embedder loaded and warm: the time from question to the `highlight` stage's update when
   the default graph runs (median and p95 over the questions), and what the highlights hold: the share of
   answerable questions with a highlight on a gold page, and, of the rows whose short gold answer (a number or a
   few words) is written in the passages the stage read, the share with it inside a highlight.
2. The `ask` command's wall time to printed evidence, start-up included, on a pseudo-terminal (median of a few runs;
   the run is stopped once the evidence is printed).

    .venv/bin/python bench/highlights.py --index .pagegraph/eval-mmlb [--rows bench/answer_rows.txt] [--limit 40]
        [--graph auto] [--ask-runs 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"


def normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", text.lower()).strip()


def answer_in(answer: str | None, sentences: list[str]) -> bool | None:
    """Whether a short gold answer (a number or a few words) appears in one of the sentences; None for others."""
    if not answer or answer.startswith("[") or len(answer.split()) > 4:
        return None
    wanted = normalised(answer)
    return any(wanted and wanted in normalised(sentence) for sentence in sentences)


def searched_passages(services, inputs: dict, context) -> list:
    """The passages the highlight stage read (its model-free search of the question)."""
    from pagegraph.nodes.retrieve import search_question

    runtime = SimpleNamespace(context=context)
    return search_question(inputs, runtime, services)["retrieved"][: context.reading.highlight_passages]


def in_process(args: argparse.Namespace, rows: list) -> dict:
    from pagegraph import build_graph
    from pagegraph.config import Context, Settings
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    settings = Settings()
    with open_index(args.index, settings) as index:
        services = Services(settings, index=index)
        graph = build_graph(args.graph, services=services)
        context = Context(index=str(args.index))
        index.embedder.embed(["warm up"])
        seconds, on_gold, has_answer = [], [], []
        for row in rows:
            inputs = {"question": row.question, "documents": row.documents}
            began = time.perf_counter()
            highlights = None
            for _namespace, update in graph.stream(inputs, context=context, stream_mode="updates", subgraphs=True):
                if "highlight" in update:
                    highlights = update["highlight"]["highlights"]
                    break
            seconds.append(time.perf_counter() - began)
            if row.answerable and highlights is not None:
                gold = {(e.document, e.page) for e in row.evidence if e.page}
                if gold:
                    on_gold.append(any((h.source, h.page) in gold for h in highlights))
                # only where the answer is written in the passages (many answers are counted or computed)
                passages = searched_passages(services, inputs, context)
                if answer_in(row.answer, [p.text for p in passages]):
                    has_answer.append(bool(answer_in(row.answer, [h.sentence for h in highlights])))
    ordered = sorted(seconds)
    return {
        "questions": len(seconds),
        "to_highlights_p50_s": round(statistics.median(seconds), 3),
        "to_highlights_p95_s": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3),
        "highlight_on_gold_page": round(sum(on_gold) / len(on_gold), 3) if on_gold else None,
        "gold_pages_rows": len(on_gold),
        "answer_in_highlight": round(sum(has_answer) / len(has_answer), 3) if has_answer else None,
        "short_answer_rows": len(has_answer),
    }


def ask_to_evidence(index: Path, question: str, documents: list[str], graph: str) -> float:
    """Seconds from starting `pagegraph ask` on a pseudo-terminal until it prints the evidence."""
    command = [str(Path(sys.executable).with_name("pagegraph")), "ask", question, "--index", str(index)]
    command += ["--graph", graph] + [part for d in documents for part in ("--document", d)]
    leader, follower = pty.openpty()
    began = time.perf_counter()
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    seen = b""
    try:
        while time.perf_counter() - began < 300:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
                if b"Evidence" in seen:
                    return time.perf_counter() - began
            if process.poll() is not None and not ready:
                break
        raise RuntimeError(f"no evidence printed: {seen.decode(errors='replace')[-500:]}")
    finally:
        process.kill()
        process.wait()
        os.close(leader)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index holding the mmlongbench dev documents")
    parser.add_argument("--rows", type=Path, default=REPO / "bench" / "answer_rows.txt")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--graph", default="auto")
    parser.add_argument("--ask-runs", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not DEV.exists():
        sys.exit(f"evaluation data not found at {DEV} (../shared is absent)")
    from pagegraph.eval.questions import load_questions, read_row_ids, select_rows

    rows = select_rows(load_questions(DEV), read_row_ids(args.rows), args.rows)[: args.limit]
    figures = in_process(args, rows)
    asked = [ask_to_evidence(args.index, r.question, r.documents, args.graph) for r in rows[: args.ask_runs]]
    figures["ask_to_evidence_p50_s"] = round(statistics.median(asked), 2)
    figures["ask_runs"] = len(asked)
    print(
        f"{args.graph}: question → highlights in process p50 {figures['to_highlights_p50_s']:.2f} s, "
        f"p95 {figures['to_highlights_p95_s']:.2f} s over {figures['questions']} questions; "
        f"`ask` → printed evidence p50 {figures['ask_to_evidence_p50_s']:.1f} s ({len(asked)} runs, start-up included)"
    )
    print(
        f"highlight on a gold page: {figures['highlight_on_gold_page']} of {figures['gold_pages_rows']} answerable rows; "
        f"gold answer inside a highlight: {figures['answer_in_highlight']} of {figures['short_answer_rows']} rows whose "
        "short answer is written in the passages read"
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"graph": args.graph, **figures}, indent=2))


if __name__ == "__main__":
    main()
