"""Choose the answer confidence's weights and the `supported` band's threshold on the rows of answer evaluations,
and show what they give on other runs.

Each answered row of `pagegraph eval --mode answer` keeps the signals `verify` computed its confidence from (the
answer call's token probabilities over the reply and over the answer's own tokens, the evidence overlap, the value
check). This fits a logistic regression of
"the row is right" on them (L2-regularised, Newton's method; a weight of the wrong sign is dropped), then picks the lowest `confidence.supported` at which
the top band's wrong share on the fitting rows stays at most `--target` (none: 1.0, nothing is supported), and rescores every run with
`pagegraph.nodes.confidence.answer_confidence` itself (what the graph computes with those knobs, without a model
call). Fit on one set of rows, check on others:

    .venv/bin/python bench/confidence.py --fit bench/results/answers-calibration-rows-confidence.json \\
        --check bench/results/answers-40-confidence.json --check bench/results/answers-confidence-rows.json \\
        [--target 0.1] [--out bench/results/confidence-fit.json]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

# Context.confidence's weights, in the order of features()
FEATURES = ("probability_weight", "answer_probability_weight", "overlap_weight", "supported_value",
            "unsupported_value")  # fmt: skip


def answered(path: Path, graph: str) -> list[dict]:
    rows = json.loads(path.read_text())["per_question"]
    return [r for r in rows if r["graph"] == graph]


def value_check(row: dict):
    """The row's value check; an answer citing nothing has its values in no cited sentence (rows run before that
    rule was made say `supported` for values found anywhere in the evidence: the rule is applied here)."""
    from pagegraph.state.answering import ValueCheck

    check = ValueCheck(**row["confidence_signals"]["value_check"])
    if check.status == "supported" and not row["citations"]:
        check = check.model_copy(update={"status": "unsupported", "missing": check.values})
    return check


def token_probability(row: dict):
    """The row's token probabilities (rows run before the answer's own tokens were measured hold one number)."""
    from pagegraph.state.answering import DraftProbability

    recorded = row["confidence_signals"]["token_probability"]
    if recorded is None:
        return None
    return DraftProbability(reply=recorded) if isinstance(recorded, float) else DraftProbability(**recorded)


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def features(row: dict, no_logprobs: float) -> list[float] | None:
    signals = row.get("confidence_signals") or {}
    if row["abstained"] or "value_check" not in signals:
        return None
    probabilities = token_probability(row)
    reply = no_logprobs if probabilities is None else probabilities.reply
    answer = reply if probabilities is None or probabilities.answer_lowest is None else probabilities.answer_lowest
    status = value_check(row).status
    return [
        _logit(reply),
        _logit(answer),
        signals["overlap"],
        status == "supported",
        status == "unsupported",
    ]


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[float, np.ndarray]:
    """Logistic regression, intercept unpenalised."""
    design = np.hstack([np.ones((len(x), 1)), x])
    weights = np.zeros(design.shape[1])
    penalty = np.diag([0.0] + [l2] * x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + penalty @ weights
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(weights[0]), weights[1:]


def rescored(rows: list[dict], context) -> list[dict]:
    from pagegraph.nodes.confidence import answer_confidence

    out = []
    for row in rows:
        signals = row.get("confidence_signals") or {}
        if row["abstained"] or "value_check" not in signals:
            out.append(row)
            continue
        confidence = answer_confidence(token_probability(row), signals["overlap"], value_check(row), context)
        out.append({**row, "confidence": confidence.value, "band": confidence.band})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", type=Path, action="append", required=True, help="eval reports to fit on")
    parser.add_argument("--check", type=Path, action="append", default=[], help="eval reports to check on")
    parser.add_argument("--graph", default="extract")
    parser.add_argument("--target", type=float, default=0.1, help="most wrong share in the top band on the fit rows")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from pagegraph.config import Context
    from pagegraph.eval.answers import overlap_baseline
    from pagegraph.eval.calibration import calibration_metrics, is_right

    base = Context()
    fit_rows = [row for path in args.fit for row in answered(path, args.graph)]
    usable = [(f, is_right(r)) for r in fit_rows if (f := features(r, base.confidence.no_logprobs)) is not None]
    x = np.array([f for f, _ in usable], dtype=float)
    y = np.array([float(right) for _, right in usable])
    # signs the signals must have (more probability, more overlap, a supported value: more likely right; a missing
    # value: less): a weight a small sample fits the other way is dropped (0) and the rest refitted
    signs = np.array([1.0, 1.0, 1.0, 1.0, -1.0])
    kept = np.ones(len(FEATURES), dtype=bool)
    while True:
        bias, fitted = fit(x[:, kept], y, args.l2)
        weights = np.zeros(len(FEATURES))
        weights[kept] = fitted
        wrong = kept & (weights * signs < 0)
        if not wrong.any():
            break
        kept &= ~wrong
    knobs = {"bias": round(bias, 3), **{name: round(float(w), 3) for name, w in zip(FEATURES, weights)}}
    context = base.with_changes(confidence=knobs)
    scored = rescored(fit_rows, context)
    candidates = sorted({r["confidence"] for r in scored if not r["abstained"]})
    threshold = 1.0
    for value in candidates:
        trial = context.with_changes(confidence={"supported": value})
        top = [r for r in rescored(fit_rows, trial) if r.get("band") == "supported"]
        if top and sum(not is_right(r) for r in top) / len(top) <= args.target:
            threshold = value
            break
    knobs["supported"] = round(threshold, 3)
    context = base.with_changes(confidence=knobs)
    report = {"fit": [str(p) for p in args.fit], "rows": len(usable), "right": int(y.sum()), "knobs": knobs, "runs": {}}
    print(f"fitted on {len(usable)} answered rows ({int(y.sum())} right): {knobs}")
    for path in [*args.fit, *args.check]:
        rows = answered(path, args.graph)
        now = calibration_metrics(rescored(rows, context))
        before = calibration_metrics([overlap_baseline(r) for r in rows])
        report["runs"][str(path)] = {"rescored": now, "overlap": before}
        print(f"\n{path} ({len(rows)} rows)")
        for name, metrics in (("confidence", now), ("overlap >= 0.8", before)):
            print(
                f"  {name:15} confident_wrong {metrics['confident_wrong_rate']}  aurc {metrics['aurc']}  "
                f"supported {metrics['band_share']['supported']} (precision {metrics['band_precision']['supported']})"
                f"  coverage {metrics['coverage']}"
            )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
