"""Plain-text rendering of a board as a player sees it (a :class:`~protocol.view.BoardView`)."""

from __future__ import annotations

from protocol.config import SPIDER
from protocol.view import BoardView

HIDDEN = "##"


def render_board(view: BoardView, title: str = "") -> str:
    """Piles numbered from 1, each bottom to top; face-down cards as ``##``."""
    lines = [title] if title else []
    if view.game == SPIDER:
        lines.append(
            f"Stock: {view.stock} cards ({view.deals_left} deal{'s' if view.deals_left != 1 else ''}"
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
