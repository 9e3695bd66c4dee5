"""``patience-race replay``: a saved game replayed move by move, or a race's public record
checked: the deal against its commitment, and every player's moves against their board,
score, counts and result.  Needs no server."""

from __future__ import annotations

import argparse
import itertools
import json
import ssl
import sys
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import ValidationError

from protocol.config import GameConfig, config_or_none
from protocol.fairness import check_solution, commitment
from protocol.game import GameState
from protocol.messages import RaceRecord, Standing, place_key
from protocol.record import GameRecord, RecordError, ReplayError, load, replay

from .safe import clean
from .text import plural, render_board


def replay_race(path: Path | str, data: dict[str, object]) -> int:
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
    print("times, mode and time limit: the server's word, checked against the moves and places")
    if rv.solution is not None:
        wrong = check_solution(config, rv.number, rv.solution)
        if wrong is None:
            print(
                f"certified winnable: the solver's solution wins it (the solution: {len(rv.solution)} moves)"
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
    names = {p.id: p.name for p in race.players}
    if any(names.get(s.id, s.name) != s.name for s in race.standings):
        problem("the standings name players otherwise than their moves do")
    ran_ms: float | None = None
    if race.ended_at is not None:
        if race.ended_at < race.started_at:
            problem("the race ends before it starts")
        # (the race clock leaves out any time the server was down: it never runs ahead; a
        # few seconds' slack for a move or a departure between the time limit and its tick)
        ran_ms = (race.ended_at - race.started_at) * 1000 + 5000
    ordered = sorted(
        race.standings,
        key=lambda s: place_key(se.mode, s.status, s.finish_ms, s.score, s.score_ms, s.id),
    )
    if [s.rank for s in ordered] != list(range(1, len(ordered) + 1)):
        problem(
            "the places are not what the results, times and scores give "
            f"({', '.join(clean(s.name) for s in ordered)})"
        )
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
        scored = [0, 0]  # the score, and the time of the move that last changed it

        def count(
            i: int, state: GameState, times: list[int] = times, scored: list[int] = scored
        ) -> None:
            if state.score() != scored[0] and i < len(times):
                scored[:] = [state.score(), times[i]]

        st = standing.get(player.id)
        rank = f"#{st.rank} " if st else ""
        try:
            state = replay(record, count)
        except ReplayError as exc:
            print(f"{clean(path)}: {clean(player.name)}: {clean(exc)}", file=sys.stderr)
            problems += 1
            # (the player's line went missing with it: a records trial)
            print(f"  {rank}{clean(player.name)}: the moves do not replay: MISMATCH")
            continue
        view = state.view()
        same_board = (
            view.tableau == player.board.tableau
            and view.foundations == player.board.foundations
            and view.stock == player.board.stock
        )
        same_score = st is None or (
            st.score == state.score()
            and st.score2 == state.score2()
            and st.score_ms == scored[1]
            and st.moves == state.moves
            and st.undos == state.undos
            and (st.status == "won") == state.won
            and (st.status == "resigned") == state.resigned
            and (st.status in ("resigned", "stuck")) <= (state.resigned or state.stuck)
        )
        if st is not None and not finish_fits(st.status, st.finish_ms, times, ran_ms):
            problem(f"{player.name}: the finishing time does not go with the moves and result")
        if times and ran_ms is not None and times[-1] > ran_ms:
            problem(f"{player.name}: a move is timed after the race ended")
        if not same_board or not same_score:
            # what the record says against what the moves give (a score changed from 990 to 999
            # said MISMATCH, and nothing of what the record claimed: a records trial)
            claims = [] if same_board else ["a board the moves do not reach"]
            if st is not None:
                claims += _claims(st, state, scored[1])
            print(
                f"{clean(path)}: {clean(player.name)}: the record says "
                + "; ".join(claims or ["what the moves do not give"]),
                file=sys.stderr,
            )
            problems += 1
        word: str = st.status if st else ""
        if word == "disconnected":
            word = "dropped"  # (as the results and `races` say it: a race-night trial)
        if word in ("playing", "waiting"):  # as the results said it: the race ended first
            ran = (race.ended_at or race.started_at) - race.started_at
            word = "time up" if se.time_limit and ran >= se.time_limit - 0.5 else "stopped"
        print(
            f"  {rank}{clean(player.name)}: {counted(state)}, score {state.score()}, {word}: {'ok' if same_board and same_score else 'MISMATCH'}"
        )
    return 1 if problems else 0


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


def counted(state: GameState) -> str:
    """A replayed game's moves as the game counts them: "12 moves, 1 undo" (undos and a
    resignation are in a record's list of moves, but are not moves)."""
    out = plural(state.moves, "move")
    if state.undos:
        out += ", " + plural(state.undos, "undo")
    return out


MAX_FETCH = 64 << 20
"""Bytes read at most from a race record's URL (a record of 5,000 moves a player is a few MB)."""


def fetch(url: str) -> str:
    """The text at ``url`` (a race's record on its server, as the results screen names it)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=30) as answer:  # (http or https: the caller)
            body = answer.read(MAX_FETCH + 1)
    except urllib.error.HTTPError as exc:
        said = "no such finished race there" if exc.code == 404 else f"HTTP {exc.code} {exc.reason}"
        raise RecordError(f"cannot fetch {url}: {said}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise RecordError(
                f"cannot fetch {url}: its server has a certificate this computer does not trust "
                f"({reason.verify_message or reason}); if its host made it (self-signed), ask "
                "them for it and run this with SSL_CERT_FILE=/path/to/cert.pem"
            ) from exc
        raise RecordError(f"cannot fetch {url}: {reason}") from exc
    if len(body) > MAX_FETCH:
        raise RecordError(f"cannot fetch {url}: larger than {MAX_FETCH >> 20} MiB")
    return body.decode("utf-8", "replace")


def cmd_replay(args: argparse.Namespace) -> int:
    # (named as given: a Path makes http://host of a URL http:/host)
    path = args.file
    if urlsplit(args.file).scheme.lower() in ("http", "https"):
        text = fetch(args.file)  # (a RecordError saying why: it was "is not JSON: cannot fetch")
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except ValueError as exc:  # not UTF-8
            raise RecordError(f"{path} is not JSON: {exc}") from exc
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise RecordError(f"{path} is not JSON: {why}") from exc
    if not isinstance(data, dict):
        raise RecordError(f"{path} is not a record: a record is a JSON object")
    if "race_id" in data:
        return replay_race(path, data)
    if "game" not in data:
        # (it said "not a game record: game: Field required" of a file of something else: a
        # records trial)
        raise RecordError(
            f"{path} is not a record of a race or a game: a race's (from its server, or kept by "
            "this program) has race_id; a game's (practice's) has game, number and moves"
        )
    if "tableau" in data and "moves" not in data:
        raise RecordError(
            f"{path} is a deal (deal --json), not a record of a game played: it has no moves"
        )
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
