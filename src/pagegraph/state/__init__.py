"""The typed contract shared by indexing, retrieval and the graphs."""

from pagegraph.state.records import (
    CONFIDENTIALITY_LEVELS,
    Chunk,
    Confidentiality,
    DocumentRecord,
    DocumentTags,
    EvalQuestion,
    EvalRun,
    GoldEvidence,
    LoadedDocument,
    OutlineEntry,
    Page,
    RetrievalFilter,
    SourceType,
    TranscriptSegment,
    TreeNode,
)

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
    "RetrievalFilter",
    "SourceType",
    "TranscriptSegment",
    "TreeNode",
]
