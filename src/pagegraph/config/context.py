"""Context: the question graphs' per-run knobs (LangGraph `context_schema`; Studio shows them as a form), in groups."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from pagegraph.state.answering import OutputType


class RoutingWeights(BaseModel):
    """The model-free document router (retrievers.documents): weights of its four document rankings in the
    reciprocal-rank fusion, the fusion's constant, and how many fused chunk scores count per document."""

    profile: float = Field(default=0.5, ge=0.0, description="BM25 over title, summary, topics, section titles")
    centroid: float = Field(default=0.0, ge=0.0, description="question against the mean of the document's chunks")
    chunks: float = Field(default=1.0, ge=0.0, description="the document's best fused chunk scores")
    terms: float = Field(default=0.5, ge=0.0, description="the question's names and years the document holds")
    rrf_k: int = Field(default=1, ge=1)
    per_document: int = Field(default=3, ge=1, le=20)


class SentenceWeights(BaseModel):
    """How the highlight stage and the extract graph's focused read score a sentence for holding the answer
    (retrievers.highlights): a weighted sum of its cosine to the question, the share of the question's content words
    it holds (weighted by how few sentences hold them), how well it fits the answer's expected shape, and its
    passage's rank; a number question's sentence without a figure is scaled down."""

    dense: float = Field(default=0.45, ge=0.0, description="weight of the sentence's cosine to the question")
    lexical: float = Field(default=0.45, ge=0.0, description="weight of the question's content words it holds")
    shape: float = Field(default=0.15, ge=0.0, description="weight of its fit to the answer's expected shape")
    rank: float = Field(default=0.05, ge=0.0, description="weight of 1 / (1 + its passage's rank)")
    no_number: float = Field(
        default=0.7, ge=0.0, le=1.0, description="factor on a number question's sentence that holds no figure"
    )


class PageRules(BaseModel):
    """How the pages a question names, and a financial report's statement pages, are found
    (retrievers.named_pages, retrievers.statements)."""

    max_named_pages: int = Field(
        default=10, ge=1, le=100, description="pages one question may name at most; a longer range counts its ends"
    )
    printed_offset_support: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="share of a document's pages that must print their number at one offset from the physical "
        "number before printed page numbers are read through that offset",
    )
    statement_title_chars: int = Field(
        default=400,
        ge=50,
        le=5000,
        description="characters from a page's start where a statement's title is looked for",
    )
    statement_title_words: int = Field(
        default=10,
        ge=0,
        le=50,
        description="words a statement's title line may hold besides its name ('for the year ended June 30, 2024'): "
        "a longer line is a sentence that mentions the statement",
    )
    statement_min_numbers: int = Field(
        default=40, ge=1, le=1000, description="figures a page must hold to count as a statement page"
    )
    statement_min_pages: int = Field(
        default=2,
        ge=1,
        le=3,
        description="statements a document must have for any to count (fewer: it is not a financial report)",
    )


