"""Pick: the model chooses the answer among the lettered candidates (`nodes.candidates`) — one, one per thing asked
for a question asking for several, or none — in one short call under a grammar (llama-server's JSON schema with an
enum of the letters; other chat models through structured output). The answer is composed from the pick: its value
as the document writes it, what it measures, and its citation; a pick cannot state a value the passages do not hold.

Its confidence is the share of the model's likelihood on its pick among the options where it writes the letter
(candidates of the same value counted together), read from the reply's log-probabilities; a model without them
gets `Context.picking.written_weight`. `verify` then checks the composed answer as any other (another period's or
column's cell is still caught there) and bands it. "none" is a refusal that names what was read."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, create_model

from pagegraph.checks.candidates import asks_several
from pagegraph.config import Context, PickingKnobs
from pagegraph.llm.calls import token_alternatives
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.prompts.pick import (
    CELL_OPTION,
    ONE,
    PICK_REQUEST,
    PICK_SYSTEM,
    SENTENCE_OPTION,
    SEVERAL,
    VALUE_OPTION,
)
from pagegraph.services import Services
from pagegraph.state.answering import Candidate, Pick, Verdict
from pagegraph.state.graph import RagState

NONE = "none"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MOST_PICKS = 3
NONE_PICKED = "the answer model found none of the {count} candidates taken from the passages to answer the question"
_OPTION_TEXT = {"cell": CELL_OPTION, "value": VALUE_OPTION, "name": VALUE_OPTION, "sentence": SENTENCE_OPTION}
_TOKEN_EDGES = ' "[],{}:\n'


def choice_schema(letters: list[str], several: bool) -> type[BaseModel]:
    """The reply's schema: `{"pick": "C"}`, or for several things `{"pick": ["C", "F"]}`; "none" among them."""
    option = Literal[tuple([*letters, NONE])]  # type: ignore[valid-type]
    if several:
        return create_model("Choice", pick=(list[option], Field(min_length=1, max_length=MOST_PICKS)))
    return create_model("Choice", pick=(option, ...))


def options_text(candidates: list[Candidate]) -> str:
    return "\n".join(
        _OPTION_TEXT[c.kind].format(letter=letter, value=" ".join(c.value.split()), measures=c.measures)
        for letter, c in zip(LETTERS, candidates)
    )


def _option(token: str | None, letters: set[str]) -> str | None:
    """The option a token writes: a letter, or "none" (or the start of it); None for any other token."""
    stripped = (token or "").strip(_TOKEN_EDGES)
    if stripped in letters:
        return stripped
    return NONE if stripped and NONE.startswith(stripped.lower()) and stripped.islower() else None


def option_shares(reply: BaseMessage | None, letters: list[str]) -> list[dict[str, float]]:
    """Where the reply writes each of its options, the model's likelihood of every option there, as shares of the
    options' total; empty without log-probabilities."""
    allowed = set(letters)
    shares = []
    for token, alternatives in token_alternatives(reply) if reply is not None else []:
        written = _option(token, allowed)
        if written is None:
            continue
        found: dict[str, float] = {}
        for alternative, probability in alternatives:
            if (option := _option(alternative, allowed)) is not None:
                found[option] = found.get(option, 0.0) + probability
        total = sum(found.values())
        shares.append({o: p / total for o, p in found.items()} if total else {written: 1.0})
    return shares


def _same(candidates: list[Candidate], letter: str) -> set[str]:
    """The letters of the candidates stating the same value as `letter`'s (itself included)."""
    value = " ".join(candidates[LETTERS.index(letter)].value.split()).casefold()
    return {LETTERS[i] for i, c in enumerate(candidates) if " ".join(c.value.split()).casefold() == value}


