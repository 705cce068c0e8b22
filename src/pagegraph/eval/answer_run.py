"""An answer evaluation run, apart from how it is shown: which graphs it compares (and, resuming a stopped run, what
it already answered), the answerers over one index, the report as it grows, and how it stops. `pagegraph eval
--mode answer` drives it with a progress bar; a killed or interrupted run leaves a report that `--resume` goes on
from."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pagegraph import GRAPH_NAMES, GRAPHS
from pagegraph.config import Context, Settings
from pagegraph.errors import ModelUnavailableError, PagegraphError
from pagegraph.eval.answers import GOLD_SUFFIX, answer_summary, retrieval_answerer, run_answer_eval
from pagegraph.eval.gold import GoldEvidenceReader
from pagegraph.eval.metrics import gold_for
from pagegraph.eval.report import write_json
from pagegraph.services import Services
from pagegraph.state.evaluation import EvalQuestion, EvalRun
from pagegraph.store.index import Index

VARIANT_MARK = "@"  # `auto@picking.use=false`: a graph run under other knobs, beside the graph as it is


def graph_variant(name: str, context: Context) -> tuple[str, Context]:
    """The graph a compared name runs, and the context it runs under: `auto` is the graph `auto`; a name with
    knobs after `@` (`auto@picking.use=false,reading.highlights=5`) runs it with those knobs changed, each value
    read as JSON where it parses (false, 5, 0.4) and as text otherwise."""
    graph, _, changes = name.partition(VARIANT_MARK)
    if not changes:
        return graph, context
    groups: dict[str, dict] = {}
    for change in changes.split(","):
        key, equals, text = change.partition("=")
        group, dot, knob = key.strip().partition(".")
        if not equals or not dot or group not in Context.model_fields:
            raise PagegraphError(f"--graph {name!r}: write knobs as GROUP.KNOB=VALUE (e.g. picking.use=false)")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        groups.setdefault(group, {})[knob] = value
    try:
        return graph, context.with_changes(**groups)
    except ValueError as exc:
        raise PagegraphError(f"--graph {name!r}: {exc}") from None


def read_report(path: Path) -> EvalRun:
    try:
        return EvalRun.model_validate(json.loads(path.read_text()))
    except FileNotFoundError:
        raise PagegraphError(f"{path}: no such report") from None
    except (json.JSONDecodeError, ValueError) as exc:
        raise PagegraphError(f"{path}: not an evaluation report ({exc})") from None


@dataclass
class AnswerRunPlan:
    """What an answer run compares, and what it has answered so far (resuming)."""

    graphs: list[str]
    model: str | None
    scope: str
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    finished: list[dict] = field(default_factory=list)

    @classmethod
    def new_or_resumed(cls, graphs: list[str], model: str | None, scope: str, resume: Path | None) -> AnswerRunPlan:
        """A new run of `graphs` (default rag), or the run the report `resume` holds: its graphs, model, scope and
        finished rows, plus any graph `graphs` adds (one it compares cannot be dropped)."""
        plan = cls(graphs, model, scope)
        if resume is not None:
            previous = read_report(resume)
            if previous.mode != "answer":
                raise PagegraphError(f"--resume {resume}: a {previous.mode} run, not an answer run")
            missing = [name for name in previous.config["graphs"] if graphs and name not in graphs]
            if missing:
                raise PagegraphError(f"--resume {resume}: that run also compares {', '.join(missing)}; name them too")
            plan = cls(
                [*previous.config["graphs"], *(g for g in graphs if g not in previous.config["graphs"])],
                previous.config["model"],
                previous.config["scope"],
                previous.id,
                list(previous.per_question),
            )
        plan.graphs = list(dict.fromkeys(plan.graphs or ["rag"]))
        unknown = [
            name for name in plan.graphs if name.removesuffix(GOLD_SUFFIX).partition(VARIANT_MARK)[0] not in GRAPHS
        ]
        if unknown:
            raise PagegraphError(f"--graph {unknown[0]!r}: choose from {', '.join(GRAPH_NAMES)}")
        return plan


class AnswerRun:
    """The plan's graphs answering `rows` over an open index; the report is rewritten after every answer."""

    def __init__(
        self,
        plan: AnswerRunPlan,
        index: Index,
        settings: Settings,
        rows: list[EvalQuestion],
        config: dict,
        report: Path,
    ) -> None:
        self.plan, self.rows, self.report = plan, rows, report
        self.config = {**config, "index_params": index.params.model_dump()}
        self.services = Services(settings, index=index)
        context = Context(index=str(index.folder), model=plan.model)
        self.page_counts = {doc.name: doc.n_pages for doc in index.documents()}
        self.answerers = {}
        for name in plan.graphs:
            graph, variant = graph_variant(name.removesuffix(GOLD_SUFFIX), context)
            self.answerers[name] = (
                GoldEvidenceReader(graph, self.services, index, variant, self.page_counts)
                if name.endswith(GOLD_SUFFIX)
                else retrieval_answerer(GRAPHS[graph].build(self.services), variant, plan.scope)
            )
        gold_rows = sum(bool(gold_for(r, self.page_counts).pages) and r.answerable for r in rows)
        self.total = sum(gold_rows if name.endswith(GOLD_SUFFIX) else len(rows) for name in plan.graphs)

    def snapshot(self, stopped: str | None) -> EvalRun:
        finished = self.plan.finished
        return EvalRun(
            id=self.plan.run_id,
            mode="answer",
            config={**self.config, "stopped": stopped, "rows_done": len(finished), "rows_expected": self.total},
            summary=answer_summary(finished, self.plan.graphs),
            per_question=finished,
        )

    def run(self, on_row: Callable[[dict], None]) -> EvalRun:
        """Answer every row not answered yet; Ctrl-C or an unreachable model stops the run, the finished rows kept
        (`config["stopped"]` says why)."""
        stopped = None

        def answered(row: dict) -> None:
            write_json(self.snapshot("running"), self.report)  # even a killed run leaves a report to --resume
            on_row(row)

        try:
            run_answer_eval(self.rows, self.answerers, self.page_counts, self.plan.finished, answered)
        except KeyboardInterrupt:
            stopped = "interrupted"
        except ModelUnavailableError as exc:
            stopped = f"model unavailable: {exc}"
        finally:
            self.services.close()
        return self.snapshot(stopped)
