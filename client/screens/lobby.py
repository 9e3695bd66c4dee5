"""The room before a race: the lobby (how others join, the settings, the players and who is
ready, the keys) and the countdown in big digits in the middle of the board."""

from __future__ import annotations

import time

from rich.console import Console
from rich.text import Text

from protocol.messages import display_code

from ..grid import DIM, clock, plain
from ..model import RaceModel
from ..terminal import program
from ..text import clip, drawn_cells, plural, safe
from .fitting import command_text, drawn_lines, fit_lines


def watching_line(names: list[str], width: int) -> str:
    """Who watches, on one line of ``width`` cells: as many names as fit, then "+N more" (the
    host's settings keys below must stay on an 80x24 screen however many watch)."""
    names = [safe(n) for n in names]
    for shown in range(len(names), 0, -1):
        line = ", ".join(names[:shown])
        if shown < len(names):
            line += f" +{len(names) - shown} more"
        if drawn_cells(line) <= width:
            return line
    # not even one whole name: the first, cut, and how many more
    more = f" +{len(names) - 1} more" if len(names) > 1 else ""
    return clip(names[0], max(4, width - len(more))) + more


def lobby(
    model: RaceModel,
    now: float | None = None,
    join_hint: str | None = None,
    width: int = 78,
    height: int | None = None,
) -> Text:
    """The room: how others join, the settings, the players, what to press.  Taller than
    ``height`` (a large font), without its blank lines and the keys the keys line says too, the
    players in two columns from 9 on, as narrow as the screen (at 60x20 the host's keys fell
    off the bottom: a large-font trial)."""
    t = _lobby(model, now, join_hint, width, 0)
    for compact in range(1, 6):  # a blank line at a time, then the keys (they all went
        # together, and lines stayed empty: a large-font trial)
        if height is None or drawn_lines(t, width) <= height:
            break
        t = _lobby(model, now, join_hint, width, compact)
    return t


