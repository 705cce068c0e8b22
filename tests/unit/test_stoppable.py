"""A stage of a graph run asynchronously (as the server runs it) stops calling the model once its run is cancelled,
and the cancellation completes only when the stage's thread has returned; run synchronously, a stage runs as is."""

from __future__ import annotations

import threading
import time

from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_core.outputs import ChatGenerationChunk
from typing_extensions import TypedDict

from pagegraph.llm.calls import invoke_model
from tests.fakes import EchoChatModel
from tests.runs import cancelled_after, one_stage_graph


class Slow(EchoChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN201
        time.sleep(0.3)
        return super()._generate(messages, stop, run_manager, **kwargs)


class State(TypedDict, total=False):
    calls: int


def test_a_cancelled_run_makes_no_more_model_calls_and_ends_when_its_stage_has() -> None:
    calls: list[float] = []
    returned = threading.Event()
    model = Slow()

    def reads_many_times(state: State) -> dict:
        try:
            for _ in range(10):
                invoke_model(model, [HumanMessage(content="hi")], purpose="read")
                calls.append(time.monotonic())
        finally:
            returned.set()
        return {"calls": len(calls)}

    graph = one_stage_graph(State, reads_many_times)
    assert graph.invoke({}) == {"calls": 10}, "run synchronously, the stage runs whole"
    calls.clear()
    returned.clear()

    cancelled_after(graph, 0.5)
    assert returned.is_set(), "the cancellation completes once the stage's thread has returned"
    made = len(calls)
    assert made <= 2, f"{made} calls: the stage stopped at its next model call"
    time.sleep(0.8)
    assert len(calls) == made, "no call after the cancellation"


class SlowStreamer(EchoChatModel):
    """Any chat model that streams: 40 tokens, 0.1 s apart; counts those it produced."""

    produced: list[str] = []

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001, ANN201
        for n in range(40):
            time.sleep(0.1)
            self.produced.append(f"t{n}")
            yield ChatGenerationChunk(message=AIMessageChunk(content=f"t{n} "))


def test_a_cancelled_run_closes_any_streaming_models_reply_between_tokens() -> None:
    model = SlowStreamer()
    replies: list[str] = []

    def read(state: State) -> dict:
        reply, _ = invoke_model(model, [HumanMessage(content="hi")], purpose="read")
        replies.append(str(reply.content))
        return {"calls": 1}

    graph = one_stage_graph(State, read)
    took = cancelled_after(graph, 1.0)
    made = len(model.produced)
    time.sleep(0.5)
    assert took < 1.0 and made < 20, f"{made} tokens, the cancellation waited {took:.1f} s for a reply of 4 s"
    assert len(model.produced) <= made + 1 and not replies, "the stream was closed: no more tokens, no reply"
    model.produced.clear()
    assert graph.invoke({}) == {"calls": 1} and replies, "run synchronously, it answers"
    assert not model.produced, "a run that cannot be cancelled calls the model plainly"
