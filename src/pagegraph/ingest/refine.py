"""Model-written summaries as a refinement of an index that is already searchable.

Ingest writes extractive document and section summaries, so a document can be searched as soon as it is embedded.
`pagegraph summarize` then replaces them with the model's: the document summary first (the router reads it), then
the sections bottom-up, so that a section is summarised from its children's model summaries. Every summary is its
own small transaction in the store, without the index's writer lock: readers and an ingest of other files go on
meanwhile, a killed run loses at most the summary in flight, and what the model wrote is also cached by content, so
a re-ingested document reuses it. Summaries live in SQLite only (no Chroma, no BM25), so nothing else goes stale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.summaries import ModelSummarizer, SummarySource
from pagegraph.ingest.tree_summaries import (
    TEXT_WRITER,
    ModelNodeSummarizer,
    cache_key,
    detect_language,
    section_content,
    section_record,
)
from pagegraph.state.documents import DocumentRecord, NodeSummary, TreeNode
from pagegraph.store.index import open_index


@dataclass(frozen=True)
class Pending:
    """What one document still lacks: its model summary, and sections whose summary is not the model's."""

    document: DocumentRecord
    summary: bool
    sections: int

    @property
    def count(self) -> int:
        return int(self.summary) + self.sections


@dataclass
class RefineReport:
    documents: int = 0
    summaries: int = 0
    sections: int = 0
    model_calls: int = 0
    gone: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    seconds: float = 0.0


class RefineProgress:
    """Receives progress events; this base ignores them."""

    def start(self, total: int) -> None: ...
    def document_started(self, name: str) -> None: ...
    def summary_written(self, name: str, what: str, seconds: float) -> None: ...


def pending_sections(sections: list[NodeSummary], writer: str) -> int:
    """Sections summarised by someone other than `writer` (sections short enough to keep as text need no model)."""
    return sum(s.is_summary and s.writer != writer for s in sections)


class SummaryRefiner:
    def __init__(
        self,
        folder: Path,
        settings: Settings,
        model: BaseChatModel,
        progress: RefineProgress | None = None,
    ) -> None:
        self.records = open_index(folder, settings, records_only=True)
        self.settings = settings
        self.summarizer = ModelSummarizer(model, settings.ingest.summary_max_tokens)
        self.section_summarizer = ModelNodeSummarizer(model, settings.ingest.section_max_tokens)
        self.progress = progress or RefineProgress()

    def close(self) -> None:
        self.records.close()

    def __enter__(self) -> SummaryRefiner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def writer(self) -> str:
        return self.section_summarizer.key

    def pending(self, names: list[str] | None = None, sections: bool = True) -> list[Pending]:
        """Documents (all, or those named) with summaries left to write, in index order (without `sections`: only
        the document summaries count)."""
        documents = self.records.documents()
        if names:
            known = {doc.name for doc in documents}
            if missing := [name for name in names if name not in known]:
                raise PagegraphError(f"not in the index: {', '.join(missing)}")
            documents = [doc for doc in documents if doc.name in names]
        summaries = self.records.summaries()
        found = []
        for doc in documents:
            stored = summaries.get(doc.id)
            todo = Pending(
                doc,
                summary=stored is None or stored.method != "model",
                sections=pending_sections(self.records.sections(doc.id), self.writer) if sections else 0,
            )
            if todo.count:
                found.append(todo)
        return found

    def run(self, names: list[str] | None = None, sections: bool = True) -> RefineReport:
        """Write what `pending` lists. Without `sections`, only the document summaries (what the router reads);
        the sections wait for a later run."""
        started = time.perf_counter()
        report = RefineReport()
        todo = self.pending(names, sections)
        self.progress.start(sum(item.count for item in todo))
        for item in todo:
            self.progress.document_started(item.document.name)
            report.documents += 1
            if item.summary and not self._summary(item.document, report):
                continue
            if sections:
                self._sections(item.document, report)
        report.seconds = time.perf_counter() - started
        return report

    def _summary(self, doc: DocumentRecord, report: RefineReport) -> bool:
        """Write the document's model summary; False when the document is gone."""
        began = time.perf_counter()
        source = SummarySource.from_parts(
            doc.name, doc.title, doc.source_type, self.records.pages(doc.id), self.records.tree(doc.id)
        )
        summary = self.summarizer.summarize(source)
        report.model_calls += 1
        if summary.method != "model":
            report.unreadable.append(f"{doc.name}: document summary")
            return True
        if not self.records.set_summary(doc.id, summary):
            report.gone.append(doc.name)
            return False
        report.summaries += 1
        self.progress.summary_written(doc.name, "document summary", time.perf_counter() - began)
        return True

    def _sections(self, doc: DocumentRecord, report: RefineReport) -> None:
        """Bottom-up over the document's tree: each section whose summary is not this model's gets it."""
        nodes = self.records.tree(doc.id)
        stored = {s.node_id: s for s in self.records.sections(doc.id)}
        if not stored:
            return
        by_id = {node.id: node for node in nodes}
        current = {node_id: s.summary for node_id, s in stored.items()}
        for node in sorted(nodes, key=lambda n: -n.level):
            if node.id not in stored:
                continue
            began = time.perf_counter()
            children = {c: current[c] for c in node.children_ids if c in current}
            content = section_content(node, by_id, children)
            before = stored[node.id]
            if len(content) < self.settings.ingest.section_min_chars:
                record, entry = section_record(node, content, TEXT_WRITER), None
                if record.summary == before.summary:
                    continue
            elif before.writer == self.writer:
                continue
            else:
                record, entry, called = self._written(node, content)
                report.model_calls += called
            if not self.records.refine_section(doc.id, record, entry):
                report.gone.append(doc.name)
                return
            current[node.id] = record.summary
            if record.writer != TEXT_WRITER:
                report.sections += 1
                self.progress.summary_written(doc.name, node.title, time.perf_counter() - began)

    def _written(self, node: TreeNode, content: str) -> tuple[NodeSummary, tuple[str, str] | None, bool]:
        """The model's summary of a section (from the cache when it wrote this content before), the cache entry to
        store, and whether the model was called."""
        language = detect_language(content)
        key = cache_key(self.section_summarizer, language, node.title, content)
        if (known := self.records.cached_section_summary(key)) is not None:
            return section_record(node, known, self.writer), None, False
        summary = self.section_summarizer.summarize(node.title, content, language)
        return section_record(node, summary, self.writer), (key, summary), True
