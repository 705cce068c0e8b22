"""Per-document summaries for the router: extracted without a model at ingest, written by the model later
(`pagegraph summarize`, ingest.refine)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import regex
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from pagegraph.config import ReadingKnobs
from pagegraph.llm.calls import model_label
from pagegraph.llm.structured import structured_call
from pagegraph.prompts.summaries import SUMMARIZE_DOCUMENT, SUMMARIZE_SYSTEM
from pagegraph.state.answering import DocumentSummary, StoredSummary
from pagegraph.state.documents import Page, SourceType, TreeNode, names_a_section
from pagegraph.text.sentences import sentences
from pagegraph.text.words import tokenize, unspaced, word_count

SOURCE_TEXT_CHARS = 5000
OUTLINE_ENTRIES = 40
_DOCUMENT_TYPES = {
    SourceType.PDF: "PDF document",
    SourceType.MARKDOWN: "Markdown document",
    SourceType.TEXT: "text document",
    SourceType.DOCX: "Word document",
    SourceType.TRANSCRIPT: "transcript",
}
# A sentence a summary may quote reads as prose: it states (ends with a stop, not a question mark), opens as a
# sentence does, starts with no label ("Note:", "Source:", "Figure 2:"), holds no dot leaders, table bars,
# addresses or mostly numbers, and most of its cased words start lower-case (a line in Title Case or capitals is a
# heading, a table of contents or a cover page's form).
_STOP_END = regex.compile(r"[.!。！।॥۔][\"'”’)]*\Z")
_LABEL_START = regex.compile(r"\A\W*\p{L}+(?:\s+\d+)?\s*:")
# a sentence opens with a capital or a letter of a script without capitals (after a quote or a bracket); one that
# opens lower-case or with a number is the tail of a sentence a line break cut
_SENTENCE_START = regex.compile(r"\A[\"'“‘(\[]?(?!\p{Ll})\p{L}")
_NOT_PROSE = regex.compile(r"\.{4,}|(?:\.\s){3,}|…{2,}|_{3,}|\||@|https?:|www\.", regex.IGNORECASE)
_CASED_WORD = regex.compile(r"\b\p{L}[\p{L}\p{M}'’-]*")
SUMMARY_SENTENCES = 3
OPENING_CHARS = 1000
# sentence ends: a stop and a space; the stops of Chinese and Japanese (no space after them), of Devanagari and Arabic
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|(?<=[।॥؟۔])\s+")
PROSE_MIN_WORDS = 6
PROSE_MAX_WORDS = 70
PROSE_MIN_CONTENT_WORDS = 4
# words on nearly every page (running headers, the company's name) say nothing of what a sentence is about
EVERY_PAGE_SHARE = 0.9
# a sentence opening as this many others do ("Indicate by check mark whether…") is a form's line
FORM_OPENING_WORDS = 4
FORM_OPENINGS = 3
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
    pages: list[str] = field(default_factory=list)  # every page's text, for the sentences an extractive summary quotes

    @classmethod
    def from_parts(
        cls, name: str, title: str, source_type: SourceType, pages: list[Page], nodes: list[TreeNode]
    ) -> SummarySource:
        outline = ["  " * (n.level - 1) + n.title for n in nodes if n.level >= 1][:OUTLINE_ENTRIES]
        texts = [p.text for p in pages if p.text.strip()]
        text = "\n\n".join(texts)[:SOURCE_TEXT_CHARS]
        return cls(name=name, title=title, source_type=source_type, outline=outline, text=text, pages=texts)


class ExtractiveSummarizer:
    """No model: the title and the first sentences about the whole document, the top-level outline (or the most
    frequent words) as topics."""

    def summarize(self, source: SummarySource) -> StoredSummary:
        prose = " ".join(line for line in source.text.splitlines() if not _MARKUP_LINE.match(line))
        opening = [s for s in _SENTENCE.split(" ".join(prose.split())) if word_count(s) >= 5][:SUMMARY_SENTENCES]
        # a document without a sentence of prose (a form, a table) is summarised by its opening words
        summary = " ".join(central_sentences(source.pages or [source.text]) or opening)[:1000] or source.title
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
            opening=" ".join(opening)[:OPENING_CHARS],
        )


def central_sentences(pages: list[str]) -> list[str]:
    """The first `SUMMARY_SENTENCES` sentences, in reading order, that read as prose and are about the whole
    document: the mean share of its pages their words occur on is among the best fifth (centroid summarisation, the
    page as the unit). A filing's cover ("Indicate by check mark whether the registrant…"), a report's contact lines
    and a table of contents are passed over; a document of one or two pages keeps its opening prose."""
    texts = ["\n".join(line for line in page.splitlines() if not _MARKUP_LINE.match(line)) for page in pages]
    spread: Counter[str] = Counter()
    for text in texts:
        spread.update(set(tokenize(text)))
    flat = (" ".join(sentence.split()) for text in texts for _, sentence in sentences(text, ReadingKnobs()))
    prose = [sentence for sentence in flat if _reads_as_prose(sentence)]
    openings = Counter(_opening(sentence) for sentence in prose)
    found: list[tuple[str, float]] = []
    for sentence in prose:
        words = {w for w in tokenize(sentence) if not w.isdigit()}
        if len(words) < PROSE_MIN_CONTENT_WORDS or openings[_opening(sentence)] >= FORM_OPENINGS:
            continue
        shares = [spread[w] / len(texts) for w in words if spread[w] < EVERY_PAGE_SHARE * len(texts)]
        found.append((sentence, sum(shares) / len(words)))
    if len(texts) < 3 or len(found) <= SUMMARY_SENTENCES:
        return [sentence for sentence, _ in found[:SUMMARY_SENTENCES]]
    bar = sorted(score for _, score in found)[len(found) * 4 // 5]
    return [sentence for sentence, score in found if score >= bar][:SUMMARY_SENTENCES]


def _opening(sentence: str) -> str:
    return " ".join(sentence.lower().split()[:FORM_OPENING_WORDS])


def _reads_as_prose(sentence: str) -> bool:
    words = word_count(sentence)
    if not PROSE_MIN_WORDS <= words <= PROSE_MAX_WORDS or not _STOP_END.search(sentence):
        return False
    if _NOT_PROSE.search(sentence) or _LABEL_START.match(sentence) or not _SENTENCE_START.match(sentence):
        return False
    if sum(any(c.isdigit() for c in w) for w in sentence.split()) > words / 4:
        return False
    cased = [w for w in _CASED_WORD.findall(sentence) if w[0].isupper() or w[0].islower()]
    return len(cased) < 4 or sum(w[0].islower() for w in cased) >= 0.4 * len(cased)


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
        return StoredSummary(
            **result.value.model_dump(), method="model", model=model_label(self.model), opening=extractive.opening
        )
