"""What the scripts that read answer runs again share (`self_agreement.py`, `answer_check.py`): the runs' answered
rows, the questions they ask, and each question's top highlight sentences as the `highlight` stage picks them
(model-free: the graph is run up to that stage only)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"


def run_arguments(description: str | None, highlights: int) -> argparse.ArgumentParser:
    """The options every such script takes: the index, the runs, the questions file, how many highlights."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--run", type=Path, action="append", required=True, help="an answer run's report")
    parser.add_argument("--questions", type=Path, default=DEV)
    parser.add_argument("--highlights", type=int, default=highlights, help="top highlight sentences the reads see")
    parser.add_argument("--out", type=Path)
    return parser


def questions_by_id(path: Path) -> dict[str, Any]:
    from pagegraph.eval.questions import load_questions

    if not path.is_file():
        raise SystemExit(f"{path}: not found (../shared is absent)")
    return {q.id: q for q in load_questions(path)}


def run_rows(path: Path, questions: dict[str, Any]) -> list[dict]:
    """An answer run's rows, each with its question (scoring a long answer reads it; runs made before rows recorded
    it lack it)."""
    return [{"question": questions[r["id"]].question, **r} for r in json.loads(path.read_text())["per_question"]]


def answered_rows(path: Path, questions: dict[str, Any]) -> list[dict]:
    """The rows of an answer run that answered, without an error."""
    return [r for r in run_rows(path, questions) if not r["abstained"] and not r["error"]]


@contextmanager
def top_highlights(index: Path, settings: Any, count: int) -> Iterator[Callable[[Any], list]]:
    """A function from a question to its top `count` highlights, over the index at `index`."""
    from pagegraph import build_graph
    from pagegraph.config import Context
    from pagegraph.services import Services
    from pagegraph.store.index import open_index

    with open_index(index, settings) as opened:
        graph = build_graph("extract", services=Services(settings, index=opened))
        context = Context(index=str(index))

        def highlights(question: Any) -> list:
            inputs = {"question": question.question, "documents": question.documents}
            for update in graph.stream(inputs, context=context, stream_mode="updates"):
                if "highlight" in update:
                    return update["highlight"]["highlights"][:count]
            return []

        yield highlights
