"""A stage that raises does not end the run: the error goes into the state and the trace, and the graph's
failure edge takes the run to the basic graph. A model that cannot be reached still ends it, with the stage named:
the basic graph would need the same model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.errors import ModelUnavailableError
from pagegraph.nodes.common import StageTimer
from pagegraph.state.answering import Failure

Stage = Callable[[Any, Runtime[Context]], dict[str, Any]]


def guarded(stage: str, node: Stage) -> Stage:
    def run(state: Any, runtime: Runtime[Context]) -> dict[str, Any]:
        timer = StageTimer(stage)
        try:
            return node(state, runtime)
        except (GraphBubbleUp, ModelUnavailableError) as exc:
            if isinstance(exc, ModelUnavailableError):
                raise ModelUnavailableError(f"{stage}: {exc}") from exc
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            return {
                "failure": Failure(stage=stage, error=error),
                "abstain_reason": None,
                "trace": [timer.record("failed: falling back to the basic graph", error=error)],
            }

    run.__name__ = stage
    return run
