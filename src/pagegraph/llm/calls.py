"""One way to call a chat model: timed, with token usage recorded, and connection failures explained."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from contextlib import closing
from time import perf_counter
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message

from pagegraph.errors import ModelUnavailableError
from pagegraph.llm.stop import RUN_STOP, raise_if_stopped
from pagegraph.state.usage import ModelCall

CHARS_PER_TOKEN_ESTIMATE = 3.5


# Providers whose models pagegraph knows how to constrain and name: the chat model base class of each optional
# package. A model of such a class can only exist once its package is imported, so the class is looked up among the
# imported modules and nothing is imported here.
_PROVIDERS = {
    "ollama": ("langchain_ollama.chat_models", "ChatOllama", "http://127.0.0.1:11434"),
    "openai": ("langchain_openai.chat_models.base", "BaseChatOpenAI", "https://api.openai.com/v1"),
}


def provider(model: BaseChatModel) -> Literal["ollama", "openai"] | None:
    """The provider whose chat model class `model` is (or derives from), when pagegraph knows it."""
    for name, (module, class_name, _) in _PROVIDERS.items():
        cls = getattr(sys.modules.get(module), class_name, None)
        if cls is not None and isinstance(model, cls):
            return name  # type: ignore[return-value]
    return None


EMBEDDED_LLM_TYPE = "llama-cpp"  # LlamaCppChatModel's `_llm_type`: the model pagegraph runs in its own process


def embedded(model: BaseChatModel) -> bool:
    """Whether `model` is pagegraph's embedded llama.cpp model (llm.local), which takes a JSON-schema grammar
    and a reply cap per call."""
    return getattr(model, "_llm_type", None) == EMBEDDED_LLM_TYPE


def model_label(model: BaseChatModel) -> str:
    """`ollama:llama3.2`, `openai:gpt-4o-mini`, `local (Qwen…)`: how traces and errors name a model."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
    kind = provider(model)
    return f"{kind}:{name}" if kind else str(name)


def model_endpoint(model: BaseChatModel) -> str | None:
    for attribute in ("base_url", "openai_api_base"):
        if value := getattr(model, attribute, None):
            return str(value)
    kind = provider(model)
    return _PROVIDERS[kind][2] if kind else None


def _causes(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _is_timeout(exc: BaseException) -> bool:
    name = type(exc).__name__
    return isinstance(exc, TimeoutError) or name in {
        "APITimeoutError",
        "ReadTimeout",
        "ConnectTimeout",
        "TimeoutException",
    }


def _is_refused(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionError) or type(exc).__name__ in {"APIConnectionError", "ConnectError"}


def explain_model_failure(model: BaseChatModel, exc: BaseException) -> ModelUnavailableError | None:
    """A user-facing error when `exc` means the model's server cannot be used; None for other failures."""
    label, endpoint = model_label(model), model_endpoint(model)
    where = f"{label} at {endpoint}" if endpoint else label
    is_ollama = label.startswith("ollama:")
    start = "start it with `ollama serve`" if is_ollama else "start the server or fix its address"
    for cause in _causes(exc):
        if _is_timeout(cause):
            return ModelUnavailableError(
                f"{where} did not answer in time: raise PAGEGRAPH_MODEL_TIMEOUT_S or pick a faster model with --model"
            )
        if _is_refused(cause):
            return ModelUnavailableError(f"{where} refused the connection: {start} or pick another model with --model")
        if is_ollama and getattr(cause, "status_code", None) == 404:
            name = label.split(":", 1)[1]
            return ModelUnavailableError(
                f"{where} does not have model {name}: run `ollama pull {name}` or pick another model with --model"
            )
        if type(cause).__name__ == "AuthenticationError":
            return ModelUnavailableError(f"{where} rejected the API key: set the provider's API key variable")
    return None


def estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / CHARS_PER_TOKEN_ESTIMATE)) if text else 0


def message_text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in message.content)


def _logprob_items(reply: BaseMessage) -> list:
    """The reply's per-token entries in the OpenAI form (`response_metadata["logprobs"]["content"]`: the embedded
    model always; ChatOpenAI and other OpenAI-compatible clients with `logprobs=True`); empty without them."""
    metadata = getattr(reply, "response_metadata", None) or {}
    logprobs = metadata.get("logprobs")
    return (logprobs.get("content") if isinstance(logprobs, dict) else None) or []


