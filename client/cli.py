"""``patience-race``: the player's command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from protocol.config import GAMES, ConfigError, GameConfig
from protocol.deals import deal
from protocol.game import state_class
from protocol.messages import Settings
from protocol.record import RecordError, ReplayError, load, replay

from .net import DEFAULT_URL, URL_ENV
from .solve import add_solve_parser
from .text import render_board


def game_options(args: argparse.Namespace) -> dict[str, object]:
    """The game options given on the command line (None means not given)."""
    names = ("suits", "relaxed", "build", "spaces")
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def add_game_arguments(p: argparse.ArgumentParser, with_numbering: bool = True) -> None:
    p.add_argument("--suits", type=int, choices=(1, 2, 4), help="Spider: 1, 2 or 4 suits")
    p.add_argument(
        "--relaxed",
        type=int,
        choices=(0, 1, 2),
        help="Spider: deal onto empty piles (0 never, 1 when ordered by suit, 2 by rank)",
    )
    p.add_argument(
        "--build", choices=("suit", "any"), help="St. Helena, Louis: build in suit or any"
    )
    p.add_argument(
        "--spaces", choices=("none", "any"), help="St. Helena: what may fill an empty pile"
    )
    if with_numbering:
        p.add_argument(
            "--numbering",
            choices=("pysolfc", "xpat2"),
            default="pysolfc",
            help="deal numbering (xpat2: Spider only)",
        )


def make_config(game: str, args: argparse.Namespace) -> GameConfig:
    return GameConfig(game, game_options(args), getattr(args, "numbering", "pysolfc"))


def cmd_deal(args: argparse.Namespace) -> int:
    config = make_config(args.game, args)
    d = deal(config, args.number)
    if args.json:
        print(d.dumps())
        return 0
    state = state_class(config).from_deal(d)
    title = f"{config.title} #{d.number}" + (
        f" ({config.numbering} numbering)" if config.numbering != "pysolfc" else ""
    )
    print(render_board(state.view(), title))
    return 0


def replay_race(path: Path, data: dict[str, object]) -> int:
    """Check a race's public record: the commitment, and every player's moves from the deal."""
    from pydantic import ValidationError

    from protocol.fairness import commitment
    from protocol.messages import RaceRecord
    from protocol.record import GameRecord, ReplayError, replay

    try:
        race = RaceRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RecordError(f"not a race record: {where}: {first['msg']}") from exc
    rv = race.reveal
    config = GameConfig(rv.game, rv.options, rv.numbering)
    problems = 0
    if commitment(rv.game, config.options, rv.numbering, rv.number, rv.salt) != rv.commitment:
        print(f"{path}: the commitment does not match the revealed deal", file=sys.stderr)
        problems += 1
    print(f"Race {race.race_id}: {config.title} #{rv.number}, {len(race.players)} players")
    print("commitment: " + ("verified" if not problems else "MISMATCH"))
    standing = {s.id: s for s in race.standings}
    for player in race.players:
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
            print(f"{path}: {player.name}: {exc}", file=sys.stderr)
            problems += 1
            continue
        view = state.view()
        same_board = (
            view.tableau == player.board.tableau
            and view.foundations == player.board.foundations
            and view.stock == player.board.stock
        )
        st = standing.get(player.id)
        same_score = st is None or st.score == state.score()
        if not same_board or not same_score:
            print(
                f"{path}: {player.name}: the moves do not reach the recorded board and score",
                file=sys.stderr,
            )
            problems += 1
        rank = f"#{st.rank} " if st else ""
        print(
            f"  {rank}{player.name}: {len(player.moves)} moves, score {state.score()}, {st.status if st else ''}: {'ok' if same_board and same_score else 'MISMATCH'}"
        )
    return 1 if problems else 0


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
        print(f"{args.file}: {exc}", file=sys.stderr)
        return 1
    config = record.config()
    title = f"{config.title} #{record.number} after {len(record.moves)} recorded moves"
    print(render_board(state.view(), title))
    score2 = state.score2()
    print(
        f"score: {state.score()}" + (f"  aisleriot score: {score2}" if score2 is not None else "")
    )
    print(
        f"won: {'yes' if state.won else 'no'}  stuck: {'yes' if state.stuck else 'no'}"
        f"  resigned: {'yes' if state.resigned else 'no'}"
    )
    if record.result is not None:
        print("result: matches the record")
    return 0


def default_name() -> str:
    name = os.environ.get("PATIENCE_RACE_NAME") or os.environ.get("USER") or "Player"
    return name[:24] or "Player"


def server_url(args: argparse.Namespace) -> str:
    return args.server or os.environ.get(URL_ENV) or DEFAULT_URL


def parse_time(text: str) -> int:
    """``10`` or ``10m`` minutes, ``90s`` seconds: the time limit in seconds."""
    t = text.strip().lower()
    try:
        if t.endswith("s"):
            return int(t[:-1])
        return int(float(t.removesuffix("m")) * 60)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: write 10 (minutes), 10m or 90s"
        ) from None


def make_settings(args: argparse.Namespace) -> Settings:
    config = make_config(args.game, args)
    mode = getattr(args, "mode", "first")
    time_limit = getattr(args, "time", 0) or 0
    if mode == "score" and not time_limit:
        time_limit = 600
    return Settings(
        game=args.game,
        options=dict(config.options),
        numbering=config.numbering,  # type: ignore[arg-type]
        mode=mode,
        time_limit=time_limit,
        undo=getattr(args, "undo", "safe"),
        seats=getattr(args, "seats", 8),
        private=getattr(args, "private", False),
        deal_number=config.check_number(args.deal)
        if getattr(args, "deal", None) is not None
        else None,
    )


def run_app(plan: object) -> int:
    from .app import RaceApp

    app = RaceApp(plan)  # type: ignore[arg-type]
    app.run()
    if app.failed:
        print(f"patience-race: {app.failed}", file=sys.stderr)
        return 1
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    from .app import Plan

    settings = make_settings(args)
    plan = Plan(
        action="play",
        name=args.name,
        url=args.server,
        settings=settings,
        bots=args.bots,
        bot_level=args.level,
        bot_think=args.think,
        auto_ready=True,
    )
    return run_app(plan)


def cmd_host(args: argparse.Namespace) -> int:
    from .app import Plan

    plan = Plan(
        action="host",
        name=args.name,
        url=server_url(args),
        settings=make_settings(args),
        bots=args.bots,
        bot_level=args.level,
        bot_think=args.think,
    )
    return run_app(plan)


def cmd_join(args: argparse.Namespace) -> int:
    from .app import Plan

    return run_app(Plan(action="join", name=args.name, url=server_url(args), code=args.code))


def cmd_watch(args: argparse.Namespace) -> int:
    from .app import Plan

    return run_app(Plan(action="watch", name=args.name, url=server_url(args), code=args.code))


def cmd_rooms(args: argparse.Namespace) -> int:
    import asyncio

    from protocol.messages import ListRooms, RoomList

    from .net import Connection, Disconnected

    async def fetch() -> RoomList:
        async with Connection(server_url(args)) as conn:
            answer = await conn.request(ListRooms(seq=0))
            assert isinstance(answer, RoomList)
            return answer

    try:
        rooms = asyncio.run(fetch()).rooms
    except (OSError, Disconnected, TimeoutError) as exc:
        print(f"patience-race: cannot reach {server_url(args)}: {exc}", file=sys.stderr)
        return 1
    if not rooms:
        print("No public rooms right now. Host one: patience-race host")
        return 0
    print(f"{'code':<11}{'game':<28}{'mode':<7}{'players':<9}{'state':<10}")
    for r in rooms:
        print(
            f"{r.code[:4] + '-' + r.code[4:]:<11}{r.title:<28}{r.mode:<7}{f'{r.players}/{r.seats}':<9}{r.state:<10}"
        )
    return 0


def cmd_bot(args: argparse.Namespace) -> int:
    import asyncio

    from .bot import run_bot
    from .net import ServerError

    bot = run_bot(server_url(args), args.code, name=args.name, level=args.level, think=args.think)
    try:
        asyncio.run(bot)
    except ServerError as exc:
        print(f"patience-race: the server refused the bot: {exc.message}", file=sys.stderr)
        return 1
    except (OSError, TimeoutError) as exc:
        print(f"patience-race: cannot reach {server_url(args)}: {exc}", file=sys.stderr)
        return 1
    return 0


def add_server_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--server", metavar="URL", help=f"the race server (default: ${URL_ENV} or {DEFAULT_URL})"
    )


def add_race_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "game",
        nargs="?",
        default="spider",
        choices=GAMES,
        metavar="GAME",
        help=" | ".join(GAMES) + " (default: spider)",
    )
    add_game_arguments(p)
    p.add_argument(
        "--mode",
        choices=("first", "score"),
        default="first",
        help="first to win, or highest score when the time is up",
    )
    p.add_argument(
        "--time",
        type=parse_time,
        default=0,
        metavar="N",
        help="time limit in minutes (10, 10m or 90s); mode score: 10 by default",
    )
    p.add_argument(
        "--undo", choices=("off", "safe"), default="safe", help="undo policy (default: safe)"
    )
    p.add_argument(
        "--deal", metavar="NUMBER", help="a fixed deal number instead of a secret random one"
    )
    p.add_argument("--name", default=default_name(), help="your display name")
    p.add_argument(
        "--level", choices=("easy", "normal", "strong"), default="normal", help="the bots' level"
    )
    p.add_argument(
        "--think",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="the bots' pause between moves (0: as fast as allowed)",
    )


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
    p.add_argument("file", help="a game record (JSON)")
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
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("host", help="open a room on a server and show its code")
    add_race_arguments(p)
    p.add_argument(
        "--seats",
        type=int,
        default=8,
        choices=range(2, 17),
        metavar="N",
        help="players at most (2-16, default 8)",
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
        help="bots to seat (default 0)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_host)

    p = sub.add_parser("join", help="join a room by its code (or take your seat back)")
    p.add_argument("code", help="the room's code, as in K7QM-X2PF")
    p.add_argument("--name", default=default_name(), help="your display name")
    add_server_argument(p)
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("watch", help="watch a room's race")
    p.add_argument("code", help="the room's code")
    p.add_argument("--name", default=default_name() + " (watching)", help="your display name")
    add_server_argument(p)
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("rooms", help="list the public rooms on a server")
    add_server_argument(p)
    p.set_defaults(func=cmd_rooms)

    p = sub.add_parser("bot", help="a bot that joins a room and races")
    p.add_argument("code", help="the room's code")
    p.add_argument("--name", default="Bot", help="the bot's display name")
    p.add_argument("--level", choices=("easy", "normal", "strong"), default="normal")
    p.add_argument(
        "--think",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="pause between moves (0: as fast as allowed)",
    )
    add_server_argument(p)
    p.set_defaults(func=cmd_bot)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ConfigError, RecordError) as exc:
        print(f"patience-race: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
