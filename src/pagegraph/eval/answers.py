"""Answer evaluation: every graph answers every question over the same index; answers, citations, abstention and
cost are scored per row and summed up per graph, overall and split by task type and text-friendliness."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable

import numpy as np

from pagegraph.config import Context
from pagegraph.errors import ModelUnavailableError
from pagegraph.eval.calibration import calibration_metrics
from pagegraph.eval.metrics import gold_for
from pagegraph.eval.scoring import score_answer
from pagegraph.graphs.builder import CompiledGraph
from pagegraph.nodes.pick import compose
from pagegraph.state.answering import Citation, Evidence, Pick, TraceRecord
from pagegraph.state.evaluation import EvalQuestion
from pagegraph.state.usage import UsageSummary

GOLD_SUFFIX = "+gold"  # a graph's name with this: its answer stage on the gold evidence pages (eval.gold)
SPLITS = ("task_type", "text_friendly")
_STAGE_INDEX = re.compile(r"\[\d+\]$")


def valid_citations(citations: list[Citation], evidence: list[Evidence]) -> int:
    """Citations whose chunks are all among the chunks of the evidence the graph retrieved."""
    retrieved = {(item.source, chunk_id) for item in evidence for chunk_id in item.chunk_ids}
    return sum(
        bool(citation.chunk_ids) and all((citation.source, c) in retrieved for c in citation.chunk_ids)
        for citation in citations
    )


def stage_latencies(trace: Iterable[TraceRecord]) -> dict[str, float]:
    """Milliseconds per stage; parallel tasks of one stage (map[0], map[1], ...) are added together."""
    totals: dict[str, float] = {}
    for record in trace:
        stage = _STAGE_INDEX.sub("", record.stage)
        totals[stage] = round(totals.get(stage, 0.0) + record.latency_ms, 1)
    return totals


def first_evidence_ms(trace: Iterable[TraceRecord]) -> float | None:
    """Milliseconds from the start of the run until its highlights were ready: the stage latencies in run order up
    to and including the highlight stage; None when the run showed no evidence."""
    elapsed = 0.0
    for record in trace:
        elapsed += record.latency_ms
        if record.stage == "highlight":
            return round(elapsed, 1)
    return None


def answer_row(
    question: EvalQuestion, graph: str, output: dict, latency_ms: float, page_counts: dict[str, int]
) -> dict:
    """One scored row: what the graph answered and cited, against the question's gold answer and pages."""
    gold = gold_for(question, page_counts)
    citations: list[Citation] = output["citations"]
    cited = {(c.source, page) for c in citations for page in range(c.start_page, c.end_page + 1)}
    score = score_answer(output["answer"], question.answer, question.answer_format, question.answerable)
    usage = output["usage"]
    signals = next((r.details for r in reversed(output["trace"]) if r.stage == "verify"), None)
    withheld = (signals or {}).get("withheld")
    held = score_answer(withheld, question.answer, question.answer_format, question.answerable) if withheld else None
    return {
        "id": question.id,
        "graph": graph,
        "question": question.question,
        "answerable": question.answerable,
        "task_type": question.task_type,
        "text_friendly": question.text_friendly,
        "answer_format": question.answer_format,
        "abstained": output["abstained"],
        "abstain_reason": output["abstain_reason"],
        "answer": output["answer"],
        "gold_answer": question.answer,
        "answer_kind": score.kind,
        "answer_score": score.score,
        "answer_f1": None if score.f1 is None else round(score.f1, 4),
        "cites_gold_page": bool(gold.pages & cited) if question.answerable and gold.pages else None,
        "citations": [c.label for c in citations],
        "valid_citations": valid_citations(citations, output["evidence"]),
        "confidence": output["confidence"],
        "band": output.get("band") or ("not_found" if output["abstained"] else "uncertain"),
        "value_check": value_check.status if (value_check := output.get("value_check")) else None,
        "low_confidence": output["low_confidence"],
        "confidence_signals": signals,
        # the answer the verifier turned into a refusal, scored: what was shown before bands
        "withheld": None
        if held is None
        else {
            "answer": withheld,
            "answer_score": held.score,
            "answer_f1": None if held.f1 is None else round(held.f1, 4),
        },
        "llm_calls": output["llm_calls"],
        "tokens": usage.prompt_tokens + usage.completion_tokens,
        "latency_ms": round(latency_ms, 1),
        "stage_ms": stage_latencies(output["trace"]),
        "first_evidence_ms": first_evidence_ms(output["trace"]) if output.get("highlights") else None,
        "abstain_signals": next((r.details for r in reversed(output["trace"]) if r.stage == "weigh"), None),
        "pick": pick_row(output.get("pick"), question),
        "error": None,
    }


def pick_row(pick: Pick | None, question: EvalQuestion) -> dict | None:
    """What the reader picked among how many candidates, how sure it was, and its runner-up, scored as an answer
    would be (to weigh how the pick's probability and its refusals should be read)."""
    if pick is None:
        return None
    second = pick.second()
    scored = (
        score_answer(compose(second), question.answer, question.answer_format, question.answerable) if second else None
    )
    return {
        "picked": [c.value for c in pick.chosen()],
        "probability": pick.probability,
        "from_logprobs": pick.from_logprobs,
        "candidates": len(pick.candidates),
        "runner_up": second.value if second else None,
        "runner_up_probability": pick.runner_up_probability,
        "runner_up_score": scored.score if scored else None,
    }


