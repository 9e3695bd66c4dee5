"""``patience-race``: the player's command line."""

from __future__ import annotations

import argparse
import io
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from protocol.config import GAMES, ConfigError, GameConfig
from protocol.deals import deal
from protocol.game import state_class
from protocol.record import RecordError

from .args import (
    Plan,
    add_game_arguments,
    add_race_arguments,
    add_server_argument,
    default_name,
    display_name,
    make_config,
    make_settings,
    pause,
    port_number,
    room_code,
    server_url,
)
from .net import DEFAULT_URL
from .reach import check_server, network_errors, unreachable
from .replay import cmd_replay
from .safe import clean, clean_lines
from .solve import add_solve_parser
from .terminal import program, terminal_problem
from .text import render_board


def cmd_deal(args: argparse.Namespace) -> int:
    config = make_config(args.game, args)
    d = deal(config, args.number)
    if args.json:
        print(d.dumps())
        return 0
    state = state_class(config).from_deal(d)
    title = f"{config.title} #{d.number}"  # the title names a numbering other than PySolFC's
    print(render_board(state.view(), title))
    return 0


def can_draw() -> bool:
    """Whether the game's full screen can be drawn here; if not, the reason is said."""
    problem = terminal_problem(sys.__stdin__, sys.__stderr__, os.environ)
    if problem is not None:
        print(f"patience-race: {problem}", file=sys.stderr)
    return problem is None


def run_app(plan: Plan) -> int:
    from .app import RaceApp

    if plan.url is not None:
        problem = check_server(plan.url)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
    if not can_draw():
        return 2
    app = RaceApp(plan)
    app.run()
    if app.failed:
        print(f"patience-race: {clean(app.failed)}", file=sys.stderr)
        return 1
    if app.farewell:  # our own text, in lines (the join command on a line of its own)
        print(clean_lines(app.farewell))
    return app.return_code or 0  # 1 when the app stopped on an error (Textual printed it)


def cmd_play(args: argparse.Namespace) -> int:
    settings = make_settings(args)
    if args.bots + 1 > settings.seats:  # a seat for you and each bot asked for
        settings = settings.model_copy(update={"seats": args.bots + 1})
    plan = Plan(
        action="play",
        name=args.name or default_name(),
        # its own server, unless one is named (PATIENCE_RACE_SERVER does not count here: the
        # main job needs no server of yours)
        url=server_url(args) if args.server else None,
        settings=settings,
        bots=args.bots,
        bot_level=args.level,
        bot_think=args.think,
        auto_ready=True,
        port=args.port,
    )
    return run_app(plan)


def cmd_practice(args: argparse.Namespace) -> int:
    from .practice_app import PracticeApp

    config = make_config(args.game, args)
    number = None if args.deal is None else config.check_number(args.deal)
    if not can_draw():
        return 2
    app = PracticeApp(config, number)
    app.run()
    saved = app.practice.saved
    if saved is not None:
        print(f"patience-race: the record of your last game is in {clean(str(saved))}")
    practice = app.practice
    if not practice.game.finished:
        # left unfinished: nothing is saved, and the deal's number was only in the header
        # (cut at 80 columns) and the first status line (a records trial)
        print(
            f"patience-race: to play this deal again: {practice_command(config, practice.number)}"
        )
    return 0


def practice_command(config: GameConfig, number: int | None) -> str:
    """The command that practises this game and deal."""
    words = [program(), "practice", config.game]
    words += [f"--{key} {value}" for key, value in config.options.items()]
    if config.numbering != "pysolfc":
        words.append(f"--numbering {config.numbering}")
    if number is not None:
        words.append(f"--deal {number}")
    return " ".join(words)


def cmd_host(args: argparse.Namespace) -> int:
    if args.seats is None:  # room for you and every bot asked for
        args.seats = max(8, args.bots + 1)
    elif args.bots >= args.seats:
        print(
            f"patience-race: --bots {args.bots} with --seats {args.seats}: each bot takes a seat"
            f" and you take one, so at most --bots {args.seats - 1} (or more --seats)",
            file=sys.stderr,
        )
        return 2
    plan = Plan(
        action="host",
        name=args.name or default_name(),
        url=server_url(args),
        settings=make_settings(args),
        bots=args.bots,
        bot_level=args.level,
        bot_think=args.think,
    )
    return run_app(plan)


class NoName(Exception):
    """Several seats are saved for a room and nobody said which (exit 2)."""


