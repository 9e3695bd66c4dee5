"""The results after a race: the table (place, name, result, score, time, moves, undos), how
equal scores were placed, the deal's check and where to replay it, the race's record, who asked
for a rematch, and the keys that do something there now."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

from protocol.config import LOUIS, SPIDER, ST_HELENA
from protocol.messages import Standing

from ..grid import DIM, clock, plain
from ..model import RaceModel
from ..terminal import program
from ..text import clip, fit, plural, wrap_cells
from .fitting import command_text, drawn_lines

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
        room = height - drawn_lines(tail, width)
        last = model.last
        players = len(last.standings if last is not None else (model.standings or []))
        if room < 5 + min(players, 3):
            # a short screen: the record's whereabouts give way to three places at least (at
            # 60x20 the join command was cut off the bottom: a large-font trial)
            tail = _results_tail(model, join_hint, brief=True, width=width)
            room = height - drawn_lines(tail, width)
        table = _results_table(model, width, room)
    table.append_text(tail)
    return table


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
