"""The client's screens around the board: the header and the keys' footer, the lobby, the
countdown, the results, the status line and the help, as ``rich.text.Text`` from the plain
:class:`~client.model.RaceModel` (boards are :mod:`client.render`'s, the race panel :mod:`client.panel`'s).

As there, nothing here is markup: names and server messages are other people's text."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from protocol.config import LOUIS, SPIDER, ST_HELENA
from protocol.messages import Standing, display_code

from .grid import DIM, clock, plain
from .model import RaceModel
from .render import MIN_HEIGHT, MIN_WIDTH
from .terminal import program
from .text import clip, drawn_cells, fit, plural, safe, wrap_cells


def header(
    model: RaceModel,
    auto_home: bool,
    now: float | None = None,
    width: int = 0,
    reconnecting: bool = False,
) -> Text:
    """The line above the board.  Narrower than the line (80 columns): the room's code goes
    first (the lobby and the results show it).  While the connection is lost the clock is shown
    as it was (``now`` is when it was lost), marked: the server may be down, and a server that
    restarts does not count that time."""
    racing = model.phase == "racing" and not model.holding
    t = _header(model, auto_home, now, True, reconnecting, "aisleriot ")
    args: tuple[bool, str, str] = (True, "aisleriot ", "auto-home")
    forms: list[tuple[bool, str, str]] = [
        (False, "aisleriot ", "auto-home"),
        (False, "", "auto-home"),
        (False, "", "home"),  # a long title (a certified deal): "home on" still fits
    ]
    if width and width < 80:
        # a small screen (a large font): auto-home's word before the game's name, whose suits
        # were cut ("Spider …": a large-font trial); o says which it is when pressed
        forms.append((False, "", ""))
    for args in forms:
        if not width or not racing or t.cell_len <= width:
            break
        t = _header(model, auto_home, now, args[0], reconnecting, args[1], args[2])
    if width and t.cell_len > width:
        # still too long (a long title: Spider's options and xpat2 numbering): the title gives
        # way before the clock and the counters, cut with an ellipsis
        room_code, second, home = args if racing else (True, "aisleriot ", "auto-home")
        title = safe(model.room.settings.title if model.room else "Patience Race")
        if model.holding and model.last is not None and model.last.title:
            title = safe(model.last.title)
        title_w = max(8, cell_len(title) - (t.cell_len - width))
        t = _header(model, auto_home, now, room_code, reconnecting, second, home, title_w)
        if t.cell_len > width:  # and the counters, if even that is not enough: never mid-word
            t.truncate(width, overflow="ellipsis")
    return t


def _header(
    model: RaceModel,
    auto_home: bool,
    now: float | None,
    room_code: bool,
    reconnecting: bool,
    second: str,
    home: str = "auto-home",
    title_w: int | None = None,
) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    room = model.room
    t.append(" ")
    title = room.settings.title if room else "Patience Race"
    if model.holding and model.last is not None and model.last.title:
        title = model.last.title  # the results shown are that race's (the room may have moved on)
    t.append(clip(title, title_w) if title_w else safe(title), style="bold")
    if room is not None and room_code:
        t.append(f"  room {display_code(room.code)} ", style="cyan")
    if model.phase == "racing" and not model.holding:
        elapsed = model.elapsed_ms(now)
        style = DIM if reconnecting else None
        if model.time_limit_ms:
            left = clock(max(0, model.time_limit_ms - elapsed))
            t.append(f"  time left {left}", style=style or "bold yellow")
        else:
            t.append(f"  time {clock(elapsed)}", style=style or "yellow")
    state = model.state
    if state is not None and model.phase in ("racing", "results") and not model.holding:
        t.append(f"  score {state.score()}", style="bold green")
        if state.score2() is not None:
            t.append(f" ({second}{state.score2()})", style="green")
        t.append(f"  {plural(state.moves, 'move')}")
        if model.undo_allowed:  # (with undo off, "0 undos" all race long said nothing)
            t.append(f"  {plural(state.undos, 'undo')}")
        if state.config.game == SPIDER and home:
            t.append(f"  {home} {'on' if auto_home else 'off'}", style=DIM)
    if model.role == "spectator":
        t.append("  watching", style="magenta")
    elif model.seat_released and model.phase == "racing" and not model.holding:
        # out of the race, the board left as it was: said where the clock is (it looked live
        # and ticking: a race-night trial); one word, which fits at 80 columns (a review)
        t.append("  watching", style="magenta")
    return t


def fit_lines(keys: str, width: int) -> list[str]:
    """A line of keys (items two spaces apart) on as many lines as ``width`` needs, broken
    between items."""
    lines: list[str] = []
    for item in re.split(r" {2,}", keys.strip()):
        if lines and cell_len(lines[-1]) + 2 + cell_len(item) <= width:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines


FIRST_TO_GO = ("↑↓", "f home", "f/k/a", "d deal", "h hint", "k: kick", "g/o/v")
"""Keys a narrow keys line leaves out first, in this order: each has another way (a click on a
card, a foundation or the stock) or is in the help; resign, quit and leave stay (a mouse user
at 60 columns could not resign, quit or leave: a mouse trial)."""


def fit_keys(keys: str, width: int) -> str:
    """A keys line in ``width`` cells: its items (two spaces or more apart) closer, then items
    left out, those of :data:`FIRST_TO_GO` first, then from the end, as the help lists them all
    (at 60 columns the line was cut, help and all: a large-font trial); the first item and the
    help stay.  One left out that fits again once another has gone is put back."""
    if cell_len(keys) <= width:
        return keys
    items = re.split(r" {2,}", keys.strip())

    def order(i: int) -> tuple[int, int]:
        first = [k for k, prefix in enumerate(FIRST_TO_GO) if items[i].startswith(prefix)]
        return (0, first[0]) if first else (1, -i)

    def line(kept: set[int]) -> str:
        return "  ".join(items[i] for i in sorted(kept))

    # (the help wherever it is: a watcher's line ends "(watching)", and its help went first: a
    # review)
    kept = set(range(len(items)))
    gone: list[int] = []
    for i in sorted((i for i in range(1, len(items)) if "help" not in items[i]), key=order):
        if cell_len(line(kept)) <= width:
            break
        kept.discard(i)
        gone.append(i)
    for i in reversed(gone):  # back, if it fits now
        if cell_len(line(kept | {i})) <= width:
            kept.add(i)
    return line(kept)


def footer_keys(model: RaceModel) -> str:
    """The keys that do something on the screen shown now."""
    if model.holding:
        return "   ".join([*results_keys(model), "?: help"])
    phase = model.phase
    if phase == "racing":
        me = model.my_progress()
        done = me is not None and me.status not in ("playing", "waiting")
        if model.role != "player" or model.state is None or done:
            return "q q: leave   ?: help"
        state = model.state
        undo = "u undo  " if model.undo_allowed else ""
        if state.config.game == SPIDER:
            return f"1-0 pick  ↑↓ more/fewer  f home  d deal  {undo}xx resign  qq quit  ? help"
        # (as practice's footer: a deal while there is one, else a redeal while one is left)
        more = "d deal  " if state.deals_left else "rr redeal  " if state.redeals_left else ""
        return f"1-0 -= pick  f/k/a home  {more}{undo}xx resign  qq quit  ? help"
    if phase == "countdown":
        end = model.countdown_end
        if model.role != "player" or (end is not None and time.monotonic() - end >= 1.0):
            # (past zero, waiting for the start: no countdown left to stop: a trial)
            return "q q: leave   ?: help" if model.role == "player" else "q: leave   ?: help"
        if model.is_host():
            return "r: stop the countdown  g/o/v/m/t/u/+/-/p/w: settings  q q: leave  ?: help"
        return "r: not ready (stops the countdown)   q q: leave   ?: help"
    if phase == "lobby":
        if model.role != "player":
            room = model.room
            players = [m for m in room.members if m.role == "player"] if room else []
            if room is not None and len(players) < room.settings.seats:
                return "r: take a seat and race   q: leave   ?: help   (watching)"
            return "q: leave   ?: help   (watching)"
        if model.is_host():
            return "r: ready  s: start  g/o/v/m/t/u/+/-/p/w: settings  k: kick  q: leave  ?: help"
        return "r: ready / not ready   q: leave   ?: help"
    if phase in ("kicked", "gone"):
        return "q: quit"
    return "q: quit   ?: help"


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
        if height is None or _drawn_lines(t, width) <= height:
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


def too_small(
    width: int, height: int, what: str = "the race", goes_on: str = "the race goes on"
) -> Text:
    """What the board says on a terminal smaller than :data:`MIN_WIDTH` x :data:`MIN_HEIGHT`."""
    return Text(
        f"This terminal is {width}x{height}: {what} needs at least {MIN_WIDTH}x{MIN_HEIGHT}. "
        f"Make it bigger; {goes_on}.",
        style="bold yellow",
    )


RESULT_WORDS = {
    "won": "won",
    "resigned": "resigned",
    "stuck": "stuck",
    "left": "left",
    "disconnected": "dropped",  # away past the grace: the seat released
    "playing": "playing",
    "waiting": "playing",
}


def results(
    model: RaceModel, width: int = 78, join_hint: str | None = None, height: int | None = None
) -> Text:
    """The results table, the deal check, who asked for a rematch and what the room does now
    (and, with ``join_hint``, how a friend joins the next race).  With ``height``, a table too
    long for it shows its first places and your own, and says how many more there are, so that
    what follows it (the keys above all) stays on screen."""
    table = _results_table(model, width, None)
    tail = _results_tail(model, join_hint, width=width)
    if height is not None:
        room = height - _drawn_lines(tail, width)
        last = model.last
        players = len(last.standings if last is not None else (model.standings or []))
        if room < 5 + min(players, 3):
            # a short screen: the record's whereabouts give way to three places at least (at
            # 60x20 the join command was cut off the bottom: a large-font trial)
            tail = _results_tail(model, join_hint, brief=True, width=width)
            room = height - _drawn_lines(tail, width)
        table = _results_table(model, width, room)
    table.append_text(tail)
    return table


def command_text(command: str, width: int) -> Text:
    """A command to copy, on lines of its own: indented when it fits so, else from the edge,
    else over two lines a shell reads as one (`` \\`` before ``--server``): at 60 columns the
    screen broke it before the server's URL, and the first line pasted went to another server
    (a large-font trial)."""
    if drawn_cells(command) + 2 <= width:
        return plain(f"  {command}", "cyan")
    head, sep, url = command.partition(" --server ")
    if drawn_cells(command) <= width or not sep:
        return plain(command, "cyan")
    t = plain(head, "cyan")
    t.append(" \\\n  --server ", style="cyan")  # (ours: a backslash the shell reads, not escaped)
    t.append_text(plain(url, "cyan"))
    return t


def _drawn_lines(text: Text, width: int) -> int:
    """The lines ``text`` takes on a screen ``width`` cells wide: long lines wrap at words, as
    the screen wraps them (counted by cells, a path wrapped a line more than said, and the keys
    went off the bottom: a review)."""
    width = max(1, width)
    body = text.copy()
    body.rstrip()
    return len(body.wrap(Console(width=width), width))


def _results_table(model: RaceModel, width: int, rows: int | None) -> Text:
    """The title and the table, in at most ``rows`` lines (None: all of it)."""
    last = model.last
    t = Text()
    t.append("Results", style="bold")
    if last is not None and last.title:
        t.append("  ")
        t.append_text(plain(last.title, DIM))
    t.append("\n\n")
    standings = last.standings if last is not None else (model.standings or [])
    spider = last is not None and last.game == SPIDER
    undo = last.undo if last is not None else model.undo_allowed
    name_w = max(6, min(24, width - 52 + (0 if undo else 6) + (0 if spider else 6)))
    result_w = 12
    # narrow (a large font): the result's column as wide as its words, then aisleriot's score
    # and the undos give way to the names (60 columns left them "… (bo…": a large-font trial)
    if name_w < 16:  # (room for "(you)" and ten cells of a name: "Alexa… (you)", a review)
        result_w, name_w = 8, name_w + 4
    if spider and name_w < 16:
        spider, name_w = False, name_w + 6
    if undo and name_w < 12:
        undo, name_w = False, name_w + 6
    head = f"{'#':>2}  {'name':<{name_w}} {'result':<{result_w}} {'score':>6}"
    head += f" {'aisl.':>5}" if spider else ""
    head += f" {'time':>6} {'moves':>5}" + (f" {'undos':>5}" if undo else "") + "\n"
    t.append(head, style="bold " + DIM)
    bots = model.bots
    idle = {p.id for p in model.progress if p.status == "left" and p.connected}
    stopped = last is not None and last.stopped
    shown = list(standings)
    more_before: Standing | None = None
    scores = [s.score for s in standings if s.status != "won"]
    ties = len(scores) != len(set(scores))
    # (on as many lines as it takes, up to three: one line cut four players' ties short at 100
    # columns: a verification trial)
    tie_lines = wrap_cells(_ties_line(standings), width, 3) if ties else []
    if rows is not None:
        # the title and a blank line, heading, notes
        fit_all = rows - 3 - (1 if spider else 0) - len(tie_lines)
        if len(shown) > fit_all:
            # a line for "... and N more": the places that fit then (two lines went spare, and
            # 8 players at 80x24 showed 6)
            mine = next((x for x in shown if x.id == model.you), None)
            shown = shown[: max(1, fit_all - 1)]
            if mine is not None and mine not in shown:
                shown[-1] = mine  # your own place, whatever it is
                more_before = mine  # "... and N more" above it, where they are (a re-trial)
            # the ties of the rows shown only (16 players at 80x24 named players not shown)
            kept = [x.score for x in shown if x.status != "won"]
            ties = len(kept) != len(set(kept))
            tie_lines = wrap_cells(_ties_line(shown), width, 3) if ties else []
    hidden = len(standings) - len(shown)
    more = f"    ... and {plural(hidden, 'more player')} (a taller terminal shows all)\n"
    for s in shown:
        if s is more_before:
            t.append(more, style=DIM)
        me = s.id == model.you
        style = "bold yellow" if me else ""
        t.append(f"{s.rank:>2}. ", style=style)
        # (you) in words too: bold yellow alone was the heading's bold without colour (NO_COLOR),
        # and bright red with 16 colours (an appearance trial)
        tag = " (bot)" if s.id in bots else " (you)" if me else ""
        if name_w - len(tag) < 4:
            tag = ""  # the name first
        t.append(fit(clip(s.name, name_w - len(tag)) + tag, name_w), style=style)
        word = RESULT_WORDS.get(s.status, s.status)
        if s.status == "left" and s.id in idle:
            word = "idle"  # out of the race for making no move, not gone
        if s.status in ("playing", "waiting"):
            # the race is over: still playing when the time ran out, or when its room closed
            # (its host quit play: "idle", who had just moved, a records trial)
            word = "stopped" if stopped else "time up"
        row = f" {word:<{result_w}} {s.score:>6}"
        if spider:
            row += f" {s.score2:>5}" if s.score2 is not None else f" {'':>5}"
        time_ = clock(s.finish_ms) if s.finish_ms is not None else "-"
        row += f" {time_:>6} {s.moves:>5}" + (f" {s.undos:>5}" if undo else "") + "\n"
        t.append(row, style=style)
    if hidden and more_before is None:
        t.append(more, style=DIM)
    if spider:
        t.append("score: xpat2's (0-1000); aisl.: aisleriot's (0-96)\n", style=DIM)
    if ties:
        # (two at 4 points, one placed above: nothing said why)
        # (the time column is when each finished, not when each reached the score, which
        # placed them, and was not shown: "Dee finished first but came last", a trial)
        t.append("".join(line + "\n" for line in tie_lines), style=DIM)
    return t


def _ties_line(standings: list[Standing]) -> str:
    """How equal scores were placed: when each reached the score (``Bob 0:06, Cid 0:08``), and
    who joined first where that was equal too.  Names as sent: :func:`wrap_cells` makes the
    line safe."""
    groups: dict[int, list[Standing]] = {}
    for s in standings:
        if s.status != "won":
            groups.setdefault(s.score, []).append(s)
    said = []
    joined_first = False
    for group in groups.values():
        if len(group) > 1:
            said.append(", ".join(f"{s.name} {clock(s.score_ms)}" for s in group))
            times = [s.score_ms for s in group]
            joined_first = joined_first or len(set(times)) < len(times)
    then = " (then who joined first)" if joined_first else ""
    return f"equal scores: placed by who reached it first{then}: " + "; ".join(said)


def _results_tail(
    model: RaceModel, join_hint: str | None, brief: bool = False, width: int = 78
) -> Text:
    """What follows the table: the deal check, the race's record, who asked for a rematch,
    where the room is now, the keys (``brief``: not where to replay the deal or the record)."""
    last = model.last
    standings = last.standings if last is not None else (model.standings or [])
    t = Text("\n")
    verdict = last.verdict if last is not None else model.verdict
    verified = last.verified if last is not None else model.verified
    if verdict:
        style = "bold green" if verified else "bold white on red"
        t.append(verdict + "\n", style=style)
    reveal = last.reveal if last is not None else model.reveal
    if reveal is not None:
        if reveal.solution is not None:
            best = min((s.moves for s in standings if s.status == "won"), default=None)
            # (not "par": the solver plays a sure win, not a short one, and a bot won in a third
            # of its moves: a new user read it as a target to match)
            par = (
                "Certified winnable: the solver won it (in "
                f"{plural(len(reveal.solution), 'move')}: a sure way, not a short one)"
            )
            if best is not None:
                par += f"; the best winner took {plural(best, 'move')}"
            t.append(par + ".\n", style="bold")
        where = "xpat2" if reveal.numbering == "xpat2" else "PySolFC"
        differs = pysolfc_differs(reveal.game, reveal.options) if where == "PySolFC" else ""
        suits = reveal.options.get("suits", 4)
        if reveal.game == SPIDER and reveal.numbering == "xpat2" and suits != 4:
            # (xpat2 deals 4 suits only: its game is this one's layout, not recoloured: a trial)
            differs = f" (its 4-suit game: the same layout, here recoloured to {suits})"
        if not brief:
            t.append(f"Replay it in {where} as game #{reveal.number}{differs}.\n", style=DIM)
    race_id = last.race_id if last is not None else model.race_id
    if race_id and not brief:
        at = last.record_at if last is not None else None
        if at is not None and last is not None and last.record_saved:
            t.append(f"Race {race_id}, every board and move, saved in ", style=DIM)
            t.append_text(plain(at, DIM))
            t.append(f" ({program()} replay checks it).\n", style=DIM)
        elif at is not None:
            t.append(f"Race {race_id}: every board and move is public at ", style=DIM)
            t.append_text(plain(at, DIM))
            t.append(f" ({program()} replay checks it).\n", style=DIM)
        else:
            t.append(
                f"Race {race_id}: every board and move is public (GET /races/{race_id}).\n",
                style=DIM,
            )
    if join_hint and model.phase not in ("kicked", "gone"):  # (no next race: the room is gone)
        t.append("others join the next race with:\n", style=DIM)
        t.append_text(command_text(join_hint, width))
        t.append("\n")
    asked = model.rematch_asked()
    if asked:
        t.append("\nrematch asked by: ", style="bold")
        t.append_text(plain(", ".join(asked)))
        t.append("\n")
        room = model.room
        if model.asked_rematch and room is not None:
            waiting = [
                m.name for m in room.members if m.role == "player" and m.connected and not m.rematch
            ]
            if waiting:
                t.append("waiting for ", style=DIM)
                t.append_text(plain(", ".join(waiting), DIM))
                t.append("\n")
    moved = model.moved_on()
    if moved:
        t.append("\n")
        t.append(moved + "\n", style="bold cyan")
    t.append("\n")
    t.append("    ".join(results_keys(model)) + "\n", style="bold")
    return t


def pysolfc_differs(game: str, options: Mapping[str, object]) -> str:
    """What a deal replayed in PySolFC plays by other rules there ("" when none): its St.
    Helena builds in any suit and never fills an empty pile; its Louis builds in suit with a
    wrap between king and ace (docs/rules.md)."""
    if game == LOUIS:
        if options.get("build", "suit") == "any":
            return " (the same deal; PySolFC builds in suit there, a king and an ace on each other)"
        return " (the same deal; PySolFC lets a king and an ace go on each other)"
    if game == ST_HELENA:
        other = []
        if options.get("build", "suit") == "suit":
            other.append("builds in any suit")
        if options.get("spaces", "none") == "any":
            other.append("never fills an empty pile")
        if other:
            return f" (the same deal; PySolFC {' and '.join(other)})"
    return ""


def results_keys(model: RaceModel) -> list[str]:
    """The keys that do something on the results, as they stand now: ``n`` asks for the
    rematch (once), or follows the room once it has moved on; the host's ``s`` takes the room
    back to the lobby at once (where whoever asked is ready)."""
    room = model.room
    keys: list[str] = []
    if model.phase in ("kicked", "gone"):
        return ["q: quit"]  # the room is gone: nothing to ask or follow
    on_results = room is not None and room.state == "results"
    if model.role != "player":
        if not on_results:
            keys.append("n: follow the room")
        else:
            me = model.me_member()
            if me is not None and me.to_race and model.is_host():
                keys.append("s: to the lobby")  # (one who came to race, left host)
    elif not on_results:
        keys.append("n: next race")
    else:
        if not model.asked_rematch:
            keys.append("n: rematch")
        if model.is_host():
            keys.append("s: to the lobby")
    return [*keys, "q: leave"]


def message_screen(model: RaceModel) -> Text:
    """Why the room is gone (kicked, closed, never entered); the status line says only the key."""
    t = plain(model.status)
    t.append("\n\nPress q to quit.")
    return t


def status_line(
    model: RaceModel, keys_hint: str, reconnecting: bool, width: int | None = None
) -> Text:
    """The last thing that happened, then the keys.  With ``width``, a message longer than the
    line takes two (cut after that): the app makes room for them, so the keys stay on screen."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if model.phase not in ("kicked", "gone") or model.holding:
        # (there the board says it, once; but for results kept on screen: the room closed under
        # them, and nothing said so: a records trial)
        message = " ".join(model.status.split())
        if stuck_with_undo(model):
            # stays said whatever happens meanwhile (another's resign wrote over it, and the
            # player was put out a minute later without a word)
            message = STUCK_NOTE
        t.append("\n".join(wrap_cells(message, width, 2)) if width else safe(message))
    t.append("\n")
    if reconnecting:  # nothing but quitting works meanwhile: the keys would only be cut off
        t.append("connection lost: reconnecting...", style="bold red")
        t.append("   q q: quit", style=DIM)
        return t
    t.append(keys_hint, style=DIM)
    return t


