"""Rules that generalise (issue 77, item 4): each page rule and tuned retrieval parameter measured on each half of
the mmlongbench dev documents (split by document, fixed seed, as bench/route_share.py splits them), so that what was
written or tuned on all of them is seen on a half apart. A rule is switched off (or a parameter set to where it does
nothing) beside `default`, in document and corpus scope; a tuned weight is chosen on one half from a small grid and
reported on the other, both ways round. Each rule is printed with whether it helps each half.

    .venv/bin/python bench/rules_halves.py --index MMLB --questions ../shared/eval/mmlongbench/dev.jsonl \\
        [--seed 0] [--check SEC10Q ../shared/eval/sec10q/questions.jsonl] [--out bench/results/rules-halves.json]
"""

from __future__ import annotations

import json
from typing import Any

from fusion import measure
from route_share import document_halves
from tune_check import parse_halves

SCOPES = ("document", "corpus")
# each rule off, or each parameter where it does nothing (the retrieval knobs of `Context`)
RULES_OFF: dict[str, dict[str, Any]] = {
    "page ranking off": {"page_ranking": False},
    "named pages off": {"named_pages": False},
    "statement pages off": {"statement_pages": False},
    "no window": {"window": 0},
    "spelling off": {"correct_spelling": False},
    "no routing": {"route_documents": 0},
    "never routed alone": {"route_alone": 0.0},
    "routing without profiles": {"routing": {"profile": 0.0}},
    "routing without terms": {"routing": {"terms": 0.0}},
}
# tuned weights and thresholds (a group's knob as `group.knob`), each chosen on one half from these values and
# reported on the other
GRIDS: dict[str, tuple[float, ...]] = {
    "alpha": (0.2, 0.3, 0.4, 0.5, 0.6),
    "route_alone": (0.4, 0.5, 0.6, 0.7, 0.8),
    "routing.profile": (0.25, 0.5, 1.0),
    "routing.terms": (0.25, 0.5, 1.0),
    "page_rules.statement_min_numbers": (20, 40, 80),
    "window": (1, 2),
}


def change(knob: str, value: float) -> dict[str, Any]:
    """The retrieval knobs' change setting `knob` (`group.knob` for one of a group's) to `value`."""
    group, _, name = knob.rpartition(".")
    return {group: {name: value}} if group else {name: value}


def default_value(knob: str) -> float:
    from pagegraph.config import Context

    found: Any = Context().retrieval
    for part in knob.split("."):
        found = getattr(found, part)
    return float(found)


def objective(figures: dict[str, float]) -> float:
    """What a half's choice maximises: page hit@5 in both scopes and corpus doc_hit@5, equally weighted."""
    return figures["document hit@5"] + figures["corpus hit@5"] + figures["corpus doc_hit@5"]


def main() -> int:
    args = parse_halves(__doc__)
    from pagegraph.config import Context

    candidates = {"default": Context()}
    candidates |= {name: Context(retrieval=off) for name, off in RULES_OFF.items()}
    for knob, values in GRIDS.items():
        candidates |= {f"{knob} {value}": Context(retrieval=change(knob, value)) for value in values}
    first, second = document_halves(args.questions, args.seed)
    figures = {
        "first half": measure(args.index, args.questions, SCOPES, candidates, first, baselines=()),
        "second half": measure(args.index, args.questions, SCOPES, candidates, second, baselines=()),
    }
    if args.check:
        figures["check"] = measure(*args.check, scopes=SCOPES, candidates=candidates, baselines=())
    verdicts = {name: verdict(figures, name) for name in RULES_OFF}
    choices = {
        knob: {
            f"chosen on {tuned}, reported on {reported}": chosen_and_reported(figures, knob, tuned, reported)
            for tuned, reported in (("first half", "second half"), ("second half", "first half"))
        }
        for knob in GRIDS
    }
    report(figures, verdicts, choices)
    if args.out:
        halves = {"first half": sorted(first), "second half": sorted(second)}
        result = {"figures": figures, "rules": verdicts, "tuned": choices, "documents": halves, "seed": args.seed}
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def verdict(figures: dict[str, dict[str, dict[str, float]]], rule: str) -> dict[str, Any]:
    """What `default` gains over the rule switched off, per half (and --check) and figure, and whether the rule
    helps each half: its objective higher with it."""
    gains = {
        part: {
            key: round(figures[part]["default"][key] - value, 4)
            for key, value in figures[part][rule].items()
            if value is not None  # sec10q's evidence is by document: no page hit@5
        }
        for part in figures
    }
    helps = {
        part: objective(figures[part]["default"]) > objective(figures[part][rule])
        for part in ("first half", "second half")
    }
    return {"gains": gains, "helps": helps}


def chosen_and_reported(
    figures: dict[str, dict[str, dict[str, float]]], knob: str, tuned: str, reported: str
) -> dict[str, Any]:
    """The grid value with the best objective on the `tuned` half (ties: the one nearer today's default), and its
    figures on the `reported` half beside today's default there."""
    names = [name for name in figures[tuned] if name.startswith(f"{knob} ")]
    default = default_value(knob)
    best = max(names, key=lambda n: (objective(figures[tuned][n]), -abs(float(n.split()[-1]) - default)))
    return {
        "chosen": float(best.split()[-1]),
        "default": default,
        "objective on the tuned half": round(objective(figures[tuned][best]), 4),
        "reported": figures[reported][best],
        "default reported": figures[reported]["default"],
    }


def report(figures: dict, verdicts: dict, choices: dict) -> None:
    parts = list(figures)
    keys = list(next(iter(figures[parts[0]].values())))
    width = max(map(len, figures[parts[0]]))
    for part in parts:
        print(f"\n{part}: " + ", ".join(keys))
        for name, values in figures[part].items():
            print(
                f"  {name:>{width}}  "
                + "  ".join("  –  " if values[key] is None else f"{values[key]:.3f}" for key in keys)
            )
    print("\nrules (default minus the rule off; helps = a higher objective with the rule):")
    for rule, found in verdicts.items():
        print(f"  {rule:>{width}}  helps {found['helps']}  gains {found['gains']}")
    print("\ntuned weights:")
    for knob, ways in choices.items():
        for way, found in ways.items():
            print(f"  {knob}: {way}: {found['chosen']} (default {found['default']})")
            print(f"      reported {found['reported']}\n      default  {found['default reported']}")


if __name__ == "__main__":
    raise SystemExit(main())
