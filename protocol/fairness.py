"""The fair-play proof (docs/rules.md, "Fair play"): commit to a deal before the race, reveal it after.

At the start the server publishes ``sha256(commitment_text(...))``; at the end it reveals the
number and the salt.  Anyone can then check the commitment and re-derive the deal, and a player
can check that every card they were shown is the card the deal puts there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from . import cards
from .config import GameConfig
from .deals import deal
from .game import state_class
from .moves import Move, Placed
from .notation import parse_move
from .view import BoardView


def commitment_text(
    game: str,
    options: Mapping[str, object],
    numbering: str,
    number: int,
    salt: str,
    solution: Sequence[str] | None = None,
) -> str:
    """The exact string hashed: canonical JSON, keys sorted, no spaces.  A deal certified
    winnable also commits to the solver's solution (its moves in notation), so that the
    certification cannot be made up after the race."""
    data: dict[str, object] = {
        "game": game,
        "options": dict(sorted(options.items())),
        "numbering": numbering,
        "number": number,
        "salt": salt,
    }
    if solution is not None:
        data["solution"] = list(solution)
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def commitment(
    game: str,
    options: Mapping[str, object],
    numbering: str,
    number: int,
    salt: str,
    solution: Sequence[str] | None = None,
) -> str:
    text = commitment_text(game, options, numbering, number, salt, solution)
    return hashlib.sha256(text.encode()).hexdigest()


def check_solution(config: GameConfig, number: int, solution: Sequence[str]) -> str | None:
    """Why ``solution`` does not win the deal, or None if it does (a certified deal's proof)."""
    state = state_class(config).from_deal(deal(config, number))
    for i, text in enumerate(solution):
        try:
            state.apply(parse_move(text))
        except ValueError as exc:
            return f"the solution's move {i + 1} ({text}) does not apply: {exc}"
    return None if state.won else "the solution does not win the deal"


@dataclass
class Witness:
    """What one player was shown during a race, to be checked against the revealed deal."""

    start: BoardView | None = None
    moves: list[tuple[Move, list[Placed]]] = field(default_factory=list)
    """Each applied move (undos and resignation included) with the cards it showed."""

    def saw(self, move: Move, shown: Iterable[Placed]) -> None:
        self.moves.append((move, list(shown)))


def verify(
    config: GameConfig,
    number: int,
    salt: str,
    claimed: str,
    witness: Witness,
    solution: Sequence[str] | None = None,
) -> list[str]:
    """Every way the reveal disagrees with the commitment or with what the player saw ([] if none).
    For a deal certified winnable, also whether the committed solution wins it."""
    problems = []
    actual = commitment(config.game, config.options, config.numbering, number, salt, solution)
    if actual != claimed:
        problems.append(f"the commitment {claimed[:12]}... does not match the revealed deal")
    if solution is not None:
        wrong = check_solution(config, number, solution)
        if wrong is not None:
            problems.append(f"the deal was certified winnable, but {wrong}")
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
