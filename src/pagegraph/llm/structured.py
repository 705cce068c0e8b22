"""Structured output that small models can live with.

`structured_call` asks for JSON matching a pydantic schema, with constrained decoding where the backend has it
(llama.cpp grammar, Ollama `format`, OpenAI-style `response_format`), and reads whatever comes back through
ever more forgiving stages: strict JSON → the first JSON value in prose or code fences → lenient repair (single
quotes, trailing commas, missing braces, truncation) → field-by-field salvage. If nothing validates it asks again
with the validation error, up to `Context.repair_attempts` times, then returns the caller's typed default. This is
the one retry policy for every model call that expects JSON. Malformed output never raises; a model that cannot be
reached does (ModelUnavailableError).
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, get_args, get_origin

import json_repair
from annotated_types import MaxLen
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from pagegraph.config import Context
from pagegraph.errors import ModelUnavailableError
from pagegraph.llm.calls import invoke_model, message_text, model_label, provider
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.prompts.structured import JSON_INSTRUCTION, REPAIR_REQUEST
from pagegraph.state.usage import Attempt, ParseStage

T = TypeVar("T", bound=BaseModel)

RAW_KEPT_CHARS = 4000
# for calls made outside a question's run (ingest summaries, LangChain's with_structured_output)
DEFAULT_REPAIRS: int = Context.model_fields["repair_attempts"].default
_MAX_JSON_STARTS = 8


@dataclass
class StructuredResult(Generic[T]):
    value: T
    ok: bool  # False when `value` is the caller's default
    attempts: list[Attempt] = field(default_factory=list)

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
    if isinstance(model, LlamaCppChatModel):
        return {"response_format": {"type": "json_object", "schema": grammar_schema(json_schema)}}
    kind = provider(model)
    if kind == "ollama":
        return {"format": json_schema}
    if kind == "openai":
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": json_schema}}
        }
    return None


def reply_cap(model: BaseChatModel, max_tokens: int | None) -> dict[str, int]:
    """The call option that caps one reply, for the backends that take one per call."""
    if max_tokens is None or not (isinstance(model, LlamaCppChatModel) or provider(model) == "openai"):
        return {}
    return {"max_tokens": max_tokens}


_GRAMMAR_UNSAFE_KEYS = {"maxLength", "minLength", "pattern"}


def grammar_schema(node: Any) -> Any:
    """The JSON schema without string length bounds and patterns, for llama.cpp's grammar builder.

    It expands `maxLength: 1200` into 1200 nested optional rules, rejects the grammar and then crashes the process;
    over-long strings are cut to their bound when the reply is validated instead (`coerce_to_schema`)."""
    if isinstance(node, dict):
        return {k: grammar_schema(v) for k, v in node.items() if k not in _GRAMMAR_UNSAFE_KEYS}
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
) -> StructuredResult[T]:
    """Ask `model` for a `schema` object (`default` when nothing validates; None only for callers that check `ok`).
    After a reply that does not validate, up to `repairs` more calls show the model its reply and what was wrong.
    `context` reaches the schema's validators (e.g. the ids that exist).
    `max_tokens` caps each reply where the backend takes a per-call cap (llama.cpp, OpenAI-compatible): string
    bounds are not part of a llama.cpp grammar, so a small model's text field can otherwise run on; a cut-off
    reply is still read by the lenient stages.
    """
    prompt = with_json_instruction(messages, schema)
    attempts: list[Attempt] = []
    cap = reply_cap(model, max_tokens)
    value = _ask(model, schema, prompt, "initial", purpose, context, attempts, cap)
    for _ in range(repairs):
        if value is not None:
            break
        failed = attempts[-1]
        retry = repair_messages(prompt, failed.raw, failed.error or "", schema)
        value = _ask(model, schema, retry, "repair", purpose, context, attempts, cap)
    if value is None:
        fallback = default.model_copy(deep=True) if default is not None else None
        return StructuredResult(value=fallback, ok=False, attempts=attempts)
    return StructuredResult(value=value, ok=True, attempts=attempts)


def structured_runnable(model: BaseChatModel, schema: type[BaseModel], include_raw: bool) -> Runnable:
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
) -> T | None:
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
    return value


def parse_structured(
    text: str, schema: type[T], context: dict[str, Any] | None = None
) -> tuple[T | None, ParseStage | None, str | None]:
    """(object, stage that produced it, None) or (None, None, why nothing validated)."""
    text = text.strip()
    if not text:
        return None, None, "the reply was empty"
    errors: list[str] = []
    stages: list[tuple[ParseStage, Iterator[Any]]] = [
        ("json", _strict(text)),
        ("extract", _extracted(text)),
        ("lenient", _lenient(text)),
        ("salvage", _salvaged(text, schema)),
    ]
    for stage, candidates in stages:
        for candidate in candidates:
            try:
                return schema.model_validate(coerce_to_schema(candidate, schema), context=context), stage, None
            except ValidationError as exc:
                errors.append(describe_validation_error(exc))
    return None, None, errors[0] if errors else "the reply holds no JSON object"


def describe_validation_error(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for item in exc.errors()[:limit]:
        where = ".".join(str(p) for p in item["loc"]) or "object"
        parts.append(f"{where}: {item['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _strict(text: str) -> Iterator[Any]:
    try:
        yield json.loads(text)
    except json.JSONDecodeError:
        return


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|$)", re.S)


def _json_regions(text: str) -> list[str]:
    """Where JSON may sit: code-fence bodies first, then the text itself."""
    return [m.group(1) for m in _FENCE.finditer(text) if m.group(1).strip()] + [text]


def _closing_index(text: str, start: int) -> int | None:
    """Index of the bracket closing the one at `start`, skipping brackets inside strings; None if it never closes."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index
    return None


