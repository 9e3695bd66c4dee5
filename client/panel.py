"""The race panel: everyone's place, progress bar and counters beside the board
(:func:`opponents`), or on one line under the header on a narrow screen
(:func:`standings_line`), and a watcher's view of the race (:func:`watching`)."""

from __future__ import annotations

from rich.text import Text

from protocol.config import LOUIS, SPIDER, ST_HELENA
from protocol.messages import Progress, display_code, place_key

from .grid import DIM, clock
from .model import RaceModel
from .text import clip, drawn_cells, plural, wrap_cells


def race_share(p: Progress, game: str) -> tuple[int, int, str]:
    """How far a player is toward a win in this game: (done, of, unit)."""
    if game == SPIDER:
        return p.suits, 8, "suits"
    # the cards the player sent home, as the score counts them (with the eight base cards it
    # started at 8/104, never empty: a St. Helena trial)
    return p.foundation_cards, 96, "home"


def opponents(model: RaceModel, width: int = 30, height: int = 0) -> Text:
    """The race panel: each player's place, name, status, score and how far they are, in fixed
    columns, names cut with an ellipsis.  Three lines a player (a bar, the moves) when ``height`` lines
    hold everyone so, else two, else one; with more players than even that (16 in a short
    panel), the leaders that fit, then yours, and how many are not shown."""
    t = Text(no_wrap=True, overflow="crop")
    if not model.progress:
        return t
    game = model.room.settings.game if model.room else SPIDER
    width = max(20, width)
    mode = model.room.settings.mode if model.room else "first"
    t.append("Race", style="bold")
    aim = "first to win" if mode == "first" else "best score"
    room = model.room
    code = f" {display_code(room.code)}" if room is not None else ""
    if code and 4 + len(code) + 2 + len(aim) <= width:
        # the room's code, on the race screen too (the header gives it up first, at 80
        # columns from the start: a player asked for it mid-race had to look elsewhere)
        t.append(code, style="cyan")
    t.append(f": {aim}\n", style=DIM)  # (15 cells at most: the panel is 20 or more)
    bar_w = width - 14
    order = sorted(
        model.progress,
        key=lambda p: place_key(mode, p.status, p.finish_ms, p.score, p.score_ms, p.id),
    )
    places = {p.id: i + 1 for i, p in enumerate(order)}
    place_w = len(str(len(order))) + 1
    rows = height - 1 if height else 3 * len(order)  # below the "Race" line
    per = next((n for n in (3, 2, 1) if n * len(order) <= rows), 1)
    hidden = 0
    if per * len(order) > rows:
        fit = max(1, rows - 1)  # and a line to say how many are not shown
        mine = [p for p in order if p.id == model.you]
        shown = order[: fit - len(mine)] if mine else order[:fit]
        if mine and mine[0] not in shown:
            shown += mine
        hidden = len(order) - len(shown)
        order = shown
    bots = model.bots
    for p in order:
        me = p.id == model.you
        status = {
            "waiting": "",
            "playing": "",
            "won": "won",
            "resigned": "resigned",
            "stuck": "stuck",
            "disconnected": "dropped",  # (as the results say: it said "gone" here)
            "left": "left",
        }[p.status]
        if not p.connected and p.status == "playing":
            status = "away"
        elif p.connected and p.status == "left":
            status = "idle"  # still here, out of the race for making no move
        done, total, unit = race_share(p, game)
        share = f" {done}/{total}" if per == 1 else ""  # one line: no bar, the count instead
        name_w = width - 7 - place_w - len(share) - (len(status) + 1 if status else 0)
        line = Text()
        line.append(f"{places[p.id]:>{place_w - 1}} ", style="bold" if me else DIM)
        tag = " (bot)" if p.id in bots else ""
        if len(tag) + 6 > name_w:  # a short line (one a player, a long status): the name first
            tag = ""
        # you: "(you)", which no name can hold or look like (a star could: "Bob ᕯ" beside
        # "Bob *", a text trial)
        mark = " (you)" if me else ""
        if me and len(tag) + len(mark) + 4 > name_w:
            tag = ""
        if me and len(mark) + 3 > name_w:
            # too narrow for a name and the mark (one line a player, a long status): "(you)"
            # alone, which says as much (the mark pushed the score off the line: a review)
            name = clip("(you)", name_w)
        else:
            name = clip(p.name, name_w - max(2, len(mark)) - len(tag)) + tag + mark
        line.append(name, style="bold" if me else "")
        line.pad_right(place_w + name_w - drawn_cells(line.plain))
        if status:
            line.append(" " + status, style="bold yellow" if p.status == "won" else DIM)
        if share:
            line.append(share, style=DIM)
        line.append(f"{p.score:>7}", style="green")
        t.append_text(line)
        t.append("\n")
        if per >= 2:
            filled = round(bar_w * min(done, total) / total)
            t.append(" " + "█" * filled + "░" * (bar_w - filled), style="green" if me else "cyan")
            t.append(f"{f'{done}/{total} {unit}':>13}\n", style=DIM)
        if per >= 3:
            when = clock(p.finish_ms) if p.finish_ms is not None else ""
            undo = model.undo_allowed  # (with undo off every row said "0 undos")
            detail = f" {plural(p.moves, 'move')}" + (
                f", {plural(p.undos, 'undo')}" if undo else ""
            )
            if game != ST_HELENA:
                # the cards each has turned (Louis: shown from the stock), as the rules promise
                # everyone sees (it was never drawn: a trial); where it fits
                # (in a panel of 29, 100 moves or a finishing time left it out: a trial; then
                # the moves are "mv", or no undo is not said)
                turned = "shown" if game == LOUIS else "turned"
                undos = f", {plural(p.undos, 'undo')}" if undo else ""
                forms = [
                    f" {plural(p.moves, 'move')}, {p.turned} {turned}{undos}",
                    f" {p.moves} mv, {p.turned} {turned}{undos}",
                ]
                if not p.undos and undo:
                    forms.append(f" {plural(p.moves, 'move')}, {p.turned} {turned}")
                fits = width - (6 if when else 0)  # (the time: once finished)
                detail = next((f for f in forms if len(f) <= fits), detail)
            if when:
                detail = detail[: width - 6].ljust(width - 6) + f"{when:>6}"
            t.append(detail[:width] + "\n", style=DIM)
    if hidden:
        t.append(f" +{hidden} more\n", style=DIM)
    return t


