"""``patience-race replay``: a saved game replayed move by move, or a race's public record
checked: the deal against its commitment, and every player's moves against their board,
score, counts and result.  Needs no server."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from protocol.config import GameConfig, config_or_none
from protocol.fairness import check_solution, commitment
from protocol.game import GameState
from protocol.messages import RaceRecord
from protocol.record import GameRecord, RecordError, ReplayError, load, replay

from .safe import clean
from .text import plural, render_board


def replay_race(path: Path, data: dict[str, object]) -> int:
    """Check a race's public record: the commitment, and every player's moves from the deal."""
    try:
        race = RaceRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RecordError(f"not a race record: {where}: {first['msg']}") from exc
    rv = race.reveal
    config = GameConfig(rv.game, rv.options, rv.numbering)
    problems = 0
    if (
        commitment(rv.game, config.options, rv.numbering, rv.number, rv.salt, rv.solution)
        != rv.commitment
    ):
        print(f"{clean(path)}: the commitment does not match the revealed deal", file=sys.stderr)
        problems += 1
    print(
        f"Race {clean(race.race_id)}: {config.title} #{rv.number}, {plural(len(race.players), 'player')}"
    )
    print("commitment: " + ("verified" if not problems else "MISMATCH"))
    if rv.solution is not None:
        wrong = check_solution(config, rv.number, rv.solution)
        if wrong is None:
            print(
                f"certified winnable: the solver's solution wins it (par {len(rv.solution)} moves)"
            )
        else:
            print(f"{clean(path)}: {clean(wrong)}", file=sys.stderr)
            problems += 1

    def problem(text: str) -> None:
        nonlocal problems
        print(f"{clean(path)}: {clean(text)}", file=sys.stderr)
        problems += 1

    se = race.settings
    if config_or_none(se.game, se.options, se.numbering) != config:
        problem(f"the settings ({se.game} {dict(se.options)}) are not the revealed game's")
    standing = {s.id: s for s in race.standings}
    if {p.id for p in race.players} != set(standing) or len(race.standings) != len(standing):
        problem("the standings and the players' moves are not the same players")
    # by place, as the results showed them (a record lists the players as they joined)
    by_place = sorted(race.players, key=lambda p: standing[p.id].rank if p.id in standing else 1e9)
    for player in by_place:
        times = player.times_ms
        if len(times) != len(player.moves) or any(b < a for a, b in itertools.pairwise(times)):
            problem(f"{player.name}: the move times do not go with the moves")
        record = GameRecord(
            game=rv.game,
            options=dict(config.options),
            numbering=rv.numbering,
            number=rv.number,
            moves=player.moves,
        )
        try:
            state = replay(record)
        except ReplayError as exc:
            print(f"{clean(path)}: {clean(player.name)}: {clean(exc)}", file=sys.stderr)
            problems += 1
            continue
        view = state.view()
        same_board = (
            view.tableau == player.board.tableau
            and view.foundations == player.board.foundations
            and view.stock == player.board.stock
        )
        st = standing.get(player.id)
        same_score = st is None or (
            st.score == state.score()
            and st.moves == state.moves
            and st.undos == state.undos
            and (st.status == "won") == state.won
            and (st.status in ("resigned", "stuck")) <= (state.resigned or state.stuck)
        )
        if not same_board or not same_score:
            print(
                f"{clean(path)}: {clean(player.name)}: the moves do not reach the recorded board, "
                "score, counts and result",
                file=sys.stderr,
            )
            problems += 1
        rank = f"#{st.rank} " if st else ""
        word: str = st.status if st else ""
        if word in ("playing", "waiting"):  # as the results said it: the race ended first
            ran = (race.ended_at or race.started_at) - race.started_at
            word = "time up" if se.time_limit and ran >= se.time_limit - 0.5 else "unfinished"
        print(
            f"  {rank}{clean(player.name)}: {counted(state)}, score {state.score()}, {word}: {'ok' if same_board and same_score else 'MISMATCH'}"
        )
    return 1 if problems else 0


def counted(state: GameState) -> str:
    """A replayed game's moves as the game counts them: "12 moves, 1 undo" (undos and a
    resignation are in a record's list of moves, but are not moves)."""
    out = plural(state.moves, "move")
    if state.undos:
        out += ", " + plural(state.undos, "undo")
    return out


def cmd_replay(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise RecordError(f"not JSON: {exc}") from exc
    if isinstance(data, dict) and "race_id" in data:
        return replay_race(path, data)
    record = load(data)
    try:
        state = replay(record)
    except ReplayError as exc:
        print(f"{clean(args.file)}: {clean(exc)}", file=sys.stderr)
        return 1
    config = record.config()
    title = f"{config.title} #{record.number} after {counted(state)}"
    print(render_board(state.view(), title))
    score2 = state.score2()
    print(
        f"score: {state.score()}" + (f"  aisleriot score: {score2}" if score2 is not None else "")
    )
    print(
        f"won: {'yes' if state.won else 'no'}  stuck: {'yes' if state.stuck else 'no'}"
        f"  resigned: {'yes' if state.resigned else 'no'}"
    )
    if record.practice is not None:
        print(
            f"practice game: undo without limit, {record.practice.hints} "
            f"hint{'' if record.practice.hints == 1 else 's'} used"
        )
    if record.result is not None:
        print("result: matches the record")
    return 0