def failed_row(
    question: EvalQuestion, graph: str, error: Exception, latency_ms: float, page_counts: dict[str, int]
) -> dict:
    """A question the graph raised on: scored as an answer that says and cites nothing and does not abstain."""
    nothing = {
        "answer": "",
        "citations": [],
        "evidence": [],
        "abstained": False,
        "abstain_reason": None,
        "confidence": 0.0,
        "low_confidence": True,
        "llm_calls": 0,
        "usage": UsageSummary(),
        "trace": [],
    }
    return {
        **answer_row(question, graph, nothing, latency_ms, page_counts),
        "error": f"{type(error).__name__}: {error}",
    }


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def _share(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def core_metrics(rows: list[dict]) -> dict[str, float | int | None]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    abstained = [r for r in rows if r["abstained"]]
    citations = sum(len(r["citations"]) for r in rows)
    latencies = [r["latency_ms"] for r in rows]
    first_evidence = [r["first_evidence_ms"] for r in rows if r.get("first_evidence_ms") is not None]
    return {
        "answer_accuracy": _mean([r["answer_score"] for r in rows if r["answer_score"] is not None]),
        "answer_f1": _mean([r["answer_f1"] for r in rows if r["answer_f1"] is not None]),
        "citation_page_hit": _mean([float(r["cites_gold_page"]) for r in rows if r["cites_gold_page"] is not None]),
        "citation_validity": _share(sum(r["valid_citations"] for r in rows), citations),
        "abstain_recall": _share(sum(r["abstained"] for r in unanswerable), len(unanswerable)),
        "abstain_precision": _share(sum(not r["answerable"] for r in abstained), len(abstained)),
        "false_abstain_rate": _share(sum(r["abstained"] for r in answerable), len(answerable)),
        "llm_calls_mean": _mean([r["llm_calls"] for r in rows]),
        "tokens_mean": _mean([r["tokens"] for r in rows]),
        "latency_ms_p50": round(float(np.percentile(latencies, 50)), 1) if latencies else None,
        "latency_ms_p95": round(float(np.percentile(latencies, 95)), 1) if latencies else None,
        "first_evidence_ms_p50": round(float(np.percentile(first_evidence, 50)), 1) if first_evidence else None,
        "errors": sum(r["error"] is not None for r in rows),
        "n": len(rows),
    }


OVERLAP_TOP = 0.8


def overlap_baseline(row: dict) -> dict:
    """The row as the confidence shown before bands would have scored it: the share of the answer's words in its
    cited evidence, with OVERLAP_TOP and above as the top band. An answer the verifier turned into a refusal (it
    refused in its own words, or its confidence was too low: its trace records the overlap) was shown as an answer
    then, and is scored as the answer it was (`withheld`)."""
    signals = row.get("confidence_signals") or {}
    answered = not row["abstained"] or "overlap" in signals
    overlap = float(signals.get("overlap") or 0.0) if answered else 0.0
    band = "not_found" if not answered else "supported" if overlap >= OVERLAP_TOP else "uncertain"
    return {**row, **(row.get("withheld") or {}), "abstained": not answered, "confidence": overlap, "band": band}


def graph_metrics(rows: list[dict]) -> dict:
    """Overall metrics (with the confidence's calibration, and the same for the token-overlap confidence shown
    before bands), and the core metrics per task type and per text-friendliness (unlabelled rows: `none`)."""
    metrics: dict = core_metrics(rows)
    metrics["calibration"] = calibration_metrics(rows)
    metrics["overlap_calibration"] = calibration_metrics([overlap_baseline(row) for row in rows])
    for split in SPLITS:
        groups: dict[str, list[dict]] = {}
        for row in rows:
            value = row[split]
            groups.setdefault("none" if value is None else str(value).lower(), []).append(row)
        metrics[f"by_{split}"] = {name: core_metrics(group) for name, group in sorted(groups.items())}
    return metrics


def answer_summary(rows: list[dict], graphs: list[str]) -> dict[str, dict]:
    return {graph: graph_metrics([r for r in rows if r["graph"] == graph]) for graph in graphs}


Answerer = Callable[[EvalQuestion], dict | None]


def retrieval_answerer(graph: CompiledGraph, context: Context, scope: str) -> Answerer:
    """A graph answering a row as users run it: from what it retrieves (within the row's documents in document
    scope)."""

    def answer(question: EvalQuestion) -> dict:
        inputs: dict = {"question": question.question}
        if scope == "document" and question.documents:
            inputs["documents"] = question.documents
        return graph.invoke(inputs, context=context)

    return answer


def run_answer_eval(
    questions: list[EvalQuestion],
    answerers: dict[str, Answerer],
    page_counts: dict[str, int],
    rows: list[dict],
    on_row: Callable[[dict], None] | None = None,
) -> None:
    """Append a scored row to `rows` for each (question, answerer) not already there, question by question so that
    an interrupted run has compared them on the same questions; an answerer that returns None skips the row. A row
    whose model call failed as the model became unavailable (its process restarted after a crash, say) is answered
    again once; a model still unavailable stops the run (every later row would fail the same way); any other
    exception is kept on its row."""
    done = {(row["id"], row["graph"]) for row in rows}
    for question in questions:
        for name, answerer in answerers.items():
            if (question.id, name) in done:
                continue
            started = time.perf_counter()
            try:
                try:
                    output = answerer(question)
                except ModelUnavailableError:
                    started = time.perf_counter()
                    output = answerer(question)
            except ModelUnavailableError:
                raise
            except Exception as exc:  # noqa: BLE001 - one failing question must not end the run; the row says why
                row = failed_row(question, name, exc, (time.perf_counter() - started) * 1000, page_counts)
            else:
                if output is None:
                    continue
                row = answer_row(question, name, output, (time.perf_counter() - started) * 1000, page_counts)
            rows.append(row)
            if on_row:
                on_row(row)
