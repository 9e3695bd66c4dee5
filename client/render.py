"""Rich text for each part of the client's screen, from the plain :class:`~client.model.RaceModel`."""

from __future__ import annotations

from rich.text import Text

from protocol import cards
from protocol.config import SPIDER
from protocol.helena import foundation_name
from protocol.moves import UNKNOWN

from .model import PILE_KEYS, Keys, RaceModel

RED = "bold red"
BLACK = "bold white"
BACK = "blue"
DIM = "grey50"
SELECTED = "reverse"


def clock(ms: int) -> str:
    s = ms // 1000
    return f"{s // 60}:{s % 60:02d}"


def card_text(card: int, style_extra: str = "") -> Text:
    if card == UNKNOWN:
        return Text("??", style=DIM)
    style = RED if cards.is_red(card) else BLACK
    return Text(cards.name(card), style=f"{style} {style_extra}".strip())


def header(model: RaceModel, auto_home: bool, now: float | None = None) -> Text:
    t = Text()
    room = model.room
    title = room.settings.title if room else "Patience Race"
    t.append(f" {title} ", style="bold")
    if room is not None:
        t.append(f" room {room.code[:4]}-{room.code[4:]} ", style="cyan")
    if model.phase == "racing":
        elapsed = model.elapsed_ms(now)
        if model.time_limit_ms:
            t.append(
                f"  time left {clock(max(0, model.time_limit_ms - elapsed))}", style="bold yellow"
            )
        else:
            t.append(f"  time {clock(elapsed)}", style="yellow")
    state = model.state
    if state is not None and model.phase in ("racing", "results"):
        t.append(f"  score {state.score()}", style="bold green")
        if state.score2() is not None:
            t.append(f" ({state.score2()})", style="green")
        t.append(f"  moves {state.moves}  undos {state.undos}")
        if state.config.game == SPIDER:
            t.append(f"  auto-home {'on' if auto_home else 'off'}", style=DIM)
    if model.role == "spectator":
        t.append("  watching", style="magenta")
    return t


def lobby(model: RaceModel, now: float | None = None) -> Text:
    t = Text()
    room = model.room
    if room is None:
        return Text("Connecting...")
    s = room.settings
    code = f"{room.code[:4]}-{room.code[4:]}"
    t.append("Room ", style="bold")
    t.append(code, style="bold cyan")
    t.append(f"   ({'private' if s.private else 'public'}: others join with ", style=DIM)
    t.append(f"patience-race join {code}", style="cyan")
    t.append(")\n\n", style=DIM)
    t.append(f"Game: {s.title}\n")
    mode = "first to win" if s.mode == "first" else "highest score"
    limit = f"{s.time_limit // 60} min" if s.time_limit else "none"
    t.append(f"Mode: {mode}   Time limit: {limit}   Undo: {s.undo}   Seats: {s.seats}")
    t.append("   Deal: fixed\n" if s.fixed_deal else "   Deal: random\n")
    t.append("\n")
    players = [m for m in room.members if m.role == "player"]
    for m in players:
        mark = Text("ready  ", style="bold green") if m.ready else Text("waiting", style="yellow")
        t.append("  ")
        t.append_text(mark)
        t.append(f"  {m.name}", style="bold" if m.id == model.you else "")
        if m.host:
            t.append("  (host)", style=DIM)
        if not m.connected:
            t.append("  (away)", style="red")
        t.append("\n")
    for _ in range(s.seats - len(players)):
        t.append("  ·        (free seat)\n", style=DIM)
    watchers = [m.name for m in room.members if m.role == "spectator"]
    if watchers:
        t.append(f"\nWatching: {', '.join(watchers)}\n", style="magenta")
    t.append("\n")
    if model.phase == "countdown":
        t.append(f"Starting in {model.countdown_left_ms(now) / 1000:.1f} s\n", style="bold yellow")
    elif model.role == "player":
        t.append("r: ready / not ready", style="bold")
        if model.is_host():
            t.append(
                "   s: start now   g: game  o: options  m: mode  t: time  u: undo  +/-: seats  p: private"
            )
        t.append("\n")
    else:
        t.append("You are watching: the race starts when the players are ready.\n")
    return t


def board(model: RaceModel, keys: Keys, height: int = 18) -> Text:
    state = model.state
    if state is None:
        if model.role == "spectator":
            return Text(
                "You are watching: boards stay private until the race is over.\n", style=DIM
            )
        return Text("")
    if state.config.game == SPIDER:
        return _spider(model, keys, height)
    return _helena(model, keys)


def _spider(model: RaceModel, keys: Keys, height: int) -> Text:
    state = model.state
    assert state is not None
    t = Text()
    done = sum(1 for f in state.foundations if f)
    t.append(f"Stock {len(state.stock)} ({state.deals_left} deals)  Home {done}/8\n", style=DIM)
    cols: list[list[Text]] = []
    rows = max(4, height - 3)
    for i, pile in enumerate(state.piles):
        down = state.down[i]
        cells: list[Text] = []
        if down:
            cells.append(Text(f"▒{down:<2}", style=BACK))
        up = pile[down:]
        sel = 0
        if keys.source == i:
            sel = keys.count or keys.movable(i)
        shown = list(enumerate(up))
        room = rows - len(cells)
        if len(shown) > room:
            cut = len(shown) - (room - 1)
            cells.append(Text(f"+{cut:<2}", style=DIM))
            shown = shown[cut:]
        for j, c in shown:
            selected = sel and j >= len(up) - sel
            cells.append(card_text(c, SELECTED if selected else ""))
        if not cells:
            cells.append(Text("__", style=DIM))
        cols.append(cells)
    for i in range(len(cols)):
        t.append(f"{PILE_KEYS[i]:^3} ", style="bold cyan" if keys.source == i else DIM)
    t.append("\n")
    for r in range(max(len(c) for c in cols)):
        for c in cols:
            cell = c[r] if r < len(c) else Text("")
            t.append_text(cell)
            t.append(" " * (4 - len(cell.plain)))
        t.append("\n")
    return t


