"""The embedded chat model: a GGUF file run in-process by llama.cpp, as a LangChain chat model.

Written against `llama_cpp.Llama` directly rather than langchain-community's ChatLlamaCpp because that wrapper
loads its own copy of the weights per instance, reports no token usage when streaming, ships unsafe defaults
(n_ctx 512, n_batch 8, temperature 0.8, a rope_freq_base that overrides the model's) and is not safe to call from
two threads at once, which LangGraph's server does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel, generate_from_stream
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field

from pagegraph.llm.calls import EMBEDDED_LLM_TYPE, message_text
from pagegraph.llm.structured import structured_runnable
from pagegraph.llm.weights import LocalModelError

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


@dataclass
class _LoadedModel:
    llama: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


_loaded: dict[tuple[str, int, int, int], _LoadedModel] = {}
_loading = threading.Lock()


def _load(path: str, n_ctx: int, n_threads: int, n_batch: int) -> _LoadedModel:
    """One llama.cpp instance per weights file and shape, shared by every chat model object in the process."""
    key = (path, n_ctx, n_threads, n_batch)
    with _loading:
        if key not in _loaded:
            if not Path(path).is_file():
                raise LocalModelError(f"{path}: model file not found")
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LocalModelError(
                    "llama-cpp-python is not installed; run `bash scripts/setup.sh` (or `pip install -e .`)"
                ) from exc
            try:
                llama = Llama(
                    model_path=path,
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_threads_batch=n_threads,
                    n_batch=n_batch,
                    rope_freq_base=0.0,  # 0 keeps the value stored in the GGUF file
                    verbose=False,
                )
            except (ValueError, RuntimeError) as exc:
                raise LocalModelError(f"{Path(path).name}: llama.cpp could not load it ({exc})") from exc
            _loaded[key] = _LoadedModel(llama)
        return _loaded[key]


class TokenLogprobs:
    """A llama.cpp logits processor that records the log-probability of each token the model generates under its
    own distribution (before a grammar or sampling settings narrow it), and with `top` the `top` likeliest tokens of
    each distribution, as OpenAI-compatible servers report them (`logprobs`, `top_logprobs`). llama-cpp-python's own
    `logprobs` needs `logits_all=True`, which keeps the logits of every prompt token too (gigabytes at an 8k
    context); this keeps one distribution at a time."""

    def __init__(self, piece: Callable[[int], bytes], tokenize: Callable[[bytes], list[int]], top: int = 0) -> None:
        self.piece, self.tokenize, self.top = piece, tokenize, top
        self.tokens: list[tuple[int, float, list[tuple[int, float]]]] = []
        self._previous: np.ndarray | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._previous is not None:  # the token chosen from the previous distribution is the last one now
            self._record(int(input_ids[-1]))
        top = float(scores.max())
        self._previous = scores - top - np.log(np.exp(scores - top).sum())
        return scores

    def _record(self, token: int) -> None:
        assert self._previous is not None
        likeliest = np.argsort(-self._previous)[: self.top] if self.top else []
        alternatives = [(int(t), round(float(self._previous[t]), 4)) for t in likeliest]
        self.tokens.append((token, round(float(self._previous[token]), 4), alternatives))
        self._previous = None

    def _text(self, token: int) -> str:
        return self.piece(token).decode("utf-8", errors="replace")

    def metadata(self, text: str) -> dict[str, Any]:
        """The recorded tokens in the OpenAI form. A reply cut by its token cap ends on a token no later
        distribution revealed: it is what `text` (the reply) holds beyond the recorded tokens."""
        written = "".join(self._text(token) for token, _, _ in self.tokens)
        if self._previous is not None and text.startswith(written) and text[len(written) :]:
            last = self.tokenize(text[len(written) :].encode("utf-8"))
            if len(last) == 1:
                self._record(last[0])
        content = []
        for token, logprob, alternatives in self.tokens:
            item: dict[str, Any] = {"token": self._text(token), "logprob": logprob}
            if self.top:
                item["top_logprobs"] = [{"token": self._text(t), "logprob": lp} for t, lp in alternatives]
            content.append(item)
        return {"logprobs": {"content": content}}


class LlamaCppChatModel(BaseChatModel):
    """Chat model over a local GGUF file. Calls from several threads queue on one lock per loaded model."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str = Field(description="the GGUF file")
    model_name: str = Field(description="name shown in traces and errors")
    n_ctx: int = Field(default=8192, ge=256, description="context window in tokens")
    n_threads: int = Field(default=1, ge=1)
    n_batch: int = Field(default=512, ge=1, description="prompt tokens evaluated per step")
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

    def loaded(self) -> _LoadedModel:
        return _load(self.model_path, self.n_ctx, self.n_threads, self.n_batch)

    def with_structured_output(
        self, schema: type[BaseModel], *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, Any]:
        """LangChain's structured output for the local model (it has no tool calling): the schema becomes a
        llama.cpp grammar and the reply is read by pagegraph's forgiving parser, with one repair call."""

        return structured_runnable(self, schema, include_raw)

    def get_num_tokens(self, text: str) -> int:
        model = self.loaded()
        return len(model.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    @staticmethod
    def _recorder(model: _LoadedModel, kwargs: dict[str, Any]) -> TokenLogprobs:
        return TokenLogprobs(
            lambda token: model.llama.detokenize([token]),
            lambda text: model.llama.tokenize(text, add_bos=False, special=False),
            top=int(kwargs.get("top_logprobs") or 0),
        )

    def _request(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any], recorder: TokenLogprobs
    ) -> dict[str, Any]:
        from llama_cpp import LogitsProcessorList

        request = {
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
        if "response_format" not in request:
            # token probabilities are read for free-text answers (their confidence); a grammar-constrained reply
            # is left to llama.cpp's own sampling path untouched
            request["logits_processor"] = LogitsProcessorList([recorder])
        return request

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))
        model = self.loaded()
        recorder = self._recorder(model, kwargs)
        with model.lock:
            response = model.llama.create_chat_completion(**self._request(messages, stop, kwargs, recorder))
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        content = choice["message"].get("content") or ""
        message = AIMessage(
            content=content,
            usage_metadata=UsageMetadata(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ),
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": choice.get("finish_reason"),
                **recorder.metadata(content),
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
        model = self.loaded()
        recorder = self._recorder(model, kwargs)
        request = self._request(messages, stop, kwargs, recorder)
        with model.lock:
            generated, written = 0, []
            finish_reason = None
            for part in model.llama.create_chat_completion(stream=True, **request):
                choice = part["choices"][0] if part.get("choices") else None
                if choice is None:
                    continue
                finish_reason = choice.get("finish_reason") or finish_reason
                text = (choice.get("delta") or {}).get("content") or ""
                if not text:
                    continue
                generated += 1
                written.append(text)
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
            # llama.cpp reports no usage while streaming; its context now holds the prompt and the generated tokens
            prompt_tokens = max(0, model.llama.n_tokens - generated)
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=UsageMetadata(
                    input_tokens=prompt_tokens, output_tokens=generated, total_tokens=prompt_tokens + generated
                ),
                response_metadata={
                    "model_name": self.model_name,
                    "finish_reason": finish_reason,
                    **recorder.metadata("".join(written)),
                },
            )
        )
