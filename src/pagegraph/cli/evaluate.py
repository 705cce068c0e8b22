"""`pagegraph eval`: retrieval and answer evaluation runs, stored in the index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich import box
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pagegraph import GRAPH_NAMES
from pagegraph.cli.common import (
    DatabaseOption,
    IndexOption,
    app,
    console,
    err,
    fail,
    index_folder,
)
from pagegraph.cli.ingest_view import ingest_with_progress
from pagegraph.config import Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.eval.answers import (
    GOLD_SUFFIX,
    core_metrics,
)
from pagegraph.eval.calibration import BANDS
from pagegraph.eval.questions import load_questions, read_row_ids, select_rows
from pagegraph.eval.report import plot_answer_comparison, plot_hit_curves, plot_reliability, write_json
from pagegraph.eval.retrieval import RETRIEVERS, TREE_RETRIEVERS, RetrievalEvalConfig, run_retrieval_eval
from pagegraph.state.evaluation import EvalQuestion, EvalRun
from pagegraph.store.index import open_index

ANSWER_METRICS = (
    "answer_accuracy",
    "answer_f1",
    "citation_page_hit",
    "citation_validity",
    "abstain_recall",
    "abstain_precision",
    "false_abstain_rate",
    "llm_calls_mean",
    "tokens_mean",
    "latency_ms_p50",
    "latency_ms_p95",
    "first_evidence_ms_p50",
)
SPLIT_METRICS = ("answer_accuracy", "citation_page_hit", "abstain_recall")
COMPARED_RETRIEVERS = ("bm25", "dense", "hybrid", "ensemble")  # --mode retrieval without --retriever


@app.command("eval")
def evaluate(
    questions: Annotated[
        Optional[Path], typer.Argument(help="question set (JSONL rows: id, question, answerable, documents, ...)")
    ] = None,
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    docs: Annotated[
        Optional[Path], typer.Option(help="folder of the documents; ingested into --index when needed")
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="retrieval: rank chunks and score pages and documents; answer: run graphs and score their answers, "
            "citations and abstentions"
        ),
    ] = "retrieval",
    retriever: Annotated[
        Optional[list[str]],
        typer.Option(
            help=f"--mode retrieval: {' | '.join(RETRIEVERS)}; repeatable (default: {', '.join(COMPARED_RETRIEVERS)})"
        ),
    ] = None,
    graph: Annotated[
        Optional[list[str]],
        typer.Option(
            help=f"--mode answer: {' | '.join(GRAPH_NAMES)}; repeatable (default: rag); GRAPH@GROUP.KNOB=VALUE,... "
            "runs a graph under other knobs beside it (auto@picking.use=false)"
        ),
    ] = None,
    model: Annotated[Optional[str], typer.Option(help="--mode answer: model spec (default: $PAGEGRAPH_MODEL)")] = None,
    evidence: Annotated[
        str,
        typer.Option(
            help="--mode answer: retrieved (as users run the graphs), gold (each graph's answer stage on the row's "
            "gold pages, reported as GRAPH+gold: the reader's ceiling), or both side by side"
        ),
    ] = "retrieved",
    scope: Annotated[
        str, typer.Option(help="document: search only each question's documents; corpus: everything")
    ] = "document",
    k: Annotated[str, typer.Option(help="cut-offs for hit@k, recall@k, doc_hit@k")] = "1,3,5,10,20",
    window: Annotated[int, typer.Option(help="neighbours on each side for hybrid+window")] = 1,
    limit: Annotated[Optional[int], typer.Option(help="only the first N questions")] = None,
    rows_file: Annotated[
        Optional[Path],
        typer.Option(
            "--rows", help="only the rows whose ids this file lists, one per line (e.g. bench/answer_rows.txt)"
        ),
    ] = None,
    out: Annotated[
        Optional[Path],
        typer.Option(
            help="write the run as JSON [--mode answer default: the --resume report, else INDEX/eval-runs/ID.json]"
        ),
    ] = None,
    plot: Annotated[Optional[Path], typer.Option(help="write a PNG comparing the retrievers or graphs")] = None,
    resume: Annotated[
        Optional[Path],
        typer.Option(
            help="--mode answer: continue the run in this JSON report and write it back (same questions; --graph may add graphs)"
        ),
    ] = None,
    list_runs: Annotated[bool, typer.Option("--list", help="list the runs stored in the index")] = False,
    show: Annotated[
        Optional[str], typer.Option(help="print a stored run (its id or a unique prefix); with --out/--plot, write it")
    ] = None,
) -> None:
    """Measure retrievers (--mode retrieval) or whole graphs (--mode answer) on a question set, side by side over
    one index; every run is stored in the index (`--list`, `--show ID`)."""
    settings = get_settings()
    folder = index_folder(index, settings)
    try:
        if list_runs or show:
            _stored_runs(folder, settings, show, out, plot)
            return
        if questions is None:
            raise PagegraphError("name a question file (or use --list, or --show ID)")
        if scope not in ("document", "corpus"):
            raise PagegraphError(f"--scope {scope!r}: choose document or corpus")
        if mode == "retrieval":
            if graph or resume:
                raise PagegraphError("--graph and --resume belong to --mode answer")
            rows = _chosen_rows(questions, rows_file, limit)
            run = _retrieval_run(folder, settings, rows, docs, retriever, model, scope, k, window)
        elif mode == "answer":
            if retriever:
                raise PagegraphError("--retriever belongs to --mode retrieval; compare graphs with --graph")
            rows = _chosen_rows(questions, rows_file, limit)
            if evidence not in ("retrieved", "gold", "both"):
                raise PagegraphError(f"--evidence {evidence!r}: choose retrieved, gold or both")
            names = graph or []
            if evidence != "retrieved":
                gold = [f"{name}{GOLD_SUFFIX}" for name in names or ["rag"]]
                names = gold if evidence == "gold" else [n for pair in zip(names or ["rag"], gold) for n in pair]
            run = _answer_run(folder, settings, questions, rows, docs, names, model, scope, resume, out)
        else:
            raise PagegraphError(f"--mode {mode!r}: choose retrieval or answer")
    except (PagegraphError, ValueError) as exc:
        raise fail(str(exc)) from None
    _print_run(run)
    _write_reports(run, out, plot)
    if run.config.get("stopped"):
        raise typer.Exit(130 if run.config["stopped"] == "interrupted" else 1)


def _chosen_rows(questions: Path, rows_file: Path | None, limit: int | None) -> list[EvalQuestion]:
    rows = load_questions(questions)
    if rows_file is not None:
        rows = select_rows(rows, read_row_ids(rows_file), rows_file)
    return rows[:limit]


def _retrieval_run(
    folder: Path,
    settings: Settings,
    rows: list[EvalQuestion],
    docs: Path | None,
    retriever: list[str] | None,
    model: str | None,
    scope: str,
    k: str,
    window: int,
) -> EvalRun:
    names = retriever or list(COMPARED_RETRIEVERS)
    unknown = [name for name in names if name not in RETRIEVERS]
    if unknown:
        raise PagegraphError(f"--retriever {unknown[0]!r}: choose from {', '.join(RETRIEVERS)}")
    judge = None
    if any(name in TREE_RETRIEVERS for name in names):
        from pagegraph.llm.factory import get_chat_model

        judge = get_chat_model(model, settings=settings)
    elif model:
        raise PagegraphError("--model in --mode retrieval is the judge of the tree retrievers (tree, hybrid+tree)")
    try:
        ks = sorted({int(part) for part in k.split(",") if part.strip()})
    except ValueError:
        raise PagegraphError(f"--k {k!r}: expected numbers separated by commas, e.g. 1,3,5,10") from None
    if not ks or ks[0] < 1:
        raise PagegraphError("--k: cut-offs must be at least 1")
    _ingest_docs(folder, settings, docs)
    with open_index(folder, settings) as opened:
        config = RetrievalEvalConfig(
            retrievers=list(dict.fromkeys(names)),
            scope=scope,
            ks=tuple(ks),
            window=window,
            judge=judge,
        )
        with _progress() as progress:
            task = progress.add_task("questions", total=len(rows), metrics="")
            run = run_retrieval_eval(opened, rows, config, on_question=lambda n: progress.update(task, completed=n))
    _save_run(folder, settings, run)
    return run


def _answer_run(
    folder: Path,
    settings: Settings,
    questions_path: Path,
    rows: list[EvalQuestion],
    docs: Path | None,
    graphs: list[str],
    model: str | None,
    scope: str,
    resume: Path | None,
    out: Path | None,
) -> EvalRun:
    from pagegraph.eval.answer_run import AnswerRun, AnswerRunPlan
    from pagegraph.llm.factory import resolve_spec

    plan = AnswerRunPlan.new_or_resumed(graphs, model, scope, resume)
    spec = resolve_spec(plan.model, settings)
    config = {
        "graphs": plan.graphs,
        "model": plan.model,
        "model_spec": spec,
        "scope": plan.scope,
        "questions_file": str(questions_path),
        "questions": len(rows),
        "index": str(folder),
    }
    report = out or resume or folder / "eval-runs" / f"{plan.run_id}.json"
    _ingest_docs(folder, settings, docs)
    with open_index(folder, settings) as opened:
        answering = AnswerRun(plan, opened, settings, rows, config, report)
        console.print(
            f"run {plan.run_id}: {len(rows)} questions × {', '.join(plan.graphs)} with {spec}; report {report}"
        )
        with _progress() as progress:
            task = progress.add_task("answers", total=answering.total, completed=len(plan.finished), metrics="")

            def on_row(row: dict) -> None:
                progress.update(task, advance=1, metrics=_running_metrics(plan.finished, plan.graphs))
                progress.console.print(_row_line(row), highlight=False)

            run = answering.run(on_row)
    _save_run(folder, settings, run)
    write_json(run, report)
    if stopped := run.config["stopped"]:
        err.print(
            f"[yellow]stopped ({stopped}) after {len(plan.finished)} of {answering.total} answers; partial report "
            f"{report}; continue with: pagegraph eval {questions_path} --mode answer --index {folder} --resume "
            f"{report}[/yellow]",
            highlight=False,
        )
    return run


def _row_line(row: dict) -> str:
    if row["error"]:
        outcome = f"[yellow]failed: {escape(row['error'])}[/yellow]"
    elif row["abstained"]:
        outcome = "abstained" + ("" if not row["answerable"] else " [yellow](answerable)[/yellow]")
    else:
        scored = "" if row["answer_score"] is None else f", answer score {row['answer_score']:.2f}"
        cited = {True: ", gold page cited", False: ", no gold page cited", None: ""}[row["cites_gold_page"]]
        outcome = "answered" + scored + cited + ("" if row["answerable"] else " [yellow](unanswerable)[/yellow]")
    return f"{row['graph']} {row['id']}: {outcome}; {row['llm_calls']} calls, {row['latency_ms'] / 1000:.1f} s"


def _running_metrics(rows: list[dict], graphs: list[str]) -> str:
    parts = []
    for name in graphs:
        metrics = core_metrics([r for r in rows if r["graph"] == name])
        if metrics["n"]:
            parts.append(
                f"{name}: acc {_cell(metrics['answer_accuracy'])} hit {_cell(metrics['citation_page_hit'])} "
                f"abst {_cell(metrics['abstain_recall'])}"
            )
    return "; ".join(parts)


def _ingest_docs(folder: Path, settings: Settings, docs: Path | None) -> None:
    """--docs into the index first; the evaluation itself reads the index without holding its writer lock, so
    that ingests and other evaluations can run beside a long one."""
    if docs is None:
        return
    with open_index(folder, settings, write=True) as opened:
        summary = ingest_with_progress(opened, [docs])
    if summary.failed:
        err.print(f"[yellow]{len(summary.failed)} documents failed to ingest; their questions score 0[/yellow]")


def _save_run(folder: Path, settings: Settings, run: EvalRun) -> None:
    store = open_index(folder, settings, records_only=True)
    try:
        store.save_eval_run(run)
    finally:
        store.close()


def _progress() -> Progress:
    return Progress(
        TextColumn("questions"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[metrics]}"),
        console=console,
        transient=True,
    )


def _stored_runs(folder: Path, settings: Settings, show: str | None, out: Path | None, plot: Path | None) -> None:
    store = open_index(folder, settings, records_only=True)
    try:
        runs = store.eval_runs()
    finally:
        store.close()
    if show is None:
        table = Table("id", "created", "mode", "compared", "questions", "state", box=box.SIMPLE_HEAD, pad_edge=False)
        for run in runs:
            compared = run.config.get("graphs") or run.config.get("retrievers") or []
            state = f"stopped: {run.config['stopped']}" if run.config.get("stopped") else "complete"
            table.add_row(
                run.id, run.created_at[:19], run.mode, ", ".join(compared), str(run.config["questions"]), state
            )
        console.print(table if runs else f"no evaluation runs stored in {folder}")
        return
    matches = [run for run in runs if run.id.startswith(show)]
    if len(matches) != 1:
        raise PagegraphError(f"--show {show!r}: {'no run' if not matches else 'several runs'} with that id in {folder}")
    _print_run(matches[0])
    _write_reports(matches[0], out, plot)


def _cell(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _print_run(run: EvalRun) -> None:
    if run.mode == "retrieval":
        _print_retrieval(run)
    else:
        _print_answers(run)


def _print_retrieval(run: EvalRun) -> None:
    ks = run.config["ks"]
    probe = 5 if 5 in ks else ks[-1]
    table = Table(
        "retriever",
        *(f"hit@{x}" for x in ks),
        "mrr",
        f"doc@{probe}",
        "p50 ms",
        "n",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.columns[0].no_wrap = True
    for name, metrics in run.summary.items():
        table.add_row(
            name,
            *(_cell(metrics[f"hit@{x}"]) for x in ks),
            _cell(metrics["mrr"]),
            _cell(metrics[f"doc_hit@{probe}"]),
            f"{metrics['latency_ms_p50']:.1f}",
            str(metrics["n"]),
        )
    console.print(
        f"run {run.id}: {run.config['questions']} questions, {run.config['scope']} scope, "
        f"{run.config['dropped_gold_pages']} gold pages dropped (not pages of the document)",
        highlight=False,
    )
    console.print(table)


def _print_answers(run: EvalRun) -> None:
    """One column per graph: the overall metrics, then accuracy / citation hit / abstain recall per split."""
    config, graphs = run.config, list(run.summary)
    console.print(
        f"run {run.id}: {config['questions']} questions, {config['scope']} scope, model {config['model_spec']}; "
        f"{config['rows_done']} of {config['rows_expected']} answers",
        highlight=False,
    )
    table = Table("metric", *graphs, box=box.SIMPLE_HEAD, pad_edge=False)
    for key in ANSWER_METRICS:
        digits = 0 if key.endswith("_ms_p50") or key.endswith("_ms_p95") else 1 if key.endswith("_mean") else 3
        table.add_row(key, *(_cell(run.summary[g].get(key), digits) for g in graphs))
    table.add_row("n (errors)", *(f"{run.summary[g]['n']} ({run.summary[g]['errors']})" for g in graphs))
    console.print(table)
    _print_calibration(run, graphs)
    for split in ("task_type", "text_friendly"):
        table = Table(
            split, *graphs, box=box.SIMPLE_HEAD, pad_edge=False, caption="accuracy / cite hit / abstain recall (n)"
        )
        values = sorted({value for g in graphs for value in run.summary[g][f"by_{split}"]})
        for value in values:
            parts = [run.summary[g][f"by_{split}"].get(value) for g in graphs]
            table.add_row(value, *(_split_cell(part) for part in parts))
        console.print(table)


def _print_calibration(run: EvalRun, graphs: list[str]) -> None:
    """Per graph, the confidence's calibration beside that of the token overlap shown before bands."""
    columns = [(g, key) for g in graphs for key in ("calibration", "overlap_calibration") if key in run.summary[g]]
    if not columns:
        return  # a run stored before calibration was measured
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption="band: precision (share of rows)")
    table.add_column("calibration", no_wrap=True)
    for g, key in columns:
        table.add_column(f"{g}{' (overlap ≥ 0.8)' if key == 'overlap_calibration' else ''}")
    parts = [run.summary[g][key] for g, key in columns]
    table.add_row("confident_wrong_rate", *(_cell(p["confident_wrong_rate"]) for p in parts))
    for band in BANDS:
        table.add_row(
            band,
            *(f"{_cell(p['band_precision'][band], 2)} ({_cell(p['band_share'][band], 2)})" for p in parts),
        )
    table.add_row("coverage", *(_cell(p["coverage"]) for p in parts))
    table.add_row("aurc", *(_cell(p["aurc"]) for p in parts))
    table.add_row("best_aurc", *(_cell(p.get("best_aurc")) for p in parts))
    console.print(table)


def _split_cell(metrics: dict | None) -> str:
    if metrics is None:
        return ""
    shares = " / ".join(_cell(metrics[key], 2) for key in SPLIT_METRICS)
    return f"{shares} ({metrics['n']})"


def _write_reports(run: EvalRun, out: Path | None, plot: Path | None) -> None:
    if out:
        write_json(run, out)
        console.print(f"wrote {out}")
    if plot:
        (plot_hit_curves if run.mode == "retrieval" else plot_answer_comparison)(run, plot)
        console.print(f"wrote {plot}")
        if run.mode == "answer" and any("calibration" in metrics for metrics in run.summary.values()):
            reliability = plot.with_name(f"{plot.stem}-reliability{plot.suffix}")
            plot_reliability(run, reliability)
            console.print(f"wrote {reliability}")
