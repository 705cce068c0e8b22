"""Access is enforced where the index is read: a server user who edits their thread's state before a run (an
interrupt and `update_state`, a `Command`, a fork of an earlier checkpoint) gets nothing beyond their rights, in the
answer or in any streamed event. A run's own stages are out of a client's reach: the run is the thread's subgraph,
which starts afresh at `start` (a `Command` aimed at one of its stages, or an interrupt after `start`, reaches
nothing). The model echoes what it was shown, so a passage read for the run anywhere would reach the output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from pagegraph import GRAPH_NAMES, GRAPHS, build_graph
from pagegraph.access.runs import ACCESS_KEY, AUTH_USER_KEY
from pagegraph.config import Context, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.services import Services
from pagegraph.state.documents import DocumentTags
from pagegraph.store.index import open_index
from tests.fakes import EchoChatModel

SECRET = "Zephyrine"
CONFIDENTIAL = f"""# Project Zeus launch plan

## Launch code

The launch code of project Zeus is {SECRET}-4471, known to the board only.
The launch of project Zeus is planned for the spring after the board approves the budget.
"""
PUBLIC = """# Apollo handbook

## Opening hours

The Apollo visitor centre opens at nine and closes at five on weekdays.
Visitors of the Apollo centre park in the north car park.
"""
QUESTION = "What is the launch code of project Zeus?"
READER = {"identity": "rita", ACCESS_KEY: {"projects": ["apollo"], "ceiling": "public", "role": "reader"}}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder) -> Path:
    folder = tmp_path_factory.mktemp("access")
    (folder / "zeus.md").write_text(CONFIDENTIAL)
    (folder / "apollo.md").write_text(PUBLIC)
    settings = Settings(index=folder / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        ingest = Ingestor(index)
        assert not ingest.run([folder / "zeus.md"], DocumentTags(project="zeus", confidentiality="confidential")).failed
        assert not ingest.run([folder / "apollo.md"], DocumentTags(project="apollo", confidentiality="public")).failed
    return settings.index


def graph(library: Path, cache_dir: Path, embedder: Embedder, name: str):
    index = open_index(library, Settings(cache_dir=cache_dir), embedder=embedder)
    services = Services(Settings(cache_dir=cache_dir), chat_model=EchoChatModel(), index=index)
    return build_graph(name, services=services, checkpointer=InMemorySaver())


def config(thread: str, user: dict | None = READER) -> dict:
    configurable: dict[str, Any] = {"thread_id": thread}
    if user is not None:
        configurable[AUTH_USER_KEY] = user
    return {"configurable": configurable}


def everything(compiled, payload: Any, run_config: dict) -> str:
    """Every event the run streams, in every mode, and its final state, as text."""
    seen = []
    try:
        for part in compiled.stream(
            payload, run_config, context=Context(tree={"use": True}), stream_mode=["updates", "messages", "values"],
            subgraphs=True,
        ):  # fmt: skip
            seen.append(repr(part))
        seen.append(repr(compiled.get_state(run_config).values))
    except Exception as exc:  # noqa: BLE001 - a run that fails on an edited state must still leak nothing
        seen.append(repr(exc))
    return "\n".join(seen)


def edited_before_the_run(compiled, user: dict | None, thread: str) -> str:
    """Interrupt before the run, point the question at the confidential document and drop the filters, go on."""
    run_config = config(thread, user)
    first = {"question": "When does the visitor centre open?"}
    compiled.invoke(first, run_config, interrupt_before=[compiled.get_name()], interrupt_after=["start"])
    compiled.update_state(run_config, {"question": QUESTION, "filters": None, "documents": ["zeus.md"]})
    return everything(compiled, None, run_config)


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_an_edited_state_reads_nothing_beyond_the_user_s_rights(library, cache_dir, embedder, name) -> None:
    compiled = graph(library, cache_dir, embedder, name)
    assert SECRET not in edited_before_the_run(compiled, READER, f"edit-{name}")


@pytest.mark.parametrize("name", GRAPH_NAMES)
@pytest.mark.parametrize("target", ["the run", "the stage after start"])
def test_a_command_reads_nothing_beyond_the_user_s_rights(library, cache_dir, embedder, name, target) -> None:
    compiled = graph(library, cache_dir, embedder, name)
    if target == "the run":
        goto = name
    else:
        run = GRAPHS[name].build_run(Services(Settings(cache_dir=cache_dir), chat_model=EchoChatModel()))
        goto = next(end for start, end in run.builder.edges if start == "rewrite_followup")
    update = {"question": QUESTION, "filters": None, "documents": ["zeus.md"]}
    assert SECRET not in everything(compiled, Command(update=update, goto=goto), config(f"goto-{name}-{goto}"))


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_a_forked_checkpoint_reads_nothing_beyond_the_user_s_rights(library, cache_dir, embedder, name) -> None:
    compiled = graph(library, cache_dir, embedder, name)
    run_config = config(f"fork-{name}")
    compiled.invoke({"question": "When does the visitor centre open?"}, run_config)
    before_run = next(s for s in compiled.get_state_history(run_config) if s.next == (name,))
    forked = compiled.update_state(before_run.config, {"question": QUESTION, "filters": None})
    # the server runs a fork as the user who asks for it, as every run
    as_user = {"configurable": {**forked["configurable"], AUTH_USER_KEY: READER}}
    assert SECRET not in everything(compiled, None, as_user)


def test_the_replay_finds_the_document_when_the_caller_may_read_it(library, cache_dir, embedder) -> None:
    """The same edit outside the server (no user: the caller owns the index) reads the document: the tests above
    would see a leak."""
    compiled = graph(library, cache_dir, embedder, "extract")
    assert SECRET in edited_before_the_run(compiled, None, "owner")
