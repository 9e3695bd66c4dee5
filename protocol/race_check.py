"""A race's public record checked by anyone, with no server and nothing secret: the deal against
the commitment made before the race, a certified deal's solution, the places against the results,
and every player's moves replayed from the deal against their board, score, counts, result and
times (docs/protocol.md, "Fair play").

Pure: :func:`check_race` says what it found; ``patience-race replay`` (``client.replay``) says it
to people.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .config import GameConfig, config_or_none
from .fairness import check_solution, commitment
from .game import GameState
from .messages import RaceRecord, Standing, place_key
from .record import GameRecord, ReplayError, replay

FINISH_SLACK_MS = 5000
"""How far past the race's end a move or a finish may be timed: a move or a departure between
the time limit and the tick that ends the race (the race clock leaves out any time the server
was down, so it never runs ahead of the wall clock)."""


@dataclass
class PlayerCheck:
    """One player's moves replayed from the deal, against what the record says of them."""

    name: str
    standing: Standing | None
    state: GameState | None
    """Where the moves lead; None when they do not replay."""
    problems: list[str] = field(default_factory=list)
    """What does not fit, each for people (the player's name first)."""
    matches: bool = False
    """The board and the standing are what the moves give."""


@dataclass
class RaceCheck:
    config: GameConfig
    commitment_ok: bool
    solution_problem: str | None
    """Why a certified deal's solution does not win it (None: it does, or there is none)."""
    problems: list[str]
    """What does not fit in the record as a whole (its commitment and solution apart)."""
    players: list[PlayerCheck]
    """By place, as the results showed them."""

    @property
    def ok(self) -> bool:
        return (
            self.commitment_ok
            and self.solution_problem is None
            and not self.problems
            and all(p.matches and not p.problems for p in self.players)
        )


def check_race(race: RaceRecord) -> RaceCheck:
    """Everything in ``race`` that can be checked, checked."""
    rv = race.reveal
    config = GameConfig(rv.game, rv.options, rv.numbering)
    sealed = commitment(rv.game, config.options, rv.numbering, rv.number, rv.salt, rv.solution)
    solution_problem = (
        check_solution(config, rv.number, rv.solution) if rv.solution is not None else None
    )
    problems: list[str] = []
    se = race.settings
    if config_or_none(se.game, se.options, se.numbering) != config:
        problems.append(f"the settings ({se.game} {dict(se.options)}) are not the revealed game's")
    standing = {s.id: s for s in race.standings}
    if {p.id for p in race.players} != set(standing) or len(race.standings) != len(standing):
        problems.append("the standings and the players' moves are not the same players")
    names = {p.id: p.name for p in race.players}
    if any(names.get(s.id, s.name) != s.name for s in race.standings):
        problems.append("the standings name players otherwise than their moves do")
    ran_ms: float | None = None
    if race.ended_at is not None:
        if race.ended_at < race.started_at:
            problems.append("the race ends before it starts")
        ran_ms = (race.ended_at - race.started_at) * 1000 + FINISH_SLACK_MS
    ordered = sorted(
        race.standings,
        key=lambda s: place_key(se.mode, s.status, s.finish_ms, s.score, s.score_ms, s.id),
    )
    if [s.rank for s in ordered] != list(range(1, len(ordered) + 1)):
        problems.append(
            "the places are not what the results, times and scores give "
            f"({', '.join(s.name for s in ordered)})"
        )
    # by place, as the results showed them (a record lists the players as they joined)
    by_place = sorted(race.players, key=lambda p: standing[p.id].rank if p.id in standing else 1e9)
    players = []
    for player in by_place:
        st = standing.get(player.id)
        check = PlayerCheck(player.name, st, None)
        players.append(check)
        times = player.times_ms
        if len(times) != len(player.moves) or any(b < a for a, b in itertools.pairwise(times)):
            check.problems.append(f"{player.name}: the move times do not go with the moves")
        record = GameRecord(
            game=rv.game,
            options=dict(config.options),
            numbering=rv.numbering,
            number=rv.number,
            moves=player.moves,
        )
        scored = [0, 0]  # the score, and the time of the move that last changed it

        def count(
            i: int, state: GameState, times: list[int] = times, scored: list[int] = scored
        ) -> None:
            if state.score() != scored[0] and i < len(times):
                scored[:] = [state.score(), times[i]]

        try:
            state = replay(record, count)
        except ReplayError as exc:
            check.problems.append(f"{player.name}: {exc}")
            continue
        check.state = state
        view = state.view()
        same_board = (
            view.tableau == player.board.tableau
            and view.foundations == player.board.foundations
            and view.stock == player.board.stock
        )
        claims = [] if same_board else ["a board the moves do not reach"]
        if st is not None:
            claims += _claims(st, state, scored[1])
            if not finish_fits(st.status, st.finish_ms, times, ran_ms):
                check.problems.append(
                    f"{player.name}: the finishing time does not go with the moves and result"
                )
        if times and ran_ms is not None and times[-1] > ran_ms:
            check.problems.append(f"{player.name}: a move is timed after the race ended")
        check.matches = not claims
        if claims:
            # what the record says against what the moves give (a score changed from 990 to
            # 999 said MISMATCH, and nothing of what the record claimed: a records trial)
            check.problems.append(f"{player.name}: the record says " + "; ".join(claims))
    return RaceCheck(
        config=config,
        commitment_ok=sealed == rv.commitment,
        solution_problem=solution_problem,
        problems=problems,
        players=players,
    )


def _claims(st: Standing, state: GameState, score_ms: int) -> list[str]:
    """What a standing says that the replayed moves do not give, each with what they give."""
    out = [
        f"{label} {claimed} (the moves give {given})"
        for label, claimed, given in (
            ("score", st.score, state.score()),
            ("aisleriot score", st.score2, state.score2()),
            ("moves", st.moves, state.moves),
            ("undos", st.undos, state.undos),
            ("the score reached at ms", st.score_ms, score_ms),
        )
        if claimed != given
    ]
    result = (
        "won" if state.won else "resigned" if state.resigned else "stuck" if state.stuck else ""
    )
    fits = (
        (st.status == "won") == state.won
        and (st.status == "resigned") == state.resigned
        and (st.status in ("resigned", "stuck")) <= (state.resigned or state.stuck)
    )
    if not fits:
        out.append(f"{st.status} (the moves give {result or 'a game going on'})")
    return out


def finish_fits(status: str, finish_ms: int | None, times: list[int], ran_ms: float | None) -> bool:
    """Whether a player's finishing time can be what the server recorded: the time of their
    winning or resigning move; at or after their last move for one out as stuck (a move that
    left none, or a minute without undoing), who left or was disconnected; none for one still
    playing when the race ended; never after its end."""
    last = times[-1] if times else 0
    if status in ("playing", "waiting"):
        return finish_ms is None
    if finish_ms is None or (ran_ms is not None and finish_ms > ran_ms):
        return False
    if status in ("won", "resigned"):
        return finish_ms == last
    return finish_ms >= last
