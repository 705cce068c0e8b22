"""Filter: keep the chunks the model found relevant and the facts that their passage supports; the facts become
the evidence the answer is written from (and checked against).

A small model asked about X tends to "find" X in passages that never mention it (a fact naming the question's
error code, read from a passage about another code). A fact whose numbers or codes are not in its passage, or most
of whose words are not, is such an invention and is dropped. A passage from which the model invented at least as
many facts as it read is one it misread (it called the passage relevant because of what it invented), so its other
facts are dropped with them."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.state.graph import SmallModelState
from pagegraph.text.words import tokenize

NO_FACTS = "No relevant information found."


def is_grounded(fact: str, passage_words: set[str], min_share: float) -> bool:
    """Every word of the fact that holds a digit appears in the passage, and at least `min_share` of the others;
    `min_share` 0 turns the check off."""
    if min_share == 0:
        return True
    words = tokenize(fact)
    marked = [w for w in words if any(ch.isdigit() for ch in w)]
    if any(w not in passage_words for w in marked):
        return False
    plain = [w for w in words if w not in marked]
    return not plain or sum(w in passage_words for w in plain) >= min_share * len(plain)


def filter_facts(state: SmallModelState, runtime: Runtime[Context]) -> dict[str, Any]:
    timer = StageTimer("filter_facts")
    min_share = context_of(runtime).small_model.fact_grounding
    mapped = sorted(state.get("mapped") or [], key=lambda m: m.evidence.rank)
    kept, dropped, misread = [], 0, 0
    for chunk in mapped:
        if not chunk.relevant:
            continue
        passage_words = set(tokenize(chunk.evidence.text))
        facts = [fact for fact in chunk.facts if is_grounded(fact, passage_words, min_share)]
        dropped += len(chunk.facts) - len(facts)
        if len(chunk.facts) - len(facts) >= len(facts):
            misread += bool(facts)
            continue
        kept.append(chunk.model_copy(update={"facts": facts}))
    unsupported = f", {dropped} facts dropped (not in their passage)" if dropped else ""
    if misread:
        unsupported += f", {misread} misread passages dropped (as many facts invented as read)"
    if not kept:
        summary = f"0 of {len(mapped)} chunks relevant with supported facts{unsupported}"
        return {"abstain_reason": NO_FACTS, "trace": [timer.record(summary)]}
    evidence = [m.evidence.model_copy(update={"text": "\n".join(m.facts)}) for m in kept]
    summary = f"{len(kept)} of {len(mapped)} chunks relevant, {sum(len(m.facts) for m in kept)} facts{unsupported}"
    return {"evidence": evidence, "trace": [timer.record(summary, ids=[e.label() for e in evidence])]}
