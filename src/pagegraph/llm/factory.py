"""Turn a model spec into a LangChain chat model.

Specs: `local` (embedded Qwen2.5-Coder-1.5B), `local-fast` (Qwen2.5-Coder-0.5B), `gguf:PATH` (any GGUF file),
`ollama:NAME`, `openai:NAME` (with Settings.models.openai_base_url or base_url= for any OpenAI-compatible server),
`PROVIDER:NAME` for anything `init_chat_model` knows, and the profiles cheap/balanced/premium.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from pagegraph.config import Settings, get_settings
from pagegraph.errors import ModelError
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.weights import QWEN_CODER_0_5B, QWEN_CODER_1_5B, PackagedWeights, ensure_weights

LOCAL_MODELS: dict[str, PackagedWeights] = {"local": QWEN_CODER_1_5B, "local-fast": QWEN_CODER_0_5B}
PROFILES = ("cheap", "balanced", "premium")
SPEC_FORMS = (
    "local, local-fast, gguf:PATH, ollama:NAME, openai:NAME, PROVIDER:NAME, or a profile (cheap, balanced, premium)"
)


def resolve_spec(spec: str | None, settings: Settings) -> str:
    """The concrete spec behind `spec`: the configured default when None, a profile's target when a profile."""
    spec = (spec or settings.model).strip()
    if spec in PROFILES:
        target = getattr(settings.models, f"model_{spec}").strip()
        if target in PROFILES:
            raise ModelError(
                f"profile {spec} points at profile {target}; set PAGEGRAPH_MODEL_{spec.upper()} to a model spec"
            )
        return target
    return spec


def get_chat_model(
    spec: str | None = None,
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    base_url: str | None = None,
    streaming: bool | None = None,
    settings: Settings | None = None,
) -> BaseChatModel:
    """A chat model for `spec` (see module doc). Creating one never contacts a server; the first call does.

    `streaming` None streams tokens when someone listens (LangGraph's `messages` stream mode), True always, False
    never."""
    settings = settings or get_settings()
    spec = resolve_spec(spec, settings)
    max_tokens = max_tokens or settings.models.llm_max_tokens
    if spec in LOCAL_MODELS:
        weights = LOCAL_MODELS[spec]
        path = ensure_weights(weights, settings.cache_dir)
        return _local(str(path), f"{spec} ({weights.name})", temperature, max_tokens, streaming, settings)
    provider, sep, name = spec.partition(":")
    if not sep or not name:
        raise ModelError(f"model spec {spec!r} is not one of: {SPEC_FORMS}")
    if provider == "gguf":
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelError(f"gguf:{name}: no such file")
        return _local(str(path.resolve()), path.name, temperature, max_tokens, streaming, settings)
    if provider == "ollama":
        return _ollama(name, temperature, max_tokens, base_url or settings.models.ollama_url, streaming, settings)
    if provider == "openai":
        return _openai(name, temperature, max_tokens, base_url or settings.models.openai_base_url, streaming, settings)
    return _init_chat_model(provider, name, temperature, max_tokens, base_url, settings)


def _streaming(streaming: bool | None) -> dict[str, Any]:
    """Only an explicit choice is passed on: a model given `streaming=False` never streams, even to LangGraph."""
    return {} if streaming is None else {"streaming": streaming}


def _local(
    path: str, name: str, temperature: float, max_tokens: int, streaming: bool | None, settings: Settings
) -> LlamaCppChatModel:
    return LlamaCppChatModel(
        model_path=path,
        model_name=name,
        n_ctx=settings.models.llm_context_tokens,
        n_threads=settings.local_model_threads(),
        n_batch=settings.models.llm_batch_size,
        slots=settings.models.llm_slots,
        repack=settings.models.llm_repack,
        timeout_s=settings.models.llm_timeout_s,
        load_timeout_s=settings.models.llm_load_timeout_s,
        idle_s=settings.models.llm_idle_s,
        server_binary=settings.models.llama_server,
        process_folder=settings.model_process_folder(),
        temperature=temperature,
        max_tokens=max_tokens,
        **_streaming(streaming),
    )


def _ollama(
    name: str, temperature: float, max_tokens: int, url: str, streaming: bool | None, settings: Settings
) -> BaseChatModel:
    try:
        from langchain_ollama import ChatOllama
    except ImportError as exc:
        raise ModelError("ollama models need langchain-ollama: `pip install langchain-ollama`") from exc
    return ChatOllama(
        model=name,
        base_url=url,
        temperature=temperature,
        num_predict=max_tokens,
        num_ctx=settings.models.remote_context_tokens,
        **_streaming(streaming),
        client_kwargs={"timeout": settings.models.model_timeout_s},
    )


def _openai(
    name: str, temperature: float, max_tokens: int, url: str | None, streaming: bool | None, settings: Settings
) -> BaseChatModel:
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise ModelError("openai models need langchain-openai: `pip install langchain-openai`") from exc
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if url is None:
            raise ModelError(
                f"openai:{name} needs OPENAI_API_KEY, or PAGEGRAPH_OPENAI_BASE_URL for an OpenAI-compatible server"
            )
        api_key = "none"  # local OpenAI-compatible servers ignore the key but the client insists on one
    return ChatOpenAI(
        model=name,
        base_url=url,
        api_key=SecretStr(api_key),
        temperature=temperature,
        max_completion_tokens=max_tokens,
        **_streaming(streaming),
        timeout=settings.models.model_timeout_s,
        max_retries=settings.models.model_retries,
        logprobs=settings.models.model_logprobs or None,  # the judge reads P(Yes) from them
    )


def _init_chat_model(
    provider: str, name: str, temperature: float, max_tokens: int, base_url: str | None, settings: Settings
) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    options: dict[str, Any] = {
        "temperature": temperature,
        "max_tokens": max_tokens,
        "timeout": settings.models.model_timeout_s,
    }
    if base_url:
        options["base_url"] = base_url
    try:
        return init_chat_model(name, model_provider=provider, **options)
    except ImportError as exc:
        raise ModelError(f"{provider}:{name}: the provider's package is not installed ({exc})") from exc
    except ValueError as exc:
        raise ModelError(f"{provider}:{name}: {exc}; model specs are {SPEC_FORMS}") from exc