def _lobby(
    model: RaceModel, now: float | None, join_hint: str | None, width: int, compact: int
) -> Text:
    """``compact``: 0 as it is; 1 to 3 without as many of its blank lines (the one under the
    settings first, then the one under the join command, then under the players); 4 without
    the host's settings keys, 5 nor "r: ready" (the keys line has them all)."""
    t = Text()

    def gap(n: int) -> str:
        return "" if compact >= n else "\n"

    room = model.room
    if room is None:
        return Text("Connecting...")
    s = room.settings
    code = display_code(room.code)
    t.append("Room ", style="bold")
    t.append(code, style="bold cyan")
    t.append(f"   ({'private' if s.private else 'public'})\n", style=DIM)
    t.append("others join with: ", style=DIM)
    hint = join_hint.removeprefix("others join with: ") if join_hint else f"{program()} join {code}"
    if len("others join with: ") + drawn_cells(hint) > width:
        # on a line of its own, whole: at 80 columns it broke before the server's URL, and the
        # first line pasted ran "join CODE --server" without one (a terminals trial)
        t.append("\n")
        t.append_text(command_text(hint, width))
    else:
        t.append_text(plain(hint, "cyan"))
    t.append("\n" + gap(2))
    t.append("Game: ")
    t.append_text(plain(s.title))
    t.append("\n")
    mode = "first to win" if s.mode == "first" else "highest score"
    if not s.time_limit:
        limit = "none"
    elif s.time_limit % 60:
        limit = clock(s.time_limit * 1000)
    else:
        limit = f"{s.time_limit // 60} min"
    t.append(f"Mode: {mode}   Time limit: {limit}   Undo: {s.undo}\n")
    deal = "fixed" if s.fixed_deal else "certified winnable" if s.winnable else "random"
    if s.numbering == "xpat2":
        deal += " (xpat2 numbering)"
    t.append(f"Seats: {s.seats}   Deal: {deal}\n")
    if s.fixed_deal or s.numbering == "xpat2":
        # docs/rules.md, "What the server cannot hide"
        t.append(
            "This deal can be found from its first cards: race people you trust.\n",
            style="yellow",
        )
    t.append(gap(1))
    players = [m for m in room.members if m.role == "player"]
    # up to 8 players a line each; more (rooms of up to 16 seats) in two columns, so that the
    # lobby stays whole at 80x24
    two = len(players) > 8
    cells: list[Text] = []
    for m in players:
        mark = Text("ready  ", style="bold green") if m.ready else Text("waiting", style="yellow")
        cell = Text("  ")
        cell.append_text(mark)
        cell.append("  ")
        tags = [("bot", DIM)] if m.bot else []
        tags += [("host", DIM)] if m.host else []
        tags += [("away", "red")] if not m.connected else []
        # two columns as wide as half a narrow screen (a large font): the name takes what the
        # tags leave of it
        room_for = 14 if width >= 76 else max(6, min(width // 2, 38) - 12 - 6 * len(tags))
        name = clip(m.name, room_for) if two else m.name
        cell.append_text(plain(name, "bold" if m.id == model.you else ""))
        for tag, style in tags:
            cell.append(f" ({tag})" if two else f"  ({tag})", style=style)
        cells.append(cell)
    if two:
        half = (len(cells) + 1) // 2
        column = min(38, width // 2)
        for left, right in zip(cells[:half], [*cells[half:], Text()], strict=False):
            if width < 76:  # (a large font: each column as wide as half the screen)
                left.truncate(column - 1, overflow="ellipsis")
                right.truncate(width - column, overflow="ellipsis")
            t.append_text(left)
            t.append(" " * max(1, column - drawn_cells(left.plain)))
            t.append_text(right)
            t.append("\n")
    else:
        for cell in cells:
            t.append_text(cell)
            t.append("\n")
    free = s.seats - len(players)
    if free:
        t.append(f"  ·        {plural(free, 'free seat')}\n", style=DIM)
    watchers = [m.name for m in room.members if m.role == "spectator"]
    if watchers:
        t.append(gap(3) + "Watching: ", style="magenta")
        t.append(watching_line(watchers, width - len("Watching: ")), style="magenta")
        t.append("\n")
    t.append(gap(3))
    if model.phase == "countdown":
        if model.countdown_end is None:
            t.append("Waiting for the players to be back after a restart\n", style="bold yellow")
        else:
            t.append(
                f"Starting in {model.countdown_left_ms(now) / 1000:.1f} s\n", style="bold yellow"
            )
    elif model.role == "player":
        me = model.me_member()
        others = [m for m in players if m.id != model.you and m.connected]
        if me is not None and not me.ready and others and all(m.ready for m in others):
            # (the race waited on them, and nothing on their screen said so: club-night trial)
            t.append("Everyone else is ready: press r to start the race.\n", style="bold yellow")
        if compact > 4:
            return t  # (the keys line says them)
        t.append("r: ready / not ready", style="bold")
        if model.is_host():
            t.append("   s: ready and start\n")
            if compact > 3:
                return t
            # broken between keys, never inside one ("p" / "private" at 60 columns: a trial)
            keys = "g game  o/v options  m mode  t time  u undo  +/- seats  p private  w winnable"
            t.append("\n".join(fit_lines(keys, width)))
        t.append("\n")
    else:
        t.append("You are watching: the race starts when the players are ready.\n")
    return t


DIGITS = {
    "0": ["█████", "█   █", "█   █", "█   █", "█████"],
    "1": ["  █  ", " ██  ", "  █  ", "  █  ", " ███ "],
    "2": ["█████", "    █", "█████", "█    ", "█████"],
    "3": ["█████", "    █", " ████", "    █", "█████"],
    "4": ["█   █", "█   █", "█████", "    █", "    █"],
    "5": ["█████", "█    ", "█████", "    █", "█████"],
    "6": ["█████", "█    ", "█████", "█   █", "█████"],
    "7": ["█████", "    █", "   █ ", "  █  ", "  █  "],
    "8": ["█████", "█   █", "█████", "█   █", "█████"],
    "9": ["█████", "█   █", "█████", "    █", "█████"],
}


def big_number(n: int) -> list[str]:
    """``n`` in five-line block digits."""
    rows = ["", "", "", "", ""]
    for i, d in enumerate(str(n)):
        for r in range(5):
            rows[r] += ("  " if i else "") + DIGITS[d][r]
    return rows


def countdown(model: RaceModel, width: int, height: int, now: float | None = None) -> Text:
    """The countdown you cannot miss: 3, 2, 1 in big digits in the middle of the board."""
    lines: list[Text] = []
    if model.countdown_end is None:
        # held after a server restart until the players are back (server/lifecycle.py)
        body = [
            Text("The server restarted during the countdown.", style="bold"),
            Text(""),
            Text("It starts again from 3 when every player is back", style="bold yellow"),
            Text("(or in a few seconds without those who are not).", style="yellow"),
            Text(""),
        ]
    elif (time.monotonic() if now is None else now) - model.countdown_end >= 1.0:
        # a second past zero and no start heard: the link is slow or stalled (a big 1 stayed
        # for twelve seconds while the others raced: a bad-network trial)
        body = [
            Text("The race should have started: waiting for the server...", style="bold"),
            Text(""),
            Text(
                "(a slow link, or the server restarting: the board comes with the start)",
                style="yellow",
            ),
            Text(""),
        ]
    else:
        left = model.countdown_left_ms(now)
        n = max(1, -(-left // 1000))
        body = [
            Text("The race starts in", style="bold"),
            Text(""),
            *[Text(row, style="bold yellow") for row in big_number(n)],
            Text(""),
        ]
    room = model.room
    if room is not None:
        body.append(plain(room.settings.title, DIM))
    if model.role != "player" or not _in_race(model):
        body.append(Text("you are watching this one", style="magenta"))
    # a line wider than the screen in lines of its own, each centred (at 60 columns the one
    # about a slow link was cut: a review); the board here is cropped, never wrapped
    console = Console(width=max(1, width))
    body = [part for line in body for part in (line.wrap(console, max(1, width)) or [line])]
    top = max(0, (height - len(body)) // 2)
    lines.extend(Text("") for _ in range(top))
    for line in body:
        line.rstrip()
        pad = max(0, (width - line.cell_len) // 2)
        lines.append(Text(" " * pad) + line)
    return Text("\n").join(lines)


def _in_race(model: RaceModel) -> bool:
    me = model.me_member()
    return bool(me and me.ready)