class RetrievalKnobs(BaseModel):
    """How passages are found: candidates, fusion, windows, page ranking, document routing."""

    top_k_files: int = Field(default=3, ge=1, le=20, description="documents the router keeps")
    top_k_bm25: int = Field(default=20, ge=1, le=200, description="BM25 candidates per search")
    top_k_vector: int = Field(default=40, ge=1, le=400, description="dense candidates per search")
    max_chunks: int = Field(
        default=15, ge=1, le=50, description="fused hits per plan step handed on (before windows and the budget)"
    )
    alpha: float = Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description="BM25 weight in the fusion of normalised BM25 and cosine scores (chosen with bench/fusion.py); "
        "a question in a script the index's embedder does not read is searched by BM25's scores alone",
    )
    window: int = Field(default=1, ge=0, le=5, description="neighbouring chunks added on each side of a hit")
    page_ranking: bool = Field(
        default=True,
        description="count retrieved hits by page: one hit per page not yet covered, windows skip covered pages",
    )
    named_pages: bool = Field(
        default=True,
        description="a question naming pages or figures ('page 17', 'the cover', 'Figure 4') gets those pages first "
        "(with page_ranking)",
    )
    statement_pages: bool = Field(
        default=True,
        description="a question asking for a financial metric (a ratio, margin, turnover, return) gets the first "
        "page of its report's balance sheet, income statement and cash flow statement first; one naming a statement, "
        "or a line item of a statement's first page, gets that page first (with page_ranking)",
    )
    lead_documents: int = Field(
        default=3,
        ge=1,
        le=20,
        description="named pages and statements are looked for in the documents a search names only when it names "
        "at most this many (with page_ranking)",
    )
    route_documents: int = Field(
        default=5,
        ge=0,
        le=50,
        description="a search over the whole library searches only this many documents, ranked without a model "
        "(0: every document)",
    )
    route_chunks_above: int = Field(
        default=15,
        ge=0,
        description="routing applies only where the average chunk a search may read lies in a document of more "
        "than this many chunks (the passages one search hands on, max_chunks): ranking paragraphs or notes adds "
        "nothing to ranking their passages, and searching the first few leaves out what the passages' ranking finds "
        "in the others; a few long reports among many notes still route (0: any library)",
    )
    route_keywords_up_to: int = Field(
        default=50_000,
        ge=0,
        description="routing ranks a library's documents by a keyword and vector search of all its chunks when it "
        "holds at most this many; above, by the chunks nearest the question by vector, scored by keywords too (a "
        "keyword search of a whole library costs in proportion to it: ~150 ms at 200k chunks in PostgreSQL)",
    )
    route_alone: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="a search over the whole library searches only the best-ranked document, as if the question "
        "named it, when the second scores under this share of its routing score and the first holds more chunks "
        "than max_chunks, so that its passages alone can fill the search (0: never)",
    )
    routed_share: float = Field(
        default=0.0,
        ge=0.0,
        le=8.0,
        description="when a search over the whole library routes to several documents, their passages take the "
        "first places in proportion to their routing scores raised to this power, so that a routed document is not "
        "crowded out by another's passages (0: in fused-score order alone)",
    )
    page_rules: PageRules = Field(
        default_factory=PageRules, description="how named pages and statement pages are found"
    )
    routing: RoutingWeights = Field(default_factory=RoutingWeights, description="the model-free document router")
    correct_spelling: bool = Field(
        default=True,
        description="search a question's words that no indexed chunk holds, and that are not common English words, "
        "as the indexed word one typing slip away ('Neflix' as 'Netflix')",
    )
    spelling_min_letters: int = Field(
        default=5, ge=3, le=20, description="letters a word must have to be corrected (shorter words are left as typed)"
    )


class GateKnobs(BaseModel):
    """When to abstain before any answer-model call."""

    abstain_threshold: float = Field(
        default=0.19,
        ge=0.0,
        le=1.0,
        description="abstain without calling the answer model when no chunk of the searched documents reaches "
        "this cosine similarity to the question (calibrated with bench/abstain_threshold.py: keeps 98% of "
        "answerable benchmark questions)",
    )
    key_terms: bool = Field(
        default=True,
        description="abstain without calling the answer model when the question names something (a capitalised "
        "name, an acronym, a year) that neither the retrieved passages nor their documents mention, or a page, "
        "figure or table their documents do not have",
    )
    term_part_letters: int = Field(
        default=3,
        ge=1,
        le=10,
        description="a key term's parts shorter than this many letters (numbers aside) are not looked for",
    )
    near_spelling_letters: int = Field(
        default=5,
        ge=3,
        le=20,
        description="a key term's part of at least this many letters is also mentioned by a "
        "near spelling ('Netfilx' for 'Netflix')",
    )
    near_spelling_ratio: float = Field(
        default=0.85, ge=0.5, le=1.0, description="how alike a near spelling must be (difflib's ratio)"
    )