def choose_name(url: str, code: str, given: str | None, notes: list[str] | None = None) -> str:
    """The name to join as: ``--name``; else the only seat saved for the room that no other
    terminal of this account is sitting in; else ask which (on a terminal; with no terminal,
    :class:`NoName`); else the default name.  A seat in use elsewhere is never taken: that would
    cut its player off; ``notes`` is told why the default name was taken instead."""
    from .seats import SeatsError, saved_seats, seat_in_use

    def in_use(name: str) -> bool:
        return seat_in_use(url, code, name)

    if given is not None:
        if in_use(given):
            raise NoName(
                f"{clean(given)} is already in room {clean(code)} in another terminal; "
                "pass --name with another name to join as someone else"
            )
        return given
    try:
        saved = [seat["name"] for seat in saved_seats(url, code)]
    except SeatsError as exc:
        print(f"patience-race: saved seats not read: {clean(str(exc))}", file=sys.stderr)
        saved = []
    names = [n for n in saved if not in_use(n)]
    if not names:
        name = default_name()
        if in_use(name):
            raise NoName(
                f"{clean(name)} is already in room {clean(code)} in another terminal; "
                "pass --name NAME to join as someone else"
            )
        busy = [n for n in saved if n != name]
        if busy and notes is not None:
            # (it joined under the login name and said nothing: one whose laptop slept, its
            # client frozen with the seat, did not know why: a bad-network trial)
            # (short: with "you get a seat in the next race" after it, a longer one was cut
            # mid-word at 100 columns, and named only the first seat: a race-night trial)
            seats = ", ".join(clean(n) for n in busy)
            flags = " or ".join(f"--name {clean(n)}" for n in busy)
            whose = f"{seats}'s seat is" if len(busy) == 1 else f"The seats of {seats} are"
            notes.append(
                f"{whose} in use in another terminal: you joined as {clean(name)} (to take it "
                f"back, quit it there, then join {flags})."
            )
        return name
    if len(names) == 1:
        return names[0]
    if not sys.stdin.isatty():
        raise NoName(
            f"seats for {len(names)} names are saved for room {clean(code)}: "
            + ", ".join(clean(n) for n in names)
            + "; pass --name NAME to say which is yours"
        )
    print(f"Seats are saved for room {clean(code)} under these names:")
    for i, name in enumerate(names, 1):
        print(f"  {i}: {clean(name)}")
    for _ in range(3):
        try:
            answer = input(f"Which is yours? (1-{len(names)}) ").strip()
        except EOFError:
            break
        if answer.isascii() and answer.isdigit() and 1 <= int(answer) <= len(names):
            return names[int(answer) - 1]
        match = [n for n in names if n.casefold() == answer.casefold()]
        if match:
            return match[0]
    raise NoName("no seat chosen; pass --name NAME to say which is yours")


def cmd_join(args: argparse.Namespace) -> int:
    url = server_url(args)
    notes: list[str] = []
    try:
        name = choose_name(url, args.code, args.name, notes)
    except NoName as exc:
        print(f"patience-race: {exc}", file=sys.stderr)
        return 2
    # a name nobody chose (the user name) gets a number if the room has it: a friend on the
    # same account joining play's room, say
    chosen = args.name is not None or name != default_name(warn=False)
    plan = Plan(action="join", name=name, url=url, code=args.code, any_name=not chosen)
    plan.note = " ".join(notes)
    return run_app(plan)


def cmd_watch(args: argparse.Namespace) -> int:
    name = args.name or default_name()
    plan = Plan(
        action="watch", name=name, url=server_url(args), code=args.code, any_name=not args.name
    )
    return run_app(plan)


def cmd_rooms(args: argparse.Namespace) -> int:
    import asyncio

    from protocol.messages import ListRooms, RoomList

    from .net import Connection

    url = server_url(args)

    async def fetch() -> RoomList:
        async with Connection(url) as conn:
            answer = await conn.request(ListRooms(seq=0))
            assert isinstance(answer, RoomList)
            return answer

    try:
        rooms = asyncio.run(fetch()).rooms
    except network_errors() as exc:
        print(unreachable(url, exc), file=sys.stderr)
        return 1
    if not rooms:
        # on the server asked, named as it was (without it the command went to the default
        # server: a records trial)
        where = f" --server {url}" if args.server and url != DEFAULT_URL else ""
        print(f"No public rooms right now. Host one: {program()} host{where}")
        return 0
    print(rooms_table(rooms))
    return 0


