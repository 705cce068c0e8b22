"""`ingest`: index files on the server's disk (paths or file:// URLs) with project and confidentiality tags."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START
from langgraph.types import Checkpointer

from pagegraph.config import Context
from pagegraph.graphs.builder import CompiledGraph, StageGraph
from pagegraph.nodes.ingest import ingest_documents
from pagegraph.services import Services
from pagegraph.state.ingest import IngestInput, IngestOutput, IngestState


def build_ingest_graph(services: Services, checkpointer: Checkpointer = None) -> CompiledGraph:
    builder = StageGraph(IngestState, context_schema=Context, input_schema=IngestInput, output_schema=IngestOutput)
    builder.add_node("ingest", partial(ingest_documents, services=services))
    builder.add_edge(START, "ingest")
    builder.add_edge("ingest", END)
    return builder.compile(checkpointer=checkpointer, name="ingest")
