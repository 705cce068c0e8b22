"""Reports of evaluation runs: JSON and a PNG of hit@k curves."""

from __future__ import annotations

import json
from pathlib import Path

from pagegraph.state.records import EvalRun


def write_json(run: EvalRun, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "id": run.id,
        "created_at": run.created_at,
        "summary": run.summary,
        "per_question": run.per_question,
        "config": run.config,
    }
    path.write_text(json.dumps(body, indent=2) + "\n")


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
