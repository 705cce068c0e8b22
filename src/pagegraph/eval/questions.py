"""Question sets in the JSONL row format of the evaluation data."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pagegraph.errors import PagegraphError
from pagegraph.state.records import EvalQuestion


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
