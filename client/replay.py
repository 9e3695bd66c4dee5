"""``patience-race replay``: a saved game replayed move by move, or a race's public record
checked: the deal against its commitment, and every player's moves against their board,
score, counts and result.  Needs no server."""

from __future__ import annotations

import argparse
import json
import ssl
import sys
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import ValidationError

from protocol.game import GameState
from protocol.messages import RaceRecord
from protocol.race_check import check_race
from protocol.record import RecordError, ReplayError, load, replay

from .safe import clean
from .text import plural, render_board


def replay_race(path: Path | str, data: dict[str, object]) -> int:
    """Check a race's public record (:func:`protocol.race_check.check_race`) and say what was
    found: the commitment, and every player's moves from the deal."""
    try:
        race = RaceRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RecordError(f"not a race record: {where}: {first['msg']}") from exc
    found = check_race(race)
    rv, se = race.reveal, race.settings

    def problem(text: str) -> None:
        print(f"{clean(path)}: {clean(text)}", file=sys.stderr)

    if not found.commitment_ok:
        problem("the commitment does not match the revealed deal")
    print(
        f"Race {clean(race.race_id)}: {found.config.title} #{rv.number}, "
        f"{plural(len(race.players), 'player')}"
    )
    print("commitment: " + ("verified" if found.commitment_ok else "MISMATCH"))
    print("times, mode and time limit: the server's word, checked against the moves and places")
    if rv.solution is not None and found.solution_problem is None:
        print(
            "certified winnable: the solver's solution wins it "
            f"(the solution: {len(rv.solution)} moves)"
        )
    elif found.solution_problem is not None:
        problem(found.solution_problem)
    for text in found.problems:
        problem(text)
    for player in found.players:
        for text in player.problems:
            problem(text)
        st, state = player.standing, player.state
        rank = f"#{st.rank} " if st else ""
        if state is None:
            # (the player's line went missing with it: a records trial)
            print(f"  {rank}{clean(player.name)}: the moves do not replay: MISMATCH")
            continue
        word: str = st.status if st else ""
        if word == "disconnected":
            word = "dropped"  # (as the results and `races` say it: a race-night trial)
        if word in ("playing", "waiting"):  # as the results said it: the race ended first
            ran = (race.ended_at or race.started_at) - race.started_at
            word = "time up" if se.time_limit and ran >= se.time_limit - 0.5 else "stopped"
        verdict = "ok" if player.matches else "MISMATCH"
        print(
            f"  {rank}{clean(player.name)}: {counted(state)}, score {state.score()}, "
            f"{word}: {verdict}"
        )
    return 0 if found.ok else 1


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
