"""Question sets in the JSONL row format of the evaluation data."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pagegraph.errors import PagegraphError
from pagegraph.state.evaluation import EvalQuestion


def load_questions(path: Path) -> list[EvalQuestion]:
    if not path.is_file():
        raise PagegraphError(f"{path}: no such question file")
    questions = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate(json.loads(line)))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise PagegraphError(f"{path.name}: line {number} is not a valid question row ({exc})") from exc
    if not questions:
        raise PagegraphError(f"{path.name}: no questions")
    return questions


def read_row_ids(path: Path) -> list[str]:
    """Row ids listed one per line (text after `#` is a comment)."""
    if not path.is_file():
        raise PagegraphError(f"{path}: no such row list")
    ids = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [row_id for row_id in ids if row_id]


def select_rows(questions: list[EvalQuestion], ids: list[str], source: Path) -> list[EvalQuestion]:
    """The questions with these ids, in the list's order; an id the question set lacks is an error."""
    by_id = {question.id: question for question in questions}
    missing = [row_id for row_id in ids if row_id not in by_id]
    if missing:
        raise PagegraphError(f"{source}: {len(missing)} row ids are not in the question set ({', '.join(missing[:5])})")
    return [by_id[row_id] for row_id in ids]