STUCK_NOTE = (
    "No move is left: u takes back your last move, x x resigns; in a minute (on a default "
    "server) you are out as stuck (your score stands)."
)


def stuck_with_undo(model: RaceModel) -> bool:
    """The player's board has no move left, only an undo, and their race goes on."""
    state, me = model.state, model.my_progress()
    return (
        model.phase == "racing"
        and model.role == "player"
        and state is not None
        and state.stuck
        and state.can_undo
        and model.undo_allowed
        and me is not None
        and me.status == "playing"
    )


CARDS_HELP = """Cards: rank (A 2-9 T J Q K) then suit (C S H D): TC is the ten of clubs
  (hearts and diamonds red). ▒5: five cards face down; __: an empty
  pile; +3: the pile's three oldest face-up cards not shown; …3: three
  cards of a run folded (its first and last shown); a picked run is
  drawn reversed."""
"""How a card and a pile are drawn (the race's help and practice's): colour tells red from black
only, and the marks were nowhere said (an appearance trial)."""

HELP = (
    """Keys  (the rules of each game: docs/rules.md)
Race: pick a pile with its key, then the target pile
  1-9 0 - =   piles 1 to 12 (0 is pile 10, - 11, = 12)
  ↑ / ↓       Spider: more / fewer cards of the picked run
              (or the same pile key again: one card fewer; past
              one card, the whole run again; a lone card, or
              escape, puts it down)
  f           the picked pile home;  k / a: to its king / ace foundation
  d           deal (Spider: a card on each pile; Louis: the stock)
  r r         redeal (St. Helena, Louis)
  u           undo
  o           Spider: full suits go home by themselves (on/off)
  h           no hints in a race (patience-race practice has them)
  x x         resign      escape  drop the picked pile
  mouse       click a card: pick the run from it; click a pile: drop
              there; click a foundation: home; click the stock: deal;
              click a key on the bottom line (rr redeal, u undo...);
              a right click puts the picked run down
  q q         quit (on a server your seat waits: join again to resume;
              play's own server ends with it)
  ctrl+z      to the shell; fg comes back (a race goes on meanwhile:
              your seat waits as for a dropped connection; not in play,
              whose server would stop with it)
"""
    + CARDS_HELP
    + """
Spider's score is xpat2's (0-1000); aisleriot's (0-96) is in brackets.
St. Helena, Louis: kings above the aces in the middle; every pile's top
card lies next to them, underlined (a small screen: one row a pile, top
card on the right). A redeal gathers piles 12..1, deals from pile 1.
Lobby: r ready / not ready (n: ready);  the host: s ready and start,
  g game, o/v options, m mode, t time, u undo, +/- seats, p private,
  w winnable, k remove someone (a change stops a countdown).
  q leave (q q in the countdown, or with other people here)
Results: n rematch (watching: n follows the room once it has moved
  on; in its lobby, r or n: ready), the host: s to the lobby at once;
  q leave (q q with others here)
Watching: everyone's progress live (the boards stay private);
  n follows the room to its next race once it has moved on; in the
  lobby, r takes a free seat to race;
  q leave (q q during a race)
?  this help: ↑↓ j k space scroll it, any other key goes back."""
)


