"""What the ``patience-race`` command line means: the argument types (names, room codes, times,
server URLs) and the arguments each command shares (a game's options, a room's settings, the
server), turned into the settings and the URL a command uses, and the :class:`Plan` of how a
client gets into a room.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.config import GAMES, GameConfig
from protocol.messages import MAX_CODE, MAX_NAME, MAX_TIME_LIMIT, Mode, Settings
from protocol.names import BadName, normalize

from .net import DEFAULT_URL, URL_ENV
from .safe import clean


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


def default_name(warn: bool = True) -> str:
    """``$PATIENCE_RACE_NAME``, else the login name, made a valid display name (cut to
    :data:`~protocol.messages.MAX_NAME` characters); ``Player`` if neither is one.  A
    ``$PATIENCE_RACE_NAME`` that is no name is said on standard error (``warn``: once a
    command)."""
    for chosen, raw in ((True, os.environ.get("PATIENCE_RACE_NAME")), (False, _login_name())):
        if raw:
            try:
                return normalize(raw.strip()[:MAX_NAME])
            except BadName as exc:
                if chosen and warn:
                    # said, not silently replaced by the login name
                    print(
                        f"patience-race: PATIENCE_RACE_NAME is not a name ({exc}): "
                        "using another (--name sets one)",
                        file=sys.stderr,
                    )
                continue
    return "Player"


def _login_name() -> str | None:
    """The login name (``$LOGNAME``, ``$USER``... else the password database's), None if none."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return None


def display_name(text: str) -> str:
    """A ``--name`` as the server will take it (:func:`protocol.names.normalize`), or the reason
    it cannot be one, for argparse to print."""
    try:
        return normalize(text)
    except BadName as exc:
        # quoted as typed, escaped once (repr would escape clean's escapes again: '\\x1b')
        raise argparse.ArgumentTypeError(f"'{clean(text)}': {exc}") from None


def room_code(text: str) -> str:
    """A room code as typed (``K7QM-X2PF``, ``k7qm x2pf``), or why it cannot be one."""
    code = text.strip()
    letters = "".join(ch for ch in code if ch.isalnum())
    if (
        not 4 <= len(code) <= MAX_CODE
        or not 4 <= len(letters) <= MAX_CODE
        or not all(ch.isascii() and (ch.isalnum() or ch in "- ") for ch in code)
    ):
        raise argparse.ArgumentTypeError(
            f"{clean(text)!r} is not a room code: a code looks like K7QM-X2PF"
        )
    return code


def server_url(args: argparse.Namespace) -> str:
    """The server's URL: ``--server``, else ``$PATIENCE_RACE_SERVER``, else the default; an
    address written without its scheme (``127.0.0.1:8765``, ``race.example.org``) is ws://, and
    a web address pasted (``https://race.example.org``) is its WebSocket (wss://)."""
    url = (args.server or os.environ.get(URL_ENV) or DEFAULT_URL).strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        url = f"ws://{url}"
    elif scheme.lower() in ("http", "https"):  # a web address pasted: its WebSocket
        url = ("wss://" if scheme.lower() == "https" else "ws://") + rest
    return normal_url(url)


def normal_url(url: str) -> str:
    """One spelling for one server (seats are saved by its URL): the scheme and host in lower
    case, no port that is the scheme's own, no lone ``/`` for a path."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url  # (the connection says what is wrong with it)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    if port is not None and (scheme, port) not in (("ws", 80), ("wss", 443)):
        host = f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        return url  # (credentials in a URL: left exactly as given)
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((scheme, host, path, parts.query, parts.fragment))


_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_time(text: str) -> int:
    """``10`` or ``10m`` minutes, ``90s`` seconds, ``1h`` (or ``1.5h``) hours: the time limit
    in seconds."""
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:], 0)
    try:
        seconds = round(float(t[:-1] if unit else t) * (unit or 60))
    except (ValueError, OverflowError):  # not a number, nan, inf
        raise argparse.ArgumentTypeError(
            f"{clean(text)!r} is not a time: write 10 (minutes), 10m, 90s or 1h"
        ) from None
    if seconds == 0 and float(t[:-1] if unit else t) > 0:  # 0.4s would be no limit at all
        raise argparse.ArgumentTypeError(f"{clean(text)!r}: a time limit is a second at least")
    if not 0 <= seconds <= MAX_TIME_LIMIT:
        raise argparse.ArgumentTypeError(
            f"{clean(text)!r}: a time limit is between 0 (none) and {MAX_TIME_LIMIT // 3600} hours"
        )
    return seconds


def _bounded(
    convert: Callable[[str], float], low: float, high: float, what: str
) -> Callable[[str], Any]:
    """An argparse type: ``convert(text)`` from ``low`` to ``high``, else ``what`` it is not."""

    def parse(text: str) -> Any:
        try:
            value: float | None = convert(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{clean(text)!r} is not {what}")
        return value

    return parse


port_number = _bounded(int, 0, 65535, "a port (0 to 65535)")
pause = _bounded(float, 0, 60, "a pause (0 to 60 seconds)")


def make_settings(args: argparse.Namespace) -> Settings:
    deal = getattr(args, "deal", None)
    config = make_config(args.game, args)
    mode: Mode = getattr(args, "mode", "first")
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
        deal_number=config.check_number(deal) if deal is not None and deal != "winnable" else None,
        winnable=deal == "winnable",
    )


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
        "--deal",
        metavar="NUMBER|winnable",
        help="a fixed deal number instead of a secret random one; or winnable: a secret random "
        "deal the server's solver has won (the results show its solution's length)",
    )
    p.add_argument(
        "--name",
        type=display_name,
        default=None,  # (found when needed: a bad $PATIENCE_RACE_NAME was said by every command)
        help="your display name (default: $PATIENCE_RACE_NAME, else your user name)",
    )
    p.add_argument(
        "--level", choices=("easy", "normal", "strong"), default="normal", help="the bots' level"
    )
    p.add_argument(
        "--think",
        type=pause,
        default=None,
        metavar="SECONDS",
        help="the bots' pause between moves (default: their level's pace, easy 2.5, normal 1, "
        "strong 0.5; 0: as fast as allowed)",
    )


@dataclass
class Plan:
    """How this client gets into a room."""

    action: str
    """``play``, ``host``, ``join`` or ``watch``."""
    name: str
    url: str | None = None
    """None: run a server inside this process."""
    settings: Settings | None = None
    code: str | None = None
    bots: int = 0
    bot_level: str = "normal"
    bot_think: float | None = None
    """Seconds between the bots' moves; None: their level's own pace."""
    auto_ready: bool = False
    port: int = 0
    """The port of a server inside this process (on 127.0.0.1; 0: any free one)."""
    note: str = ""
    """Said on the status line once in the room (why the name joined is not a saved seat's)."""
    any_name: bool = False
    """The name is only a default (``watch`` without ``--name``): if someone in the room has it,
    the same name with a number (``Ann 2``) is taken instead."""
