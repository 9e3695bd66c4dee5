"""What every drawing is made of: the colours, a card's text, a clock, another person's text as
plain text, and the :class:`Grid` a board is drawn on, which remembers what each cell shows so
that a mouse click can be mapped back to a card, a pile, a foundation or the stock.

Everything here builds ``rich.text.Text`` objects, never markup strings: names, room titles and
server messages come from other people, and ``[/]`` or ``[@click=app.quit]`` in a name must stay
the characters they are (:func:`client.text.safe` also escapes control characters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.terminal_theme import TerminalTheme
from rich.text import Text

from protocol import cards
from protocol.moves import UNKNOWN

from .text import safe

RED = "bold #f03030"
"""Red cards: a red of its own, not the theme's ANSI red (#f4005f, which 16-colour terminals
showed as magenta): bright red there, 4.6:1 on the dark board and 3.5:1 on the white tiles."""
BLACK = "bold white"
PALETTE = TerminalTheme(
    (12, 12, 12),
    (217, 217, 217),
    [
        (26, 26, 26),
        (240, 48, 48),  # red: RED's (Textual's #f4005f showed magenta with 16 colours)
        (152, 224, 36),
        (240, 192, 0),  # yellow (Textual's orange #fd971f showed bright red with 16 colours)
        (157, 101, 255),
        (244, 0, 95),
        (88, 209, 235),
        (196, 197, 181),
    ],
    [
        (98, 94, 76),
        (240, 48, 48),
        (152, 224, 36),
        (224, 213, 97),
        (157, 101, 255),
        (244, 0, 95),
        (88, 209, 235),
        (246, 246, 239),
    ],
)
"""What the named colours of the screens (red, yellow...) are drawn as: Textual's dark ANSI
theme, but for red and yellow, so that a terminal of 16 colours shows them as red and yellow
(the wide cards' red was magenta there, and "your row", "waiting" and the countdown bright red,
like an error: an appearance trial)."""
BACK = "blue"
DIM = "grey50"
SELECTED = "reverse"
TOP = "underline"
"""St. Helena and Louis: each pile's top card, the one it can play, is underlined, so that a pile
fanned around the foundations or wrapped onto two rows shows which end is its top."""
CARD_BG = "on grey93"
"""Wide cards are drawn as white tiles (red and black on white)."""

Target = tuple
"""What a cell shows: ``("card", pile, index)``, ``("pile", pile)``, ``("foundation", f)``,
``("stock",)``."""


def clock(ms: int) -> str:
    s = ms // 1000
    return f"{s // 60}:{s % 60:02d}"


def plain(text: str, style: str = "") -> Text:
    """Text from another person, as plain text: never markup, control characters escaped."""
    return Text(safe(text), style=style)


def card_text(card: int, style_extra: str = "", width: int = 2) -> Text:
    """A card's name padded to ``width``; at 4 and more, a white tile with the name inside."""
    if card == UNKNOWN:
        return Text("??".center(width), style=DIM)
    name = cards.name(card)
    if width >= 4:
        style = ("red" if cards.is_red(card) else "black") + " bold " + CARD_BG
        return Text((" " + name).ljust(width), style=f"{style} {style_extra}".strip())
    style = RED if cards.is_red(card) else BLACK
    return Text(name.ljust(width), style=f"{style} {style_extra}".strip())


@dataclass
class Grid:
    """Lines of text built cell by cell, remembering which target each span shows."""

    lines: list[Text] = field(default_factory=list)
    hits: list[tuple[int, int, int, Target]] = field(default_factory=list)
    """(y, x0, x1, target): x0 <= x < x1 on line y."""
    columns: list[tuple[int, int, int, Target]] = field(default_factory=list)
    """(y0, x0, x1, target): below line y0, a click between x0 and x1 means this pile."""

    def put(self, y: int, x: int, text: Text | str, target: Target | None = None) -> None:
        while len(self.lines) <= y:
            self.lines.append(Text())
        line = self.lines[y]
        if isinstance(text, str):
            text = Text(text)
        if line.cell_len < x:
            line.append(" " * (x - line.cell_len))
        elif line.cell_len > x:
            line.truncate(x)  # overwrite: only used left to right
        line.append_text(text)
        if target is not None:
            self.hits.append((y, x, x + text.cell_len, target))

    def text(self) -> Text:
        out = Text()
        for i, line in enumerate(self.lines):
            out.append_text(line)
            if i < len(self.lines) - 1:
                out.append("\n")
        return out

    def at(self, x: int, y: int) -> Target | None:
        for hy, x0, x1, target in reversed(self.hits):
            if hy == y and x0 <= x < x1:
                return target
        for y0, x0, x1, target in self.columns:
            if y >= y0 and x0 <= x < x1:
                return target
        return None
