"""What a player may see of a board (docs/rules.md).

A :class:`BoardView` holds every face-up card and only the *number* of face-down cards and of
stock cards: it has no field that could carry a hidden card's identity or the stock's order.  The
only way the engine builds one is :meth:`protocol.game.GameState.view`, which copies face-up
cards alone.  This is what the server sends a player about their own board.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

CardName = Annotated[str, StringConstraints(pattern=r"^[A23456789TJQK][CSHD]$")]
OptionValue = int | str


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PileView(_Model):
    hidden: Annotated[int, Field(ge=0, le=104)]
    """Face-down cards at the bottom of the pile: a count, never their faces."""
    cards: list[CardName]
    """The face-up cards, bottom to top."""


class BoardView(_Model):
    game: str
    options: dict[str, OptionValue]
    tableau: list[PileView]
    stock: Annotated[int, Field(ge=0, le=104)]
    """Cards left in the stock: a count, never their faces or order."""
    foundations: list[list[CardName]]
    deals_left: Annotated[int, Field(ge=0)]
    """Spider: deals the stock still holds (10 cards each); Louis: 1 until the stock is dealt."""
    redeals_left: Annotated[int, Field(ge=0)]
    first_deal: bool
    """St. Helena: the first-deal foundation restriction still holds."""
    moves: Annotated[int, Field(ge=0)]
    undos: Annotated[int, Field(ge=0)]
    can_undo: bool
    score: int
    score2: int | None
    """Spider's secondary (aisleriot) score; None for the other games."""
    won: bool
    stuck: bool
    resigned: bool
