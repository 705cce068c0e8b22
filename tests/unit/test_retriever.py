"""`pagegraph.as_retriever`: the default search as a LangChain retriever, alone and as the tool of a LangChain agent
driven by a scripted tool-calling model."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import create_retriever_tool

import pagegraph
from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.embedder import Embedder
from pagegraph.services import Services
from pagegraph.store.index import open_index

MANUAL = "sb40-user-manual.pdf"
LABEL = re.compile(r"\[[^\]]+\]")


def retriever(sample_index: Path, cache_dir: Path, embedder: Embedder, **options: Any):
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    return pagegraph.as_retriever(services=Services(Settings(cache_dir=cache_dir), index=index), **options), index


def test_documents_carry_source_section_pages_and_highlights(
    sample_index: Path, cache_dir: Path, embedder: Embedder
) -> None:
    search, index = retriever(sample_index, cache_dir, embedder, filters={"documents": [MANUAL]}, k=3)
    try:
        found = search.invoke("What torque do the AC terminals take?")
        assert 1 <= len(found) <= 3 and {d.metadata["source"] for d in found} == {MANUAL}
        best = next(d for d in found if "2.5 Nm" in d.page_content)
        sentence = next(h for h in best.metadata["highlights"] if "2.5 Nm" in h["sentence"])
        assert sentence["page"] == 4 and sentence["label"] == f"[{MANUAL}, 3.3 Wiring, p. 4]"
        manual = next(d for d in index.documents() if d.name == MANUAL)
        page = next(p for p in index.pages(manual.id) if p.number == 4)
        assert "2.5 Nm" in page.text[sentence["start"] : sentence["end"]]
        assert best.metadata["start_page"] <= 4 <= best.metadata["end_page"] and best.metadata["section"]
        again = asyncio.run(search.ainvoke("What torque do the AC terminals take?"))
        assert [d.id for d in again] == [d.id for d in found]
        other = pagegraph.as_retriever(services=search.tools.services, filters={"documents": ["none.pdf"]})
        with pytest.raises(PagegraphError, match="no document in the index is called 'none.pdf': it holds"):
            other.invoke("AC terminals")  # a mistyped name is said, not taken for "nothing found"
    finally:
        index.close()


class ToolCallingModel(BaseChatModel):
    """Calls the search tool once with the question, then answers with the sentence holding `fact` from what the
    tool returned, cited with the label above it."""

    fact: str

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-caller"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            call = {"name": "search_manuals", "args": {"query": str(last.content)}, "id": "call-1"}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            assert isinstance(last, ToolMessage)
            label = ""
            for line in str(last.content).splitlines():
                label = LABEL.match(line).group(0) if LABEL.match(line) else label
                if self.fact in line:
                    break
            reply = AIMessage(content=f"Tighten them to {self.fact} {label}.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def test_a_langchain_agent_cites_the_page_the_retriever_found(
    sample_index: Path, cache_dir: Path, embedder: Embedder
) -> None:
    search, index = retriever(sample_index, cache_dir, embedder, k=4)
    try:
        tool = create_retriever_tool(
            search,
            "search_manuals",
            "Search the product manuals; each passage starts with its citation label.",
            document_prompt=PromptTemplate.from_template("{label}\n{page_content}"),
        )
        agent = create_agent(ToolCallingModel(fact="2.5 Nm"), tools=[tool])
        done = agent.invoke({"messages": [HumanMessage("What torque do the AC terminals take?")]})
        answer = done["messages"][-1].content
        cited = LABEL.search(answer)
        pages = re.search(r"p\. (\d+)(?:–(\d+))?\]", cited.group(0)) if cited else None
        assert pages and cited.group(0).startswith(f"[{MANUAL}, "), answer
        assert int(pages.group(1)) <= 4 <= int(pages.group(2) or pages.group(1)), answer
        assert any(isinstance(m, ToolMessage) and "2.5 Nm" in m.content for m in done["messages"])
    finally:
        index.close()
