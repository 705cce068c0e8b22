"""Structured output that small models can live with.

`structured_call` asks for JSON matching a pydantic schema, with constrained decoding where the backend has it
(llama.cpp grammar, Ollama `format`, OpenAI-style `response_format`), and reads whatever comes back with
`llm.json_reply.parse_structured` (strict JSON → the first JSON value in prose or code fences → lenient repair →
field-by-field salvage). If nothing validates it asks again
with the validation error, up to `Context.repair_attempts` times, then returns the caller's typed default. This is
the one retry policy for every model call that expects JSON. Malformed output never raises; a model that cannot be
reached does (ModelUnavailableError).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel

from pagegraph.config import Context
from pagegraph.errors import ModelUnavailableError
from pagegraph.llm.calls import embedded, invoke_model, message_text, model_label, provider
from pagegraph.llm.json_reply import parse_structured
from pagegraph.prompts.structured import JSON_INSTRUCTION, REPAIR_REQUEST
from pagegraph.state.usage import Attempt

T = TypeVar("T", bound=BaseModel)

RAW_KEPT_CHARS = 4000
# for calls made outside a question's run (ingest summaries, LangChain's with_structured_output)
DEFAULT_REPAIRS: int = Context.model_fields["repair_attempts"].default


@dataclass
class StructuredResult(Generic[T]):
    value: T
    ok: bool  # False when `value` is the caller's default
    attempts: list[Attempt] = field(default_factory=list)
    reply: AIMessage | None = None  # the last reply, with its token log-probabilities where asked (`alternatives`)

    @property
    def error(self) -> str | None:
        return self.attempts[-1].error if self.attempts else None


def schema_text(schema: type[BaseModel]) -> str:
    """The JSON schema as compact text for a prompt (titles dropped: they only cost tokens)."""

    def strip_titles(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip_titles(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [strip_titles(v) for v in node]
        return node

    # the class docstring is for developers; small models copy such text into their answers
    described = {k: v for k, v in schema.model_json_schema().items() if k != "description"}
    return json.dumps(strip_titles(described), separators=(",", ":"))


def constrained_kwargs(model: BaseChatModel, schema: type[BaseModel]) -> dict[str, Any] | None:
    """Call options that make the backend decode only text matching `schema`, or None where it cannot."""
    json_schema = schema.model_json_schema()
    if embedded(model):
        return {"response_format": {"type": "json_object", "schema": grammar_schema(json_schema)}}
    kind = provider(model)
    if kind == "ollama":
        return {"format": json_schema}
    if kind == "openai":
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": json_schema}}
        }
    return None


def reports_logprobs(model: BaseChatModel) -> bool:
    """Whether the model reports the likeliest tokens of its replies: the embedded one, and OpenAI-compatible
    clients made with `logprobs` on (`Settings.models.model_logprobs`)."""
    return embedded(model) or (provider(model) == "openai" and bool(getattr(model, "logprobs", None)))


def reply_cap(model: BaseChatModel, max_tokens: int | None) -> dict[str, int]:
    """The call option that caps one reply, for the backends that take one per call."""
    if max_tokens is None or not (embedded(model) or provider(model) == "openai"):
        return {}
    return {"max_tokens": max_tokens}


_GRAMMAR_UNSAFE_KEYS = {"maxLength", "minLength", "pattern"}


def grammar_schema(node: Any) -> Any:
    """The JSON schema for llama.cpp's grammar builder: without string length bounds and patterns, and with every
    property of an object required.

    The builder expands `maxLength: 1200` into 1200 nested optional rules and rejects the grammar; over-long strings
    are cut to their bound when the reply is validated instead (`coerce_to_schema`). And it writes required
    properties before optional ones: a schema that lists its facts (optional, with a default) before its verdict
    would be decoded verdict first, and a small model decides worse before it has written the facts out. Required,
    they keep the schema's order; the model writes a default where it has nothing."""
    if isinstance(node, dict):
        cleaned = {k: grammar_schema(v) for k, v in node.items() if k not in _GRAMMAR_UNSAFE_KEYS}
        if isinstance(cleaned.get("properties"), dict):
            cleaned["required"] = list(cleaned["properties"])
        return cleaned
    if isinstance(node, list):
        return [grammar_schema(v) for v in node]
    return node


def with_json_instruction(messages: Sequence[BaseMessage], schema: type[BaseModel]) -> list[BaseMessage]:
    instruction = JSON_INSTRUCTION.format(schema=schema_text(schema))
    messages = list(messages)
    if messages and isinstance(messages[0], SystemMessage):
        return [SystemMessage(content=f"{message_text(messages[0])}\n\n{instruction}"), *messages[1:]]
    return [SystemMessage(content=instruction), *messages]


