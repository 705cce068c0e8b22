"""`pagegraph model check`: load the chat model a question would use and have it write a short reply, before any
question depends on it (the quick start and `serve` run the same check). `pagegraph model stop`: end the embedded
model's process now rather than when it has been idle for `PAGEGRAPH_LLM_IDLE_S`."""

from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from langchain_core.messages import HumanMessage

from pagegraph.cli.common import app, console, fail
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.llm import get_chat_model, invoke_model
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.model_process import build_info, cpu_features, find_server_binary, stop_model_processes

model_app = typer.Typer(
    no_args_is_help=True, help="The chat model: check that it loads and answers on this machine; stop the embedded one."
)
app.add_typer(model_app, name="model")

CHECK_QUESTION = "Name the capital of France in one word."


@model_app.command("check")
def check(
    model: Annotated[Optional[str], typer.Option(help="model spec (default: $PAGEGRAPH_MODEL, else local)")] = None,
) -> None:
    """Start the model (the embedded one in its own process, checked with one short reply; another by a call to its
    server) and print how it runs here: the CPU, the build and the time it took."""
    settings = get_settings()
    started = time.perf_counter()
    try:
        chat = get_chat_model(model, settings=settings, max_tokens=8, streaming=False)
        where = ""
        if isinstance(chat, LlamaCppChatModel):
            endpoint = chat.endpoint()
            shape = endpoint.shape(chat.shape)
            where = (
                f"  process: llama-server pid {endpoint.pid()} (kept by pid {endpoint.keeper_pid()} until "
                f"{endpoint.idle_s():.0f} s without a call; `pagegraph model stop` ends it), {shape.slots} slots, "
                f"{shape.threads} threads, weight repacking {'on' if shape.repack else 'off'}\n"
                f"  build: {build_info(find_server_binary(chat.server_binary))}\n"
                f"  CPU: {platform.machine()} with {', '.join(cpu_features()) or 'no listed features'}\n"
            )
        loaded = time.perf_counter() - started
        reply, call = invoke_model(chat, [HumanMessage(content=CHECK_QUESTION)], purpose="model check")
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    answered = time.perf_counter() - started - loaded
    console.print(
        f"model {call.model}: ready in {loaded:.1f} s, answered {str(reply.content).strip()[:40]!r} in "
        f"{answered:.1f} s\n{where}",
        highlight=False,
        end="",
    )


@model_app.command("stop")
def stop() -> None:
    """Stop the embedded model's process now (it also stops by itself after PAGEGRAPH_LLM_IDLE_S without a call).
    A command that asks later starts it again."""
    stopped = stop_model_processes(get_settings().model_process_folder())
    if not stopped:
        console.print("no embedded model process is running")
    for published in stopped:
        console.print(f"stopped llama-server pid {published.pid} ({Path(published.model_path).name})", highlight=False)
