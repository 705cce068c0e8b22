"""The embedded chat model: a GGUF file run by llama.cpp's server in a process of its own (`llm.model_process`), as
a LangChain chat model.

Its own client rather than ChatOpenAI because a call here also keeps the process alive: it starts or finds the one
model process, says which stage's call a crash or a hang cut off, and has the process started again. The requests
are llama.cpp's OpenAI-compatible ones: a JSON-schema grammar through `response_format`, the token log-probabilities
of free-text replies in OpenAI's form (the confidence and the judge read them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field

from pagegraph.config import get_settings
from pagegraph.llm.calls import EMBEDDED_LLM_TYPE, message_text
from pagegraph.llm.model_process import Endpoint, ModelProcessError, ServerShape, endpoint_for
from pagegraph.llm.structured import structured_runnable
from pagegraph.llm.weights import LocalModelError

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
EXIT_WAIT_S = 3.0  # how long a failed call waits to learn how the process ended


class LlamaCppChatModel(BaseChatModel):
    """Chat model over a local GGUF file served by llama-server. Calls beyond the server's slots queue there."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str = Field(description="the GGUF file")
    model_name: str = Field(description="name shown in traces and errors")
    n_ctx: int = Field(default=8192, ge=256, description="context window of one call in tokens")
    n_threads: int = Field(default=1, ge=1)
    n_batch: int = Field(default=512, ge=1, description="prompt tokens evaluated per step")
    slots: int = Field(default=1, ge=1, description="calls the model process decodes at once")
    repack: bool = Field(default=False, description="llama.cpp's repacked weight layouts (Settings.models.llm_repack)")
    timeout_s: float = Field(default=600.0, gt=0, description="a call that takes longer ends the process as hung")
    load_timeout_s: float = Field(default=300.0, gt=0, description="time to load the weights and answer once")
    idle_s: float = Field(default=300.0, gt=0, description="the model process stops after this long without a call")
    server_binary: Path | None = Field(default=None, description="llama-server; None finds the built one")
    process_folder: Path = Field(
        default_factory=lambda: get_settings().model_process_folder(),
        description="where model processes are published and write their logs",
    )
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=1024, ge=1)
    top_p: float = 0.95
    repeat_penalty: float = 1.0
    seed: int = 0
    streaming: bool = False

    @property
    def _llm_type(self) -> str:
        return EMBEDDED_LLM_TYPE

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "n_ctx": self.n_ctx, "temperature": self.temperature}

    @property
    def shape(self) -> ServerShape:
        return ServerShape(self.model_path, self.n_ctx, self.slots, self.n_threads, self.n_batch, self.repack)

    def endpoint(self) -> Endpoint:
        """The model process this model's calls go to, started (and checked with one short reply) if none runs."""
        return endpoint_for(self.shape, self.server_binary, self.process_folder, self.load_timeout_s, self.idle_s)

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """LangChain's structured output for the local model (it has no tool calling): the schema, a pydantic
        model, becomes a llama.cpp grammar and the reply is read by pagegraph's forgiving parser, with one repair
        call."""
        return structured_runnable(self, schema, include_raw)

    def get_num_tokens(self, text: str) -> int:
        reply = self._post("/tokenize", {"content": text, "add_special": False, "parse_special": True})
        return len(reply.json()["tokens"])

    def _request(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "messages": [{"role": _ROLES.get(m.type, "user"), "content": message_text(m)} for m in messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "repeat_penalty": self.repeat_penalty,
            "seed": self.seed,
            "stop": stop or [],
        }
        # response_format={"type": "json_object", "schema": {...}} turns into a llama.cpp grammar
        request.update({k: v for k, v in kwargs.items() if k in {"max_tokens", "temperature", "response_format"}})
        if "response_format" not in request or kwargs.get("top_logprobs"):
            # token probabilities are read for free-text answers (their confidence) and, where a caller asks for
            # alternatives, for a choice under a grammar (`nodes.pick`), under the model's own distribution
            request.update(logprobs=True, top_logprobs=max(1, int(kwargs.get("top_logprobs") or 0)))
        return request

    def _post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        endpoint = self.endpoint()
        pid = endpoint.pid()
        endpoint.touch()
        try:
            try:
                reply = httpx.post(f"{endpoint.url(self.load_timeout_s)}{path}", json=body, timeout=self.timeout_s)
            except (httpx.ConnectError, ModelProcessError):
                # the process had ended before the call reached it: once more, to the one started again
                endpoint = self.endpoint()
                url = endpoint.url(self.load_timeout_s, not_pid=pid)
                pid = endpoint.pid()
                reply = httpx.post(f"{url}{path}", json=body, timeout=self.timeout_s)
        except httpx.TimeoutException as exc:
            raise self._hung(endpoint) from exc
        except (httpx.TransportError, ModelProcessError) as exc:
            raise self._died(endpoint, pid, exc) from exc
        finally:
            endpoint.touch()
        _raise_for_status(reply)
        return reply

    @contextmanager
    def _open_stream(self, endpoint: Endpoint, pid: int | None, request: dict[str, Any]) -> Iterator[httpx.Response]:
        """The streamed reply, its headers read; a call that finds the process restarting or gone is sent once
        more (to the process started again), as `_post` does."""
        with ExitStack() as stack:

            def send(url: str) -> httpx.Response:
                chat = f"{url}/v1/chat/completions"
                return stack.enter_context(httpx.stream("POST", chat, json=request, timeout=self.timeout_s))

            try:
                reply = send(endpoint.url(self.load_timeout_s))
            except (httpx.ConnectError, ModelProcessError):
                reply = send(self.endpoint().url(self.load_timeout_s, not_pid=pid))
            yield reply

    def _hung(self, endpoint: Endpoint) -> ModelProcessError:
        endpoint.end_hung()
        return ModelProcessError(
            f"the embedded model's process gave no reply within {self.timeout_s:.0f} s and was ended; it is being "
            "started again: ask again (PAGEGRAPH_LLM_TIMEOUT_S sets the limit)"
        )

    def _died(self, endpoint: Endpoint, pid: int | None, exc: Exception) -> ModelProcessError:
        if isinstance(exc, ModelProcessError):
            return exc
        how = endpoint.exit_of(pid, EXIT_WAIT_S) or f"stopped answering ({type(exc).__name__})"
        return ModelProcessError(
            f"the embedded model's process (llama-server, pid {pid}) {how} during this call; it is being started "
            f"again: ask again (its log: {endpoint.record_path.with_suffix('.log')})"
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))
        response = self._post("/v1/chat/completions", self._request(messages, stop, kwargs)).json()
        choice = response["choices"][0]
        content = choice["message"].get("content") or ""
        message = AIMessage(
            content=content,
            usage_metadata=_usage(response.get("usage")),
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": choice.get("finish_reason"),
                **({"logprobs": choice["logprobs"]} if choice.get("logprobs") else {}),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        request = {**self._request(messages, stop, kwargs), "stream": True, "stream_options": {"include_usage": True}}
        endpoint = self.endpoint()
        pid = endpoint.pid()
        usage: dict[str, Any] | None = None
        finish_reason = None
        tokens: list[dict[str, Any]] = []
        endpoint.touch()
        try:
            with self._open_stream(endpoint, pid, request) as reply:
                if reply.status_code >= 400:
                    reply.read()
                    _raise_for_status(reply)
                for line in reply.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    part = json.loads(line[len("data: ") :])
                    usage = part.get("usage") or usage
                    choice = part["choices"][0] if part.get("choices") else None
                    if choice is None:
                        continue
                    finish_reason = choice.get("finish_reason") or finish_reason
                    tokens.extend((choice.get("logprobs") or {}).get("content") or [])
                    text = (choice.get("delta") or {}).get("content") or ""
                    if not text:
                        continue
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                    if run_manager:
                        run_manager.on_llm_new_token(text, chunk=chunk)
                    yield chunk
        except httpx.TimeoutException as exc:
            raise self._hung(endpoint) from exc
        except (httpx.TransportError, ModelProcessError) as exc:
            raise self._died(endpoint, pid, exc) from exc
        finally:
            endpoint.touch()
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=_usage(usage),
                response_metadata={
                    "model_name": self.model_name,
                    "finish_reason": finish_reason,
                    **({"logprobs": {"content": tokens}} if tokens else {}),
                },
            )
        )


def _usage(usage: dict[str, Any] | None) -> UsageMetadata:
    usage = usage or {}
    return UsageMetadata(
        input_tokens=usage.get("prompt_tokens", 0),
        output_tokens=usage.get("completion_tokens", 0),
        total_tokens=usage.get("total_tokens", 0),
    )


def _raise_for_status(reply: httpx.Response) -> None:
    """llama-server's refusals (a prompt longer than the context, a grammar it cannot build) with its reason."""
    if reply.status_code < 400:
        return
    try:
        detail = reply.json().get("error", {}).get("message") or reply.text
    except ValueError:
        detail = reply.text
    raise LocalModelError(f"the embedded model refused the call (HTTP {reply.status_code}): {detail[:300]}")