class ReadingKnobs(BaseModel):
    """What the answer model reads: evidence sentences, the extract graph's focused read, the evidence budget, and
    how answer sentences are attributed to passages."""

    highlights: int = Field(
        default=3, ge=0, le=20, description="evidence sentences picked before any answer-model call and shown first"
    )
    highlight_passages: int = Field(
        default=6, ge=1, le=50, description="top passages whose sentences the highlight stage scores"
    )
    sentence_weights: SentenceWeights = Field(
        default_factory=SentenceWeights, description="how a sentence is scored for holding the answer"
    )
    answer_passage_chars: int = Field(
        default=1500,
        ge=200,
        le=20000,
        description="characters of each passage's text an answer hands to another agent (the MCP `ask` tool, "
        "`DocumentTools.ask`), then '…'; its highlighted sentences come whole beside it",
    )
    sentence_min_words: int = Field(
        default=3,
        ge=1,
        le=20,
        description="a sentence is shown, scored and checked when it has at least this many words (a character of "
        "a script written without spaces counts as a word)",
    )
    sentence_max_chars: int = Field(
        default=400, ge=80, le=4000, description="a sentence is shown, scored and checked up to this many characters"
    )
    word_prefix_letters: int = Field(
        default=4,
        ge=2,
        le=12,
        description="two words match when one starts with the other and the shorter has at least this many letters "
        "('weigh' and 'weight'; not 'governor' and 'government'): in sentence scores, the gate's key terms, the "
        "value check, quotes and the reading judge",
    )
    focus_sentences: int = Field(
        default=12, ge=1, le=50, description="extract graph: best sentences of the top passages the first read shows"
    )
    focus_context: int = Field(
        default=1, ge=0, le=5, description="extract graph: neighbouring sentences shown on each side of a best one"
    )
    focus_max_tokens: int = Field(
        default=1200, ge=100, le=100_000, description="extract graph: evidence tokens of the first, focused read"
    )
    focus_span_chars: int = Field(
        default=600,
        ge=100,
        le=5000,
        description="extract graph: characters a shown sentence may span with the short lines after it (table "
        "cells, a figure on its own line)",
    )
    confirm_answers: bool = Field(
        default=False,
        description="extract graph: read whole passages also after a focused read that answered; abstain when the "
        "two answers differ, keep the focused one when the second refuses (fewer wrong answers, fewer right ones)",
    )
    widen_below: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="extract graph: read whole passages once when the focused read refused or the excerpt it cites "
        "holds less than this share of its answer",
    )
    max_evidence_tokens: int = Field(
        default=3000,
        ge=200,
        le=100_000,
        description="evidence tokens in the answer prompt at most (also bounded by the model's context window); "
        "the local model reads ~80 prompt tokens/s on 2 cores",
    )
    attribution_min_overlap: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="a sentence that cites nothing is attributed to the passage holding at least this share of its "
        "words",
    )
    attribution_min_tokens: int = Field(
        default=3, ge=1, description="sentences with fewer content words than this are never attributed"
    )
    answer_language: bool = Field(
        default=True,
        description="answer, refuse and name the band in the question's language (identified among 32 languages); "
        "off: always in English",
    )
    language_min_confidence: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a question whose likeliest language has a lower probability is taken as English (a short "
        "English question can look like several languages)",
    )


class ConfidenceKnobs(BaseModel):
    """The answer's confidence (the judge's P(Yes) times the evidence overlap), its band, and when a run abstains
    on it."""

    support_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="extract graph: weight of the answer's support in its excerpt against the best passage's "
        "similarity in the answer's confidence",
    )
    answer_threshold: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="extract graph: abstain when the answer's confidence is below this",
    )
    supported: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="an answer whose confidence reaches this, and none of whose values is missing from the sentences "
        "it cites, is shown as supported; below it, as uncertain (check the evidence)",
    )
    computed_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="the confidence of a number answering a question that asks for a computed value (a difference, a "
        "ratio, a change, a sum) is multiplied by this: the judge and the value check confirm values the evidence "
        "states, not arithmetic",
    )
    uncertain_margin: float = Field(
        default=0.01,
        ge=0.0,
        le=0.5,
        description="an uncertain answer's confidence is held at least this far below `supported`, so that a band "
        "and its confidence never say two things",
    )
    period_heading_lines: int = Field(
        default=120,
        ge=1,
        le=2000,
        description="lines above a cited table row or sentence searched for the heading that names its periods (a "
        "value stated only in another year's column than the question's, or under another year's heading, is not "
        "supported); the small reader's excerpts show a paragraph's heading of periods found as far up",
    )
    abstain_below: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="an answer whose confidence is below this is not shown: the run abstains (not found), with its "
        "evidence (0, the default: every answer is shown, a doubtful one as uncertain)",
    )
    judge_sentences: int = Field(
        default=3,
        ge=1,
        le=20,
        description="the question's top highlight sentences the judge checks the answer against",
    )
    reread: bool = Field(
        default=True,
        description="before an answer stating numbers, amounts, percentages or dates is shown as supported, ask the "
        "model the question again over the judge's sentences alone: values it reads there must be the answer's "
        "(one more short call; an answer read otherwise, or in part, is uncertain)",
    )
    reread_tokens: int = Field(
        default=48,
        ge=8,
        le=512,
        description="the longest reply the second reading may write, in tokens",
    )
    judge_alternatives: int = Field(
        default=10,
        ge=2,
        le=20,
        description="the likeliest first tokens asked of the model (top log-probabilities) to read P(Yes) from",
    )
    written_yes: float = Field(
        default=0.75,
        gt=0.5,
        lt=1.0,
        description="the judge's P(Yes) for a model that gives no log-probabilities and writes Yes (writing "
        "anything else: one minus it)",
    )
    quote: bool = Field(
        default=True,
        description="when the answer model refuses or its answer fails the checks, answer with the evidence sentence "
        "that matches the question strongly, quoted with its citation (band `quoted`), instead of not found",
    )
    quote_candidates: int = Field(
        default=2, ge=1, le=20, description="the question's top highlight sentences a quote may be taken from"
    )
    quote_min_score: float = Field(
        default=0.7,
        ge=0.0,
        description="a quoted sentence's highlight score (`SentenceWeights`) is at least this",
    )
    quote_min_terms: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="a quoted sentence (with its section and file name) holds at least this share of the question's "
        "content words",
    )


