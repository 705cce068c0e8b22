"""Fake chat models for unit tests: scripted replies, recorded requests."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from pagegraph.prompts.answer import REFUSAL
from pagegraph.prompts.judge import JUDGE_SYSTEM, REREAD_SYSTEM

Reply = str | AIMessage | BaseException | Callable[[list[BaseMessage]], str | AIMessage]


def citing(fact: str, answer: str, otherwise: str = REFUSAL) -> Callable[[list[BaseMessage]], str]:
    """A reply that cites as a model that read the passages would: `answer` with `{n}` set to the number of the
    first numbered evidence passage whose text matches `fact` (a regular expression); `otherwise` when none does."""

    def reply(messages: list[BaseMessage]) -> str:
        prompt = str(messages[-1].content)
        for number, text in re.findall(r"^\[(\d+)\] .*?\n(.*?)(?=^\[\d+\] |\Z)", prompt, flags=re.S | re.M):
            if re.search(fact, text):
                return answer.format(n=number)
        return otherwise

    return reply


def is_judge_request(messages: list[BaseMessage]) -> bool:
    return bool(messages) and messages[0].type == "system" and messages[0].content == JUDGE_SYSTEM


def is_reread_request(messages: list[BaseMessage]) -> bool:
    return bool(messages) and messages[0].type == "system" and messages[0].content == REREAD_SYSTEM


class ScriptedChatModel(BaseChatModel):
    """Replies with the scripted items in order: a str becomes the reply text, an AIMessage is the reply as it is
    (with the log-probabilities a test gives it), an exception is raised, a callable is given the request's messages
    and returns the reply (for parallel calls whose order is not fixed).

    Every request's messages and call options are kept in `requests`. With `logprob` set, every reply reports that
    log-probability for each of its words, as OpenAI-compatible servers report token log-probabilities.

    The judge's closed check (`nodes.judge`) is answered with `judge_reply` outside the script, its requests kept in
    `judged`: "Yes" (P(Yes) from the written word, `Context.confidence.written_yes`) unless a test scripts it; with
    `judge_yes` set, the reply also reports its first token's top log-probabilities, Yes at that probability and No
    at the rest; with `judge_reply=None` the judge's request (and its second reading's) takes the next scripted reply
    like any other.

    The judge's second reading (`nodes.judge.reread`) is answered outside the script too, its requests kept in
    `rereads`: with `reread_reply` where a test sets it, else with the last scripted reply (a model that reads the
    same again).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: list[Any] = Field(default_factory=list)
    requests: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)
    usage: bool = False
    logprob: float | None = None
    judge_reply: str | None = "Yes"
    judge_yes: float | None = None
    judged: list[list[BaseMessage]] = Field(default_factory=list)
    reread_reply: str | None = None
    rereads: list[list[BaseMessage]] = Field(default_factory=list)
    last_reply: str = ""

    @classmethod
    def replying(
        cls,
        *replies: Reply,
        usage: bool = False,
        logprob: float | None = None,
        judge_reply: str | None = "Yes",
        judge_yes: float | None = None,
        reread_reply: str | None = None,
    ) -> ScriptedChatModel:
        return cls(
            script=list(replies),
            usage=usage,
            logprob=logprob,
            judge_reply=judge_reply,
            judge_yes=judge_yes,
            reread_reply=reread_reply,
        )

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
        if self.judge_reply is not None and is_judge_request(messages):
            self.judged.append(list(messages))
            metadata = {}
            if self.judge_yes is not None:
                top = [("Yes", self.judge_yes), ("No", 1 - self.judge_yes)]
                alternatives = [{"token": t, "logprob": math.log(max(p, 1e-9))} for t, p in top]
                first = {"token": self.judge_reply, "logprob": math.log(0.5), "top_logprobs": alternatives}
                metadata["logprobs"] = {"content": [first]}
            message = AIMessage(content=self.judge_reply, response_metadata=metadata)
            return ChatResult(generations=[ChatGeneration(message=message)])
        if self.judge_reply is not None and is_reread_request(messages):
            self.rereads.append(list(messages))
            again = self.last_reply if self.reread_reply is None else self.reread_reply
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=again))])
        self.requests.append((list(messages), dict(kwargs)))
        if not self.script:
            raise AssertionError("the scripted model was called more often than scripted")
        reply = self.script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, AIMessage):
            self.last_reply = reply.text
            return ChatResult(generations=[ChatGeneration(message=reply)])
        self.last_reply = reply
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
    answer, so a test can tell whether a passage was ever read for the run. The judge's check is answered Yes."""

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
        if is_judge_request(messages):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Yes"))])
        reply = "\n".join(str(m.content) for m in messages if m.type == "human")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])
