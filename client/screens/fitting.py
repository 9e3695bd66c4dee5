"""Fitting text to the screen: a line of keys that leaves the least needed out first, a command
to copy that a shell still reads whole over two lines, and how many lines a text takes once the
screen has wrapped it."""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ..grid import plain
from ..text import drawn_cells


def fit_lines(keys: str, width: int) -> list[str]:
    """A line of keys (items two spaces apart) on as many lines as ``width`` needs, broken
    between items."""
    lines: list[str] = []
    for item in re.split(r" {2,}", keys.strip()):
        if lines and cell_len(lines[-1]) + 2 + cell_len(item) <= width:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines


FIRST_TO_GO = ("↑↓", "f home", "f/k/a", "d deal", "h hint", "k: kick", "g/o/v")
"""Keys a narrow keys line leaves out first, in this order: each has another way (a click on a
card, a foundation or the stock) or is in the help; resign, quit and leave stay (a mouse user
at 60 columns could not resign, quit or leave: a mouse trial)."""


def fit_keys(keys: str, width: int) -> str:
    """A keys line in ``width`` cells: its items (two spaces or more apart) closer, then items
    left out, those of :data:`FIRST_TO_GO` first, then from the end, as the help lists them all
    (at 60 columns the line was cut, help and all: a large-font trial); the first item and the
    help stay.  One left out that fits again once another has gone is put back."""
    if cell_len(keys) <= width:
        return keys
    items = re.split(r" {2,}", keys.strip())

    def order(i: int) -> tuple[int, int]:
        first = [k for k, prefix in enumerate(FIRST_TO_GO) if items[i].startswith(prefix)]
        return (0, first[0]) if first else (1, -i)

    def line(kept: set[int]) -> str:
        return "  ".join(items[i] for i in sorted(kept))

    # (the help wherever it is: a watcher's line ends "(watching)", and its help went first: a
    # review)
    kept = set(range(len(items)))
    gone: list[int] = []
    for i in sorted((i for i in range(1, len(items)) if "help" not in items[i]), key=order):
        if cell_len(line(kept)) <= width:
            break
        kept.discard(i)
        gone.append(i)
    for i in reversed(gone):  # back, if it fits now
        if cell_len(line(kept | {i})) <= width:
            kept.add(i)
    return line(kept)


def command_text(command: str, width: int) -> Text:
    """A command to copy, on lines of its own: indented when it fits so, else from the edge,
    else over two lines a shell reads as one (`` \\`` before ``--server``): at 60 columns the
    screen broke it before the server's URL, and the first line pasted went to another server
    (a large-font trial)."""
    if drawn_cells(command) + 2 <= width:
        return plain(f"  {command}", "cyan")
    head, sep, url = command.partition(" --server ")
    if drawn_cells(command) <= width or not sep:
        return plain(command, "cyan")
    t = plain(head, "cyan")
    t.append(" \\\n  --server ", style="cyan")  # (ours: a backslash the shell reads, not escaped)
    t.append_text(plain(url, "cyan"))
    return t


def drawn_lines(text: Text, width: int) -> int:
    """The lines ``text`` takes on a screen ``width`` cells wide: long lines wrap at words, as
    the screen wraps them (counted by cells, a path wrapped a line more than said, and the keys
    went off the bottom: a review)."""
    width = max(1, width)
    body = text.copy()
    body.rstrip()
    return len(body.wrap(Console(width=width), width))
