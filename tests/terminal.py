"""What a terminal shows after a program wrote to it: the written bytes played through a VT100 emulator (pyte), so
that redrawn and cleared lines count as a person sees them, not as they were written."""

from __future__ import annotations

import io

import pyte
from rich.console import Console

COLUMNS, LINES = 200, 400


def terminal_console() -> Console:
    """A console that writes to a terminal of COLUMNS × LINES (read it back with `screen_of`)."""
    return Console(file=io.StringIO(), force_terminal=True, width=COLUMNS, height=LINES, color_system="standard")


def screen(written: str, *, tty_newlines: bool = True) -> str:
    """The lines on screen, right-stripped, without blank lines at the end. `tty_newlines`: what was written went
    through no terminal driver, so each "\\n" is the "\\r\\n" a tty would have made of it."""
    terminal = pyte.Screen(COLUMNS, LINES)
    stream = pyte.Stream(terminal)
    stream.feed(written.replace("\n", "\r\n") if tty_newlines else written)
    return "\n".join(line.rstrip() for line in terminal.display).rstrip()


def screen_of(console: Console) -> str:
    return screen(console.file.getvalue())
