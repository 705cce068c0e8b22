"""Copy an index into another without re-reading or re-embedding (`pagegraph ingest --from-index DIR`): e.g. a
folder index into a database. Each document commits whole in the target; one already there with the same content
is left alone, so a stopped copy goes on where it stopped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pagegraph.errors import IndexMismatchError
from pagegraph.ingest.tree_summaries import section_vectors
from pagegraph.state.documents import Chunk, DocumentRecord, TreeNode
from pagegraph.store.index import Index
from pagegraph.store.records import DocumentWrite, SectionSummaries


@dataclass
class TransferReport:
    copied: int = 0
    unchanged: int = 0
    chunks: int = 0
    eval_runs: int = 0


def copy_index(
    source: Index, target: Index, on_document: Callable[[DocumentRecord, bool], None] | None = None
) -> TransferReport:
    """Copy every document of `source` (pages, tree, chunks with their vectors, summaries), the section-summary
    cache and the eval runs into `target`, which must have been built with the same parameters."""
    if source.params != target.params:
        listed = ", ".join(
            f"{key}: source has {old!r}, target has {new!r}"
            for key, (old, new) in source.params.differences(target.params).items()
        )
        raise IndexMismatchError(f"the indexes were built with other parameters ({listed}); nothing was copied")
    report = TransferReport()
    summaries = source.store.summaries()
    for document in source.store.documents():
        stored = target.store.document_by_path(document.path)
        if stored is not None and stored.sha256 == document.sha256:
            report.unchanged += 1
            if on_document:
                on_document(document, False)
            continue
        chunks, vectors = source.store.chunks_with_vectors(document.id, source.params.embedding_dimension)
        pages, tree = source.store.pages(document.id), source.store.tree(document.id)
        sections = _sections(source, document.id, tree, chunks, vectors)
        copy = DocumentWrite(document, pages, tree, chunks, vectors, summaries.get(document.id), sections)
        target.commit_document(copy, replaces=stored.id if stored else None)
        report.copied += 1
        report.chunks += len(chunks)
        if on_document:
            on_document(document, True)
    target.store.add_to_summary_cache(source.store.summary_cache())
    known = {run.id for run in target.store.eval_runs()}
    for run in source.store.eval_runs():
        if run.id not in known:
            target.store.save_eval_run(run)
            report.eval_runs += 1
    target.make_searchable()
    return report


def _sections(
    source: Index, document_id: str, tree: list[TreeNode], chunks: list[Chunk], vectors: np.ndarray
) -> SectionSummaries | None:
    """The document's section summaries, their vectors taken from its chunks (as the target's ingest would; the
    source may predate that)."""
    nodes = source.store.sections(document_id)
    if not nodes:
        return None
    return SectionSummaries(nodes, section_vectors(nodes, tree, chunks, vectors))
