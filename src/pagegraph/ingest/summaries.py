"""Per-document summaries for the router: extracted without a model at ingest, written by the model later
(`pagegraph summarize`, ingest.refine)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from pagegraph.llm.calls import model_label
from pagegraph.llm.structured import structured_call
from pagegraph.prompts.summaries import SUMMARIZE_DOCUMENT, SUMMARIZE_SYSTEM
from pagegraph.state.answering import DocumentSummary, StoredSummary
from pagegraph.state.documents import Page, SourceType, TreeNode, names_a_section
from pagegraph.store.bm25 import tokenize, unspaced, word_count

SOURCE_TEXT_CHARS = 5000
OUTLINE_ENTRIES = 40
_DOCUMENT_TYPES = {
    SourceType.PDF: "PDF document",
    SourceType.MARKDOWN: "Markdown document",
    SourceType.TEXT: "text document",
    SourceType.DOCX: "Word document",
    SourceType.TRANSCRIPT: "transcript",
}
# sentence ends: a stop and a space; the stops of Chinese and Japanese (no space after them), of Devanagari and Arabic
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|(?<=[।॥؟۔])\s+")
_SECTION_NUMBER = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s+")
_MARKUP_LINE = re.compile(r"^\s*(?:#{1,6}\s|[-*+]\s|\d+\.\s|\||```)")


@dataclass
class SummarySource:
    """What a summary is written from: the title, the outline and the first pages."""

    name: str
    title: str
    source_type: SourceType
    outline: list[str]
    text: str

    @classmethod
    def from_parts(
        cls, name: str, title: str, source_type: SourceType, pages: list[Page], nodes: list[TreeNode]
    ) -> SummarySource:
        outline = ["  " * (n.level - 1) + n.title for n in nodes if n.level >= 1][:OUTLINE_ENTRIES]
        text = "\n\n".join(p.text for p in pages if p.text.strip())[:SOURCE_TEXT_CHARS]
        return cls(name=name, title=title, source_type=source_type, outline=outline, text=text)


class ExtractiveSummarizer:
    """No model: the title and opening sentences, the top-level outline (or the most frequent words) as topics."""

    def summarize(self, source: SummarySource) -> StoredSummary:
        prose = " ".join(line for line in source.text.splitlines() if not _MARKUP_LINE.match(line))
        sentences = [s.strip() for s in _SENTENCE.split(" ".join(prose.split())) if word_count(s) >= 5]
        summary = " ".join(sentences[:3])[:1000] or source.title
        headings = [(len(line) - len(line.lstrip()), line.strip()) for line in source.outline]
        # a heading that names nothing ("Pages 1–8", "4.", an identifier) is no topic
        headings = [
            (depth, _SECTION_NUMBER.sub("", title))
            for depth, title in headings
            if title != source.title and names_a_section(title, source.name)
        ]
        depths = sorted({depth for depth, _ in headings})
        # the shallowest outline level with at least two headings names the main topics
        level = next((d for d in depths if sum(depth == d for depth, _ in headings) >= 2), None)
        topics = [title for depth, title in headings if depth == level][:10]
        if len(topics) < 2:
            words = Counter(w for w in tokenize(source.text) if (len(w) > 3 or unspaced(w)) and not w.isdigit())
            topics = [word for word, _ in words.most_common(8)]
        return StoredSummary(
            document_type=_DOCUMENT_TYPES[source.source_type],
            summary=f"{source.title}. {summary}" if source.title and source.title not in summary else summary,
            key_topics=topics,
            use_for="questions about " + ", ".join(topics[:5]) if topics else "",
            method="extractive",
        )


class ModelSummarizer:
    """The configured chat model writes the summary; output that never validates falls back to the extractive one."""

    def __init__(self, model: BaseChatModel, max_tokens: int | None = None) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.fallback = ExtractiveSummarizer()

    def summarize(self, source: SummarySource) -> StoredSummary:
        extractive = self.fallback.summarize(source)
        messages = [
            SystemMessage(content=SUMMARIZE_SYSTEM),
            HumanMessage(
                content=SUMMARIZE_DOCUMENT.format(
                    name=source.name,
                    kind=_DOCUMENT_TYPES[source.source_type],
                    title=source.title,
                    outline="\n".join(source.outline) or "(none)",
                    text=source.text,
                )
            ),
        ]
        result = structured_call(
            self.model,
            DocumentSummary,
            messages,
            default=DocumentSummary(**extractive.model_dump(exclude={"method", "model"})),
            purpose="summarize",
            max_tokens=self.max_tokens,
        )
        if not result.ok:
            return extractive
        return StoredSummary(**result.value.model_dump(), method="model", model=model_label(self.model))
