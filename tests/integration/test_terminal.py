"""`pagegraph ask` on a real terminal (a pseudo-terminal read back through a VT100 emulator): what stays on screen
is what a person reads. A scripted model refuses on its first read and answers on its second."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from tests.conftest import PAGEGRAPH, SAMPLES
from tests.e2e.harness import QUIET, ScriptedOpenAI
from tests.terminal import COLUMNS, LINES, screen

pytestmark = pytest.mark.slow
REFUSAL = "The documents do not contain the answer."
ANSWER = "The SB-40 stores up to 10.2 kWh of energy [1]."


def on_a_terminal(command: list[str], env: dict[str, str], timeout_s: float = 300) -> str:
    """Everything `command` wrote to a COLUMNS × LINES pseudo-terminal, until it exited."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    written = bytearray()
    try:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the other end closed: the process exited
                break
            if not data:
                break
            written += data
        assert process.wait(timeout=timeout_s) == 0, written.decode(errors="replace")
    finally:
        process.kill()
        os.close(leader)
    return written.decode(errors="replace")


def test_a_refused_first_read_leaves_only_the_final_answer_on_screen(tmp_path: Path, cache_dir: Path) -> None:
    replies = iter([REFUSAL])
    model = ScriptedOpenAI(reply=lambda prompt: next(replies, ANSWER))
    model.start()
    env = {
        **os.environ,
        **QUIET,
        **model.settings(),
        "PAGEGRAPH_INDEX": str(tmp_path / "index"),
        "PAGEGRAPH_CACHE_DIR": str(cache_dir),
        "PAGEGRAPH_INGEST_SUMMARIES": "extractive",
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "LINES": str(LINES),
    }
    env.pop("NO_COLOR", None)
    try:
        subprocess.run([str(PAGEGRAPH), "ingest", str(SAMPLES)], env=env, check=True, capture_output=True)
        written = on_a_terminal(
            [str(PAGEGRAPH), "ask", "How much energy does the SB-40 store?", "--graph", "extract"], env
        )
    finally:
        model.stop()
    shown = screen(written, tty_newlines=False)
    assert model.calls >= 2, "the first read refused, a second one answered"
    assert REFUSAL in written and REFUSAL not in shown, "the refused read was shown while written, then cleared"
    assert not re.search(r"\[\d+\]", written), "no excerpt number ever reaches the terminal"
    answers = [line for line in shown.split("Evidence")[1].splitlines() if line.startswith("The SB-40 stores")]
    assert len(answers) == 1, shown
    answer = answers[0]
    assert re.fullmatch(
        r"The SB-40 stores up to 10\.2 kWh of energy \[sb40-user-manual\.pdf, [^\]]*p\. [\d–]+\]\.", answer
    )
    order = [shown.index(part) for part in ("Evidence", "· writing the answer", answer, "Sources")]
    assert order == sorted(order), shown


def test_piped_ask_writes_the_evidence_before_the_answer_arrives(tmp_path: Path, cache_dir: Path) -> None:
    """Output to a pipe (a script, `| tee`): the evidence is written as soon as it is found, while a slow model is
    still answering, then the checked answer; no redrawn region, no excerpt number."""
    import time

    model = ScriptedOpenAI(reply=lambda prompt: ANSWER, every_call_s=4.0)
    model.start()
    env = {
        **os.environ,
        **QUIET,
        **model.settings(),
        "PAGEGRAPH_INDEX": str(tmp_path / "index"),
        "PAGEGRAPH_CACHE_DIR": str(cache_dir),
        "PAGEGRAPH_INGEST_SUMMARIES": "extractive",
    }
    try:
        subprocess.run([str(PAGEGRAPH), "ingest", str(SAMPLES)], env=env, check=True, capture_output=True)
        question = "How much energy does the SB-40 store?"
        process = subprocess.Popen(
            [str(PAGEGRAPH), "ask", question, "--graph", "basic"], env=env, stdout=subprocess.PIPE, text=True
        )
        lines: list[tuple[float, str]] = []
        for line in process.stdout:
            lines.append((time.monotonic(), line.rstrip("\n")))
        assert process.wait(timeout=300) == 0
        ended = time.monotonic()
    finally:
        model.stop()
    evidence = next(at for at, line in lines if line.startswith("Evidence"))
    answered = next(at for at, line in lines if line.startswith("The SB-40 stores"))
    assert answered - evidence >= 3.0 and ended - evidence >= 3.0, "the evidence came while the model was answering"
    assert not any(re.search(r"\[\d+\]", line) for _, line in lines)