class SmallModelKnobs(BaseModel):
    """The small_model graph: chunks read one call each, and which of their facts are kept."""

    map_chunks: int = Field(
        default=5, ge=1, le=20, description="small_model graph: chunks read one at a time by the model (one call each)"
    )
    fact_grounding: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="small_model graph: a fact is kept only when every number or code in it appears in its passage "
        "and at least this share of its other words do (0 keeps every fact)",
    )
    fallback_facts: int = Field(
        default=3,
        ge=1,
        le=20,
        description="small_model graph: when a map reply cannot be read, the chunk's sentences sharing most words "
        "with the question stand as its facts, this many",
    )


class PageIndexKnobs(BaseModel):
    """The pageindex graph: sections picked from each file's tree by the model."""

    nodes_per_file: int = Field(
        default=5, ge=1, le=20, description="pageindex graph: sections the model picks from each file's tree"
    )
    selection_view_tokens: int = Field(
        default=2000,
        ge=200,
        le=20000,
        description="pageindex graph: the most tokens of a file's section list shown to the model (deep levels go "
        "first)",
    )
    view_summary_chars: int = Field(
        default=240, ge=40, le=2000, description="pageindex graph: characters of each section's summary in that list"
    )


class TreeKnobs(BaseModel):
    """Section-tree navigation (the rag graph's tree retriever; section text also for pageindex)."""

    use: bool = Field(
        default=True,
        description="rag graph: add sections found by navigating the section tree of documents with a real outline "
        "(bookmarks or headings) to the retrieved passages",
    )
    max_steps: int = Field(
        default=8, ge=1, le=100, description="tree retriever: the most sections the model judges per question"
    )
    start_nodes: int = Field(
        default=4,
        ge=1,
        le=50,
        description="tree retriever: sections closest to the question that navigation starts from",
    )
    node_text_chars: int = Field(
        default=3000, ge=200, le=50000, description="tree sections: the most characters of a section's text read"
    )


class PickingKnobs(BaseModel):
    """The reader that picks its answer among candidates taken from the evidence (`checks.candidates`,
    `nodes.pick`) instead of writing it: what it is offered, and how its choice becomes a confidence."""

    use: bool = Field(
        default=False,
        description="answer by picking among the evidence's table cells, values and names (one short call under a "
        "grammar) before the reader writes one; off by default: on a second lookups set it answered fewer questions "
        "right than the written reader alone (docs/experiments.md)",
    )
    max_candidates: int = Field(
        default=20, ge=2, le=60, description="most candidates offered to the model, best-labelled first"
    )
    sentences: int = Field(
        default=12,
        ge=1,
        le=60,
        description="best-scoring sentences and table rows of the top passages whose values become candidates",
    )
    label_weight: float = Field(
        default=0.3,
        ge=0.0,
        le=2.0,
        description="weight of how many of the question's words a candidate's own label (its row and column, or the "
        "words around it) holds, added to its sentence's score",
    )
    context_words: int = Field(
        default=12,
        ge=2,
        le=40,
        description="most words before a value in its sentence (back to its previous value) that say what it is",
    )
    alternatives: int = Field(
        default=10,
        ge=2,
        le=20,
        description="likeliest tokens read at each token of the model's pick, for its probability",
    )
    answer_from: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="a pick whose probability is below this is not the answer: the reader writes it instead (two to "
        "four calls, judged); 0 keeps every pick",
    )
    supported: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="a picked answer is shown as supported when its probability (times the share of its words in "
        "the evidence it cites) reaches this, and the value checks pass; below it, as uncertain",
    )
    refuse_from: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="the model's 'none of these' refuses a question asking for a number only when its probability "
        "reaches this; below it the likeliest candidate is taken instead, banded by its own probability",
    )
    written_weight: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="the confidence of a pick from a model that gives no log-probabilities",
    )
    max_tokens: int = Field(
        default=320,
        ge=16,
        le=2048,
        description="longest pick reply (the grammar bounds it by the longest values it may copy; this caps it)",
    )


