"""`pageindex`: vectorless, structure-first. find_files (named, or ranked by retrieval) → per file, in parallel,
the model picks `nodes_per_file` sections from the tree of titles and summaries → those sections' text → answer with
[file, section, pages] citations → judge → verify. Each stage's trace record holds the search history in `details`; a file
without a section tree is skipped, all of them → abstain; failures → basic."""

from __future__ import annotations

from functools import partial

from langgraph.types import Checkpointer

from pagegraph.graphs.basic import checked_and_compiled
from pagegraph.graphs.builder import CompiledGraph, question_graph
from pagegraph.graphs.edges import fan_out, file_tasks, proceed
from pagegraph.nodes.answer import answer
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.pageindex import collect_sections, find_files, select_sections
from pagegraph.services import Services
from pagegraph.state.graph import PageindexState


def build_pageindex_graph(
    services: Services, checkpointer: Checkpointer = None, *, nested: bool = False
) -> CompiledGraph:
    builder = question_graph(services, PageindexState, nested=nested, then="highlight")
    builder.add_node("highlight", guarded("highlight", partial(highlight, services=services, search=True)))
    builder.add_node("find_files", guarded("find_files", partial(find_files, services=services)))
    builder.add_node("select", guarded("select", partial(select_sections, services=services)))
    builder.add_node("collect", collect_sections)
    builder.add_node("answer", guarded("answer", partial(answer, services=services)))
    builder.add_edge("highlight", "find_files")
    builder.add_conditional_edges("find_files", *fan_out("select", file_tasks))
    builder.add_edge("select", "collect")
    builder.add_conditional_edges("collect", *proceed("answer"))
    builder.add_conditional_edges("answer", *proceed("judge", abstains=False))
    return checked_and_compiled(builder, services, "pageindex", checkpointer)
