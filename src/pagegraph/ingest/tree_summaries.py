"""Section summaries for the tree index, written bottom-up: a leaf from its text, an inner section from its own
opening text and its children's summaries. Sections shorter than `min_chars` keep their text as it is (no model
call); summaries are cached by content, so re-ingesting a document only summarises the sections that changed."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, Protocol

import numpy as np
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from pagegraph.llm.calls import invoke_model, message_text, model_label
from pagegraph.llm.structured import reply_cap
from pagegraph.prompts.summaries import NODE_SUMMARY_REQUEST, NODE_SUMMARY_SYSTEM
from pagegraph.state.documents import Chunk, NodeSummary, TreeNode
from pagegraph.text.tables import plain_rows

Language = Literal["en", "zh"]
MAX_SECTION_CHARS = 6000
EXTRACT_CHARS = 400
TEXT_WRITER = "text"
EXTRACTIVE_WRITER = "extractive"
SECTION_VECTOR_RECIPE = "chunk-mean"  # recorded in the index: see section_vectors
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def detect_language(text: str) -> Language:
    """Chinese when CJK ideographs make up over 30% of the letters, else English."""
    sample = text[:2000]
    letters = sum(ch.isalpha() for ch in sample)
    ideographs = sum("\u4e00" <= ch <= "\u9fff" for ch in sample)
    return "zh" if letters and ideographs / letters > 0.3 else "en"


class NodeTextSummarizer(Protocol):
    key: str  # names the summarizer in the cache: a different model writes different summaries

    def summarize(self, title: str, content: str, language: Language) -> str: ...


class ExtractiveNodeSummarizer:
    """No model: the section's opening sentences."""

    key = EXTRACTIVE_WRITER

    def summarize(self, title: str, content: str, language: Language) -> str:
        text = " ".join(plain_rows(content).split())
        summary = ""
        for sentence in _SENTENCE_END.split(text):
            if summary and len(summary) + len(sentence) > EXTRACT_CHARS:
                break
            summary = f"{summary} {sentence}".strip() if language == "en" else summary + sentence
        return summary[: EXTRACT_CHARS * 2] or title


class ModelNodeSummarizer:
    """The chat model writes two or three sentences in the section's language; an empty reply falls back to the
    opening sentences."""

    def __init__(self, model: BaseChatModel, max_tokens: int | None = None) -> None:
        self.model = model
        self.key = model_label(model)
        self.max_tokens = max_tokens
        self.fallback = ExtractiveNodeSummarizer()

    def summarize(self, title: str, content: str, language: Language) -> str:
        messages = [
            SystemMessage(content=NODE_SUMMARY_SYSTEM[language]),
            HumanMessage(content=NODE_SUMMARY_REQUEST[language].format(title=title, content=content)),
        ]
        reply, _ = invoke_model(self.model, messages, purpose="node_summary", **reply_cap(self.model, self.max_tokens))
        return " ".join(message_text(reply).split()) or self.fallback.summarize(title, content, language)


def own_text(node: TreeNode, by_id: Mapping[str, TreeNode]) -> str:
    """A section's text before its first subsection (all of it for a leaf)."""
    end = node.own_end(by_id)
    return node.text if end == node.end_offset else node.text[: end - node.start_offset].strip()


def cache_key(summarizer: NodeTextSummarizer, language: Language, title: str, content: str) -> str:
    return hashlib.sha256(f"{summarizer.key}\n{language}\n{title}\n{content}".encode()).hexdigest()


class TreeSummarizer:
    """Summaries for every node of a document's tree. `cached(key)` returns a summary written before, or None;
    `new_entries` collects what this run wrote, for the caller to store with the document."""

    def __init__(
        self,
        summarizer: NodeTextSummarizer,
        min_chars: int,
        workers: int,
        cached: Callable[[str], str | None],
    ) -> None:
        self.summarizer = summarizer
        self.min_chars = min_chars
        self.workers = workers
        self.cached = cached
        self.new_entries: dict[str, str] = {}

    def summarize(self, nodes: list[TreeNode]) -> list[NodeSummary]:
        by_id = {node.id: node for node in nodes}
        summaries: dict[str, NodeSummary] = {}
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            for level in sorted({node.level for node in nodes}, reverse=True):
                pending = {}
                for node in (n for n in nodes if n.level == level):
                    written = {c: summaries[c].summary for c in node.children_ids if c in summaries}
                    content = section_content(node, by_id, written)
                    if len(content) < self.min_chars:
                        summaries[node.id] = section_record(node, plain_rows(content), TEXT_WRITER)
                        continue
                    language = detect_language(content)
                    key = cache_key(self.summarizer, language, node.title, content)
                    if (known := self.cached(key) or self.new_entries.get(key)) is not None:
                        summaries[node.id] = section_record(node, known, self.summarizer.key)
                    else:
                        pending[node.id] = (key, pool.submit(self.summarizer.summarize, node.title, content, language))
                for node_id, (key, future) in pending.items():
                    self.new_entries[key] = future.result()
                    summaries[node_id] = section_record(by_id[node_id], self.new_entries[key], self.summarizer.key)
        return [summaries[node.id] for node in nodes]


def section_content(node: TreeNode, by_id: Mapping[str, TreeNode], child_summaries: Mapping[str, str]) -> str:
    """What a section is summarised from: its own text, then each child's title and summary."""
    children = [by_id[c] for c in node.children_ids if c in by_id]
    parts = [own_text(node, by_id)] + [f"{child.title}: {child_summaries[child.id]}" for child in children]
    return "\n".join(part for part in parts if part)[:MAX_SECTION_CHARS]


def section_record(node: TreeNode, summary: str, writer: str) -> NodeSummary:
    """The stored record of a section; `writer` TEXT_WRITER: its content kept as it is (tables as plain rows)."""
    return NodeSummary(
        node_id=node.id,
        parent_id=node.parent_id,
        children_ids=list(node.children_ids),
        level=node.level,
        is_leaf=not node.children_ids,
        is_summary=writer != TEXT_WRITER,
        title=node.title,
        summary=summary or node.title,
        start_page=node.start_page,
        end_page=node.end_page,
        writer=writer,
    )


def section_vectors(
    summaries: list[NodeSummary], nodes: list[TreeNode], chunks: list[Chunk], embeddings: np.ndarray
) -> np.ndarray:
    """One vector per section summary: the normalised mean of the vectors of the chunks its text overlaps, its
    subsections' included. The chunks were embedded with their section path, so this is what the section holds, at
    no embedding cost, and it does not change when a model rewrites the summary. A section no chunk overlaps has no
    text and gets zeros."""
    vectors = np.zeros((len(summaries), embeddings.shape[1]), dtype=np.float32)
    starts = np.array([chunk.start_offset for chunk in chunks])
    ends = np.array([chunk.end_offset for chunk in chunks])
    by_id = {node.id: node for node in nodes}
    for row, summary in enumerate(summaries):
        node = by_id[summary.node_id]
        overlapping = (starts < node.end_offset) & (ends > node.start_offset)
        if overlapping.any():
            mean = embeddings[overlapping].mean(axis=0)
            vectors[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return vectors
