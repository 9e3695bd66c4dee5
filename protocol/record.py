"""Game records: which deal was played and every move, as a JSON file; and replaying one.

A record is a JSON object::

    {
      "format": "patience-race-record",
      "version": 1,
      "game": "spider",
      "options": {"suits": 4, "relaxed": 0},
      "numbering": "pysolfc",
      "number": 12345,
      "moves": ["5>2", "3>7:2", "d", "u", "1>f"],
      "result": {"score": 184, "score2": 40, "won": false, "stuck": false,
                 "resigned": false, "moves": 4, "undos": 1}
    }

``moves`` are in the notation of :mod:`protocol.notation`, undos and a resignation included,
so a replay reproduces the position and the counters exactly.  ``result`` is optional; when
present, a replay must reach exactly that result or the record is rejected.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .config import ConfigError, GameConfig
from .game import GameState, new_game
from .moves import IllegalMove, Move
from .notation import NotationError, format_move, parse_move
from .practice import PracticeGame

FORMAT: Final = "patience-race-record"
VERSION: Final = 1


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    score: int
    score2: int | None = None
    won: bool
    stuck: bool
    resigned: bool
    moves: Annotated[int, Field(ge=0)]
    undos: Annotated[int, Field(ge=0)]

    @classmethod
    def of(cls, state: GameState) -> Result:
        return cls(
            score=state.score(),
            score2=state.score2(),
            won=state.won,
            stuck=state.stuck,
            resigned=state.resigned,
            moves=state.moves,
            undos=state.undos,
        )


class PracticeInfo(BaseModel):
    """A game played alone (``patience-race practice``): its undos go back without limit."""

    model_config = ConfigDict(extra="forbid", strict=True)
    undo: Literal["unlimited"] = "unlimited"
    hints: Annotated[int, Field(ge=0)] = 0
    """Hints shown during the game."""


class GameRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    format: Literal["patience-race-record"] = FORMAT
    version: Literal[1] = VERSION
    game: str
    options: dict[str, int | str] = Field(default_factory=dict)
    numbering: str = "pysolfc"
    number: int
    moves: list[str] = Field(default_factory=list)
    result: Result | None = None
    practice: PracticeInfo | None = None
    """Present for a practice game: undo without limit, and the hints used."""

    def config(self) -> GameConfig:
        return GameConfig(self.game, self.options, self.numbering)

    def dumps(self) -> str:
        return json.dumps(self.model_dump(exclude_none=True), indent=1) + "\n"


class RecordError(ValueError):
    """A record that cannot be read or does not replay; ``str()`` says where and why."""


class ReplayError(RecordError):
    def __init__(self, index: int, notation: str, reason: str) -> None:
        self.index = index
        self.notation = notation
        self.reason = reason
        super().__init__(f"move {index + 1} ({notation!r}) is illegal: {reason}")


@dataclass
class Recorder:
    """A game being played, keeping the record as it goes."""

    config: GameConfig
    number: int
    state: GameState = field(init=False)
    moves: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = new_game(self.config, self.number)

    def play(self, move: Move | str) -> Any:
        if isinstance(move, str):
            move = parse_move(move)
        before = self.state.copy()
        change = self.state.apply(move)
        self.moves.append(format_move(change.move, before))
        return change

    def record(self, with_result: bool = True) -> GameRecord:
        return GameRecord(
            game=self.config.game,
            options=dict(self.config.options),
            numbering=self.config.numbering,
            number=self.number,
            moves=list(self.moves),
            result=Result.of(self.state) if with_result else None,
        )


def practice_record(game: PracticeGame) -> GameRecord:
    """A practice game so far as a record that ``patience-race replay`` checks (its undos are
    replayed the practice way, its hints counted)."""
    return GameRecord(
        game=game.config.game,
        options=dict(game.config.options),
        numbering=game.config.numbering,
        number=game.number,
        moves=list(game.notation),
        result=Result.of(game.state),
        practice=PracticeInfo(hints=game.hints),
    )


def load(source: str | dict[str, Any]) -> GameRecord:
    """A record from JSON text or a parsed object (reading the file is the caller's: this module
    does no I/O); :class:`RecordError` if malformed."""
    try:
        data = json.loads(source) if isinstance(source, str) else source
        return GameRecord.model_validate(data)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not JSON: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "record"
        raise RecordError(f"not a game record: {where}: {first['msg']}") from exc


def replay(record: GameRecord, each: Callable[[int, GameState], None] | None = None) -> GameState:
    """Play ``record`` from its deal; :class:`RecordError` on the first thing that is wrong.
    ``each(i, state)`` is called after the ``i``-th move (a race's record finds when each
    player's score last changed so)."""
    try:
        config = record.config()
        state = new_game(config, record.number)
    except ConfigError as exc:
        raise RecordError(str(exc)) from exc
    game = None
    if record.practice is not None:
        game = PracticeGame(config, record.number, state)
    for i, text in enumerate(record.moves):
        try:
            move = parse_move(text)
            if game is not None:
                game.apply(move)
            else:
                state.apply(move)
        except (IllegalMove, NotationError) as exc:
            raise ReplayError(i, text, str(exc)) from exc
        if each is not None:
            each(i, game.state if game is not None else state)
    if game is not None:
        state = game.state
    if record.result is not None:
        got = Result.of(state)
        if got != record.result:
            diffs = [
                f"{k} is {getattr(got, k)!r}, the record says {getattr(record.result, k)!r}"
                for k in Result.model_fields
                if getattr(got, k) != getattr(record.result, k)
            ]
            raise RecordError("the replay does not reach the recorded result: " + "; ".join(diffs))
    return state