PANEL_MIN_WIDTH = 80
"""The narrowest screen the race panel is drawn beside the board on; below it, the board takes
the width and the places are one line above it (:func:`standings_line`)."""


def standings_line(model: RaceModel, width: int) -> Text:
    """The race panel in one line, for a screen too narrow for the panel (below
    :data:`PANEL_MIN_WIDTH`): every place that fits, ``1 Bob 340 won  2 Ann (you) 120``, and
    yours whatever it is."""
    t = Text(no_wrap=True, overflow="ellipsis")
    if not model.progress:
        return t
    mode = model.room.settings.mode if model.room else "first"
    order = sorted(
        model.progress,
        key=lambda p: place_key(mode, p.status, p.finish_ms, p.score, p.score_ms, p.id),
    )
    words = {"won": " won", "resigned": " resigned", "stuck": " stuck", "disconnected": " dropped"}

    def entry(place: int, p: Progress) -> Text:
        me = p.id == model.you
        e = Text(f"{place} ", style="bold" if me else DIM)
        e.append(clip(p.name, 12) + (" (you)" if me else ""), style="bold" if me else "")
        e.append(f": {p.score}", style="green")  # ("Bot 1 98" read as a name: a trial)
        status = words.get(p.status, "")
        if not p.connected and p.status == "playing":
            status = " away"
        elif p.status == "left":
            status = " idle" if p.connected else " left"
        e.append(status, style=DIM)
        return e

    if model.room is not None:
        # the room's code, which the header gives up first (watch or join again with it: the
        # race screen showed it nowhere below 80 columns, a large-font trial)
        t.append(display_code(model.room.code), style="cyan")
    entries = [(p.id == model.you, entry(i + 1, p)) for i, p in enumerate(order)]
    mine = next((e for me, e in entries if me), None)
    shown_mine = mine is None
    shown = 0
    for k, (me, e) in enumerate(entries):
        # room is kept for your own place after a " … " while it is not shown yet, and for a
        # " +N" of those not shown (leading, the others left out went unsaid: a re-trial)
        reserve = 0 if shown_mine or me else mine.cell_len + 3 if mine is not None else 0
        more = len(f" +{len(entries) - k - 1}") if k < len(entries) - 1 else 0
        if t.cell_len + (2 if t.cell_len else 0) + e.cell_len + max(reserve, more) > width:
            break
        if t.cell_len:
            t.append("  ")
        t.append_text(e)
        shown += 1
        shown_mine = shown_mine or me
    if not shown_mine and mine is not None:
        t.append(" … " if t.cell_len else "")  # (the places skipped say how many)
        t.append_text(mine)
    elif shown < len(entries):
        t.append(f" +{len(entries) - shown}", style=DIM)
    t.truncate(width, overflow="ellipsis")
    return t


def watching(model: RaceModel, width: int, height: int) -> Text:
    """A spectator's main area during a race: the boards are private, so everyone's progress,
    as large as the area allows."""
    sentence = "You are watching: boards stay private until the race is over."
    said = wrap_cells(sentence, width, 2)
    t = Text("\n".join(said), DIM)  # (the board is cropped, not wrapped)
    if model.progress and height > len(said) + 2:
        t.append("\n\n")
        # below the sentence and a blank line: two lines of it below 62 columns (the last
        # player fell off the bottom at 60x20: a review)
        t.append_text(opponents(model, min(width, 72), height - len(said) - 1))
    return t