def repair_messages(
    messages: Sequence[BaseMessage], raw: str, error: str, schema: type[BaseModel]
) -> list[BaseMessage]:
    """The conversation for a repair call: the failed reply and what was wrong with it."""
    return [
        *messages,
        AIMessage(content=raw or "(empty reply)"),
        HumanMessage(content=REPAIR_REQUEST.format(error=error, schema=schema_text(schema))),
    ]


def structured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    default: T | None,
    purpose: str,
    repairs: int = DEFAULT_REPAIRS,
    context: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    alternatives: int = 0,
) -> StructuredResult[T]:
    """Ask `model` for a `schema` object (`default` when nothing validates; None only for callers that check `ok`).
    After a reply that does not validate, up to `repairs` more calls show the model its reply and what was wrong.
    `context` reaches the schema's validators (e.g. the ids that exist).
    `max_tokens` caps each reply where the backend takes a per-call cap (llama.cpp, OpenAI-compatible): string
    bounds are not part of a llama.cpp grammar, so a small model's text field can otherwise run on; a cut-off
    reply is still read by the lenient stages.
    `alternatives`: the likeliest tokens at each position of the reply, from the models that report them
    (`reports_logprobs`), kept on the result's `reply`.
    """
    prompt = with_json_instruction(messages, schema)
    attempts: list[Attempt] = []
    options = {
        **reply_cap(model, max_tokens),
        **({"top_logprobs": alternatives} if alternatives and reports_logprobs(model) else {}),
    }
    value, reply = _ask(model, schema, prompt, "initial", purpose, context, attempts, options)
    for _ in range(repairs):
        if value is not None:
            break
        failed = attempts[-1]
        retry = repair_messages(prompt, failed.raw, failed.error or "", schema)
        value, reply = _ask(model, schema, retry, "repair", purpose, context, attempts, options)
    if value is None:
        fallback = default.model_copy(deep=True) if default is not None else None
        # None only for a caller that gave no default, which reads `ok` before `value`
        return StructuredResult(value=fallback, ok=False, attempts=attempts, reply=reply)  # type: ignore[arg-type]
    return StructuredResult(value=value, ok=True, attempts=attempts, reply=reply)


def structured_runnable(model: BaseChatModel, schema: dict[str, Any] | type, include_raw: bool) -> Runnable:
    """LangChain's `with_structured_output` through `structured_call`: constrained decoding, the forgiving parser
    and one repair call. Raises OutputParserException when nothing validates (unless `include_raw`)."""
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f"with_structured_output on {model_label(model)} takes a pydantic model class, not {schema!r}")

    def ask(value: LanguageModelInput) -> Any:
        messages = model._convert_input(value).to_messages()
        result = structured_call(model, schema, messages, default=None, purpose="with_structured_output")
        raw = AIMessage(content=result.attempts[-1].raw if result.attempts else "")
        if include_raw:
            error = None if result.ok else OutputParserException(result.error or "invalid output", llm_output=raw.text)
            return {"raw": raw, "parsed": result.value, "parsing_error": error}
        if not result.ok:
            raise OutputParserException(
                f"{model_label(model)} gave no valid {schema.__name__}: {result.error}", llm_output=raw.text
            )
        return result.value

    return RunnableLambda(ask, name=f"{schema.__name__}Output")


def _ask(
    model: BaseChatModel,
    schema: type[T],
    messages: list[BaseMessage],
    step: Literal["initial", "repair"],
    purpose: str,
    context: dict[str, Any] | None,
    attempts: list[Attempt],
    cap: dict[str, int],
) -> tuple[T | None, AIMessage]:
    options = constrained_kwargs(model, schema)
    try:
        reply, call = invoke_model(model, messages, purpose=f"{purpose}:{step}", **cap, **(options or {}))
    except ModelUnavailableError:
        raise
    except Exception as exc:
        if options is None:
            raise
        # The backend refused the schema (an OpenAI-compatible server without json_schema support, a grammar
        # llama.cpp cannot build): ask the same thing without constrained decoding.
        attempts.append(Attempt(step=step, constrained=True, raw="", error=f"constrained decoding failed: {exc}"))
        options = None
        reply, call = invoke_model(model, messages, purpose=f"{purpose}:{step}", **cap)
    raw = message_text(reply)
    value, stage, error = parse_structured(raw, schema, context)
    attempts.append(
        Attempt(
            step=step,
            constrained=options is not None,
            raw=raw[:RAW_KEPT_CHARS],
            parsed_by=stage,
            error=error,
            call=call,
        )
    )
    return value, reply
