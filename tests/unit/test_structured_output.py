"""Structured output: malformed replies end as a valid object or the typed default, never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from pagegraph.llm import parse_structured, structured_call
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.structured import constrained_kwargs
from tests.fakes import ScriptedChatModel


class Judgement(BaseModel):
    relevant: bool
    facts: list[str] = Field(default_factory=list, max_length=5)


class Selection(BaseModel):
    node_ids: list[str] = Field(min_length=1, max_length=5)

    @field_validator("node_ids")
    @classmethod
    def known_only(cls, ids: list[str], info: ValidationInfo) -> list[str]:
        known = (info.context or {}).get("known_ids")
        if known is None:
            return ids
        kept = [i for i in dict.fromkeys(ids) if i in known]
        if not kept:
            raise ValueError(f"none of {ids} is a node id of this document")
        return kept


class Answer(BaseModel):
    answer: str
    confidence: float = Field(ge=0, le=1)


KNOWN_IDS = {"0003", "0007", "0012", "0015"}
DEFAULTS: dict[type[BaseModel], BaseModel] = {
    Judgement: Judgement(relevant=False),
    Selection: Selection(node_ids=["0003"]),
    Answer: Answer(answer="", confidence=0.0),
}
DEFAULT = None  # expected outcome: the typed default

CASES: list[tuple[str, type[BaseModel], str, dict[str, Any] | None]] = [
    ("clean", Judgement, '{"relevant": true, "facts": ["6 bar"]}', {"relevant": True, "facts": ["6 bar"]}),
    (
        "trailing prose",
        Judgement,
        'Sure! Here is the JSON:\n{"relevant": true, "facts": ["6 bar"]}\nHope this helps.',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    ("code fence", Judgement, '```json\n{"relevant": false, "facts": []}\n```', {"relevant": False, "facts": []}),
    (
        "fence without language, prose after",
        Judgement,
        '```\n{"relevant": false}\n```\nExplanation: the passage is about priming.',
        {"relevant": False, "facts": []},
    ),
    (
        "single quotes, Python literals",
        Judgement,
        "{'relevant': True, 'facts': ['6 bar']}",
        {"relevant": True, "facts": ["6 bar"]},
    ),
    ("trailing commas", Judgement, '{"relevant": true, "facts": ["6 bar",],}', {"relevant": True, "facts": ["6 bar"]}),
    ("truncated", Judgement, '{"relevant": true, "facts": ["6 bar"', {"relevant": True, "facts": ["6 bar"]}),
    ("no braces at all", Judgement, '"relevant": true, "facts": ["6 bar"]', {"relevant": True, "facts": ["6 bar"]}),
    ("missing comma", Judgement, '{"relevant": true "facts": ["6 bar"]}', {"relevant": True, "facts": ["6 bar"]}),
    (
        "bool as text, list as text",
        Judgement,
        '{"relevant": "yes", "facts": "6 bar"}',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    ("bool as number", Judgement, '{"relevant": 1, "facts": []}', {"relevant": True, "facts": []}),
    (
        "numbers where text belongs",
        Judgement,
        '{"relevant": true, "facts": [6, 2.5]}',
        {"relevant": True, "facts": ["6", "2.5"]},
    ),
    (
        "extra keys",
        Judgement,
        '{"relevant": true, "facts": ["6 bar"], "reasoning": "it says so", "score": 3}',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    ("key case", Judgement, '{"Relevant": true, "Facts": ["6 bar"]}', {"relevant": True, "facts": ["6 bar"]}),
    (
        "wrapped in another object",
        Judgement,
        '{"result": {"relevant": true, "facts": ["6 bar"]}}',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    (
        "object inside an array",
        Judgement,
        '[{"relevant": true, "facts": ["6 bar"]}]',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    (
        "too many items",
        Judgement,
        '{"relevant": true, "facts": ["a", "b", "c", "d", "e", "f", "g"]}',
        {"relevant": True, "facts": ["a", "b", "c", "d", "e"]},
    ),
    ("null for an optional list", Judgement, '{"relevant": True, "facts": None}', {"relevant": True, "facts": []}),
    (
        "raw newline inside a string",
        Judgement,
        '{"relevant": true, "facts": ["line one\nline two"]}',
        {"relevant": True, "facts": ["line one\nline two"]},
    ),
    (
        "braces inside strings, two objects",
        Judgement,
        'It is {"relevant": true, "facts": ["limit {max} 6 bar"]} and also {"x": 1}',
        {"relevant": True, "facts": ["limit {max} 6 bar"]},
    ),
    (
        "thinking before the object",
        Judgement,
        '<think>the passage gives 6 bar</think>{"relevant": true, "facts": ["6 bar"]}',
        {"relevant": True, "facts": ["6 bar"]},
    ),
    (
        "YAML-like lines",
        Judgement,
        "relevant: yes\nfacts: 6 bar, primed with 2 litres",
        {"relevant": True, "facts": ["6 bar", "primed with 2 litres"]},
    ),
    ("assignment", Judgement, "relevant = true", {"relevant": True, "facts": []}),
    ("empty", Judgement, "", DEFAULT),
    ("whitespace", Judgement, "  \n ", DEFAULT),
    ("prose only", Judgement, "I cannot tell whether the passage is relevant.", DEFAULT),
    ("JSON null", Judgement, "null", DEFAULT),
    ("empty object", Judgement, "{}", DEFAULT),
    ("empty array", Judgement, "[]", DEFAULT),
    ("required field null", Judgement, '{"relevant": null, "facts": []}', DEFAULT),
    ("value outside the type", Judgement, '{"relevant": "maybe"}', DEFAULT),
    ("valid ids", Selection, '{"node_ids": ["0003", "0007"]}', {"node_ids": ["0003", "0007"]}),
    ("one invented id", Selection, '{"node_ids": ["0003", "9999", "0007"]}', {"node_ids": ["0003", "0007"]}),
    ("only invented ids", Selection, '{"node_ids": ["9999", "8888"]}', DEFAULT),
    ("ids as numbers", Selection, '{"node_ids": [3, 7]}', DEFAULT),
    ("one id as text", Selection, '{"node_ids": "0012"}', {"node_ids": ["0012"]}),
    ("bare array of ids", Selection, '["0003", "0012"]', {"node_ids": ["0003", "0012"]}),
    ("repeated ids", Selection, '{"node_ids": ["0003", "0003", "0007"]}', {"node_ids": ["0003", "0007"]}),
    ("ids under another key", Selection, '{"nodes": ["0015"]}', {"node_ids": ["0015"]}),
    ("ids listed in prose", Selection, 'node_ids: "0003", "0015"', {"node_ids": ["0003", "0015"]}),
    (
        "more ids than allowed",
        Selection,
        '{"node_ids": ["0003", "0007", "0012", "0015", "0016", "0017", "0018"]}',
        {"node_ids": ["0003", "0007", "0012", "0015"]},
    ),
    ("number as text", Answer, '{"answer": "6 bar", "confidence": "0.8"}', {"answer": "6 bar", "confidence": 0.8}),
    ("number out of range", Answer, '{"answer": "6 bar", "confidence": 1.7}', DEFAULT),
    (
        "list where text belongs",
        Answer,
        '{"answer": ["6 bar", "at the inlet"], "confidence": 0.5}',
        {"answer": "6 bar, at the inlet", "confidence": 0.5},
    ),
    ("number where text belongs", Answer, '{"answer": 6, "confidence": 0.5}', {"answer": "6", "confidence": 0.5}),
    (
        "labelled lines",
        Answer,
        "answer: The maximum inlet pressure is 6 bar.\nconfidence: 0.9",
        {"answer": "The maximum inlet pressure is 6 bar.", "confidence": 0.9},
    ),
    (
        "truncated after an apostrophe",
        Answer,
        '{"answer": "The pump\'s limit is 6 bar", "confidence": 0.9',
        {"answer": "The pump's limit is 6 bar", "confidence": 0.9},
    ),
    (
        "key word before the object",
        Answer,
        'Answer: {"answer": "6 bar", "confidence": 0.9}',
        {"answer": "6 bar", "confidence": 0.9},
    ),
    ("required field missing", Answer, '{"confidence": 0.9}', DEFAULT),
]


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 40
    assert sum(expected is DEFAULT for *_, expected in CASES) >= 10


@pytest.mark.parametrize(("name", "schema", "reply", "expected"), CASES, ids=[c[0] for c in CASES])
def test_malformed_reply_gives_valid_object_or_default(
    name: str, schema: type[BaseModel], reply: str, expected: dict[str, Any] | None
) -> None:
    model = ScriptedChatModel.replying(reply, "Sorry, I still cannot produce JSON.")
    result = structured_call(
        model,
        schema,
        [HumanMessage(content="question")],
        default=DEFAULTS[schema],
        purpose="test",
        context={"known_ids": KNOWN_IDS},
    )
    assert isinstance(result.value, schema)
    if expected is DEFAULT:
        assert not result.ok
        assert result.value == DEFAULTS[schema]
        assert result.value is not DEFAULTS[schema], "the default must be a copy the caller may change"
        assert [a.step for a in result.attempts] == ["initial", "repair"]
        assert all(a.error for a in result.attempts)
    else:
        assert result.ok, result.attempts[0].error
        assert result.value.model_dump() == expected
        assert result.attempts[0].parsed_by is not None
        assert len(model.requests) == 1, "a reply that could be read needs no repair call"


def test_repair_call_carries_the_error_and_the_failed_reply() -> None:
    model = ScriptedChatModel.replying('{"relevant": "perhaps"}', '{"relevant": true, "facts": ["6 bar"]}')
    result = structured_call(
        model, Judgement, [HumanMessage(content="q")], default=Judgement(relevant=False), purpose="map"
    )
    assert result.ok and result.value == Judgement(relevant=True, facts=["6 bar"])
    first, second = result.attempts
    assert (first.step, first.parsed_by) == ("initial", None)
    assert "relevant" in (first.error or "")
    assert (second.step, second.parsed_by, second.error) == ("repair", "json", None)
    repair_request = model.requests[1][0]
    assert isinstance(repair_request[-2], AIMessage) and repair_request[-2].content == '{"relevant": "perhaps"}'
    assert first.error in str(repair_request[-1].content)
    assert second.call is not None and second.call.purpose == "map:repair"


@pytest.mark.parametrize("repairs", [0, 2])
def test_repairs_bounds_the_calls_after_invalid_replies(repairs: int) -> None:
    model = ScriptedChatModel.replying("no JSON here", "still none", '{"relevant": true}')
    result = structured_call(
        model,
        Judgement,
        [HumanMessage(content="q")],
        default=Judgement(relevant=False),
        purpose="route",
        repairs=repairs,
    )
    assert len(model.requests) == len(result.attempts) == 1 + repairs
    assert result.ok == (repairs == 2) and result.value.relevant == (repairs == 2)
    assert result.attempts[0].error == "the reply holds no JSON object"
    for number, attempt in enumerate(result.attempts[1:], start=1):
        request = model.requests[number][0]
        assert request[-2].content == result.attempts[number - 1].raw, "each repair shows the reply before it"
        assert attempt.step == "repair" and len(request) == len(model.requests[0][0]) + 2


def test_json_instruction_joins_the_system_message() -> None:
    model = ScriptedChatModel.replying('{"relevant": false}')
    structured_call(
        model,
        Judgement,
        [SystemMessage(content="You judge passages."), HumanMessage(content="q")],
        default=Judgement(relevant=False),
        purpose="map",
    )
    sent = model.requests[0][0]
    assert len(sent) == 2 and isinstance(sent[0], SystemMessage)
    assert sent[0].content.startswith("You judge passages.") and '"relevant"' in sent[0].content


def test_constrained_decoding_is_requested_from_llama_cpp() -> None:
    model = LlamaCppChatModel(model_path="unused.gguf", model_name="test")
    options = constrained_kwargs(model, Judgement)
    # every property required: llama.cpp's grammar writes required ones first, so this keeps the schema's order
    schema = {**Judgement.model_json_schema(), "required": ["relevant", "facts"]}
    assert options == {"response_format": {"type": "json_object", "schema": schema}}
    assert constrained_kwargs(ScriptedChatModel(), Judgement) is None


class Note(BaseModel):
    title: str = Field(min_length=1, max_length=12)
    tags: list[str] = Field(default_factory=list, max_length=2)


def test_string_bounds_stay_out_of_the_grammar_and_long_text_is_cut() -> None:
    grammar = constrained_kwargs(LlamaCppChatModel(model_path="unused.gguf", model_name="test"), Note)
    schema = grammar["response_format"]["schema"]
    assert "maxLength" not in json.dumps(schema) and "minLength" not in json.dumps(schema)
    assert schema["properties"]["tags"]["maxItems"] == 2, "list bounds are cheap for the grammar and kept"
    assert schema["required"] == ["title", "tags"], "decoded in the schema's order, optional fields included"
    value, stage, _ = parse_structured('{"title": "A title much longer than twelve", "tags": ["a", "b", "c"]}', Note)
    assert stage == "json" and value == Note(title="A title much", tags=["a", "b"])


def test_a_backend_that_refuses_the_schema_is_asked_again_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedChatModel.replying(
        RuntimeError("response_format json_schema is not supported"), '{"relevant": true}'
    )
    monkeypatch.setattr(
        "pagegraph.llm.structured.constrained_kwargs", lambda m, s: {"response_format": {"type": "json_schema"}}
    )
    result = structured_call(
        model, Judgement, [HumanMessage(content="q")], default=Judgement(relevant=False), purpose="map"
    )
    assert result.ok and result.value.relevant
    assert [a.constrained for a in result.attempts] == [True, False]
    assert "not supported" in (result.attempts[0].error or "")
    assert model.requests[0][1] == {"response_format": {"type": "json_schema"}} and model.requests[1][1] == {}


def test_other_model_failures_are_not_hidden_behind_the_default() -> None:
    model = ScriptedChatModel.replying(RuntimeError("model crashed"))
    with pytest.raises(RuntimeError, match="model crashed"):
        structured_call(model, Judgement, [HumanMessage(content="q")], default=Judgement(relevant=False), purpose="map")


def test_parse_reports_the_first_validation_error() -> None:
    value, stage, error = parse_structured('{"answer": "x", "confidence": 3}', Answer)
    assert value is None and stage is None
    assert error is not None and error.startswith("confidence:")


class ScriptedLocalModel(LlamaCppChatModel):
    """The local model class with llama.cpp replaced by scripted replies; records each call's options."""

    replies: list[str] = []
    calls: list[dict[str, Any]] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        self.calls.append({"messages": messages, **kwargs})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.replies.pop(0)))])


