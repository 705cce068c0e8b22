"""What graph nodes use besides their state: the index and the chat model, opened once per process and shared.

Tests (and Python callers) pass their own chat model or index to `Services`; the graphs registered with LangGraph
server use the defaults, resolved from each run's Context and the environment's Settings.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from pagegraph.access.runs import caller_access
from pagegraph.config import Context, Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.store.index import Index, open_index, stored_manifest


class Services:
    def __init__(
        self, settings: Settings | None = None, *, chat_model: BaseChatModel | None = None, index: Index | None = None
    ) -> None:
        self.settings = settings or get_settings()
        self._chat_model = chat_model
        self._index = index
        self._indexes: dict[Path, Index] = {}
        self._replaced: list[Index] = []  # a run may still read one; closed with the rest
        self._models: dict[tuple[str | None, float], BaseChatModel] = {}
        self._lock = threading.Lock()

    def index_folder(self, context: Context) -> Path:
        """The run's index: Context.index, else Settings.index. A LangGraph server user cannot pick another folder
        on the server's disk than the one the server was started with."""
        if self._index is not None:
            return self._index.folder
        configured = Path(self.settings.index).expanduser().resolve()
        folder = Path(context.index).expanduser().resolve() if context.index else configured
        if folder != configured and caller_access() is not None:
            raise PagegraphError(f"context index {context.index!r}: server users answer from the server's index")
        return folder

    def has_index(self, context: Context) -> bool:
        """Whether the run's index exists; one this process has open answers over its own store (a database index
        would otherwise be reached over new connections twice a question)."""
        if self._index is not None:
            return True
        folder = self.index_folder(context)
        with self._lock:
            cached = self._indexes.get(folder)
        if cached is not None:
            return cached.exists()
        return stored_manifest(folder, self.settings) is not None

    def index(self, context: Context) -> Index:
        """The run's index, read-only; reopened when an ingest has changed it since it was opened."""
        if self._index is not None:
            return self._index
        folder = self.index_folder(context)
        with self._lock:
            cached = self._indexes.get(folder)
            if cached is not None:
                if cached.committed_generation() == cached.store_generation:
                    return cached
                self._replaced.append(cached)
            index = cached.successor() if cached is not None else open_index(folder, self.settings)
            self._indexes[folder] = index
            return index

    def chat_model(self, context: Context, temperature: float | None = None) -> BaseChatModel:
        if self._chat_model is not None:
            return self._chat_model
        from pagegraph.llm.factory import get_chat_model

        spec = context.model or context.model_profile
        if spec is not None and caller_access() is not None and spec not in self.settings.server.server_models:
            offered = ", ".join(self.settings.server.server_models) or "only the server's default"
            raise PagegraphError(
                f"context model {spec!r}: server users choose among the models the server offers ({offered}; "
                "PAGEGRAPH_SERVER_MODELS)"
            )
        temperature = context.temperature if temperature is None else temperature
        with self._lock:
            key = (spec, temperature)
            if key not in self._models:
                self._models[key] = get_chat_model(spec, temperature=temperature, settings=self.settings)
            return self._models[key]

    def warm(self, context: Context) -> None:
        """Load what a first question would otherwise wait for: the index and its embedder (one query embedded), and
        the default chat model — its provider's client library, or the embedded model's process (started, or found
        running, and checked with one short reply). A server replica does this at start, so that the first run it
        takes is as fast as the next."""
        from pagegraph.llm.local import LlamaCppChatModel

        if self.has_index(context):
            self.index(context).embedder.embed_queries(["warm"])
        model = self.chat_model(context)
        if isinstance(model, LlamaCppChatModel):
            model.endpoint()

    def close(self) -> None:
        """Close the indexes this object opened (not one it was given), those an ingest replaced included."""
        with self._lock:
            for index in [*self._replaced, *self._indexes.values()]:
                index.close()
            self._indexes.clear()
            self._replaced.clear()


@functools.cache
def default_services() -> Services:
    """The Services every graph built without its own shares (the graphs LangGraph server loads, one per name):
    one index and one model per process."""
    return Services()
