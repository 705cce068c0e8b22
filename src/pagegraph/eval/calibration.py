"""Whether an answer's confidence means something: over scored answer rows, how often the top band is wrong, how
precise each band is, how much is answered, the area under the risk–coverage curve (beside the least any confidence
could reach on the same answers), and a reliability table.

A row is right when it answers an answerable question with the gold value (short answers: score ≥ 0.5) or
abstains on an unanswerable one; an answered unanswerable row is wrong. A long gold answer (free text, as sec10q's)
is rarely matched word for word by a short reply, so a long answer counts as right when the gold answer contradicts
none of it: every value it states of its own (numbers, amounts, dates; `checks.values`; not the question's, such
as the year it names, which a gold answer restates too) is in the gold answer and it states at least one, or,
stating none, its token F1 reaches LONG_ANSWER_RIGHT_F1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pagegraph.checks.values import extract_values, own_values, value_in
from pagegraph.eval.scoring import strip_labels

BANDS = ("supported", "uncertain", "quoted", "not_found")
LONG_ANSWER_RIGHT_F1 = 0.5
RELIABILITY_BINS = 5


def is_right(row: dict) -> bool:
    if row.get("error"):
        return False
    if not row["answerable"]:
        return bool(row["abstained"])
    if row["abstained"]:
        return False
    if row.get("answer_score") is not None:
        return row["answer_score"] >= 0.5
    if row.get("answer_kind") == "long" and row.get("gold_answer"):
        stated = [v for v in own_values(strip_labels(row["answer"]), row.get("question", "")) if v.kind != "name"]
        if stated:
            gold = row["gold_answer"]
            written = extract_values(gold, names=False)
            return all(value_in(value, gold, written) for value in stated)
    return (row.get("answer_f1") or 0.0) >= LONG_ANSWER_RIGHT_F1


def row_band(row: dict) -> str:
    return "not_found" if row["abstained"] else row.get("band") or "uncertain"


def aurc(scored: Sequence[tuple[float, bool]]) -> float | None:
    """Area under the risk–coverage curve of (confidence, right) answers: the error rate among the k most confident,
    averaged over k = 1..n; tied confidences share their error rate (no order within a tie is assumed)."""
    if not scored:
        return None
    ordered = sorted(scored, key=lambda pair: -pair[0])
    total, errors, area, k = len(ordered), 0, 0.0, 0
    while k < total:
        tie = [right for confidence, right in ordered if confidence == ordered[k][0]]
        tie_errors = sum(not right for right in tie)
        for step in range(1, len(tie) + 1):  # errors spread evenly through the tie
            area += (errors + tie_errors * step / len(tie)) / (k + step)
        errors += tie_errors
        k += len(tie)
    return round(area / total, 4)


def best_aurc(rights: Sequence[bool]) -> float | None:
    """The least AURC any confidence could give these answers: the right ones ranked above every wrong one (the
    optimal AURC of Geifman et al., 2019). It depends on accuracy alone, so it says how far a confidence's AURC can
    fall before only better answers can lower it."""
    return aurc([(float(right), right) for right in rights])


def calibration_metrics(
    rows: Sequence[dict],
    confidence: Callable[[dict], float] = lambda row: row.get("confidence") or 0.0,
    band: Callable[[dict], str] = row_band,
) -> dict:
    """confident_wrong_rate (share of top-band answers that are wrong), precision and share per band, coverage
    (share of rows answered), AURC of the answers and the best AURC they allow, and a reliability table of the
    answers by confidence."""
    answered = [row for row in rows if not row["abstained"]]
    by_band = {name: [row for row in rows if band(row) == name] for name in BANDS}
    supported = by_band["supported"]
    bins = []
    for number in range(RELIABILITY_BINS):
        low, high = number / RELIABILITY_BINS, (number + 1) / RELIABILITY_BINS
        inside = [r for r in answered if low <= confidence(r) < high or (high == 1 and confidence(r) == 1)]
        bins.append(
            {
                "from": low,
                "to": high,
                "n": len(inside),
                "confidence": round(sum(map(confidence, inside)) / len(inside), 4) if inside else None,
                "accuracy": round(sum(map(is_right, inside)) / len(inside), 4) if inside else None,
            }
        )
    return {
        "confident_wrong_rate": round(sum(not is_right(r) for r in supported) / len(supported), 4)
        if supported
        else None,
        "band_precision": {
            name: round(sum(map(is_right, group)) / len(group), 4) if group else None for name, group in by_band.items()
        },
        "band_share": {name: round(len(group) / len(rows), 4) if rows else None for name, group in by_band.items()},
        "coverage": round(len(answered) / len(rows), 4) if rows else None,
        "aurc": aurc([(confidence(r), is_right(r)) for r in answered]),
        "best_aurc": best_aurc([is_right(r) for r in answered]),
        "reliability": bins,
    }