class Weight(BaseModel):
    value: float
    unit: str


def local(*replies: str) -> ScriptedLocalModel:
    return ScriptedLocalModel(model_path="unused.gguf", model_name="scripted", replies=list(replies), calls=[])


def test_with_structured_output_works_on_the_local_model() -> None:
    model = local('{"value": 98, "unit": "kg"}')
    assert model.with_structured_output(Weight).invoke("How heavy is it?") == Weight(value=98, unit="kg")
    (call,) = model.calls
    assert call["response_format"]["type"] == "json_object"  # the schema is decoded as a llama.cpp grammar
    assert set(call["response_format"]["schema"]["properties"]) == {"value", "unit"}
    assert "How heavy is it?" in call["messages"][-1].content

    repaired = local("It weighs about 98.", '{"value": 98, "unit": "kg"}')
    chain = repaired.with_structured_output(Weight)
    assert chain.invoke([HumanMessage("How heavy is it?")]) == Weight(value=98, unit="kg")
    assert len(repaired.calls) == 2, "one repair call after an invalid reply"

    hopeless = local("no idea", "still no idea")
    with pytest.raises(OutputParserException, match="no valid Weight"):
        hopeless.with_structured_output(Weight).invoke("How heavy is it?")
    raw = local("no idea", "still no idea").with_structured_output(Weight, include_raw=True).invoke("How heavy?")
    assert raw["parsed"] is None and raw["raw"].content == "still no idea"
    assert isinstance(raw["parsing_error"], OutputParserException)
    with pytest.raises(TypeError, match="pydantic model class"):
        local().with_structured_output({"type": "object"})
