"""Plain-text rendering of a board as a player sees it (a :class:`~protocol.view.BoardView`)."""

from __future__ import annotations

import unicodedata

from protocol.config import SPIDER
from protocol.names import without_presentation
from protocol.view import BoardView

from .safe import clean

HIDDEN = "##"


def render_board(view: BoardView, title: str = "") -> str:
    """Piles numbered from 1, each bottom to top; face-down cards as ``##``."""
    lines = [title] if title else []
    if view.game == SPIDER:
        lines.append(
            f"Stock: {view.stock} cards ({plural(view.deals_left, 'deal')}"
            f" left)   Foundations: {sum(1 for f in view.foundations if f)} of 8 suits"
        )
    else:
        lines.append("Foundations:  " + _foundations(view))
        extra = [f"redeals left: {view.redeals_left}"]
        if view.game == "louis":
            extra.insert(0, f"stock: {view.stock} cards" + ("" if view.deals_left else " (dealt)"))
        if view.first_deal:
            extra.append("first deal: piles 1-4 play to kings only, 7-10 to aces only")
        lines.append("  ".join(extra))
    for i, pile in enumerate(view.tableau):
        cards = [HIDDEN] * pile.hidden + list(pile.cards)
        lines.append(f"{i + 1:>3}: " + (" ".join(cards) if cards else "(empty)"))
    status = "won" if view.won else "resigned" if view.resigned else "stuck" if view.stuck else ""
    score = f"Score: {view.score}" + (
        f" (aisleriot {view.score2})" if view.score2 is not None else ""
    )
    lines.append(
        f"{score}   moves: {view.moves}   undos: {view.undos}" + (f"   {status}" if status else "")
    )
    return "\n".join(lines)


def _foundations(view: BoardView) -> str:
    parts = []
    for i, f in enumerate(view.foundations):
        parts.append(f"f{i + 1}:{f[-1] if f else '--'}")
    return " ".join(parts[:4]) + "  |  " + " ".join(parts[4:])


# -- text from other people ---------------------------------------------------------------------


def safe(text: str) -> str:
    """Text from another person (a name, a room title, a server message quoting one), made safe
    for a terminal: every control or format character (ESC, BEL, CR, bidi overrides...) is shown
    escaped as ``\\x1b`` / ``\\u202e`` instead of being sent to the terminal.

    The result is still *plain text*: draw it in a ``rich.text.Text`` (never as markup), so that
    ``[/]`` or ``[@click=app.quit]`` stay the characters they are.

    What only shapes an emoji (a variation selector, a skin tone, the joiner between two
    pictures: :func:`protocol.names.without_presentation`, the same name to the server) is left
    out: terminals disagree on how wide the shaped pictures are, and a row counted two cells
    short lost its score off the edge (``👍🏽``); the joiner showed as ``\u200d``.  What is
    escaped, and how, is :func:`client.safe.clean`'s (one rule for the screen and the terminal:
    they disagreed on unassigned characters, and ``\U000e0041`` came out as ``\ue0041``)."""
    return clean(without_presentation(text), keep=frozenset())


def drawn_cells(text: str) -> int:
    """The cells a terminal draws ``text`` in: rich's count, and one more for each spacing mark
    (an Indic vowel sign such as the ``ि`` of ``कि``), which rich counts as none and glibc's
    wcwidth, and the terminals that go by it (xterm, tmux, VTE), as one.  A name holding a few
    pushed the race panel's score off its line, which showed 1 for 125 (a terminals trial).
    Where the two disagree the line is that much wider than rich knows: its end, blank, goes
    past the panel's edge at the screen's, and the columns before it stay straight.  Terminals
    that size a whole cluster as its base letter (kitty, WezTerm, foot) draw such a name that
    many cells narrower: its columns then start a little early, the score still whole."""
    from rich.cells import cell_len, get_character_cell_size

    if text.isascii():
        return len(text)
    extra = sum(
        1 for ch in text if unicodedata.category(ch) == "Mc" and not get_character_cell_size(ch)
    )
    return cell_len(text) + extra


def clip(text: str, width: int) -> str:
    """``text`` made safe and cut to ``width`` cells (:func:`drawn_cells`), ending in an ellipsis
    when cut."""
    text = safe(text)
    if drawn_cells(text) <= width:
        return text
    out, used = [], 0
    for ch in text:
        w = drawn_cells(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def fit(text: str, width: int) -> str:
    """``text`` made safe, cut to ``width`` cells and padded to exactly ``width`` cells: a
    column that stays straight whatever the name's script (CJK and emoji take two cells)."""
    out = clip(text, width)
    return out + " " * max(0, width - drawn_cells(out))


def sentence(text: str) -> str:
    """A server's message as the status line shows it: a sentence, its first letter a capital
    (the protocol's messages start in lower case, made to follow "Not allowed: " and the like)."""
    return text[:1].upper() + text[1:]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 deal``, ``2 deals``, ``0 deals``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``, ``22nd``."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def wrap_cells(text: str, width: int, lines: int) -> list[str]:
    """``text`` made safe and broken between words into at most ``lines`` lines of ``width``
    cells (a word longer than a line is cut); the last line ends in an ellipsis if more was left."""
    out: list[str] = []
    line = ""
    words = safe(text).split(" ")
    for i, word in enumerate(words):
        candidate = f"{line} {word}" if line else word
        if drawn_cells(candidate) <= width:
            line = candidate
            continue
        if line:
            out.append(line)
        line = word
        if len(out) == lines - 1:
            rest = " ".join([line, *words[i + 1 :]])
            out.append(clip(rest, width))
            return out
    if line or not out:
        out.append(clip(line, width))
    return out[:lines]
