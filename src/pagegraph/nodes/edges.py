"""Where a run goes next, read from the state the stages left (the graphs wire these as conditional edges)."""

from __future__ import annotations

from langgraph.types import Send

from pagegraph.state.graph import ChunkTask, FileTask, RagState, StepTask


def failed(state: RagState) -> bool:
    return state.get("failure") is not None


def after_start(state: RagState) -> str:
    return "abstain" if state.get("abstain_reason") else "route"


def after_route(state: RagState) -> str:
    if failed(state):
        return "basic"
    repair = state.get("repair")
    if repair is not None and repair.stage == "route":
        return "route"
    return "abstain" if state.get("abstain_reason") else "plan"


def after_plan(state: RagState) -> list[Send] | str:
    if failed(state):
        return "basic"
    repair = state.get("repair")
    if repair is not None and repair.stage == "plan":
        return "plan"
    routed = state["route"].names if state.get("route") else []
    tasks = []
    for number, step in enumerate(state["plan"].steps):
        task = StepTask(
            question=state["question"],
            step=number,
            query=step.query,
            documents=step.documents or routed,
            kind=state["plan"].kind,
        )
        if state.get("filters"):
            task["filters"] = state["filters"]
        tasks.append(Send("retrieve", task))
    return tasks


def after_expand_tree(state: RagState) -> str:
    return "basic" if failed(state) else "answer"


def after_gate(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "abstain" if state.get("abstain_reason") else "answer"


def after_answer(state: RagState) -> str:
    return "basic" if failed(state) else "verify"


def after_verify(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "abstain" if state.get("abstain_reason") else "end"


def after_read(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "read" if state["readings"][-1].widen else "weigh"


def after_weigh(state: RagState) -> str:
    return "abstain" if state.get("abstain_reason") else "verify"


def after_plan_search(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "abstain" if state.get("abstain_reason") else "search"


def after_search(state: RagState) -> str:
    return "basic" if failed(state) else "gate"


def dispatch_chunks(state: RagState) -> list[Send] | str:
    """After the small_model gate: one map task per retrieved chunk."""
    if failed(state):
        return "basic"
    if state.get("abstain_reason"):
        return "abstain"
    return [Send("map_chunk", ChunkTask(question=state["question"], evidence=e)) for e in state.get("retrieved") or []]


def after_filter(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "abstain" if state.get("abstain_reason") else "reduce"


def after_choice(state: RagState) -> str:
    return state["graph_choice"]


def dispatch_files(state: RagState) -> list[Send] | str:
    """After find_files: one section-selection task per file."""
    if failed(state):
        return "basic"
    if state.get("abstain_reason"):
        return "abstain"
    names = state["route"].names
    return [Send("select", FileTask(question=state["question"], document=n, step=i)) for i, n in enumerate(names)]


def after_collect(state: RagState) -> str:
    if failed(state):
        return "basic"
    return "abstain" if state.get("abstain_reason") else "answer"
