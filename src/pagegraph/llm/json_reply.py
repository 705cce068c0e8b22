"""Reading a model's reply as an object of a schema, however the model wrote it: strict JSON, JSON inside prose or
a code fence, lenient JSON (single quotes, trailing commas, comments: json_repair), and last the fields salvaged
one by one from text that is not JSON at all; each candidate coerced to the schema's shapes (a bare string where a
list is wanted, keys in another case, over-long strings cut) before it is validated."""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import json_repair
from annotated_types import MaxLen
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from pagegraph.state.usage import ParseStage

T = TypeVar("T", bound=BaseModel)
_MAX_JSON_STARTS = 8


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
