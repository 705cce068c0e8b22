"""Fit ranked evidence into what is left of a model's context window once the prompt and the reply are paid for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from langchain_core.language_models import BaseChatModel

from pagegraph.config import Settings
from pagegraph.llm.calls import estimate_tokens
from pagegraph.llm.local import LlamaCppChatModel

E = TypeVar("E")

SAFETY_MARGIN_TOKENS = 64
SEPARATOR_TOKENS = 2


@dataclass
class BudgetFit(Generic[E]):
    kept: list[E]
    dropped: list[E]
    tokens: int
    budget: int


def token_counter(model: BaseChatModel) -> Callable[[str], int]:
    """The model's own tokenizer where pagegraph has it (the local models); else an estimate from characters.

    Remote models' tokenizers are not used: LangChain's defaults download them (GPT-2, tiktoken) on first use.
    """
    if isinstance(model, LlamaCppChatModel):
        return model.get_num_tokens
    return estimate_tokens


def context_window(model: BaseChatModel, settings: Settings) -> int:
    if isinstance(model, LlamaCppChatModel):
        return model.n_ctx
    return getattr(model, "num_ctx", None) or settings.models.remote_context_tokens


def reply_reserve(model: BaseChatModel, settings: Settings) -> int:
    """Tokens kept free for the reply: the model's own output limit when it has one."""
    for attribute in ("max_tokens", "num_predict"):
        if isinstance(value := getattr(model, attribute, None), int) and value > 0:
            return value
    return settings.models.llm_max_tokens


def evidence_budget(model: BaseChatModel, prompt_without_evidence: str, settings: Settings) -> int:
    """Tokens left for evidence in a prompt whose other parts are `prompt_without_evidence`."""
    used = token_counter(model)(prompt_without_evidence) + reply_reserve(model, settings) + SAFETY_MARGIN_TOKENS
    return max(0, context_window(model, settings) - used)


def fit_evidence(
    items: Sequence[E], render: Callable[[E], str], *, budget: int, count: Callable[[str], int]
) -> BudgetFit[E]:
    """Keep the best-ranked items (first = best) whose rendered text, label included, fits in `budget` tokens.

    Items are never cut: lowest-ranked items are dropped until the rest fit, so every kept citation label still
    has its whole text beside it.
    """
    kept: list[E] = []
    used = 0
    for item in items:
        cost = count(render(item)) + SEPARATOR_TOKENS
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    return BudgetFit(kept=kept, dropped=list(items[len(kept) :]), tokens=used, budget=budget)
