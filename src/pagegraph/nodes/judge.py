"""Judge: ask the answer model one closed question — do the question's top evidence sentences state this answer? —
and read how likely its first token was Yes rather than No. Small models state wrong values with fluent certainty;
asked to check a given answer against a few sentences, they tell right from wrong far better than their own token
probabilities do (docs/asking.md). The answer's confidence (`verify`) is built on it.

An answer stating numbers, amounts, percentages or dates that the judge confirms well enough to be shown as supported
is read a second time: the model is asked the question itself over the same sentences, and where it reads values
there, a supported answer must state them (`checks.values.restates`); a reading that finds no value there neither
confirms nor doubts. A reader that took a neighbouring value of a long passage, or answered one part of two, is
rarely confirmed by a reading of the best sentences alone."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.checks.citations import is_refusal, resolve_citations, strip_citations
from pagegraph.checks.values import own_figures, restates
from pagegraph.config import Context
from pagegraph.llm.calls import first_token_alternatives, invoke_model, message_text
from pagegraph.llm.structured import reply_cap, reports_logprobs
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.prompts.judge import (
    JUDGE_REQUEST,
    JUDGE_SYSTEM,
    NO_SENTENCES,
    NO_WORDS,
    REREAD_REQUEST,
    REREAD_SYSTEM,
    YES_WORDS,
)
from pagegraph.services import Services
from pagegraph.state.answering import Verdict
from pagegraph.state.graph import BasicState
from pagegraph.state.usage import ModelCall


def judge_options(model: BaseChatModel, alternatives: int) -> dict[str, int]:
    """A one-token reply, with the likeliest first tokens from the models that report them (the embedded one, and
    OpenAI-compatible clients made with `logprobs` on: `Settings.models.model_logprobs`)."""
    return {**reply_cap(model, 1), **({"top_logprobs": alternatives} if reports_logprobs(model) else {})}


def read_verdict(reply: BaseMessage, written_yes: float) -> Verdict:
    """P(Yes) / (P(Yes) + P(No)) among the reply's likeliest first tokens; from a model that reports none (or
    neither word among them), `written_yes` for a reply that says Yes and 1 - `written_yes` for any other."""
    alternatives = first_token_alternatives(reply)
    yes = sum(p for token, p in alternatives if token.strip().lower() in YES_WORDS)
    no = sum(p for token, p in alternatives if token.strip().lower() in NO_WORDS)
    if yes + no > 0:
        return Verdict(probability=round(yes / (yes + no), 4), from_logprobs=True)
    words = message_text(reply).strip().lower().split()
    said_yes = bool(words) and words[0].strip(".,!:;") in YES_WORDS
    return Verdict(probability=written_yes if said_yes else round(1 - written_yes, 4), from_logprobs=False)


def ask_judge(
    model: BaseChatModel, question: str, answer: str, sentences: list[str], context: Context
) -> tuple[Verdict, ModelCall]:
    """The judge's verdict on `answer` (citations stripped) against `sentences`, and the call that gave it."""
    request = JUDGE_REQUEST.format(
        sentences="\n".join(sentences) or NO_SENTENCES,
        question=question,
        answer=" ".join(strip_citations(answer).split()),
    )
    messages = [SystemMessage(content=JUDGE_SYSTEM), HumanMessage(content=request)]
    options = judge_options(model, context.confidence.judge_alternatives)
    reply, call = invoke_model(model, messages, purpose="judge", **options)
    return read_verdict(reply, context.confidence.written_yes), call


def reread(model: BaseChatModel, question: str, sentences: list[str], context: Context) -> tuple[str, ModelCall]:
    """What the model answers to `question` over `sentences` alone (citations left out), and the call."""
    numbered = "\n\n".join(f"[{n}] {' '.join(s.split())}" for n, s in enumerate(sentences, 1))
    request = REREAD_REQUEST.format(evidence=numbered, history="", question=question)
    messages = [SystemMessage(content=REREAD_SYSTEM), HumanMessage(content=request)]
    reply, call = invoke_model(model, messages, purpose="reread", **reply_cap(model, context.confidence.reread_tokens))
    return " ".join(strip_citations(message_text(reply)).split()), call


def judge(state: BasicState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("judge")
    context = context_of(runtime)
    output_type = state.get("output_type") or context.output_type
    if output_type != "answer":  # a structured document is no claim one token can confirm
        return {"verdict": None, "trace": [timer.record(f"a {output_type} is not judged")]}
    text, cited, _ = resolve_citations(state.get("draft", ""), state.get("evidence") or [])
    if is_refusal(text, cited):
        return {"verdict": None, "trace": [timer.record("a refusal: nothing to judge")]}
    highlights = (state.get("highlights") or [])[: context.confidence.judge_sentences]
    model = services.chat_model(context, temperature=0.0)
    sentences = [h.sentence for h in highlights]
    verdict, call = ask_judge(model, state["question"], text, sentences, context)
    source = "log-probabilities" if verdict.from_logprobs else "the written word"
    summary = f"P(yes) {verdict.probability:.2f} from {source}, over {len(highlights)} highlight sentences"
    calls = [call]
    plain = strip_citations(text)
    # only an answer that could be banded supported is read again: the confidence is at most the judge's P(Yes)
    could_be_supported = verdict.probability >= context.confidence.supported
    if context.confidence.reread and sentences and could_be_supported and own_figures(plain, state["question"]):
        again, call = reread(model, state["question"], sentences, context)
        restated = restates(plain, again, state["question"])
        verdict = verdict.model_copy(update={"reread": again, "restated": restated})
        calls.append(call)
        said = {True: "the same values", False: "other values", None: "no value"}[restated]
        summary += f"; read again: {again!r}, {said}"
    return {"verdict": verdict, "trace": [timer.record(summary, calls=calls)]}
