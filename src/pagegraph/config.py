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
        description="where exported ONNX embedders (and later joined model weights) are kept",
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


def get_settings() -> Settings:
    return Settings()
