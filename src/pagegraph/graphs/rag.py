"""`rag`, the main graph: route → plan → retrieve (one parallel task per plan step) → gate → expand_tree (section
tree navigation for documents with an outline) → answer → judge → verify. Abstain edges from route, gate and
verify; a stage that raises takes the run to the basic graph."""

from __future__ import annotations

from functools import partial

from langgraph.types import Checkpointer

from pagegraph.graphs.basic import checked_and_compiled
from pagegraph.graphs.builder import CompiledGraph, question_graph
from pagegraph.graphs.edges import fan_out, plan_steps, proceed
from pagegraph.nodes.answer import answer
from pagegraph.nodes.expand_tree import expand_tree
from pagegraph.nodes.gate import gate
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.plan import plan
from pagegraph.nodes.retrieve import retrieve
from pagegraph.nodes.route import route
from pagegraph.services import Services
from pagegraph.state.graph import RagState


def build_rag_graph(services: Services, checkpointer: Checkpointer = None, *, nested: bool = False) -> CompiledGraph:
    builder = question_graph(services, RagState, nested=nested, then="highlight")
    builder.add_node("highlight", guarded("highlight", partial(highlight, services=services, search=True)))
    builder.add_node("route", guarded("route", partial(route, services=services)))
    builder.add_node("plan", guarded("plan", partial(plan, services=services)))
    builder.add_node("retrieve", guarded("retrieve", partial(retrieve, services=services)))
    builder.add_node("expand_tree", guarded("expand_tree", partial(expand_tree, services=services)))
    builder.add_node("gate", partial(gate, services=services))
    builder.add_node("answer", guarded("answer", partial(answer, services=services)))
    builder.add_edge("highlight", "route")
    builder.add_conditional_edges("route", *proceed("plan"))
    builder.add_conditional_edges("plan", *fan_out("retrieve", plan_steps, abstains=False))
    builder.add_edge("retrieve", "gate")
    # the tree is navigated only for questions the gate lets through: no judge calls before an abstention
    builder.add_conditional_edges("gate", *proceed("expand_tree"))
    builder.add_conditional_edges("expand_tree", *proceed("answer", abstains=False))
    builder.add_conditional_edges("answer", *proceed("judge", abstains=False))
    return checked_and_compiled(builder, services, "rag", checkpointer)
