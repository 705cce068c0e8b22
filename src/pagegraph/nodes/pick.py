"""Pick: the model chooses the answer among the candidates (`nodes.candidates`) — one, one per thing asked for a
question asking for several, or none — in one short call under a grammar: llama-server's JSON schema whose enum is
the candidates' options, what each is and then its value (other chat models: structured output with the same
schema). The model copies the option it chooses, which a small model does far more reliably than it names an
option's letter or copies a bare value (measured: docs/experiments.md), and the grammar keeps it to the options on
the list. The answer is composed from the pick: its value as the document writes it, a cell's row and column, and
its citation; a pick cannot state a value the passages do not hold. "none" refuses a question that asks for a number
where the model's probability of it reaches `Context.picking.refuse_from` (below it, the likeliest candidate is
taken instead); any other question may be answered in words, which no candidate is, and goes to the written reader
(`nodes.read`), as does a pick whose probability is below `Context.picking.answer_from`.

Its confidence is the probability of the option the model wrote among those the grammar allowed, read from the
reply's log-probabilities token by token (each token's share among the likeliest tokens that still lead to some
option; the least of several picks); a model without them gets `Context.picking.written_weight`. `verify` then
checks the composed answer as any other (another period's or column's cell is still caught there) and bands it,
supported from `Context.picking.supported`. The extract graph runs this stage only with `Context.picking.use`."""

from __future__ import annotations

import json
from typing import Any, Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, create_model

from pagegraph.checks.candidates import asks_several
from pagegraph.config import Context, PickingKnobs
from pagegraph.llm.calls import token_alternatives
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.prompts.pick import ONE, PICK_REQUEST, PICK_SYSTEM, SEVERAL
from pagegraph.retrievers.highlights import answer_shape
from pagegraph.services import Services
from pagegraph.state.answering import Candidate, Pick, Verdict
from pagegraph.state.graph import ExtractState

NONE = "none"
MOST_PICKS = 3
NONE_PICKED = "the answer model found none of the {count} candidates taken from the passages to answer the question"
_REPLY_OVERHEAD_TOKENS = 16  # the JSON around the values


def choice_schema(values: list[str], several: bool) -> type[BaseModel]:
    """The reply's schema: `{"pick": "350 cd/m²"}`, or for several things `{"pick": ["32 mpg", "52 mpg"]}`; "none"
    among the values."""
    option: Any = Literal[tuple([*values, NONE])]  # a type made at run time, from the candidates
    if several:
        return create_model("Choice", pick=(list[option], Field(min_length=1, max_length=MOST_PICKS)))
    return create_model("Choice", pick=(option, ...))


def options_text(candidates: list[Candidate]) -> str:
    # a value's option ends with it; the words after it (in `measures`) are shown too
    return "\n".join(c.option if c.kind == "cell" else c.measures for c in candidates)


def reply_tokens(values: list[str], several: bool) -> int:
    """Enough tokens for the longest reply the schema allows (a digit or a sign can be a token of its own)."""
    longest = sorted((len(json.dumps(v, ensure_ascii=False)) for v in values), reverse=True)
    return sum(longest[: MOST_PICKS if several else 1]) + _REPLY_OVERHEAD_TOKENS


def _reaching(written: str, quoted: dict[str, str]) -> list[str]:
    """The values whose quoted form `written` (the reply's text of a value so far) starts, or goes past the end of."""
    return [value for value, q in quoted.items() if q.startswith(written) or written.startswith(q)]


def value_probabilities(reply: BaseMessage | None, written: list[str], values: list[str]) -> list[dict[str, float]]:
    """For each value the reply writes: the probability of every value it could have written there, from the
    reply's log-probabilities. At each of the value's tokens, the written token's share among the likeliest tokens
    that still lead to some value (the grammar's choices, as far as the reported alternatives show them) is its
    probability there, and the value's probability the product over its tokens; a value the model could have turned
    to at a token gets the share of the alternative leading to it times the probability of the tokens before.
    Empty without log-probabilities."""
    tokens = token_alternatives(reply) if reply is not None else []
    if not tokens or any(token is None for token, _ in tokens):
        return []
    text = "".join(token or "" for token, _ in tokens)
    quoted = {v: json.dumps(v, ensure_ascii=False) for v in [*values, NONE]}
    found: list[dict[str, float]] = []
    searched_from = 0
    for value in written:
        start = text.find(quoted[value], searched_from)
        if start < 0:
            return []
        end = searched_from = start + len(quoted[value])
        probabilities: dict[str, float] = {}
        reached, offset = 1.0, 0
        for token, alternatives in tokens:
            token_start, offset = offset, offset + len(token or "")
            if offset <= start or token_start >= end:
                continue
            lead = text[token_start:start]  # the part of a token before the value's opening quote
            before = text[start:token_start]
            leading: dict[str, tuple[float, list[str]]] = {}
            for alternative, probability in [*alternatives, (token or "", 0.0)]:
                if alternative in leading or not alternative.startswith(lead):
                    continue
                if reaching := _reaching(before + alternative[len(lead) :], quoted):
                    leading[alternative] = (probability, reaching)
            total = sum(probability for probability, _ in leading.values())
            if not total:
                continue
            # the value's share: every alternative still leading to it (the same text may be cut into tokens
            # differently); another value's: the alternatives leading to it and not to this one
            share = sum(probability for probability, reaching in leading.values() if value in reaching) / total
            turned: dict[str, float] = {}
            for probability, reaching in leading.values():
                for other in reaching if value not in reaching else []:
                    turned[other] = turned.get(other, 0.0) + probability / total
            for other, other_share in turned.items():
                probabilities[other] = max(probabilities.get(other, 0.0), reached * other_share)
            reached *= share
        probabilities[value] = reached
        found.append(probabilities)
    return found


