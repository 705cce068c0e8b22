"""The `pagegraph` command as a user runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pagegraph
from pagegraph.cli import app
from pagegraph.cli.serve import server_environment
from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.ocr import OcrOptions, ocr_unavailable
from pagegraph.server.runtime import prepare_database
from pagegraph.store.index import open_index
from tests.conftest import SAMPLES, committed_names, kill_ingest_after_a_commit
from tests.fakes import ScriptedChatModel
from tests.pdf_factory import (
    corrupt_pdf,
    empty_pdf,
    image_only_pdf,
    password_pdf,
    scanned_pdf,
    text_pdf,
    truncated_pdf,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, cache_dir: Path, tmp_path: Path) -> Path:
    index = tmp_path / "index"
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("PAGEGRAPH_INDEX", str(index))
    monkeypatch.setenv("PAGEGRAPH_INGEST_SUMMARIES", "extractive")
    return index


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_samples_ingest_and_inspect(cli_env: Path) -> None:
    code, out = run("ingest", str(SAMPLES), "--project", "demo", "--confidentiality", "public", "--tag", "team=support")
    assert code == 0, out
    assert "3 added" in out and "chunks/s" in out
    code, out = run("inspect", "--json")
    assert code == 0, out
    info = json.loads(out)
    docs = {d["name"]: d for d in info["documents"]}
    assert set(docs) == {"sb40-user-manual.pdf", "commissioning-guide.md", "support-call-2024-03-14.vtt"}
    manual = docs["sb40-user-manual.pdf"]
    assert (
        manual["pages"] == 9
        and manual["ocr_pages"] == 0
        and manual["tree_source"] == "bookmarks"
        and manual["status"] == "indexed"
    )
    assert manual["summaries"]["document"] == "extractive" and manual["summaries"]["sections_by_model"] == 0
    assert manual["tags"] == {
        "project": "demo",
        "source_type": None,
        "confidentiality": "public",
        "date": "2026-11-01",  # the PDF's own creation date
        "extra": {"team": "support"},
    }
    assert docs["commissioning-guide.md"]["tags"]["date"] is None
    assert info["vectors"] == sum(d["chunks"] for d in docs.values())
    with pytest.MonkeyPatch.context() as patch:  # an 80-column terminal: no name broken across lines
        patch.setattr(pagegraph.cli.common.console, "width", 80)
        code, out = run("inspect")
    assert code == 0 and all(len(line) <= 80 for line in out.splitlines()), out
    for name in docs:
        assert re.search(rf"^{re.escape(name)}  \w+ · \d+ pages? · \d+ chunks · indexed$", out, re.MULTILINE), out
    assert "summarize would add" in out and " left" not in out
    code, out = run("inspect", "--document", "sb40", "--tree")
    assert code == 0 and "3.2 Mounting" in out and "7 Troubleshooting" in out
    code, out = run("inspect", "--summaries", "--json")
    summaries = json.loads(out)
    assert code == 0 and set(summaries) == set(docs)
    assert summaries["sb40-user-manual.pdf"]["method"] == "extractive"
    assert "Technical specifications" in summaries["sb40-user-manual.pdf"]["key_topics"]

    # --graph rag: its gate abstains on this question before any model call (auto would plan with the model)
    code, out = run("ask", "What is the recipe for sourdough bread?", "--graph", "rag", "--debug")
    assert code == 0 and "could not answer this from the indexed documents" in " ".join(out.split())
    assert "gate no passage of the searched documents is close" in " ".join(out.split())
    flat = " ".join(out.split())
    assert flat.index("Evidence [") < flat.index("could not answer") < flat.index("it does not answer the question")
    code, out = run("ask", "What is the recipe for sourdough bread?", "--graph", "rag", "--json")
    printed = json.loads(out)
    assert code == 0 and printed["abstained"] is True
    assert printed["highlights"] and all(h["label"].startswith("[") and h["sentence"] for h in printed["highlights"])
    # a mistyped document name is said, with what the index holds, not taken for "nothing found"
    code, out = run("search", "error code", "--document", "nope.pdf")
    flat = " ".join(out.split())
    assert code != 0 and "no document in the index is called 'nope.pdf'" in flat and "sb40-user-manual.pdf" in flat
    code, out = run("search", "error code", "--document", "sb40")
    assert code == 0 and "sb40-user-manual.pdf" in out and "DEBUG" not in out, out
    code, out = run("ask", "What does error code E04 mean?", "--graph", "rag", "--document", "nope.pdf", "--json")
    printed = json.loads(out)
    assert code == 0 and printed["abstained"] and "no document in the index is called 'nope.pdf'" in printed["answer"]
    assert printed["llm_calls"] == 0
    code, out = run("ask", "anything", "--output-type", "poem")
    assert code == 2 and "--output-type 'poem'" in out
    code, out = run("ask", "anything", "--since", "2026-12-01", "--until", "2026-11-01")
    assert code == 2 and "--since 2026-12-01 is after --until 2026-11-01" in out

    # dates: only the manual is dated (its own), so a range without it leaves nothing to search
    code, out = run("ask", "What does error code E04 mean?", "--graph", "rag", "--json", "--until", "2026-10-31")
    printed = json.loads(out)
    assert code == 0 and printed["abstained"] and not printed.get("highlights")
    code, out = run("ask", "What does error code E04 mean?", "--graph", "rag", "--json", "--since", "2026-11-01")
    printed = json.loads(out)
    assert code == 0 and {h["label"].split(",")[0] for h in printed["highlights"]} == {"[sb40-user-manual.pdf"}
    code, out = run("ingest", str(SAMPLES / "commissioning-guide.md"), "--date", "2026-11-02")
    assert code == 0 and "retagged" in out
    code, out = run("ask", "What does error code E04 mean?", "--graph", "rag", "--json", "--since", "2026-11-02")
    printed = json.loads(out)
    assert code == 0 and {h["label"].split(",")[0] for h in printed["highlights"]} == {"[commissioning-guide.md"}

    # search: ranked passages with their labels and highlighted sentences, no model; the filters ask has
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pagegraph.llm.factory.get_chat_model", lambda *args, **kwargs: pytest.fail("a model call"))
        code, out = run("search", "How much enregy does the battery store?")
        assert code == 0 and re.search(r"^1\. \[sb40-user-manual\.pdf, .*p\. \d", out, re.MULTILINE), out
        assert out.startswith('read "enregy" as "energy"\n'), out
        assert "» The SB-40 stores up to 10.2 kWh of energy." in out
        code, out = run("search", "What does error code E04 mean?", "--json", "--document", "support-call")
        found = json.loads(out)
        assert code == 0 and {p["source"] for p in found["passages"]} == {"support-call-2024-03-14.vtt"}
        assert found["highlights"] and all(
            h["passage_id"] in {p["id"] for p in found["passages"]} for h in found["highlights"]
        )
        code, out = run("search", "What does error code E04 mean?", "--json", "--until", "2026-11-01")
        assert code == 0 and {p["source"] for p in json.loads(out)["passages"]} == {"sb40-user-manual.pdf"}
        code, out = run("search", "What does error code E04 mean?", "--until", "2026-10-31")
        assert code == 0 and "Nothing found" in out
        code, out = run("search", "   ")
        assert code == 2 and "the search is empty" in out, out

    # the follow-up is rewritten (one model call) and then abstains at the gate like the first question
    rewrite = ScriptedChatModel.replying('"What is the recipe for rye bread?"')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pagegraph.llm.factory.get_chat_model", lambda *args, **kwargs: rewrite)
        chat = CliRunner().invoke(
            app,
            ["chat", "--graph", "rag", "--debug"],
            input="What is the recipe for sourdough bread?\nAnd for rye bread?\n\n",
        )
    flat = " ".join(chat.output.split())
    assert chat.exit_code == 0 and flat.count("could not answer this") == 2
    assert "rewrite_followup rewritten: What is the recipe for rye bread?" in flat and not rewrite.script
    assert flat.count("searched as:") == 1 and "searched as: What is the recipe for rye bread?" in flat
    code, out = run("ask", "anything", "--graph", "tree")
    assert code == 2 and "choose from auto, rag, extract, small_model, pageindex, basic" in " ".join(out.split())


def test_ask_pageindex_and_the_tree_with_section_summaries(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("ingest", str(SAMPLES))[0] == 0
    code, out = run("inspect", "--document", "sb40", "--tree")
    flat = " ".join(out.split())
    assert code == 0 and "1 section summaries written, 11 short enough to keep as they are" in flat
    assert "text: 3.2 Mounting Fix the wall bracket with the four M8 anchors" in flat
    tree = json.loads(run("inspect", "--document", "sb40", "--tree", "--json")[1])
    assert all(node["summary"] for node in tree) and tree[0]["is_summary"] is True

    def choose_specifications(messages) -> str:
        view = str(messages[-1].content)
        node = re.search(r"^(n\d+) \|\s+5 Technical specifications \|", view, re.M).group(1)
        return json.dumps({"node_ids": [node]})

    model = ScriptedChatModel.replying(choose_specifications, "The SB-40 weighs 98 kg [1].")
    monkeypatch.setattr("pagegraph.llm.factory.get_chat_model", lambda *args, **kwargs: model)
    question = "How much does the SB-40 weigh?"
    code, out = run("ask", question, "--graph", "pageindex", "--document", "sb40-user-manual.pdf", "--debug")
    flat = " ".join(out.split())
    assert code == 0, out
    assert "find_files 1 files: sb40-user-manual.pdf" in flat and "select[0] sb40-user-manual.pdf: 5 Technical" in flat
    assert "The SB-40 weighs 98 kg [sb40-user-manual.pdf, 5 Technical specifications, p. 6]" in flat


def test_search_without_an_index_says_how_to_make_one(cli_env: Path) -> None:
    code, out = run("search", "battery")
    assert code == 2 and f"no index at {cli_env}" in " ".join(out.split()) and "pagegraph ingest" in out


def test_chat_indexes_its_documents(cli_env: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "commissioning-guide.md", docs)
    question = "What is the recipe for sourdough bread?\n\n"
    chat = CliRunner().invoke(app, ["chat", str(docs), "--graph", "rag"], input=question)
    assert chat.exit_code == 0 and "1 added" in chat.output and "could not answer this" in chat.output
    shutil.copy(SAMPLES / "support-call-2024-03-14.vtt", docs)
    reused = CliRunner().invoke(app, ["chat", str(docs), "--graph", "rag", "--reuse"], input=question)
    assert reused.exit_code == 0 and "added" not in reused.output, "--reuse keeps the index as it is"
    rebuilt = CliRunner().invoke(app, ["chat", str(docs), "--graph", "rag", "--force"], input=question)
    assert rebuilt.exit_code == 0 and "2 added" in rebuilt.output
    both = CliRunner().invoke(app, ["chat", str(docs), "--reuse", "--force"], input=question)
    assert both.exit_code == 2 and "exclude each other" in both.output

    code, out = run("ingest", str(SAMPLES), "--chunk-size", "600")
    assert code == 2 and "chunk_size: index has 1000, this run asks for 600" in " ".join(out.split())


def test_bad_files_fail_clearly_while_others_are_indexed(cli_env: Path, tmp_path: Path) -> None:
    code, out = run("ingest", str(SAMPLES / "commissioning-guide.md"))
    assert code == 0, out
    with open_index(cli_env, Settings()) as index:
        before = [(c.id, c.text) for c in index.store.chunks()]

    bad = tmp_path / "bad"
    bad.mkdir()
    good = text_pdf(bad / "good.pdf", [("Overview", "The relay board switches four loads. " * 30)] * 2)
    files = {
        corrupt_pdf(bad / "corrupt.pdf"): "corrupt PDF",
        truncated_pdf(bad / "truncated.pdf", good): "truncated",
        password_pdf(bad / "locked.pdf", good): "encrypted with a password",
        empty_pdf(bad / "empty.pdf"): "no pages",
        image_only_pdf(bad / "scan.pdf"): "image-only PDF",
    }
    unknown = bad / "diagram.png"
    unknown.write_bytes(b"\x89PNG")
    (bad / "notes.xyz").write_text("found in the folder, not named")
    missing = bad / "missing.pdf"
    code, out = run("ingest", str(bad), str(unknown), str(missing))
    assert code == 1
    flat = " ".join(out.split())
    for path, reason in files.items():
        assert f"✗ {path.name}: " in flat and reason in flat
    assert "✗ diagram.png: unknown file type '.png'" in flat
    assert "skipped notes.xyz: unsupported type '.xyz'" in flat and "skipped diagram.png" not in flat
    assert "✗ missing.pdf: no such file" in flat
    assert "1 added" in flat and "7 failed" in flat and "1 skipped" in flat

    with open_index(cli_env, Settings()) as index:
        names = sorted(d.name for d in index.store.documents())
        assert names == ["commissioning-guide.md", "good.pdf"]
        guide = next(d for d in index.store.documents() if d.name == "commissioning-guide.md")
        assert [(c.id, c.text) for c in index.store.chunks(guide.id)] == before
        assert len(index.store.failures()) == 7
    code, out = run("inspect")
    assert "failed: truncated" in " ".join(out.split())


def test_a_folder_of_unreadable_links_fails_naming_them(cli_env: Path, tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    (links / "loop.md").symlink_to(links / "loop.md")
    (links / "gone.md").symlink_to(tmp_path / "nowhere.md")
    code, out = run("ingest", str(links))
    flat = " ".join(out.split())
    assert code == 1, out
    assert "failed: loop.md: a link loop" in flat and "failed: gone.md: a broken link" in flat and "2 failed" in flat


def test_sigkill_mid_ingest_keeps_committed_documents(cli_env: Path, tmp_path: Path, shared_docs: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(SAMPLES / "commissioning-guide.md", docs / "a-guide.md")
    for name in ("2303.05039v2.pdf", "watch_d.pdf"):
        shutil.copy(shared_docs / name, docs / f"b-{name}")
    # killed a second after the first commit: inside the next document
    kill_ingest_after_a_commit(
        [str(docs)], os.environ.copy(), lambda: committed_names(cli_env), settle=1.0, timeout=240
    )

    with open_index(cli_env, Settings(), write=True) as index:  # opening for writing recovers
        documents = index.store.documents()
        assert 1 <= len(documents) < 3
        for doc in documents:
            chunk_ids = [c.id for c in index.store.chunks(doc.id)]
            assert len(chunk_ids) == doc.n_chunks > 0
            assert len(index.store.pages(doc.id)) == doc.n_pages
            assert len(index.store.tree(doc.id)) == doc.n_nodes
            found = index.vectors._collection.get(where={"document_id": doc.id}, include=[])["ids"]
            assert sorted(found) == sorted(chunk_ids)
        assert index.vectors.count() == sum(d.n_chunks for d in documents)
        assert index.bm25.chunk_ids == [c.id for c in index.store.chunks()]
        done = {d.name for d in documents}

    code, out = run("ingest", str(docs))
    assert code == 0, out
    flat = " ".join(out.split())
    for name in done:
        assert f"{name}: unchanged" in flat
    assert f"{3 - len(done)} added" in flat


def test_recreate_rebuilds_with_new_parameters_and_validates_first(cli_env: Path) -> None:
    guide = str(SAMPLES / "commissioning-guide.md")
    assert run("ingest", guide)[0] == 0
    code, out = run("ingest", guide, "--recreate", "--chunk-size", "400", "--chunk-overlap", "300")
    assert code == 2 and "overlap" in out
    assert json.loads(run("inspect", "--json")[1])["manifest"]["params"]["chunk_size"] == 1000  # untouched
    code, out = run("ingest", guide, "--recreate", "--chunk-size", "10")
    assert code == 2 and "--chunk-size 10: input should be greater than or equal to 100" in " ".join(out.split())
    code, out = run("ingest", guide, "--recreate", "--chunk-size", "400", "--chunk-overlap", "50")
    assert code == 0, out
    info = json.loads(run("inspect", "--json")[1])
    assert info["manifest"]["params"]["chunk_size"] == 400
    assert info["documents"][0]["chunks"] > 6


def test_serve_refuses_an_open_server_off_loopback_and_a_busy_port(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAGEGRAPH_AUTH_FILE", raising=False)
    monkeypatch.delenv("PAGEGRAPH_AUTH_USERS", raising=False)
    code, out = run("serve", "--host", "0.0.0.0")
    assert code == 2 and "configure users or stay on 127.0.0.1" in out
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        code, out = run("serve", "--port", str(busy.getsockname()[1]))
    assert code == 2 and "is in use" in out


def test_the_team_runtime_names_a_database_it_cannot_reach() -> None:
    unreachable = "postgresql://team:secret@127.0.0.1:1/pagegraph"  # port 1 on loopback: refused at once
    with pytest.raises(PagegraphError) as refused:
        prepare_database(unreachable, "pagegraph_team_threads")
    assert "cannot connect to the database at postgresql://team:***@127.0.0.1:1/pagegraph" in str(refused.value)
    assert "secret" not in str(refused.value)


def test_summaries_option_and_summarize_refuse_clearly(cli_env: Path) -> None:
    code, out = run("ingest", str(SAMPLES / "commissioning-guide.md"), "--summaries", "later")
    assert code == 2 and "choose extractive or model" in out
    code, out = run("summarize", "--index", str(cli_env.parent / "nowhere"), "--model", "ollama:none")
    assert code == 2 and "no index at" in out


def test_version_and_the_server_environment() -> None:
    code, out = run("--version")
    assert code == 0 and out.strip() == f"pagegraph {pagegraph.__version__}"
    quiet = server_environment({"PATH": "/bin"})
    assert quiet["LANGSMITH_TRACING"] == "false" and quiet["HF_HUB_OFFLINE"] == "1" and quiet["PATH"] == "/bin"
    traced = server_environment({"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "k"})
    assert traced["LANGSMITH_TRACING"] == "true" and traced["LANGGRAPH_CLI_NO_ANALYTICS"] == "1"


def test_help_shows_the_defaults_it_names() -> None:
    """Rich reads `[default: x]` as markup and drops it: the help says its defaults in round brackets."""
    for command, default in [("ingest", "(default: 1000)"), ("eval", "(default: bm25, dense, hybrid, ensemble)")]:
        code, out = run(command, "--help")
        assert code == 0 and default in " ".join(out.replace("│", " ").split()), out


@pytest.mark.skipif(ocr_unavailable(OcrOptions()) is not None, reason=str(ocr_unavailable(OcrOptions())))
def test_a_scanned_pdf_is_ingested_with_ocr_and_refused_without(cli_env: Path, tmp_path: Path) -> None:
    good = text_pdf(tmp_path / "good.pdf", [("Overview", "The relay board switches four loads at 230 volts.")] * 2)
    scan = scanned_pdf(tmp_path / "scan.pdf", good)
    code, out = run("ingest", str(scan), "--no-ocr")
    assert code == 1 and "image-only PDF" in out and "OCR is off" in " ".join(out.split())
    code, out = run("ingest", str(scan))
    assert code == 0 and "1 added" in out, out
    code, out = run("inspect", "--json")
    assert json.loads(out)["documents"][0]["ocr_pages"] == 2
