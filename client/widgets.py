"""The terminal client's widgets: the help over the race, the status line and the board, which
turn a click into the key or the move it means (as messages the app handles), and how a key read
with escape, or a click on the keys line, is understood.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.visual import VisualType
from textual.widgets import Static

from . import screens


class HelpScreen(ModalScreen[None]):
    """The keys, over the race (which goes on underneath).  As wide as the screen allows, and
    scrolled when taller: the arrows, j and k, space, PageUp/PageDown, Home and End scroll (a
    keyboard without the arrows scrolls too), any other key goes back."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help {
        width: 78; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; padding: 0 1; background: $surface;
        scrollbar-size-vertical: 1;
    }
    """

    TEXT = screens.HELP
    """The text (the keys of the screen asked from first: :func:`screens.help_text`)."""
    SCROLL_KEYS: ClassVar[dict[str, str]] = {
        "up": "scroll_up",
        "down": "scroll_down",
        "k": "scroll_up",
        "j": "scroll_down",
        "space": "scroll_page_down",
        "pageup": "scroll_page_up",
        "pagedown": "scroll_page_down",
        "home": "scroll_home",
        "end": "scroll_end",
    }

    def __init__(self, text: str | None = None) -> None:
        super().__init__()
        if text is not None:
            self.TEXT = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", can_focus=False) as box:
            box.border_subtitle = "↑↓ j k space PgUp PgDn: scroll   any other key: back"
            yield Static(self._fitted(), id="help-text")

    def _fitted(self) -> Text:
        """The text, its lines wrapped to the box (at most 78 wide, border and padding apart)
        each under its own column: wrapped again by the box at 60 columns, a key's description
        went on under the keys (a large-font trial)."""
        width = min(78, self.app.size.width or 78) - 4 - 1  # (and the scroll bar)
        return Text(fit_help(self.TEXT, width))

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#help-text", Static).update(self._fitted())

    closing = False
    """Dismissed already: keys typed fast reach the screen again before it is gone, and a second
    dismiss would pop the app's own screen (Textual's ScreenStackError: the app died)."""

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        scroll = self.SCROLL_KEYS.get(event.key)
        if scroll is not None:
            getattr(self.query_one("#help", VerticalScroll), scroll)(animate=False)
            return
        self.close()

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            self.dismiss()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.close()  # a click goes back too, for whoever plays with the mouse


def fit_help(text: str, width: int) -> str:
    """Help text for a box ``width`` cells wide.  Its lines are laid out for 74; narrower, each
    entry (a key and its description, a section's paragraph) is joined from its lines and
    wrapped again, its next lines under its own text (wrapped again by the box at 60 columns,
    a key's description went on under the keys: a large-font trial)."""
    import textwrap

    from rich.cells import cell_len

    lines = text.splitlines()
    if width < 20 or all(cell_len(line) <= width for line in lines):
        return text
    entries: list[tuple[str, int]] = []  # (the entry's text, the indent of its next lines)
    last_indent = 0
    for line in lines:
        indent = len(line) - len(line.lstrip())
        key = re.match(r"^(  \S+(?: \S+)*\s{2,})\S", line)
        label = re.match(r"^[A-Z?][^:]{0,20}(:|  )", line)  # "Race:", "St. Helena, Louis:"
        # a line at the margin after an indented one starts a paragraph of its own (the
        # watcher's "Spider's score..." ran on from "q leave (q q during a race)": a trial)
        after_indented, last_indent = indent == 0 and last_indent > 0, indent
        if entries and not key and line.strip() and not after_indented:
            previous, _ = entries[-1]
            if indent > 0 or not (label or previous.rstrip().endswith(".")):
                entries[-1] = (previous.rstrip() + " " + line.strip(), entries[-1][1])
                continue
        hang = len(key.group(1)) if key and len(key.group(1)) < width // 2 else max(2, indent)
        entries.append((line, hang))
    out: list[str] = []
    for entry, hang in entries:
        out.extend(textwrap.wrap(entry, width, subsequent_indent=" " * hang) or [entry])
    return "\n".join(out)


def escape_and_key(event: events.Key) -> list[events.Key]:
    """Escape and a key that reach the terminal together (typed quickly, or over ssh) are read
    as alt+key: both were meant, so both are returned, in order (the event is stopped); any
    other key: an empty list."""
    if not (event.key.startswith("alt+") and event.character and len(event.character) == 1):
        return []
    event.stop()
    event.prevent_default()
    return [events.Key("escape", None), events.Key(event.character, event.character)]


def footer_key(keys: str, x: int) -> str | None:
    """The key of the footer item at column ``x`` of the keys line ``keys`` (items two spaces
    apart: ``u undo``, ``rr redeal``, ``n: rematch``), or None (a gap, or a range of keys such
    as ``1-0 pick`` that a click cannot choose from)."""
    for item in re.finditer(r"\S+(?: \S+)*", keys):
        if item.start() <= x < item.end():
            token = item.group().split(" ")[0].rstrip(":")
            if token in ("rr", "xx", "qq"):
                return token[0]  # each click is one press: the second confirms
            at = x - item.start()
            if "/" in token and at < len(token) and token[at] != "/":
                # one of several keys ("g/o/v/m/t/u/+/-/p/w: settings"): the one clicked (the
                # host's settings could not be reached by mouse: a mouse trial)
                return token[at]
            if token == "f/k/a":
                return "f"
            if len(token) == 1 and token not in "-=":
                return token
            return None
    return None


class Steady(Static):
    """A Static that does nothing when given the very text it shows.  The apps draw every 0.2 s
    and on every event the server sends, and each update repainted the whole screen: idle in a
    lobby, 40 to 60 times the processor of a static app and 20 KB/s to the terminal (80 to 220
    KB/s at 200x60), a client cost measurement."""

    _shown: tuple[object, ...] | None = None

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        shown = _fingerprint(content)
        if shown is not None and shown == self._shown:
            return
        self._shown = shown
        super().update(content, layout=layout)

    def forget(self) -> None:
        """The screen lost what it showed (the program was in the background): the next
        update draws, whatever it is."""
        self._shown = None


def _fingerprint(content: object) -> tuple[object, ...] | None:
    """What makes two texts draw alike (None: not a text, always drawn)."""
    if isinstance(content, str):
        return ("str", content)
    if isinstance(content, Text):
        return (
            content.plain,
            tuple(content.spans),
            str(content.style),
            content.justify,
            content.overflow,
            content.no_wrap,
            content.end,
        )
    return None


class StatusBar(Steady):
    """The status line: a click on one of its keys (redeal, undo, resign, rematch...) presses
    it, so that everything can be done with the mouse."""

    keys_line = ""
    """The keys line as last drawn (set with the text): what a click on its last line hits."""

    class KeyClicked(Message):
        """A key of the keys line was clicked: the app presses it."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        last = str(self.render()).count("\n")
        if offset.y == last:
            key = footer_key(self.keys_line, offset.x)
            if key is not None:
                event.stop()
                self.post_message(self.KeyClicked(key))


class Board(Steady):
    """The board area: a click on a card, a pile, a foundation or the stock plays it."""

    class Clicked(Message):
        """The board was clicked at ``x``, ``y`` (cells from its content's top left), with the
        left button (``put_down`` False) or another, which puts the picked run down as escape
        does (right and middle clicks played as left ones: a mouse trial)."""

        def __init__(self, x: int, y: int, put_down: bool = False) -> None:
            super().__init__()
            self.x, self.y, self.put_down = x, y, put_down

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None:
            event.stop()
            self.post_message(self.Clicked(offset.x, offset.y, event.button not in (0, 1)))
