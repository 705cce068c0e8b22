"""The typed contract shared by ingest, storage, retrieval and the graphs: documents, chunks, the search filter
(`filters`), answers and evaluation records (the records of rights are in `pagegraph.access.records`)."""

from pagegraph.state.documents import (
    CONFIDENTIALITY_LEVELS,
    Chunk,
    Confidentiality,
    DocumentRecord,
    DocumentTags,
    LoadedDocument,
    OutlineEntry,
    Page,
    SourceType,
    TranscriptSegment,
    TreeNode,
)
from pagegraph.state.evaluation import EvalQuestion, EvalRun, GoldEvidence

__all__ = [
    "CONFIDENTIALITY_LEVELS",
    "Chunk",
    "Confidentiality",
    "DocumentRecord",
    "DocumentTags",
    "EvalQuestion",
    "EvalRun",
    "GoldEvidence",
    "LoadedDocument",
    "OutlineEntry",
    "Page",
    "SourceType",
    "TranscriptSegment",
    "TreeNode",
]