def token_logprobs(reply: BaseMessage) -> list[tuple[str | None, float]]:
    """The reply's tokens (their text where the model reported it) with their log-probabilities; empty when the
    model reported none."""
    content = _logprob_items(reply)
    return [
        (item.get("token") if isinstance(item.get("token"), str) else None, float(item["logprob"]))
        for item in content
        if isinstance(item, dict) and item.get("logprob") is not None
    ]


def token_alternatives(reply: BaseMessage) -> list[tuple[str | None, list[tuple[str, float]]]]:
    """Each token of the reply (its text where reported) with the likeliest tokens the model could have written
    there and their probabilities, from the OpenAI form's `top_logprobs` (the embedded model and OpenAI-compatible
    servers when asked for them); empty without them."""
    found = []
    for item in _logprob_items(reply):
        if not isinstance(item, dict):
            continue
        options = [
            (option["token"], math.exp(float(option["logprob"])))
            for option in item.get("top_logprobs") or []
            if isinstance(option, dict) and isinstance(option.get("token"), str) and option.get("logprob") is not None
        ]
        found.append((item.get("token") if isinstance(item.get("token"), str) else None, options))
    return found


def first_token_alternatives(reply: BaseMessage) -> list[tuple[str, float]]:
    """The likeliest first tokens the model could have written, with their probabilities (`token_alternatives`)."""
    tokens = token_alternatives(reply)
    return tokens[0][1] if tokens else []


def token_probability(reply: BaseMessage) -> float | None:
    """The geometric mean of the reply's token probabilities; None when the model reported none."""
    values = [logprob for _, logprob in token_logprobs(reply)]
    if not values:
        return None
    return round(math.exp(sum(values) / len(values)), 4)


def _streamed(model: BaseChatModel, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
    """The model's reply, streamed and stopped between tokens once the run is cancelled; closing the stream closes
    the request."""
    reply: AIMessageChunk | None = None
    with closing(model.stream(messages, **kwargs)) as chunks:  # type: ignore[type-var]  # a generator, typed as an Iterator
        for chunk in chunks:
            raise_if_stopped("the rest of the reply")
            reply = chunk if reply is None else reply + chunk
    return message_chunk_to_message(reply) if reply is not None else AIMessage(content="")  # type: ignore[return-value]


def invoke_model(
    model: BaseChatModel, messages: Sequence[BaseMessage], *, purpose: str, **kwargs: Any
) -> tuple[AIMessage, ModelCall]:
    """Call the model once. Raises ModelUnavailableError (one clear line) when its server cannot be used, and
    RunCancelled when the run this call is for has been cancelled (`llm.stop`): before calling it, and, in a run that
    can be cancelled (as the server runs them), between the tokens of its reply, which is streamed there so that a
    cancellation closes the request and the model's server stops generating it."""
    raise_if_stopped(f"the {purpose} call")
    started = perf_counter()
    try:
        if RUN_STOP.get() is not None and isinstance(model, BaseChatModel):
            reply = _streamed(model, list(messages), kwargs)
        else:
            reply = model.invoke(list(messages), **kwargs)
    except ModelUnavailableError:
        raise
    except Exception as exc:
        explained = explain_model_failure(model, exc)
        if explained is not None:
            raise explained from exc
        raise
    latency_ms = (perf_counter() - started) * 1000
    usage = getattr(reply, "usage_metadata", None)
    metadata = getattr(reply, "response_metadata", None) or {}
    call = ModelCall(
        model=model_label(model),
        purpose=purpose,
        prompt_tokens=usage["input_tokens"] if usage else sum(estimate_tokens(message_text(m)) for m in messages),
        completion_tokens=usage["output_tokens"] if usage else estimate_tokens(message_text(reply)),
        latency_ms=round(latency_ms, 1),
        estimated=not usage,
        finish_reason=metadata.get("finish_reason") or metadata.get("done_reason"),
        token_probability=token_probability(reply),
    )
    return reply, call