def cmd_races(args: argparse.Namespace) -> int:
    """The races kept on this computer, the latest first: when, the game, the places, and the
    file that ``patience-race replay`` checks."""
    import datetime

    from .grid import clock
    from .practice import practice_dir
    from .saved_races import races_dir, saved_races

    kept = saved_races()[: max(1, args.count)]
    # practice games are kept apart, and were said nowhere (a records trial)
    try:
        practised = sum(1 for p in practice_dir().glob("*.json"))
    except OSError:
        practised = 0
    games = (
        f"Practice games: {practised} kept in {clean(str(practice_dir()))} "
        f"({program()} replay FILE shows one)."
        if practised
        else ""
    )
    if not kept:
        print(
            f"No race kept here yet ({clean(str(races_dir()))}): each race you race in is kept "
            "when it ends."
        )
        if games:
            print(games)
        return 0
    words = {"won": "won", "disconnected": "dropped"}
    for path, record in kept:
        try:
            when = datetime.datetime.fromtimestamp(record.ended_at or record.started_at)
        except (OverflowError, ValueError, OSError):
            continue  # (one record with a time out of range stopped the list: a review)
        room = f"  room {clean(record.room[:4])}-{clean(record.room[4:])}" if record.room else ""
        print(f"{when:%Y-%m-%d %H:%M}  {clean(record.settings.title)}{room}")
        for s in record.standings:
            time_ = f" {clock(s.finish_ms)}" if s.finish_ms is not None else ""
            result = words.get(s.status, s.status)
            if s.status == "playing":  # as the results said it: the time ran out, or not
                # (a timed race stopped early, its room closed, is not "time up", as replay
                # says: a review)
                ran = (record.ended_at or record.started_at) - record.started_at
                limit = record.settings.time_limit
                result = "time up" if limit and ran >= limit - 0.5 else "stopped"
            print(f"  {s.rank:>2}. {clean(s.name)}: {result}, score {s.score}{time_}")
        # (as this program was started: "patience-race replay" was "command not found" to
        # one who ran .venv/bin/patience-race: a verification trial)
        print(f"  {program()} replay {shlex.quote(clean(str(path)))}")
    if games:
        print(games)
    return 0


