"""The typed contract shared by indexing, retrieval and the graphs (the records of rights and the search filter are
in `pagegraph.access.records`)."""

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