def read_pick(written: list[str], reply: BaseMessage | None, candidates: list[Candidate], knobs: PickingKnobs) -> Pick:
    """The pick a reply writes (its values in order; "none" alone or first: none of these), its probability and the
    runner-up, from the reply's log-probabilities where it has them."""
    values = [c.option for c in candidates]
    chosen = [] if not written or written[0] == NONE else list(dict.fromkeys(w for w in written if w != NONE))
    picked = [values.index(value) for value in chosen]
    shares = value_probabilities(reply, written[: len(chosen) or 1], values)
    if not shares:
        return Pick(candidates=candidates, picked=picked, probability=knobs.written_weight, from_logprobs=False)
    first = chosen[0] if chosen else NONE
    others = {v: p for v, p in shares[0].items() if v not in (first, NONE)}
    runner_up = max(others, key=others.__getitem__) if others else None
    return Pick(
        candidates=candidates,
        picked=picked,
        probability=round(min(share[value] for share, value in zip(shares, chosen or [NONE])), 4),
        from_logprobs=True,
        runner_up=values.index(runner_up) if runner_up else None,
        runner_up_probability=round(others[runner_up], 4) if runner_up else None,
    )


def compose(candidate: Candidate) -> str:
    """The answer a candidate gives, with its citation: a cell's value with its row and column, a value or name as
    its sentence writes it (the words around it, which may hold other values, are the pick's to show)."""
    cite = f"[{candidate.passage}]"
    if candidate.kind == "cell":
        return f"{candidate.value} ({candidate.measures}) {cite}"
    return f"{candidate.value} {cite}"


def pick(state: ExtractState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("pick")
    context = context_of(runtime)
    knobs = context.picking
    candidates = state.get("candidates") or []
    question = state["question"]
    several = asks_several(question)
    values = [c.option for c in candidates]
    request = PICK_REQUEST.format(
        question=question, options=options_text(candidates), choose=SEVERAL if several else ONE
    )
    messages = [SystemMessage(content=PICK_SYSTEM), HumanMessage(content=request)]
    model = services.chat_model(context, temperature=0.0)
    result = structured_call(
        model,
        choice_schema(values, several),
        messages,
        default=None,
        purpose="pick",
        repairs=context.repair_attempts,
        max_tokens=min(knobs.max_tokens, reply_tokens(values, several)),
        alternatives=knobs.alternatives,
    )
    calls = [a.call for a in result.attempts if a.call is not None]
    if not result.ok:
        summary = f"no valid pick ({result.error}): the answer is written instead"
        return {"pick": None, "candidates": [], "trace": [timer.record(summary, calls=calls, attempts=result.attempts)]}
    picked = result.value.model_dump()["pick"]
    written = picked if isinstance(picked, list) else [picked]
    chosen = read_pick(written, result.reply, candidates, knobs)
    source = "log-probabilities" if chosen.from_logprobs else "the written choice"
    second = chosen.second()
    runner = f"; runner-up {second.value!r} ({chosen.runner_up_probability:.2f})" if second else ""
    if not chosen.picked:
        summary = f"none of {len(candidates)} ({chosen.probability:.2f} from {source}){runner}"
        if answer_shape(question) != "number":  # the answer may be in words, which no candidate is: it is written
            return {"pick": chosen, "trace": [timer.record(f"{summary}: the answer is written instead", calls=calls)]}
        if chosen.from_logprobs and chosen.probability < knobs.refuse_from and chosen.runner_up is not None:
            summary += f": below {knobs.refuse_from:.2f}, the likeliest candidate is taken"
            chosen = chosen.model_copy(
                update={
                    "picked": [chosen.runner_up],
                    "probability": chosen.runner_up_probability or 0.0,
                    "runner_up": None,
                    "runner_up_probability": None,
                }
            )
        else:
            reason = NONE_PICKED.format(count=len(candidates))
            return {"pick": chosen, "abstain_reason": reason, "trace": [timer.record(summary, calls=calls)]}
    else:
        summary = f"of {len(candidates)} candidates ({chosen.probability:.2f} from {source}){runner}"
    picked = chosen.chosen()
    summary = f"{', '.join(repr(c.value) for c in picked)}: {summary}"
    if chosen.from_logprobs and chosen.probability < knobs.answer_from:  # an unsure pick: the reader writes it
        summary += f"; below {knobs.answer_from:.2f}, the answer is written instead"
        return {"pick": chosen, "trace": [timer.record(summary, calls=calls)]}
    verdict = Verdict(probability=chosen.probability, from_logprobs=chosen.from_logprobs, method="pick")
    return {
        "pick": chosen.model_copy(update={"answered": True}),
        "draft": "; ".join(compose(c) for c in picked),
        "verdict": verdict,
        "trace": [timer.record(summary, ids=[c.label for c in picked], calls=calls)],
    }