def rooms_table(rooms: Sequence[Any]) -> str:
    """The public rooms, one a line, each column as wide as its widest cell (a long title, a
    certified deal's or Spider's with all its options, no longer runs into the next column)."""
    from rich.cells import cell_len

    head = ["code", "game", "race", "players", "watching", "state"]
    rows = [
        [
            clean(r.code[:4] + "-" + r.code[4:]),
            clean(r.title),
            race_words(r.mode, r.time_limit),
            f"{r.players}/{r.seats}",
            str(r.spectators),  # (the server sent it, and it was not shown: a spectators trial)
            clean(r.state),
        ]
        for r in rooms
    ]
    widths = [max(cell_len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return "\n".join(
        "  ".join(
            cell + " " * (w - cell_len(cell)) for cell, w in zip(row, widths, strict=True)
        ).rstrip()
        for row in [head, *rows]
    )


def race_words(mode: str, time_limit: int) -> str:
    """A room's race for its line in ``rooms``: "first to win", "best score, 5 min" (the
    column said "first" or "score", and nothing of a time limit)."""
    words = {"first": "first to win", "score": "best score"}.get(mode, clean(mode))
    if not time_limit:
        return words
    limit = f"{time_limit // 60} min" if not time_limit % 60 else f"{time_limit} s"
    return f"{words}, {limit}"


def cmd_bot(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from .bot import run_bot
    from .net import ServerError

    url = server_url(args)
    # what the bot does, one line each (joined, back after a restart, gone): on standard error
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("patience-race bot: %(message)s"))
    bot_log = logging.getLogger("patience_race.bot")
    bot_log.addHandler(handler)
    bot_log.setLevel(logging.INFO)
    # without --name: Bot, or Bot 2, Bot 3... when the room has one (as people get "Ann 2")
    names = [args.name] if args.name is not None else ["Bot", *(f"Bot {i}" for i in range(2, 17))]
    try:
        for i, name in enumerate(names):
            try:
                # a room whose race is on: the bot waits for the next race (it has a seat in it)
                asyncio.run(
                    run_bot(
                        url,
                        args.code,
                        name=name,
                        level=args.level,
                        think=args.think,
                        spectate_ok=True,
                    )
                )
            except ServerError as exc:
                if exc.code != "name_taken" or i == len(names) - 1:
                    raise
                continue
            break
    except ServerError as exc:
        print(f"patience-race: the server refused the bot: {clean(exc.message)}", file=sys.stderr)
        return 1
    except network_errors() as exc:
        print(unreachable(url, exc), file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="patience-race",
        description="Race your friends at patience: Spider, St. Helena and Louis.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("deal", help="show a deal (PySolFC's numbering by default)")
    p.add_argument("game", choices=GAMES, metavar="GAME", help=" | ".join(GAMES))
    p.add_argument("number", help="deal number: 1 to 10^20 (xpat2: 0 to 999999999)")
    add_game_arguments(p)
    p.add_argument("--json", action="store_true", help="the whole deal, hidden cards included")
    p.set_defaults(func=cmd_deal)

    p = sub.add_parser("replay", help="check a game record and show where it ends")
    p.add_argument(
        "file",
        help="a game record, a practice record or a finished race's record (JSON): a file, or "
        "the URL of a race's record on its server (http://HOST:PORT/races/RACE_ID)",
    )
    p.set_defaults(func=cmd_replay)

    add_solve_parser(sub)

    p = sub.add_parser("play", help="race bots right now on a server inside this program")
    add_race_arguments(p)
    p.add_argument(
        "--bots",
        type=int,
        default=2,
        choices=range(0, 16),
        metavar="N",
        help="bots to race (default 2)",
    )
    p.add_argument(
        "--server", metavar="URL", help="race on this server instead of one inside this program"
    )
    p.add_argument(
        "--port",
        type=port_number,
        default=0,
        metavar="PORT",
        help="the port of the server inside this program (on 127.0.0.1; default: any free one)",
    )
    p.set_defaults(func=cmd_play)

    p = sub.add_parser(
        "practice", help="play alone, with no server: hints (h) and undo without limit"
    )
    p.add_argument("game", choices=GAMES, metavar="GAME", help=" | ".join(GAMES))
    add_game_arguments(p)
    p.add_argument(
        "--deal", metavar="NUMBER", default=None, help="this deal number (default: a random one)"
    )
    p.set_defaults(func=cmd_practice)

    p = sub.add_parser("host", help="open a room on a server and show its code")
    add_race_arguments(p)
    p.add_argument(
        "--seats",
        type=int,
        default=None,
        choices=range(2, 17),
        metavar="N",
        help="players at most, bots included (2-16, default 8, or one more than --bots)",
    )
    p.add_argument(
        "--private", action="store_true", help="do not list the room: join by its code only"
    )
    p.add_argument(
        "--bots",
        type=int,
        default=0,
        choices=range(0, 16),
        metavar="N",
        help="bots to seat (default 0; each takes one of the room's seats)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_host)

    p = sub.add_parser("join", help="join a room by its code (or take your seat back)")
    p.add_argument("code", type=room_code, help="the room's code, as in K7QM-X2PF")
    p.add_argument(
        "--name",
        type=display_name,
        default=None,
        help="your display name (default: the seat you hold in the room, else your user name)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("watch", help="watch a room's race")
    p.add_argument("code", type=room_code, help="the room's code")
    p.add_argument(
        "--name",
        type=display_name,
        default=None,
        help="your display name (default: your user name, with a number if the room has it)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("rooms", help="list the public rooms on a server")
    add_server_argument(p)
    p.set_defaults(func=cmd_rooms)

    p = sub.add_parser("races", help="list the races you raced in, kept on this computer")
    p.add_argument(
        "count", nargs="?", type=int, default=20, help="how many, the latest first (default 20)"
    )
    p.set_defaults(func=cmd_races)

    p = sub.add_parser(
        "bot", help="a bot that joins a room and races (a race under way: from the next one)"
    )
    p.add_argument("code", type=room_code, help="the room's code")
    p.add_argument(
        "--name",
        type=display_name,
        default=None,
        help="the bot's display name (default: Bot, or Bot 2, Bot 3... if the room has one)",
    )
    p.add_argument(
        "--level",
        choices=("easy", "normal", "strong"),
        default="normal",
        help="how well and how fast it plays (default normal)",
    )
    p.add_argument(
        "--think",
        type=pause,
        default=None,
        metavar="SECONDS",
        help="pause between moves (default: the level's pace, easy 2.5, normal 1, strong 0.5; "
        "0: as fast as allowed)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_bot)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # a name the locale cannot encode (李 under Latin-1) is written escaped, not a traceback
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ConfigError, RecordError) as exc:
        print(f"patience-race: {clean(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went (``replay FILE | head``): no traceback; stdout is pointed at nothing
        # so that Python's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