def read_pick(written: list[str], reply: BaseMessage | None, candidates: list[Candidate], knobs: PickingKnobs) -> Pick:
    """The pick a reply writes (its letters in order, "none" alone or first: none of these), its probability and
    the runner-up, from the reply's log-probabilities where it has them."""
    letters = list(LETTERS[: len(candidates)])
    chosen = [] if not written or written[0] == NONE else list(dict.fromkeys(w for w in written if w != NONE))
    shares = option_shares(reply, letters)
    if not shares:
        picked = [LETTERS.index(c) for c in chosen]
        return Pick(candidates=candidates, picked=picked, probability=knobs.written_weight, from_logprobs=False)
    groups = [_same(candidates, letter) for letter in chosen] or [{NONE}]
    probabilities = [sum(shares[min(i, len(shares) - 1)].get(o, 0.0) for o in group) for i, group in enumerate(groups)]
    others = {o: p for o, p in shares[0].items() if o not in groups[0] and o != NONE}
    runner_up = max(others, key=others.__getitem__) if others else None
    return Pick(
        candidates=candidates,
        picked=[LETTERS.index(c) for c in chosen],
        probability=round(min(1.0, min(probabilities)), 4),
        from_logprobs=True,
        runner_up=LETTERS.index(runner_up) if runner_up else None,
        runner_up_probability=round(others[runner_up], 4) if runner_up else None,
    )


def compose(candidate: Candidate) -> str:
    """The answer a candidate gives: its value and what it measures (or the sentence), with its citation."""
    cite = f"[{candidate.passage}]"
    if candidate.kind == "sentence":
        sentence = " ".join(candidate.value.split())
        stop = sentence[-1] if sentence[-1:] in ".!?。" else ""
        return f"{sentence.removesuffix(stop)} {cite}{stop}"
    if candidate.kind == "cell":
        return f"{candidate.value} ({candidate.measures}) {cite}"
    return f"{candidate.value} (“{candidate.measures}”) {cite}"


def pick(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("pick")
    context = context_of(runtime)
    knobs = context.picking
    candidates = state.get("candidates") or []
    question = state["question"]
    several = asks_several(question)
    letters = list(LETTERS[: len(candidates)])
    request = PICK_REQUEST.format(
        question=question, options=options_text(candidates), choose=SEVERAL if several else ONE
    )
    messages = [SystemMessage(content=PICK_SYSTEM), HumanMessage(content=request)]
    model = services.chat_model(context, temperature=0.0)
    result = structured_call(
        model,
        choice_schema(letters, several),
        messages,
        default=None,
        purpose="pick",
        repairs=context.repair_attempts,
        max_tokens=knobs.max_tokens,
        alternatives=knobs.alternatives,
    )
    calls = [a.call for a in result.attempts if a.call is not None]
    if not result.ok:
        summary = f"no valid pick ({result.error}): the answer is written instead"
        return {"pick": None, "candidates": [], "trace": [timer.record(summary, calls=calls, attempts=result.attempts)]}
    written = result.value.pick if isinstance(result.value.pick, list) else [result.value.pick]
    chosen = read_pick(written, result.reply, candidates, knobs)
    source = "log-probabilities" if chosen.from_logprobs else "the written choice"
    second = chosen.second()
    runner = f"; runner-up {second.value!r} ({chosen.runner_up_probability:.2f})" if second else ""
    if not chosen.picked:
        reason = NONE_PICKED.format(count=len(candidates))
        summary = f"none of {len(candidates)} ({chosen.probability:.2f} from {source}){runner}"
        return {"pick": chosen, "abstain_reason": reason, "trace": [timer.record(summary, calls=calls)]}
    picked = chosen.chosen()
    summary = (
        f"{', '.join(repr(c.value) for c in picked)} of {len(candidates)} candidates "
        f"({chosen.probability:.2f} from {source}){runner}"
    )
    verdict = Verdict(probability=chosen.probability, from_logprobs=chosen.from_logprobs, method="pick")
    return {
        "pick": chosen,
        "draft": "; ".join(compose(c) for c in picked),
        "verdict": verdict,
        "trace": [timer.record(summary, ids=[c.label for c in picked], calls=calls)],
    }