def help_text(phase: str, undo: bool = True) -> str:
    """:data:`HELP` with the keys of the screen it is asked from first: in the lobby and the
    results, their lines came after two pages of the race's (a trial).  With ``undo`` false (a
    room with undo off), the race's undo key is not listed (the footer left it out, the help
    did not: a rules trial)."""
    text = HELP
    if not undo:
        text = text.replace(
            "\n  u           undo\n", "\n  u           (undo is off in this room)\n"
        )
        text = text.replace("(rr redeal, u undo...)", "(rr redeal, x x resign...)")
    lines = text.splitlines()
    start = {
        "lobby": "Lobby:",
        "countdown": "Lobby:",
        "results": "Results:",
        "watching": "Watching:",
    }.get(phase)
    if start is None:
        return text
    at = next(i for i, line in enumerate(lines) if line.startswith(start))
    end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    first = [lines[0], *lines[at:end]]
    rest = [*lines[1:at], *lines[end:]]
    if phase == "watching":  # a watcher has no board: the race's keys do nothing (a trial)
        race = next(i for i, line in enumerate(rest) if line.startswith("Race:"))
        score = next(i for i, line in enumerate(rest) if line.startswith("Spider's score"))
        lobby = next(i for i, line in enumerate(rest) if line.startswith("Lobby:"))
        rest = [*rest[:race], rest[score], *rest[lobby:]]  # the scores they see, not the board
    return "\n".join(first + rest)
