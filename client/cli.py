"""``patience-race``: the player's command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from protocol.config import GAMES, ConfigError, GameConfig
from protocol.deals import deal
from protocol.game import state_class
from protocol.record import RecordError, ReplayError, load, replay

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


def cmd_replay(args: argparse.Namespace) -> int:
    record = load(Path(args.file))
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
