"""One registry of graphs (`pagegraph.GRAPHS`): langgraph.json serves exactly its entries, the CLI offers and
explains each, eval's reader-ceiling mode finds the stage it replaces in each, and build_graph refuses others.
(The web page's `/ui/me` lists them: tests/e2e/test_web_page.py.)"""

from __future__ import annotations

import json

import pytest

from pagegraph import GRAPH_NAMES, GRAPHS, build_graph
from pagegraph.cli.ask import GraphOption
from pagegraph.config import Settings
from pagegraph.services import Services
from tests.conftest import REPO
from tests.fakes import ScriptedChatModel


def test_langgraph_json_serves_exactly_the_registered_graphs() -> None:
    served = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    assert set(served) == {*GRAPH_NAMES, "ingest", "search"}
    assert served == {name: f"pagegraph.server.graphs:{name}" for name in served}


def test_the_served_graphs_are_built_once_each_under_its_name() -> None:
    from langgraph.graph.state import CompiledStateGraph

    import pagegraph.server.graphs as served

    for name in (*GRAPH_NAMES, "ingest", "search"):
        graph = getattr(served, name)
        assert isinstance(graph, CompiledStateGraph) and graph.name == name


def test_the_cli_explains_every_registered_graph() -> None:
    (option,) = GraphOption.__metadata__
    for spec in GRAPHS.values():
        assert f"{spec.name}: {spec.summary}" in option.help


@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_each_graph_has_the_stage_eval_replaces_with_gold_pages(name: str, tmp_path) -> None:
    spec = GRAPHS[name]
    services = Services(Settings(cache_dir=tmp_path), chat_model=ScriptedChatModel())
    graph = spec.build_run(services)  # a run of the graph, as eval's reader ceiling sets its state
    if spec.retrieval_stage is None:
        assert name == "auto"  # it reads with the graph it picks
    else:
        assert spec.retrieval_stage in graph.get_graph().nodes


def test_an_unknown_graph_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="choose from auto, rag, extract"):
        build_graph("tree")
