"""The typed contract shared by indexing, retrieval and the graphs."""

from pagegraph.state.access import RetrievalFilter
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
    "RetrievalFilter",
    "SourceType",
    "TranscriptSegment",
    "TreeNode",
]
