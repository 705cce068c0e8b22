"""Where a run goes next, read from the state the stages left. One rule serves every stage: a stage that failed
goes to the fallback (`hand_over`, then the basic graph), one that decided to abstain goes to `abstain`, otherwise the run goes on. Each edge
returns the name of the node it leads to and carries the list of those nodes, so a graph wires it as
`builder.add_conditional_edges(stage, *edge)`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from langgraph.types import Send

from pagegraph.state.graph import (
    BasicState,
    ChunkTask,
    ExtractState,
    FileTask,
    PageindexState,
    RagState,
    RunState,
    SmallModelState,
    StepTask,
    required,
)

FALL_BACK, ABSTAIN = "hand_over", "abstain"

Path = Callable[[Any], str | list[Send]]  # reads the keys of its parameter's state type (all, where Any)


class Edge(NamedTuple):
    """A conditional edge: the function that picks the next node(s), and every node it can pick."""

    path: Path
    targets: list[str]


def failed(state: RunState) -> bool:
    return state.get("failure") is not None


def _stopped(state: RunState, abstains: bool, falls_back: bool) -> str | None:
    if falls_back and failed(state):
        return FALL_BACK
    if abstains and state.get("abstain_reason"):
        return ABSTAIN
    return None


def _targets(nodes: list[str], abstains: bool, falls_back: bool) -> list[str]:
    return [*nodes, *([ABSTAIN] if abstains else []), *([FALL_BACK] if falls_back else [])]


def proceed(to: str, *, abstains: bool = True, falls_back: bool = True) -> Edge:
    """To `to`, unless the stage failed (`falls_back`) or abstained (`abstains`)."""

    def path(state: RunState) -> str:
        return _stopped(state, abstains, falls_back) or to

    return Edge(path, _targets([to], abstains, falls_back))


def fan_out(to: str, tasks: Callable[[Any], Sequence[object]], *, abstains: bool = True) -> Edge:
    """One `to` task per item of `tasks(state)`, run in parallel, unless the stage failed or abstained."""

    # typed Any: LangGraph hands a path only the keys of the state type it is annotated with, and `tasks` reads
    # the graph's own (the plan, the route, the passages)
    def path(state: Any) -> str | list[Send]:
        return _stopped(state, abstains, True) or [Send(to, task) for task in tasks(state)]

    return Edge(path, _targets([to], abstains, True))


def reading(again: str, then: str) -> Edge:
    """Back to `again` when the last reading asks to widen, else to `then` (a failure falls back)."""

    def path(state: ExtractState) -> str:
        if failed(state):
            return FALL_BACK
        return again if state["readings"][-1].widen else then

    return Edge(path, [again, then, FALL_BACK])


def offered(to: str, otherwise: str) -> Edge:
    """To `to` (the pick) when the candidates stage found some, else to `otherwise` (the written answer)."""

    def path(state: ExtractState) -> str:
        return _stopped(state, False, True) or (to if state.get("candidates") else otherwise)

    return Edge(path, _targets([to, otherwise], False, True))


def picked(to: str, otherwise: str) -> Edge:
    """After the pick: to `to` with the answer it composed, to `abstain` when it refused (none of these, for a
    number), to `otherwise` (the written answer) when it composed none (no valid pick, none of the candidates for an
    answer that may be in words, an unsure pick); a failure falls back."""

    def path(state: BasicState) -> str:
        return _stopped(state, True, True) or (to if state.get("draft") else otherwise)

    return Edge(path, _targets([to, otherwise], True, True))


def chosen(graphs: list[str]) -> Edge:
    """To the graph the `choose` stage picked."""
    return Edge(lambda state: state["graph_choice"], graphs)


def plan_steps(state: RagState) -> list[StepTask]:
    """One retrieval task per step of the plan, over the step's documents (else the routed ones)."""
    routed = route.names if (route := state.get("route")) else []
    plan = required(state.get("plan"), "the retrieval plan")
    tasks = []
    for number, step in enumerate(plan.steps):
        task = StepTask(
            question=state["question"],
            step=number,
            query=step.query,
            documents=step.documents or routed,
            kind=plan.kind,
        )
        if state.get("filters"):
            task["filters"] = state["filters"]
        tasks.append(task)
    return tasks


def chunk_tasks(state: SmallModelState) -> list[ChunkTask]:
    """One map task per retrieved chunk."""
    return [ChunkTask(question=state["question"], evidence=e) for e in state.get("retrieved") or []]


def file_tasks(state: PageindexState) -> list[FileTask]:
    """One section-selection task per routed file."""
    route = required(state.get("route"), "the routing decision")
    return [FileTask(question=state["question"], document=n, step=i) for i, n in enumerate(route.names)]
