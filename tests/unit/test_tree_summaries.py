"""Section summaries of the tree index on a small in-memory tree: bottom-up, short sections kept as they are,
cached by content, bounded concurrency, prompts in the section's language."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.ingest.refine import SummaryRefiner
from pagegraph.ingest.tree_summaries import (
    SECTION_VECTOR_RECIPE,
    ExtractiveNodeSummarizer,
    ModelNodeSummarizer,
    TreeSummarizer,
    detect_language,
    section_record,
    section_vectors,
)
from pagegraph.llm.calls import model_label
from pagegraph.state.documents import Chunk, TreeNode
from pagegraph.store.index import open_index
from pagegraph.store.records import SectionSummaries
from tests.conftest import SAMPLES
from tests.fakes import ScriptedChatModel

LONG = "The pump moves 40 litres a minute at 3 bar. " * 10  # 440 characters


def node(node_id: str, parent: str | None, children: list[str], level: int, text: str, start: int) -> TreeNode:
    return TreeNode(
        id=node_id,
        document_id="d",
        parent_id=parent,
        children_ids=children,
        position=start,
        level=level,
        title=f"Section {node_id}",
        title_path=[f"Section {node_id}"],
        start_page=1,
        end_page=1,
        start_offset=start * 1000,
        end_offset=start * 1000 + len(text),
        text=text,
    )


TREE = [
    node("root", None, ["a", "b"], 0, "Intro of the manual.", 0),
    node("a", "root", [], 1, LONG, 1),
    node("b", "root", [], 1, "Short note.", 2),
]


class Recording:
    """A node summarizer that records what it was asked and how many ran at once."""

    key = "recording"

    def __init__(self, pause: float = 0.0) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.running = self.most = 0
        self.pause = pause
        self.lock = threading.Lock()

    def summarize(self, title: str, content: str, language: str) -> str:
        with self.lock:
            self.calls.append((title, content, language))
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.pause)
        with self.lock:
            self.running -= 1
        return f"summary of {title} ({len(content)} chars)"


def test_bottom_up_with_short_sections_kept_as_they_are() -> None:
    recording = Recording()
    tree = TreeSummarizer(recording, min_chars=100, workers=2, cached=lambda key: None)
    summaries = {s.node_id: s for s in tree.summarize(TREE)}
    assert summaries["a"].summary == f"summary of Section a ({len(LONG)} chars)" and summaries["a"].is_summary
    assert summaries["b"].summary == "Short note." and not summaries["b"].is_summary
    titles = [title for title, _, _ in recording.calls]
    assert titles == ["Section a"], "the short root (intro + children's summaries) is kept too"
    root = summaries["root"]
    assert not root.is_summary and "Section a: summary of Section a" in root.summary and "Short note." in root.summary
    assert root.children_ids == ["a", "b"] and not root.is_leaf and summaries["a"].is_leaf
    assert (root.level, summaries["a"].parent_id) == (0, "root")


def test_inner_sections_are_summarised_from_their_childrens_summaries() -> None:
    recording = Recording()
    TreeSummarizer(recording, min_chars=10, workers=2, cached=lambda key: None).summarize(TREE)
    assert [title for title, _, _ in recording.calls][-1] == "Section root", "children first"
    root_content = recording.calls[-1][1]
    assert "Section a: summary of Section a" in root_content and "Section b: summary of Section b" in root_content
    assert LONG not in root_content, "an inner section reads its children's summaries, not their text"


def test_summaries_are_cached_by_content() -> None:
    first = Recording()
    writer = TreeSummarizer(first, min_chars=10, workers=2, cached=lambda key: None)
    writer.summarize(TREE)
    assert len(first.calls) == 3 and len(writer.new_entries) == 3
    again = Recording()
    reader = TreeSummarizer(again, min_chars=10, workers=2, cached=writer.new_entries.get)
    assert [s.summary.split(" (")[0] for s in reader.summarize(TREE)] == [
        f"summary of Section {n}" for n in ("root", "a", "b")
    ]
    assert again.calls == [] and reader.new_entries == {}
    changed = [*TREE[:2], node("b", "root", [], 1, "A different short note.", 2)]
    partly = Recording()
    TreeSummarizer(partly, min_chars=10, workers=2, cached=writer.new_entries.get).summarize(changed)
    assert [title for title, _, _ in partly.calls] == ["Section b", "Section root"]


def test_concurrency_is_bounded() -> None:
    leaves = [node(str(i), "root", [], 1, LONG, i + 1) for i in range(6)]
    tree = [node("root", None, [n.id for n in leaves], 0, "", 0), *leaves]
    recording = Recording(pause=0.05)
    TreeSummarizer(recording, min_chars=10, workers=2, cached=lambda key: None).summarize(tree)
    assert recording.most == 2 and len(recording.calls) == 7


def test_language_detection_picks_the_prompt() -> None:
    chinese = "本章介绍电池的安装要求。墙面必须能够承受一百二十公斤的重量，工作温度为零下十度到四十五度。" * 3
    assert detect_language(chinese) == "zh" and detect_language(LONG) == "en"
    model = ScriptedChatModel.replying("中文摘要。", "English summary.")
    summarizer = ModelNodeSummarizer(model)
    assert summarizer.summarize("安装", chinese, "zh") == "中文摘要。"
    assert summarizer.summarize("Install", LONG, "en") == "English summary."
    (zh_system, zh_request), (en_system, _) = [(m[0].content, m[1].content) for m, _ in model.requests]
    assert "中文" in zh_system and zh_request.startswith("章节：安装")
    assert "two or three sentences" in en_system


def test_extractive_summary_keeps_whole_sentences() -> None:
    text = "Firmware 3.2 adds backup mode. " * 30
    summary = ExtractiveNodeSummarizer().summarize("Notes", text, "en")
    assert summary.startswith("Firmware 3.2 adds backup mode.") and len(summary) <= 400 and summary.endswith(".")


def test_summarize_replaces_section_summaries_and_reuses_them(tmp_path: Path, cache_dir: Path, embedder) -> None:
    settings = Settings(cache_dir=cache_dir, ingest={"section_min_chars": 400})
    folder, guide = tmp_path / "index", tmp_path / "guide.md"
    guide.write_text((SAMPLES / "commissioning-guide.md").read_text())
    summary = '{"document_type": "guide", "summary": "A guide.", "key_topics": [], "use_for": ""}'
    model = ScriptedChatModel.replying(
        *[lambda m: "A section summary." if "Section:" in str(m[-1].content) else summary] * 60
    )
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([guide])
        assert not model.requests, "ingest calls no model"
        (doc,) = index.store.documents()
        ids, vectors = index.store.section_vectors(doc.id)
        stored = list(index.store.iter_chunks(doc.id))
        expected = section_vectors(
            index.store.sections(doc.id),
            index.store.tree(doc.id),
            [chunk for chunk, _ in stored],
            np.array([vector for _, vector in stored]),
        )
        assert ids and np.allclose(vectors, expected), (
            "a section's vector comes from its chunks, not from a new embedding"
        )
    with SummaryRefiner(folder, settings, model) as refiner:
        report = refiner.run(sections=False)  # the document summary only: what the router reads
        assert report.summaries == 1 and report.sections == 0 and len(model.requests) == 1
        assert not refiner.pending(sections=False) and refiner.pending()[0].sections > 0
        report = refiner.run()
        assert report.summaries == 0 and report.sections > 0 and not refiner.pending()
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        (doc,) = index.store.documents()
        sections = index.store.sections(doc.id)
        assert [s.node_id for s in sections] == [n.id for n in index.store.tree(doc.id)]
        written = [s for s in sections if s.is_summary]
        assert written and all(s.summary == "A section summary." and s.writer == model_label(model) for s in written)
        assert np.array_equal(index.store.section_vectors(doc.id)[1], vectors), "a model summary keeps the vector"
        calls = len(model.requests)
        guide.write_text(guide.read_text() + "\n\n## Appendix\n\nOne more short line.\n")
        Ingestor(index).run([guide])
    with SummaryRefiner(folder, settings, model) as refiner:
        refiner.run()
    section_calls = [m for m, _ in model.requests[calls:] if "Section:" in str(m[-1].content)]
    assert len(section_calls) <= 1, "only the root, whose children changed, is summarised again"


def chunk_over(start: int, end: int) -> Chunk:
    return Chunk(
        id=f"c{start}",
        document_id="d",
        source="d.md",
        position=start,
        text="x",
        start_offset=start,
        end_offset=end,
        start_page=1,
        end_page=1,
        section_id="",
        section_path=[],
        index_version=1,
    )


def test_a_section_vector_is_the_normalised_mean_of_the_chunks_its_text_overlaps() -> None:
    root = node("root", None, ["a", "b", "c"], 0, "Intro of the manual.", 0).model_copy(update={"end_offset": 3000})
    tree = [root, *TREE[1:], node("c", "root", [], 1, "", 3)]  # "c" is empty: no chunk overlaps it
    summaries = [section_record(n, n.text, "text") for n in tree]
    # One chunk inside "a", one straddling the end of "a" and the start of "b".
    chunks = [chunk_over(1000, 1300), chunk_over(1300, 2005)]
    embeddings = np.array([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]], dtype=np.float32)
    vectors = dict(zip([s.node_id for s in summaries], section_vectors(summaries, tree, chunks, embeddings)))
    assert np.allclose(vectors["a"], np.array([3.0, 4.0, 0.0]) / 2 / 2.5)
    assert np.allclose(vectors["b"], [0.0, 1.0, 0.0])
    assert np.allclose(vectors["root"], vectors["a"]), "a section's vector holds its subsections' chunks"
    assert not vectors["c"].any()


def test_an_index_with_embedded_section_vectors_gets_them_from_its_chunks_once(
    tmp_path: Path, cache_dir: Path, embedder
) -> None:
    settings = Settings(cache_dir=cache_dir)
    folder, guide = tmp_path / "index", tmp_path / "guide.md"
    guide.write_text((SAMPLES / "commissioning-guide.md").read_text())
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([guide])
        store = index.store
        assert store.section_vector_recipe() == SECTION_VECTOR_RECIPE
        (doc,) = store.documents()
        sections = store.sections(doc.id)
        _, from_chunks = store.section_vectors(doc.id)
        # As an older index holds them: embeddings of the summaries, under another recipe (or none recorded).
        embedded = embedder.embed([s.summary for s in sections])
        store.set_sections(doc.id, SectionSummaries(sections, embedded))
        store.set_section_vector_recipe("embedded summaries")
        Ingestor(index).run([])
        assert np.allclose(store.section_vectors(doc.id)[1], from_chunks)
        assert store.sections(doc.id) == sections, "the summaries stay"
        assert store.section_vector_recipe() == SECTION_VECTOR_RECIPE
        store.set_sections(doc.id, SectionSummaries(sections, embedded))
        Ingestor(index).run([])
        assert np.allclose(store.section_vectors(doc.id)[1], embedded), "recomputed once, not at every ingest"
