"""Fake chat models for unit tests: scripted replies, recorded requests."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

Reply = str | BaseException | Callable[[list[BaseMessage]], str]


class ScriptedChatModel(BaseChatModel):
    """Replies with the scripted items in order: a str becomes the reply text, an exception is raised, a callable
    is given the request's messages and returns the reply text (for parallel calls whose order is not fixed).

    Every request's messages and call options are kept in `requests`. With `logprob` set, every reply reports that
    log-probability for each of its words, as OpenAI-compatible servers report token log-probabilities.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: list[Any] = Field(default_factory=list)
    requests: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)
    usage: bool = False
    logprob: float | None = None

    @classmethod
    def replying(cls, *replies: Reply, usage: bool = False, logprob: float | None = None) -> ScriptedChatModel:
        return cls(script=list(replies), usage=usage, logprob=logprob)

    def extend(self, replies: Iterable[Reply]) -> None:
        self.script.extend(replies)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append((list(messages), dict(kwargs)))
        if not self.script:
            raise AssertionError("the scripted model was called more often than scripted")
        reply = self.script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        usage = None
        if self.usage:
            prompt = sum(len(str(m.content).split()) for m in messages)
            usage = {
                "input_tokens": prompt,
                "output_tokens": len(reply.split()),
                "total_tokens": prompt + len(reply.split()),
            }
        metadata = {}
        if self.logprob is not None:
            tokens = re.findall(r"\s*\S+", reply)
            metadata["logprobs"] = {"content": [{"token": w, "logprob": self.logprob} for w in tokens]}
        message = AIMessage(content=reply, usage_metadata=usage, response_metadata=metadata)
        return ChatResult(generations=[ChatGeneration(message=message)])


class EchoChatModel(BaseChatModel):
    """Replies with everything it was shown (its requests' text, joined): whatever reached the model is in the
    answer, so a test can tell whether a passage was ever read for the run."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = "\n".join(str(m.content) for m in messages if m.type == "human")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])
