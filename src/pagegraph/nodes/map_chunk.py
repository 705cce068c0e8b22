"""Map: the small model reads one chunk and says whether it helps and which facts it gives. A reply that cannot be
read counts as relevant, with the chunk's sentences that share words with the question as its facts (verbatim):
losing a chunk costs more than reading one too many."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.prompts.small_model import MAP_CHUNK_REQUEST, MAP_CHUNK_SYSTEM
from pagegraph.services import Services
from pagegraph.state.answering import ChunkFacts, MappedChunk
from pagegraph.state.graph import ChunkTask
from pagegraph.text.words import tokenize

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def question_sentences(question: str, text: str, count: int) -> list[str]:
    """The `count` sentences of the chunk that share most words with the question, best first."""
    wanted = set(tokenize(question))
    scored = [(len(wanted & set(tokenize(s))), s.strip()) for s in _SENTENCE.split(text) if s.strip()]
    return [s for score, s in sorted(scored, key=lambda pair: -pair[0]) if score > 0][:count]


def map_chunk(task: ChunkTask, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    evidence = task["evidence"]
    timer = StageTimer(f"map[{evidence.rank}]")
    context = context_of(runtime)
    messages = [
        SystemMessage(content=MAP_CHUNK_SYSTEM),
        HumanMessage(
            content=MAP_CHUNK_REQUEST.format(question=task["question"], label=evidence.label(), text=evidence.text)
        ),
    ]
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        ChunkFacts,
        messages,
        default=ChunkFacts(
            relevant=True, facts=question_sentences(task["question"], evidence.text, context.small_model.fallback_facts)
        ),
        purpose="map_chunk",
        repairs=context.repair_attempts,
    )
    parsed_by = result.attempts[-1].parsed_by or "default"
    mapped = MappedChunk(
        evidence=evidence, relevant=result.value.relevant, facts=result.value.facts, parsed_by=parsed_by
    )
    verdict = "relevant" if mapped.relevant else "not relevant"
    summary = f"{evidence.label()}: {verdict}, {len(mapped.facts)} facts (read by {parsed_by})"
    return {"mapped": [mapped], "trace": [timer.record(summary, ids=mapped.facts, attempts=result.attempts)]}
