"""Chunk vectors in Chroma: a persistent folder inside the index by default, or a `chroma run` server."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.config import Settings as ChromaSettings

from pagegraph.errors import PagegraphError
from pagegraph.llm.embedder import ChromaEmbeddingFunction
from pagegraph.state.documents import CONFIDENTIALITY_LEVELS, Chunk, day_number
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.filters import chroma_where, excludes_everything

log = logging.getLogger(__name__)

CHROMA_DIR = "chroma"
# Chroma shares one system per folder in a process and counts its clients, but a client opening while another closes
# can find the system gone (KeyError on the folder): opening and closing go one at a time.
_CLIENTS = threading.Lock()


def chunk_metadata(chunk: Chunk) -> dict[str, str | int | float | bool | None]:
    """Flat metadata for pre-filtering: Chroma accepts scalars only. A tag the document lacks is None: left out when
    the chunk is added, and dropped from what Chroma holds when its metadata is updated (an update merges)."""
    tags = chunk.tags
    meta: dict[str, str | int | float | bool | None] = {
        **chunk.location(),
        "confidentiality": tags.confidentiality,
        "confidentiality_rank": CONFIDENTIALITY_LEVELS.index(tags.confidentiality),
        "project": tags.project or None,
        "source_type": tags.source_type or None,
        "date": day_number(tags.date) if tags.date else None,
    }
    for key, value in tags.extra.items():
        meta[f"tag_{key}"] = value
    return meta


class VectorStore:
    def __init__(
        self, folder: Path, index_id: str, embedding_function: ChromaEmbeddingFunction, url: str | None
    ) -> None:
        telemetry = ChromaSettings(anonymized_telemetry=False)
        if url:
            parsed = urlparse(url)
            if not parsed.hostname or not parsed.port:
                raise PagegraphError(f"PAGEGRAPH_CHROMA_URL={url!r}: expected http://HOST:PORT")
            try:
                self._client = chromadb.HttpClient(
                    host=parsed.hostname, port=parsed.port, ssl=parsed.scheme == "https", settings=telemetry
                )
                self._client.heartbeat()
            except Exception as exc:
                raise PagegraphError(
                    f"Chroma server at {url} is not reachable ({type(exc).__name__}): start it with "
                    f"`chroma run --path DIR --host {parsed.hostname} --port {parsed.port}` or unset PAGEGRAPH_CHROMA_URL"
                ) from exc
        else:
            with _CLIENTS:
                self._client = chromadb.PersistentClient(path=str(folder / CHROMA_DIR), settings=telemetry)
        self._name = f"pagegraph-{index_id[:12]}-chunks"
        self._embedding_function = embedding_function
        self._collection = self._open()

    def _open(self) -> chromadb.Collection:
        return self._client.get_or_create_collection(
            self._name,
            embedding_function=self._embedding_function,  # type: ignore[arg-type]  # chromadb's type is for images too
            configuration={"hnsw": {"space": "cosine"}},
        )

    @property
    def client(self) -> ClientAPI:
        return self._client

    @property
    def collection_name(self) -> str:
        return self._name

    def count(self) -> int:
        return self._collection.count()

    def add(self, chunks: list[Chunk], embeddings: np.ndarray) -> None:
        batch = self._client.get_max_batch_size()
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            self._collection.upsert(
                ids=[chunk.id for chunk in part],
                embeddings=embeddings[start : start + batch],
                documents=[chunk.text for chunk in part],
                metadatas=[{k: v for k, v in chunk_metadata(chunk).items() if v is not None} for chunk in part],
            )

    def ids(self) -> set[str]:
        held: set[str] = set()
        step = self._client.get_max_batch_size()
        offset = 0
        while batch := self._collection.get(include=[], limit=step, offset=offset)["ids"]:
            held.update(batch)
            offset += len(batch)
        return held

    def update_metadata(self, chunks: list[Chunk]) -> None:
        """Write the chunks' metadata anew (after a retag): a tag the document no longer has (its date, say) goes as
        None, which Chroma drops."""
        batch = self._client.get_max_batch_size()
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            self._collection.update(ids=[c.id for c in part], metadatas=[chunk_metadata(c) for c in part])

    def delete_document(self, document_id: str) -> None:
        self._collection.delete(where={"document_id": document_id})

    def search(self, embedding: np.ndarray, k: int, flt: RetrievalFilter | None = None) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the chunks the filter lets through, nearest first."""
        if excludes_everything(flt):
            return []
        where = chroma_where(flt)
        found = self._collection.query(query_embeddings=[embedding], n_results=k, where=where, include=["distances"])
        return list(zip(found["ids"][0], (found["distances"] or [[]])[0]))

    def close(self) -> None:
        """Release the client (Chroma shares one per folder in a process, counted by reference)."""
        with _CLIENTS:
            self._client.close()  # type: ignore[attr-defined]  # chromadb's clients have it; ClientAPI does not say so

    def drop(self) -> None:
        try:
            self._client.delete_collection(self._name)
        except Exception:
            log.debug("collection %s did not exist", self._name)

    def reset(self) -> None:
        self.drop()
        self._collection = self._open()