def _helena(model: RaceModel, keys: Keys) -> Text:
    state = model.state
    assert state is not None
    t = Text()
    fl = Text("Home f1-4 ", style=DIM)
    for f, fnd in enumerate(state.foundations):
        if f == 4:
            fl.append(" f5-8 ", style=DIM)
        fl.append_text(card_text(fnd[-1]) if fnd else Text("--", style=DIM))
        fl.append(" ")
    t.append_text(fl)
    t.append("\n")
    extra = f"redeals left {state.redeals_left}"
    if state.config.game == "louis":
        extra = (
            f"stock {len(state.stock)} (d deals it)  " if state.deals_left else "stock dealt  "
        ) + extra
    if state.first_deal:
        extra += "  first deal: 1-4 → f1-4, 7-10 → f5-8"
    t.append(extra + "\n", style=DIM)
    width = 14
    for i, pile in enumerate(state.piles):
        t.append(f"{PILE_KEYS[i]:>2} ", style="bold cyan" if keys.source == i else DIM)
        shown = pile
        if len(pile) > width:
            t.append(f"+{len(pile) - width:<2} ", style=DIM)
            shown = pile[-width:]
        for j, c in enumerate(shown):
            last = j == len(shown) - 1
            t.append_text(card_text(c, SELECTED if (last and keys.source == i) else ""))
            t.append(" ")
        if not pile:
            t.append("(empty)", style=DIM)
        t.append("\n")
    return t


def opponents(model: RaceModel, width: int = 30) -> Text:
    t = Text()
    if not model.progress:
        return t
    top = 1000 if model.room and model.room.settings.game == SPIDER else 96
    t.append("Race\n", style="bold")
    bar_w = max(6, width - 14)
    for p in sorted(model.progress, key=lambda p: (-p.score, p.score_ms)):
        me = p.id == model.you
        name = (p.name[:10] + (" *" if me else "")).ljust(12)
        t.append(name, style="bold" if me else "")
        t.append(f"{p.score:>4}\n", style="green")
        filled = round(bar_w * min(p.score, top) / top)
        t.append("  " + "█" * filled + "░" * (bar_w - filled), style="green" if me else "cyan")
        status = {
            "playing": "",
            "won": " WON",
            "resigned": " resigned",
            "stuck": " stuck",
            "disconnected": " gone",
            "left": " left",
        }[p.status]
        if not p.connected and p.status == "playing":
            status = " away"
        t.append(status + "\n", style="bold yellow" if p.status == "won" else DIM)
        detail = f"  m{p.moves} u{p.undos} "
        detail += (
            f"turned {p.turned} suits {p.suits}" if top == 1000 else f"home {p.foundation_cards}"
        )
        if p.finish_ms is not None:
            detail += f" {clock(p.finish_ms)}"
        t.append(detail + "\n", style=DIM)
    return t


def results(model: RaceModel) -> Text:
    t = Text()
    t.append("Results\n\n", style="bold")
    for s in model.standings or []:
        me = s.id == model.you
        time_ = clock(s.finish_ms) if s.finish_ms is not None else "  -  "
        line = f"{s.rank:>2}. {s.name[:16]:<16} {s.status:<12} {s.score:>5}"
        line += f" ({s.score2:>2})" if s.score2 is not None else "     "
        line += f"  {time_}  moves {s.moves:<4} undos {s.undos}\n"
        t.append(line, style="bold yellow" if me else "")
    t.append("\n")
    if model.verdict:
        style = "bold green" if model.verified else "bold white on red"
        t.append(model.verdict + "\n", style=style)
    if model.reveal is not None:
        t.append(f"Replay it in PySolFC as game #{model.reveal.number}.\n", style=DIM)
    t.append("\nn: rematch    q: quit\n", style="bold")
    return t


HELP = """Keys

Pick a pile with its key, then the target pile:
  1 ... 9 0 - =   piles 1 to 12 (0 is pile 10, - 11, = 12)
  same pile again take one card fewer (Spider)
  f               send the picked pile home (to a foundation)
  k / a           St. Helena, Louis: to its king / ace foundation
  d               deal (Spider: a card on each pile; Louis: the stock)
  r               redeal (St. Helena, Louis)
  u               undo (not past a card turned, a deal or a redeal)
  h               Spider: complete suits go home by themselves (on/off)
  x x             resign
  escape          drop the picked pile
  ?               this help
  q q             quit (your seat waits: join again to resume)

Lobby: r ready, s start (host). The host sets the game with
g (game), o (options), m (mode), t (time), u (undo), +/- (seats),
p (private).   Results: n rematch.

Press any key to go back."""


def foundation_label(f: int) -> str:
    return foundation_name(f)
