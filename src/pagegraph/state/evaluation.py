"""Evaluation records: a question set's rows with their gold evidence, and a stored evaluation run."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from pagegraph.state.documents import now_iso


class GoldEvidence(BaseModel):
    """Where a question set says the answer is."""

    document: str
    page: int | None = Field(default=None, description="1-indexed; absent for document-level evidence")


class EvalQuestion(BaseModel):
    """One row of a question set (the format of shared/eval/README.md); fields past id, question, answerable and
    documents are optional."""

    id: str
    question: str
    answerable: bool = True
    documents: list[str] = Field(default_factory=list)
    answer: str | None = None
    evidence: list[GoldEvidence] = Field(default_factory=list)
    answer_format: str | None = None
    task_type: str | None = None
    doc_type: str | None = None
    text_friendly: bool | None = None


class EvalRun(BaseModel):
    id: str
    created_at: str = Field(default_factory=now_iso)
    mode: Literal["retrieval", "answer"]
    config: dict[str, Any]
    summary: dict[str, Any]
    per_question: list[dict[str, Any]]