class Context(BaseModel):
    """Per-run knobs of the question-answering graphs (LangGraph `context_schema`; Studio shows them as a form), in
    groups. A key of a group given at the top level (the flat layout before the groups) is refused, naming its group."""

    index: str | None = Field(default=None, description="index folder; unset uses PAGEGRAPH_INDEX")
    model: str | None = Field(
        default=None,
        description="chat model spec (local, local-fast, gguf:PATH, ollama:NAME, openai:NAME, PROVIDER:NAME); "
        "unset uses model_profile, else PAGEGRAPH_MODEL",
    )
    model_profile: Literal["cheap", "balanced", "premium"] | None = Field(
        default=None, description="pick the model by profile (PAGEGRAPH_MODEL_CHEAP/BALANCED/PREMIUM)"
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="sampling temperature of answer calls")
    structured_max_temperature: float = Field(
        default=0.2, ge=0.0, le=2.0, description="highest sampling temperature of a structured document's answer call"
    )
    output_type: OutputType = Field(default="answer", description="default output shape when the input names none")
    repair_attempts: int = Field(default=1, ge=0, le=3, description="repair calls after invalid structured output")
    history_turns: int = Field(
        default=3, ge=0, le=20, description="earlier chat turns shown to the follow-up rewriter and the answer model"
    )
    rewrite_followups: bool = Field(
        default=True,
        description="on a chat thread with earlier turns, rewrite the question into a standalone one (one model "
        "call) before searching",
    )
    followup_answer_chars: int = Field(
        default=400, ge=0, le=4000, description="characters of each earlier answer the follow-up rewriter is shown"
    )
    followup_max_tokens: int = Field(
        default=96, ge=16, le=512, description="longest standalone question the follow-up rewriter may write"
    )
    retrieval: RetrievalKnobs = Field(default_factory=RetrievalKnobs, description="how passages are found")
    gate: GateKnobs = Field(default_factory=GateKnobs, description="when to abstain before calling the answer model")
    reading: ReadingKnobs = Field(default_factory=ReadingKnobs, description="what the answer model reads")
    confidence: ConfidenceKnobs = Field(
        default_factory=ConfidenceKnobs,
        description="the answer's confidence, its band, and the extract graph's abstention",
    )
    small_model: SmallModelKnobs = Field(default_factory=SmallModelKnobs, description="the small_model graph")
    pageindex: PageIndexKnobs = Field(default_factory=PageIndexKnobs, description="the pageindex graph")
    tree: TreeKnobs = Field(default_factory=TreeKnobs, description="section-tree navigation")
    picking: PickingKnobs = Field(
        default_factory=PickingKnobs, description="the extract graph's answer picked among candidates from the evidence"
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_flat_keys(cls, data: Any) -> Any:
        """A key of a group given at the top level (`top_k_files`, the layout before the groups) is refused, naming
        where it lives now (`retrieval.top_k_files`); other unknown keys are left to validation."""
        if not isinstance(data, dict):
            return data
        groups = {
            name: field.annotation
            for name, field in cls.model_fields.items()
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        }
        misplaced = [
            (key, group)
            for key in data
            if key not in cls.model_fields
            for group, knobs in groups.items()
            if key in knobs.model_fields
        ]
        if misplaced:
            moved = ", ".join(f"{key!r} is {group}.{key}" for key, group in misplaced)
            key, group = misplaced[0]
            raise ValueError(
                f"context keys in the layout before the groups: {moved} (give it as {{{group!r}: {{{key!r}: ...}}}})"
            )
        return data

    def with_changes(self, **groups: dict[str, Any]) -> Context:
        """A copy with some knobs changed, validated: `context.with_changes(tree={"use": False})`."""
        data = self.model_dump()
        for group, values in groups.items():
            data[group] = {**data[group], **values} if isinstance(data[group], dict) else values
        return Context.model_validate(data)
