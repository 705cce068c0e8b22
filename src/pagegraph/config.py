"""Settings: machine-level knobs read from the environment (`PAGEGRAPH_*`).

Per-run knobs that Studio shows (`Context`) join this module with the question graphs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def _cache_home() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGEGRAPH_", env_file=".env", extra="ignore")

    index: Path = Field(
        default_factory=lambda: _data_home() / "pagegraph" / "index",
        description="index folder used when --index is not given",
    )
    cache_dir: Path = Field(
        default_factory=lambda: _cache_home() / "pagegraph",
        description="where exported ONNX embedders and the joined local model weights are kept",
    )
    embedding_backend: Literal["auto", "onnx", "torch"] = Field(
        default="auto", description="auto: ONNX Runtime when the onnx exporter and runtime are installed, else torch"
    )
    embedding_threads: int = Field(
        default=0, ge=0, description="CPU threads for embedding; 0 uses every core the process may run on"
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)
    chroma_url: str | None = Field(
        default=None, description="http://HOST:PORT of a `chroma run` server; unset keeps vectors in the index folder"
    )

    model: str = Field(
        default="local",
        description="chat model spec: local | local-fast | gguf:PATH | ollama:NAME | openai:NAME | PROVIDER:NAME, "
        "or a profile name (cheap | balanced | premium)",
    )
    model_cheap: str = Field(default="local-fast", description="spec the `cheap` profile stands for")
    model_balanced: str = Field(default="local", description="spec the `balanced` profile stands for")
    model_premium: str = Field(
        default="local", description="spec the `premium` profile stands for; point it at a stronger model you run"
    )
    llm_threads: int = Field(
        default=0,
        ge=0,
        description="CPU threads for the local model; 0 picks half the cores the process may use (at least 1), "
        "since two threads collapse when another process competes for a 2-core machine",
    )
    llm_context_tokens: int = Field(default=8192, ge=1024, le=32768, description="local model context window")
    llm_batch_size: int = Field(
        default=512, ge=8, le=4096, description="prompt tokens the local model evaluates per step"
    )
    llm_max_tokens: int = Field(default=1024, ge=16, description="longest reply a model may write")
    ollama_url: str = Field(default="http://127.0.0.1:11434", description="Ollama server for ollama:NAME specs")
    openai_base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint (llama.cpp server, vLLM, LM Studio) for openai:NAME specs; "
        "unset uses OpenAI's own API with OPENAI_API_KEY",
    )
    remote_context_tokens: int = Field(
        default=32768, ge=1024, description="context window assumed for models other than the local ones"
    )
    model_timeout_s: float = Field(default=120.0, gt=0, description="seconds to wait for a remote model's reply")
    model_retries: int = Field(default=1, ge=0, le=5, description="retries of a remote call that failed to connect")

    def local_model_threads(self) -> int:
        if self.llm_threads:
            return self.llm_threads
        return max(1, len(os.sched_getaffinity(0)) // 2)


def get_settings() -> Settings:
    return Settings()
