"""`pagegraph eval`: retrieval and answer evaluation runs, stored in the index."""

from __future__ import annotations

import json
import uuid
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
    ingest_with_progress,
)
from pagegraph.config import Context, Settings, get_settings
from pagegraph.errors import ModelUnavailableError, PagegraphError
from pagegraph.eval.answers import (
    GOLD_SUFFIX,
    answer_summary,
    core_metrics,
    retrieval_answerer,
    run_answer_eval,
)
from pagegraph.eval.calibration import BANDS
from pagegraph.eval.gold import GoldEvidenceReader
from pagegraph.eval.metrics import gold_for
from pagegraph.eval.questions import load_questions, read_row_ids, select_rows
from pagegraph.eval.report import plot_answer_comparison, plot_hit_curves, plot_reliability, write_json
from pagegraph.eval.retrieval import RETRIEVERS, TREE_RETRIEVERS, RetrievalEvalConfig, run_retrieval_eval
from pagegraph.indexing.index import open_index, open_store
from pagegraph.state.evaluation import EvalQuestion, EvalRun

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
        typer.Option(help=f"--mode answer: {' | '.join(GRAPH_NAMES)}; repeatable (default: rag)"),
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
        typer.Option(help="write the run as JSON [--mode answer default: INDEX/eval-runs/ID.json, for --resume]"),
    ] = None,
    plot: Annotated[Optional[Path], typer.Option(help="write a PNG comparing the retrievers or graphs")] = None,
    resume: Annotated[
        Optional[Path],
        typer.Option(
            help="--mode answer: continue the run in this JSON report (same questions; --graph may add graphs)"
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
    """Run the graphs question by question; Ctrl-C or an unreachable model stops the run with the finished rows
    kept in a partial report that --resume continues."""
    from pagegraph import build_graph
    from pagegraph.llm.factory import resolve_spec
    from pagegraph.services import Services

    finished: list[dict] = []
    run_id = uuid.uuid4().hex[:12]
    if resume is not None:
        previous = _read_report(resume)
        if previous.mode != "answer":
            raise PagegraphError(f"--resume {resume}: a {previous.mode} run, not an answer run")
        # --graph may add graphs to a run (they answer the same questions); it cannot drop any
        missing = [name for name in previous.config["graphs"] if graphs and name not in graphs]
        if missing:
            raise PagegraphError(f"--resume {resume}: that run also compares {', '.join(missing)}; name them too")
        graphs = [*previous.config["graphs"], *(g for g in graphs if g not in previous.config["graphs"])]
        model, scope = previous.config["model"], previous.config["scope"]
        finished, run_id = list(previous.per_question), previous.id
    graphs = list(dict.fromkeys(graphs or ["rag"]))
    unknown = [name for name in graphs if name.removesuffix(GOLD_SUFFIX) not in GRAPH_NAMES]
    if unknown:
        raise PagegraphError(f"--graph {unknown[0]!r}: choose from {', '.join(GRAPH_NAMES)}")
    spec = resolve_spec(model, settings)
    config = {
        "graphs": graphs,
        "model": model,
        "model_spec": spec,
        "scope": scope,
        "questions_file": str(questions_path),
        "questions": len(rows),
        "index": str(folder),
    }
    report = out or folder / "eval-runs" / f"{run_id}.json"
    stopped = None
    _ingest_docs(folder, settings, docs)
    with open_index(folder, settings) as opened:
        config["index_params"] = opened.params.model_dump()
        services = Services(settings, index=opened)
        context = Context(index=str(folder), model=model)
        page_counts = {doc.name: doc.n_pages for doc in opened.documents()}
        answerers = {
            name: GoldEvidenceReader(name.removesuffix(GOLD_SUFFIX), services, opened, context, page_counts)
            if name.endswith(GOLD_SUFFIX)
            else retrieval_answerer(build_graph(name, services=services), context, scope)
            for name in graphs
        }
        console.print(f"run {run_id}: {len(rows)} questions × {', '.join(graphs)} with {spec}; report {report}")
        gold_rows = sum(bool(gold_for(r, page_counts).pages) and r.answerable for r in rows)
        total = sum(gold_rows if name.endswith(GOLD_SUFFIX) else len(rows) for name in graphs)

        def snapshot(stopped: str | None) -> EvalRun:
            return EvalRun(
                id=run_id,
                mode="answer",
                config={**config, "stopped": stopped, "rows_done": len(finished), "rows_expected": total},
                summary=answer_summary(finished, graphs),
                per_question=finished,
            )

        with _progress() as progress:
            task = progress.add_task("answers", total=total, completed=len(finished), metrics="")

            def on_row(row: dict) -> None:
                # saved after every answer, so that even a killed run leaves a report to --resume
                write_json(snapshot("running"), report)
                progress.update(task, advance=1, metrics=_running_metrics(finished, graphs))
                progress.console.print(_row_line(row), highlight=False)

            try:
                run_answer_eval(rows, answerers, page_counts, finished, on_row)
            except KeyboardInterrupt:
                stopped = "interrupted"
            except ModelUnavailableError as exc:
                stopped = f"model unavailable: {exc}"
            finally:
                services.close()
        run = snapshot(stopped)
    _save_run(folder, settings, run)
    write_json(run, report)
    if stopped:
        err.print(
            f"[yellow]stopped ({stopped}) after {len(finished)} of {total} answers; partial report {report}; "
            f"continue with: pagegraph eval {questions_path} --mode answer --index {folder} --resume {report}"
            "[/yellow]",
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
    store = open_store(folder, settings)
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


def _read_report(path: Path) -> EvalRun:
    try:
        return EvalRun.model_validate(json.loads(path.read_text()))
    except FileNotFoundError:
        raise PagegraphError(f"{path}: no such report") from None
    except (json.JSONDecodeError, ValueError) as exc:
        raise PagegraphError(f"{path}: not an evaluation report ({exc})") from None


def _stored_runs(folder: Path, settings: Settings, show: str | None, out: Path | None, plot: Path | None) -> None:
    store = open_store(folder, settings)
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
