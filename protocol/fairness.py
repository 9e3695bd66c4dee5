"""The fair-play proof (RULES.md section 6): commit to a deal before the race, reveal it after.

At the start the server publishes ``sha256(commitment_text(...))``; at the end it reveals the
number and the salt.  Anyone can then check the commitment and re-derive the deal, and a player
can check that every card they were shown is the card the deal puts there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from . import cards
from .config import GameConfig
from .deals import deal
from .game import state_class
from .moves import Move, Placed
from .view import BoardView


def commitment_text(
    game: str, options: Mapping[str, object], numbering: str, number: int, salt: str
) -> str:
    """The exact string hashed: canonical JSON, keys sorted, no spaces."""
    return json.dumps(
        {
            "game": game,
            "options": dict(sorted(options.items())),
            "numbering": numbering,
            "number": number,
            "salt": salt,
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def commitment(
    game: str, options: Mapping[str, object], numbering: str, number: int, salt: str
) -> str:
    text = commitment_text(game, options, numbering, number, salt)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Witness:
    """What one player was shown during a race, to be checked against the revealed deal."""

    start: BoardView | None = None
    moves: list[tuple[Move, list[Placed]]] = field(default_factory=list)
    """Each applied move (undos and resignation included) with the cards it showed."""

    def saw(self, move: Move, shown: Iterable[Placed]) -> None:
        self.moves.append((move, list(shown)))


def verify(config: GameConfig, number: int, salt: str, claimed: str, witness: Witness) -> list[str]:
    """Every way the reveal disagrees with the commitment or with what the player saw ([] if none)."""
    problems = []
    actual = commitment(config.game, config.options, config.numbering, number, salt)
    if actual != claimed:
        problems.append(f"the commitment {claimed[:12]}... does not match the revealed deal")
    state = state_class(config).from_deal(deal(config, number))
    if witness.start is not None:
        start = state.view()
        if start.tableau != witness.start.tableau or start.stock != witness.start.stock:
            problems.append("the starting board shown differs from the revealed deal's")
    for i, (move, shown) in enumerate(witness.moves):
        try:
            change = state.apply(move)
        except ValueError as exc:
            problems.append(f"move {i + 1} does not replay on the revealed deal: {exc}")
            break
        expected = change.shown
        if [(p.pile, p.index, p.card) for p in expected] != [
            (p.pile, p.index, p.card) for p in shown
        ]:
            got = ", ".join(cards.name(p.card) for p in shown)
            want = ", ".join(cards.name(p.card) for p in expected)
            problems.append(
                f"move {i + 1} showed {got or 'nothing'}; the deal has {want or 'nothing'}"
            )
    return problems
