"""The bars around the board: the header above it (the game, the room, the clock, the score
and the counters), the status line under it (the last thing that happened, then the keys that
do something now), and what stands in for the board when the screen is too small or the room is
gone."""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text

from protocol.config import SPIDER
from protocol.messages import display_code

from ..grid import DIM, clock, plain
from ..keys import PILE_KEYS
from ..model import RaceModel
from ..render import MIN_HEIGHT, MIN_WIDTH
from ..text import clip, plural, safe, wrap_cells
from .results import results_keys


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


def too_small(
    width: int, height: int, what: str = "the race", goes_on: str = "the race goes on"
) -> Text:
    """What the board says on a terminal smaller than :data:`MIN_WIDTH` x :data:`MIN_HEIGHT`."""
    return Text(
        f"This terminal is {width}x{height}: {what} needs at least {MIN_WIDTH}x{MIN_HEIGHT}. "
        f"Make it bigger; {goes_on}.",
        style="bold yellow",
    )


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


def kick_question(people: list[tuple[str, bool]], width: int) -> tuple[str, int]:
    """The host's "remove whom?" for ``people`` (name, whether watching), and how many of them
    it numbers: as many as the status line's two lines of ``width`` cells show whole, up to ten
    (keys 1 to 0), at least one; ``k`` for the others (``k: 5 more``).  ("1: Amy, 2: Bob": a name holds no
    comma or colon, so "Cat, 1 Troll" cannot pass for two: a text trial.)"""
    for shown in range(min(10, len(people)), 0, -1):
        names = ", ".join(
            f"{PILE_KEYS[i]}: {safe(name)}" + (" (watching)" if watching else "")
            for i, (name, watching) in enumerate(people[:shown])
        )
        more = f"; k: {len(people) - shown} more" if len(people) > shown else ""
        question = f"Remove whom from the room? {names}{more}; any other key: nobody."
        if shown == 1 or len(wrap_cells(question, width, 3)) <= 2:
            return question, shown
    return "Nobody else is in the room.", 0
