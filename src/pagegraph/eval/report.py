"""Reports of evaluation runs: JSON, a PNG of retrieval hit@k curves, a PNG comparing graphs' answers."""

from __future__ import annotations

import json
from pathlib import Path

from pagegraph.state.evaluation import EvalRun


def write_json(run: EvalRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run.model_dump(mode="json"), indent=2) + "\n")


def plot_hit_curves(run: EvalRun, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = run.config["ks"]
    # Page hits where the questions have page evidence; document hits for document-level sets.
    metric = "hit" if run.config.get("rows_with_page_evidence") else "doc_hit"
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name, metrics in run.summary.items():
        probe = f"{metric}@5"
        label = f"{name} ({probe} {metrics[probe]:.3f})" if metrics.get(probe) is not None else name
        axis.plot(ks, [metrics[f"{metric}@{k}"] for k in ks], marker="o", label=label)
    axis.set_xscale("log")
    axis.set_xticks(ks, [str(k) for k in ks])
    axis.set_ylim(0, 1)
    axis.set_xlabel("k (retrieved chunks)")
    axis.set_ylabel(
        "hit@k (a gold page among the top k)" if metric == "hit" else "doc_hit@k (the gold document among the top k)"
    )
    rows = run.config["rows_with_page_evidence"] if metric == "hit" else next(iter(run.summary.values()))["n"]
    axis.set_title(
        f"Retrieval, {run.config['scope']} scope, {run.config['index_params']['chunk_strategy']} chunks, n = {rows}"
    )
    axis.grid(alpha=0.3)
    axis.legend(loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


ANSWER_BARS = {
    "answer accuracy": "answer_accuracy",
    "citation page hit": "citation_page_hit",
    "abstain recall": "abstain_recall",
    "false abstain rate": "false_abstain_rate",
}


def plot_answer_comparison(run: EvalRun, path: Path) -> None:
    """Graphs side by side: quality shares as grouped bars on the left, median and p95 seconds on the right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    graphs = list(run.summary)
    figure, (quality, latency) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [2.2, 1]})
    width = 0.8 / max(len(graphs), 1)
    positions = np.arange(len(ANSWER_BARS))
    for number, name in enumerate(graphs):
        metrics = run.summary[name]
        values = [metrics[key] or 0.0 for key in ANSWER_BARS.values()]
        bars = quality.bar(positions + number * width, values, width, label=f"{name} (n = {metrics['n']})")
        quality.bar_label(bars, labels=[_short(metrics[key]) for key in ANSWER_BARS.values()], fontsize=7)
    quality.set_xticks(positions + width * (len(graphs) - 1) / 2, list(ANSWER_BARS), fontsize=8)
    quality.set_ylim(0, 1.2)
    quality.set_ylabel("share of rows")
    quality.legend(loc="upper center", ncol=len(graphs), fontsize=8)
    quality.grid(axis="y", alpha=0.3)
    seconds = [[(run.summary[g][key] or 0.0) / 1000 for g in graphs] for key in ("latency_ms_p50", "latency_ms_p95")]
    slots = np.arange(len(graphs))
    latency.bar(slots - 0.2, seconds[0], 0.4, label="p50")
    latency.bar(slots + 0.2, seconds[1], 0.4, label="p95")
    latency.set_xticks(slots, graphs, fontsize=8)
    latency.set_ylabel("seconds per question")
    latency.legend(fontsize=8)
    latency.grid(axis="y", alpha=0.3)
    config = run.config
    figure.suptitle(
        f"Answers, {config['scope']} scope, model {config['model_spec']}, {config['rows_done']} of "
        f"{config['rows_expected']} answers",
        fontsize=10,
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_reliability(run: EvalRun, path: Path) -> None:
    """A reliability diagram per graph: the accuracy of its answers against their confidence, in bins, beside the
    same for the token overlap shown before bands; a calibrated confidence lies on the diagonal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 5))
    axis.plot([0, 1], [0, 1], color="grey", linestyle=":", label="calibrated")
    for name, metrics in run.summary.items():
        for key, style in (("calibration", "-o"), ("overlap_calibration", "--s")):
            if key not in metrics:
                continue
            bins = [b for b in metrics[key]["reliability"] if b["n"]]
            label = f"{name}, {'confidence' if key == 'calibration' else 'token overlap'} (AURC {_short(metrics[key]['aurc'])})"
            axis.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], style, label=label)
            for b in bins:
                axis.annotate(
                    str(b["n"]), (b["confidence"], b["accuracy"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
                )
    axis.set_xlim(0, 1)
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("confidence (bin mean; numbers: answers in the bin)")
    axis.set_ylabel("share of the bin's answers that are right")
    axis.set_title(f"Reliability, {run.config['scope']} scope, model {run.config['model_spec']}", fontsize=10)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _short(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
