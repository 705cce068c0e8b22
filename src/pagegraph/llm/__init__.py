"""Models: the packaged embedders (`embedder`, `minilm`) and chat models (the factory, one call helper with usage
accounting, structured output with repair, context budget)."""

from pagegraph.llm.budget import BudgetFit, evidence_budget, fit_evidence, token_counter
from pagegraph.llm.calls import invoke_model
from pagegraph.llm.factory import get_chat_model
from pagegraph.llm.json_reply import parse_structured
from pagegraph.llm.structured import StructuredResult, structured_call

__all__ = [
    "BudgetFit",
    "StructuredResult",
    "evidence_budget",
    "fit_evidence",
    "get_chat_model",
    "invoke_model",
    "parse_structured",
    "structured_call",
    "token_counter",
]
