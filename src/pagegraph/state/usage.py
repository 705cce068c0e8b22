"""Records of what model calls cost and how their replies were read: stages put them in the trace, runs add them up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

ParseStage = Literal["json", "extract", "lenient", "salvage"]


class ModelCall(BaseModel):
    """What one model call cost."""

    model: str
    purpose: str = Field(description="the stage or step that made the call")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    estimated: bool = Field(default=False, description="token counts estimated from characters: the model gave none")
    finish_reason: str | None = None
    token_probability: float | None = Field(
        default=None,
        description="the geometric mean of the reply's token probabilities (its mean log-probability, exponentiated); "
        "None when the model gives no log-probabilities",
    )


class UsageSummary(BaseModel):
    """Model usage of a whole graph run, added up from its calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    by_model: dict[str, int] = Field(default_factory=dict, description="calls per model")

    @classmethod
    def from_calls(cls, calls: Sequence[ModelCall]) -> UsageSummary:
        by_model: dict[str, int] = {}
        for call in calls:
            by_model[call.model] = by_model.get(call.model, 0) + 1
        return cls(
            calls=len(calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            latency_ms=round(sum(c.latency_ms for c in calls), 1),
            by_model=by_model,
        )


class Attempt(BaseModel):
    """One model reply and how it was read; graph nodes put these in the trace."""

    step: Literal["initial", "repair"]
    constrained: bool = Field(description="whether the backend was asked to constrain decoding to the schema")
    raw: str = Field(description="the reply, cut to its first characters (llm.structured.RAW_KEPT_CHARS)")
    parsed_by: ParseStage | None = Field(default=None, description="the stage that produced a valid object")
    error: str | None = None
    call: ModelCall | None = None