def _extracted(text: str) -> Iterator[Any]:
    for region in _json_regions(text):
        starts = [i for i, c in enumerate(region) if c in "{["][:_MAX_JSON_STARTS]
        for start in starts:
            end = _closing_index(region, start)
            if end is None:
                continue
            try:
                yield json.loads(region[start : end + 1])
            except json.JSONDecodeError:
                continue


def _lenient(text: str) -> Iterator[Any]:
    for region in _json_regions(text):
        start = next((i for i, c in enumerate(region) if c in "{["), None)
        if start is None:
            continue
        repaired = json_repair.repair_json(region[start:], return_objects=True)
        if isinstance(repaired, dict | list) and repaired:
            yield repaired


def _shape(annotation: Any) -> str:
    """'list', 'str', 'bool', 'number' or 'other': how a field's value may be reshaped or salvaged."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _shape(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _shape(options[0]) if len(options) == 1 else "other"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set, frozenset):
        return "list"
    if origin is Literal:
        return "str" if all(isinstance(a, str) for a in get_args(annotation)) else "other"
    if annotation is bool:
        return "bool"
    if annotation in (int, float):
        return "number"
    return "str" if annotation is str else "other"


def _list_item(annotation: Any) -> Any:
    """The item type of a list-shaped field."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _list_item(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return _list_item(next(a for a in get_args(annotation) if a is not type(None)))
    args = get_args(annotation)
    return args[0] if args else Any


def _max_length(info: FieldInfo) -> int | None:
    """A field's max_length: most items for a list, most characters for a string."""
    return next((m.max_length for m in info.metadata if isinstance(m, MaxLen)), None)


def _normal_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip()).lower()


def coerce_to_schema(obj: Any, schema: type[BaseModel]) -> Any:
    """Reshape near misses before validation: a wrapped or listed object, key case, a scalar where a list
    belongs, a list where text belongs, numbers as text, unknown keys."""
    fields = schema.model_fields
    names = {_normal_key(alias): name for name, info in fields.items() for alias in (name, info.alias or name)}
    list_fields = [name for name, info in fields.items() if _shape(info.annotation) == "list"]
    if isinstance(obj, list):
        objects = [item for item in obj if isinstance(item, dict)]
        if objects and any(_normal_key(str(k)) in names for k in objects[0]):
            obj = objects[0]
        elif len(list_fields) == 1:
            obj = {list_fields[0]: obj}
        else:
            return obj
    if not isinstance(obj, dict):
        return obj
    if not any(_normal_key(str(k)) in names for k in obj) and len(obj) == 1:
        inner = next(iter(obj.values()))
        if isinstance(inner, dict | list):
            return coerce_to_schema(inner, schema)
    shaped: dict[str, Any] = {}
    for key, value in obj.items():
        name = names.get(_normal_key(str(key)))
        if name is None:
            continue
        shape = _shape(fields[name].annotation)
        if value is None and not fields[name].is_required():
            continue
        if shape == "list" and isinstance(value, str | int | float | bool | dict):
            value = [value]
        if shape == "list" and isinstance(value, list):
            if _shape(_list_item(fields[name].annotation)) == "str":
                value = [str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v for v in value]
            if (limit := _max_length(fields[name])) is not None:
                value = value[:limit]
        elif shape == "str" and isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            value = ", ".join(str(v) for v in value)
        elif shape == "str" and isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if shape == "str" and isinstance(value, str) and (limit := _max_length(fields[name])) is not None:
            value = value[:limit]
        shaped[name] = value
    return shaped


_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'|([^,\n}\]]+)')


def _salvage_value(rest: str, shape: str) -> Any:
    if shape == "bool":
        m = re.match(r"(true|false|yes|no)\b", rest, re.I)
        return None if m is None else m.group(1).lower() in ("true", "yes")
    if shape == "number":
        m = re.match(r"-?\d+(?:\.\d+)?", rest)
        return None if m is None else json.loads(m.group(0))
    if shape == "str":
        m = _STRING.match(rest)
        return None if m is None else next(g for g in m.groups() if g is not None).strip()
    if rest.startswith(("[", "{")):
        end = _closing_index(rest, 0)
        value = json_repair.repair_json(rest if end is None else rest[: end + 1], return_objects=True)
        return value if value not in ("", None) else None
    if shape == "list":
        line = rest.split("\n", 1)[0]
        items = [item.strip().strip("\"'") for item in line.split(",")]
        return [item for item in items if item] or None
    return None


def _salvaged(text: str, schema: type[BaseModel]) -> Iterator[Any]:
    found: dict[str, Any] = {}
    for name, info in schema.model_fields.items():
        for key in {name, info.alias or name}:
            m = re.search(rf"[\"']?\b{re.escape(key)}\b[\"']?\s*[:=]\s*", text, re.I)
            if m is None:
                continue
            value = _salvage_value(text[m.end() :], _shape(info.annotation))
            if value is not None:
                found[name] = value
                break
    if found:
        yield found
