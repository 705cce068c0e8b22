"""The reader ceiling: a graph's answer stage run on a row's gold evidence pages instead of what it retrieved.

Each gold page becomes one passage (the page's text, labelled with the section that holds the page, citing the
chunks on it) and is put into the graph's state as if its retrieval stage had returned it; the graph then runs
on from there, so everything after retrieval (gate, map and filter, answer, verify) is the graph's own. `auto`
reads with the graph it would pick. Rows without gold pages (the unanswerable ones) are not run: the figure is the
accuracy of the reader alone where the evidence is known.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from pagegraph.config import Context
from pagegraph.eval.metrics import gold_for
from pagegraph.nodes.choose import graph_for_model
from pagegraph.services import Services
from pagegraph.state.answering import Evidence
from pagegraph.state.evaluation import EvalQuestion
from pagegraph.state.graph import checkpoint_serializer
from pagegraph.store.index import Index


def gold_passages(question: EvalQuestion, index: Index, page_counts: dict[str, int]) -> list[Evidence]:
    """One passage per valid gold page of the question, ordered by document and page."""
    documents = {doc.name: doc for doc in index.documents()}
    passages = []
    read: dict[str, tuple[list, list, list]] = {}  # a document's pages, tree and chunks, read once per row
    for rank, (name, number) in enumerate(sorted(gold_for(question, page_counts).pages)):
        document = documents.get(name)
        if document is None:
            continue
        if name not in read:
            read[name] = (index.pages(document.id), index.tree(document.id), index.chunks(document.id))
        pages, tree, document_chunks = read[name]
        page = next(p for p in pages if p.number == number)
        holding = [n for n in tree if n.level and n.start_page <= number <= n.end_page]
        section = max(holding, key=lambda n: (n.level, -n.position)).title if holding else ""
        chunks = [c.id for c in document_chunks if c.start_page <= number <= c.end_page]
        passages.append(
            Evidence(
                id=f"gold:{document.id}:p{number}",
                chunk_ids=chunks,
                source=name,
                section=section,
                start_page=number,
                end_page=number,
                text=page.text,
                score=1.0,
                rank=rank,
            )
        )
    return passages


class GoldEvidenceReader:
    """Answers a row the way `graph` would if its retrieval had returned exactly the row's gold pages."""

    def __init__(
        self, graph: str, services: Services, index: Index, context: Context, page_counts: dict[str, int]
    ) -> None:
        from pagegraph import GRAPHS

        # `auto` reads with the graph it would pick for the run's model
        self.name = graph_for_model(context, services.settings)[0] if graph == "auto" else graph
        self.spec = GRAPHS[self.name]
        self.graph = self.spec.build_run(services, InMemorySaver(serde=checkpoint_serializer()))
        self.index = index
        self.context = context.with_changes(tree={"use": False})  # the tree would add sections beside the gold
        self.page_counts = page_counts

    def __call__(self, question: EvalQuestion) -> dict[str, Any] | None:
        passages = gold_passages(question, self.index, self.page_counts)
        if not question.answerable or not passages:
            return None
        config: RunnableConfig = {"configurable": {"thread_id": uuid.uuid4().hex}}
        values = {
            "question": question.question,
            "documents": question.documents,
            "output_type": self.context.output_type,
            "retrieved": passages,
            "relevance": [1.0],
        }
        self.graph.update_state(config, values, as_node=self.spec.retrieval_stage)
        return self.graph.invoke(None, config, context=self.context)
