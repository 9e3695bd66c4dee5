"""The boards, the cards and the race panel, as rich text from the plain
:class:`~client.model.RaceModel` (the screens around them, lobby, countdown, results, header,
footer and help, are :mod:`client.screens`).

Everything here builds ``rich.text.Text`` objects, never markup strings: names, room titles and
server messages come from other people, and ``[/]`` or ``[@click=app.quit]`` in a name must stay
the characters they are (:func:`client.text.safe` also escapes control characters).  Boards are
drawn on a :class:`Grid` that remembers what each cell shows, so a mouse click can be mapped back
to a card, a pile, a foundation or the stock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.terminal_theme import TerminalTheme
from rich.text import Text

from protocol import cards
from protocol.config import LOUIS, SPIDER, ST_HELENA
from protocol.messages import Progress, display_code, place_key
from protocol.moves import UNKNOWN

from .keys import PILE_KEYS, Keys
from .model import RaceModel
from .text import clip, drawn_cells, plural, safe, wrap_cells

RED = "bold #f03030"
"""Red cards: a red of its own, not the theme's ANSI red (#f4005f, which 16-colour terminals
showed as magenta): bright red there, 4.6:1 on the dark board and 3.5:1 on the white tiles."""
BLACK = "bold white"
PALETTE = TerminalTheme(
    (12, 12, 12),
    (217, 217, 217),
    [
        (26, 26, 26),
        (240, 48, 48),  # red: RED's (Textual's #f4005f showed magenta with 16 colours)
        (152, 224, 36),
        (240, 192, 0),  # yellow (Textual's orange #fd971f showed bright red with 16 colours)
        (157, 101, 255),
        (244, 0, 95),
        (88, 209, 235),
        (196, 197, 181),
    ],
    [
        (98, 94, 76),
        (240, 48, 48),
        (152, 224, 36),
        (224, 213, 97),
        (157, 101, 255),
        (244, 0, 95),
        (88, 209, 235),
        (246, 246, 239),
    ],
)
"""What the named colours of the screens (red, yellow...) are drawn as: Textual's dark ANSI
theme, but for red and yellow, so that a terminal of 16 colours shows them as red and yellow
(the wide cards' red was magenta there, and "your row", "waiting" and the countdown bright red,
like an error: an appearance trial)."""
BACK = "blue"
DIM = "grey50"
SELECTED = "reverse"
TOP = "underline"
"""St. Helena and Louis: each pile's top card, the one it can play, is underlined, so that a pile
fanned around the foundations or wrapped onto two rows shows which end is its top."""
CARD_BG = "on grey93"
"""Wide cards are drawn as white tiles (red and black on white)."""

Target = tuple
"""What a cell shows: ``("card", pile, index)``, ``("pile", pile)``, ``("foundation", f)``,
``("stock",)``."""


def clock(ms: int) -> str:
    s = ms // 1000
    return f"{s // 60}:{s % 60:02d}"


def plain(text: str, style: str = "") -> Text:
    """Text from another person, as plain text: never markup, control characters escaped."""
    return Text(safe(text), style=style)


def card_text(card: int, style_extra: str = "", width: int = 2) -> Text:
    """A card's name padded to ``width``; at 4 and more, a white tile with the name inside."""
    if card == UNKNOWN:
        return Text("??".center(width), style=DIM)
    name = cards.name(card)
    if width >= 4:
        style = ("red" if cards.is_red(card) else "black") + " bold " + CARD_BG
        return Text((" " + name).ljust(width), style=f"{style} {style_extra}".strip())
    style = RED if cards.is_red(card) else BLACK
    return Text(name.ljust(width), style=f"{style} {style_extra}".strip())


# -- a grid of text with click targets ------------------------------------------------------


@dataclass
class Grid:
    """Lines of text built cell by cell, remembering which target each span shows."""

    lines: list[Text] = field(default_factory=list)
    hits: list[tuple[int, int, int, Target]] = field(default_factory=list)
    """(y, x0, x1, target): x0 <= x < x1 on line y."""
    columns: list[tuple[int, int, int, Target]] = field(default_factory=list)
    """(y0, x0, x1, target): below line y0, a click between x0 and x1 means this pile."""

    def put(self, y: int, x: int, text: Text | str, target: Target | None = None) -> None:
        while len(self.lines) <= y:
            self.lines.append(Text())
        line = self.lines[y]
        if isinstance(text, str):
            text = Text(text)
        if line.cell_len < x:
            line.append(" " * (x - line.cell_len))
        elif line.cell_len > x:
            line.truncate(x)  # overwrite: only used left to right
        line.append_text(text)
        if target is not None:
            self.hits.append((y, x, x + text.cell_len, target))

    def text(self) -> Text:
        out = Text()
        for i, line in enumerate(self.lines):
            out.append_text(line)
            if i < len(self.lines) - 1:
                out.append("\n")
        return out

    def at(self, x: int, y: int) -> Target | None:
        for hy, x0, x1, target in reversed(self.hits):
            if hy == y and x0 <= x < x1:
                return target
        for y0, x0, x1, target in self.columns:
            if y >= y0 and x0 <= x < x1:
                return target
        return None


# -- header, footer ---------------------------------------------------------------------------


# -- lobby and countdown ----------------------------------------------------------------------------


# -- boards ---------------------------------------------------------------------------------

MIN_WIDTH, MIN_HEIGHT = 60, 20
"""The smallest terminal every game's board is drawn whole in (below :data:`PANEL_MIN_WIDTH`,
without the race panel: the places are one line): below it the board is not drawn at all (a
board cut or wrapped shows cards where they are not, and a click would pick another card than
the one under the mouse).  80x24 drew nothing smaller, lobby and results too (a large-font
trial)."""


def board(model: RaceModel, keys: Keys, height: int = 18, width: int = 46) -> Text:
    return board_grid(model, keys, height, width).text()


def board_grid(model: RaceModel, keys: Keys, height: int = 18, width: int = 46) -> Grid:
    state = model.state
    grid = Grid()
    if state is None:
        if model.role == "spectator" or model.phase == "racing":
            for y, line in enumerate(watching(model, width, height).split("\n")):
                grid.put(y, 0, line)
        return grid
    if state.config.game == SPIDER:
        _spider(grid, model, keys, height, width)
    else:
        _helena(grid, model, keys, height, width)
    return grid


def _sizes(width: int, piles: int, small: int) -> tuple[int, int]:
    """(card width, gap) for ``piles`` columns in ``width`` cells: cards grow with the screen."""
    cell = max(small + 1, min(9, width // piles))
    if cell <= 4:
        return cell - 1, 1
    if cell <= 6:
        return cell - 1, 1
    return cell - 2, 2


def _spider(grid: Grid, model: RaceModel, keys: Keys, height: int, width: int) -> None:
    state = model.state
    assert state is not None
    done = sum(1 for f in state.foundations if f)
    stock = Text(f"Stock {len(state.stock)} ({plural(state.deals_left, 'deal')})", style=DIM)
    grid.put(0, 0, stock, ("stock",))  # (empty: a click says why it cannot deal, as d does)
    grid.put(0, stock.cell_len, Text("  "))
    home = f"Home {done}/8"
    if state.won and done < 8:
        # the last suits won where they lie, complete (auto-home off): "Home 7/8" after a win
        # read as a win not counted (a new-user trial)
        home += f" + {8 - done} complete: won"
    grid.put(0, stock.cell_len + 2, Text(home, style=DIM), ("foundation", 0))
    card_w, gap = _sizes(width, 10, 3)
    cell = card_w + gap
    tall = height >= 30
    top = 3 if tall else 2
    rows = max(4, height - top - 1)
    cols: list[list[tuple[Text, Target]]] = []
    any_down = any(state.down)
    for i, pile in enumerate(state.piles):
        down = state.down[i]
        cells: list[tuple[Text, Target]] = []
        if down:
            cells.append((Text(f"▒{down}".ljust(card_w), style=BACK), ("pile", i)))
        elif any_down and pile and len(pile) < rows:  # (unless the pile needs the row: a review)
            # the row of the face-down counts left blank: a pile with none began a row
            # higher than the others, as if its first card were a row apart (a new-user trial)
            cells.append((Text(" " * card_w), ("pile", i)))
        up = pile[down:]
        sel = 0
        if keys.source == i:
            sel = keys.count or keys.movable(i)
        room = rows - len(cells)
        shown: list[int | str] = list(range(len(up)))
        if len(shown) > room:
            shown = _fold_runs(up, room)
        if len(shown) > room:  # no run long enough to fold: the oldest cards go (rare)
            cut = len(shown) - (room - 1)
            cells.append((Text(f"+{cut}".ljust(card_w), style=DIM), ("pile", i)))
            shown = shown[cut:]
        for j in shown:
            if isinstance(j, str):  # cards of a run folded: its first and last are shown
                cells.append((Text(j.ljust(card_w), style=DIM), ("pile", i)))
                continue
            selected = sel and j >= len(up) - sel
            cells.append(
                (card_text(up[j], SELECTED if selected else "", card_w), ("card", i, down + j))
            )
        if not cells:
            cells.append((Text("__".ljust(card_w), style=DIM), ("pile", i)))
        cols.append(cells)
    # taller cards when there is room: two lines a card, and the top card of each pile
    # gets a body below its name
    longest = max(len(c) for c in cols)
    step = 2 if tall and longest * 2 + 2 <= rows else 1
    extra = min(2, rows - longest * step) if tall else 0
    for i in range(len(cols)):
        x = i * cell
        label = Text(f"{PILE_KEYS[i]:^{card_w}}", style="bold cyan" if keys.source == i else DIM)
        grid.put(top - 1, x, label, ("pile", i))
        grid.columns.append((top, x, x + cell, ("pile", i)))
    for i, c in enumerate(cols):
        x = i * cell
        for r, (text, target) in enumerate(c):
            grid.put(top + r * step, x, text, target)
            if step == 2 and target[0] == "card":
                grid.put(top + r * step + 1, x, Text(" " * card_w, style=text.style), target)
            elif step == 2 and text.plain.startswith("▒"):
                grid.put(top + r * step + 1, x, Text("▒" * card_w, style=BACK), target)
        last_text, last_target = c[-1]
        if extra > 0 and last_target[0] == "card":
            for k in range(extra):
                body = Text(" " * card_w, style=last_text.style)
                grid.put(top + len(c) * step + k, x, body, last_target)


def _fold_runs(up: list[int], room: int) -> list[int | str]:
    """The rows of a Spider pile's face-up cards (``up``) in at most ``room`` rows, if folding
    the middle of its same-suit runs can do it: a run K..8 of one suit is drawn K, "…3", 8 (the
    three cards folded are the ones the run implies, so nothing is hidden).  Card indexes, and
    a marker for each fold; the longest runs are folded first, as far as needed."""
    runs: list[tuple[int, int]] = []  # (first, last) index of each same-suit run of 4 or more
    start = 0
    for j in range(1, len(up) + 1):
        if j == len(up) or not (up[j] == up[j - 1] - 1 and up[j - 1] % 13):
            if j - start >= 4:
                runs.append((start, j - 1))
            start = j
    need = len(up) - room
    folds: dict[int, int] = {}  # first folded index: how many
    for first, last in sorted(runs, key=lambda r: r[0] - r[1]):
        if need <= 0:
            break
        inner = last - first - 1  # the run's cards between its first and last
        k = min(inner, need + 1)  # k cards folded into one row save k - 1
        folds[first + 1] = k
        need -= k - 1
    out: list[int | str] = []
    j = 0
    while j < len(up):
        if j in folds:
            out.append(f"…{folds[j]}")
            j += folds[j]
        else:
            out.append(j)
            j += 1
    return out


def _helena(grid: Grid, model: RaceModel, keys: Keys, height: int, width: int) -> None:
    """St. Helena and Louis as PySolFC lays them out: the kings above the aces in the middle,
    piles 1-4 above the kings, 5-6 on the right, 7-10 below the aces (right to left) and 11-12
    on the left (bottom to top).  Every pile is fanned so that its top card, the one you can
    play, lies next to the foundations."""
    state = model.state
    assert state is not None
    louis = state.config.game == "louis"
    if model.screen is not None:
        # laid out as if the status message had two lines (the apps' board is the screen less
        # the header, the message and the keys line): a message of two lines takes a line from
        # the board, and the whole board moved up a line with it, and back after
        height = max(1, min(height, model.screen[1] - 4))
    # the information lines
    deal_no = 3 - state.redeals_left
    # Louis redeals only once its stock is dealt: no `r r` to offer before
    rr = "" if louis and state.deals_left else " (r r)"
    info = Text(f"deal {deal_no} of 3", style="bold")
    info.append(
        f", {plural(state.redeals_left, 'redeal')} left{rr}"
        if state.redeals_left
        else ", no redeal left",
        style=DIM,
    )
    y = 0
    if louis:
        if state.deals_left:
            grid.put(y, 0, Text(f"Stock {len(state.stock)} (d)", "bold"), ("stock",))
        else:
            grid.put(y, 0, Text("Stock dealt", DIM))
        x = grid.lines[y].cell_len + 2
        if x + info.cell_len > width:  # 80 columns: the short form, on one line
            info = Text(f"deal {deal_no}/3", style="bold")
            info.append(
                f", {plural(state.redeals_left, 'redeal')}{rr}" if state.redeals_left else "",
                style=DIM,
            )
        grid.put(y, x, info)
    else:
        grid.put(y, 0, info)
    y += 1
    if state.first_deal:
        grid.put(y, 0, Text("deal 1: piles 1-4 → kings, 7-10 → aces only", "yellow"))
    elif louis and state.deals_left:
        grid.put(y, 0, Text("the stock first (d); the redeals come after it", DIM))
    elif state.redeals_left:
        grid.put(y, 0, Text("redeal: gathers piles 12..1, deals from pile 1", DIM))
    else:
        grid.put(y, 0, Text("last deal: any pile to any foundation", DIM))
    y += 1
    if height >= 30:
        y += 1
    # sizes: four foundation columns in the middle, a side pile on each side.  Cards grow with
    # the screen; the biggest cards and gap with which every side pile lies on one row are
    # taken, with room for a card more.  Chosen once a deal and screen
    # (:attr:`RaceModel.helena_layout`): a side pile one card longer must not move every pile
    # under the mouse
    vertical = [len(state.piles[i]) for i in (0, 1, 2, 3, 6, 7, 8, 9)]
    side = [len(state.piles[i]) for i in (4, 5, 10, 11)]
    # (the terminal's size, not the board's: a status message of two lines is no resize; the
    # board went from rows to around the foundations and back with each such message)
    size = model.screen or (width, height)
    sticky = (model.race_id, state.redeals_left, state.deals_left, size, width)
    kept = model.helena_layout
    if kept is not None and kept[0] == sticky:
        _, card_w, gap, in_rows = kept
    else:
        in_rows = False
        biggest = (
            2 if width < 60 else 3 if width < 90 else 4 if width < 150 else 5 if width < 190 else 6
        )
        sizes = [(c, g) for c in range(biggest, 1, -1) for g in (2, 1) if c >= 4 or g == 1]
        # (plain names, no tile, are set one space apart); room for a card more, or at
        # least for those there are (a side pile one card longer wrapped at once), or the
        # smallest cards: the fewest rows
        longest = max(side)
        card_w, gap = next(
            (
                (w, g)
                for spare in (1, 0)
                for w, g in sizes
                if _helena_per_row(width, w, g) >= longest + spare
            ),
            sizes[-1],
        )
        model.helena_layout = (sticky, card_w, gap, False)
    cell = card_w + gap
    side_w = _helena_side_w(width, cell)
    mid_x = side_w + 1
    band = max(3, (height - y - 4) // 2)
    sel = keys.source
    room = side_w - card_w - 1  # beside the foundations, the pile's key label apart
    per_row = _helena_per_row(width, card_w, gap)
    # once a deal has needed the rows on this screen, it keeps them until the next deal or a
    # resize: one card more or less must not redraw the whole board elsewhere under the mouse
    if in_rows or max(vertical) > band or max(side) > per_row:
        # too small a board for every card around the foundations (80x24 with the race panel,
        # or a pile grown past its place): one row a pile, so that no card is ever folded away.
        # (A side pile longer than its row went on in the rows beside piles 1-4 or 7-10, its
        # cards in line with theirs, and was read as theirs: a St. Helena trial.)
        model.helena_layout = (sticky, card_w, gap, True)
        _helena_rows(grid, model, keys, y - (1 if height >= 30 else 0), width, card_w, height)
        return

    def key_label(i: int) -> Text:
        return Text(f"{PILE_KEYS[i]:^{card_w}}", style="bold cyan" if sel == i else DIM)

    def card(i: int, j: int) -> Text:
        pile = state.piles[i]
        top = j == len(pile) - 1
        return card_text(pile[j], (SELECTED if sel == i else TOP) if top else "", card_w)

    # Everything below is placed through put() and drawn row by row, left to right at the end:
    # the side piles wrap into the free corners beside the bands.
    later: list[tuple[int, int, Text, Target | None]] = []

    def put(yy: int, xx: int, text: Text, target: Target | None = None) -> None:
        later.append((yy, xx, text, target))

    # top band: piles 1-4 above the kings, top card at the bottom of the band; their keys on
    # one row, right above the tallest (a key right above each pile's own cards stood beside
    # another pile's card, and read as one: a trial)
    top_rows: list[list[tuple[Text, Target]]] = []
    for i in range(0, 4):
        pile = state.piles[i]
        n = min(len(pile), band)
        first = len(pile) - n
        if first:
            first += 1
            n -= 1
        rows: list[tuple[Text, Target]] = []
        if first:
            rows.append((Text(f"+{first}".ljust(card_w), DIM), ("pile", i)))
        rows += [(card(i, j), ("card", i, j)) for j in range(first, len(pile))]
        if not pile:
            rows.append((Text("__".ljust(card_w), DIM), ("pile", i)))
        top_rows.append(rows)
    keys_y = y + band - max(len(rows) for rows in top_rows)
    for k, (i, rows) in enumerate(zip(range(0, 4), top_rows, strict=True)):
        x = mid_x + k * cell
        start = y + 1 + band - len(rows)
        put(keys_y, x, key_label(i), ("pile", i))
        for r, (text, target) in enumerate(rows):
            put(start + r, x, text, target)
        for r in range(y + 1, y + 1 + band):
            grid.hits.append((r, x, x + cell, ("pile", i)))
    y += 1 + band
    # the foundation rows, side piles beside them, each on its foundation row whole (it fits:
    # see above), its top card nearest the foundations

    def draw_side(i: int, yy: int, left_side: bool) -> None:
        pile = state.piles[i]
        for k, j in enumerate(range(len(pile) - 1, -1, -1)):
            x = side_w - (k + 1) * cell if left_side else x0 + k * cell
            put(yy, x, card(i, j), ("card", i, j))
        if left_side:
            grid.hits.append((yy, card_w + 1, side_w, ("pile", i)))
        else:
            grid.hits.append((yy, x0 - 1, x0 + room, ("pile", i)))
        if not pile:
            x = side_w - cell if left_side else x0
            put(yy, x, Text("__".ljust(card_w), DIM), ("pile", i))

    def outer_end(i: int) -> int:
        """Cells side pile ``i`` takes, its empty mark included."""
        return max(1, len(state.piles[i]))

    x0 = mid_x + 4 * cell + 1
    for row, (left, right, founds) in enumerate(((11, 4, range(0, 4)), (10, 5, range(4, 8)))):
        yy = y + row
        # left pile: top card nearest the foundations, its key right past its outer card
        lx = max(0, side_w - (outer_end(left) + 1) * cell + gap)
        put(yy, lx, key_label(left), ("pile", left))
        draw_side(left, yy, True)
        grid.hits.append((yy, 0, side_w, ("pile", left)))
        # the foundations
        for k, f in enumerate(founds):
            fnd = state.foundations[f]
            text = card_text(fnd[-1], "", card_w) if fnd else Text("--".ljust(card_w), DIM)
            put(yy, mid_x + k * cell, text, ("foundation", f))
        # right pile: top card nearest the foundations, its key right past its outer card
        draw_side(right, yy, False)
        rx = min(x0 + side_w - card_w, x0 + outer_end(right) * cell)
        put(yy, rx, key_label(right), ("pile", right))
        grid.hits.append((yy, x0 - 1, x0 + side_w, ("pile", right)))
    # which foundations are which, in the free corners beside them (messages name them "f8",
    # and nothing on this board said which that was: a St. Helena trial)
    for yy, label in ((y - 1, "kings f1-4 ↓"), (y + 2, "aces f5-8 ↑")):
        if len(label) + 1 <= side_w:
            put(yy, side_w - len(label), Text(label, DIM))
    y += 2
    # bottom band: piles 7-10 below the aces, right to left, top card at the top of the band;
    # their keys on one row, right below the longest
    bottom_rows: list[list[tuple[Text, Target]]] = []
    for i in (9, 8, 7, 6):
        pile = state.piles[i]
        n = min(len(pile), band)
        first = len(pile) - n
        if first:
            first += 1
        rows = [(card(i, j), ("card", i, j)) for j in range(len(pile) - 1, first - 1, -1)]
        if first:
            rows.append((Text(f"+{first}".ljust(card_w), DIM), ("pile", i)))
        if not pile:
            rows.append((Text("__".ljust(card_w), DIM), ("pile", i)))
        bottom_rows.append(rows)
    keys_y = y + max(len(rows) for rows in bottom_rows)
    for k, (i, rows) in enumerate(zip((9, 8, 7, 6), bottom_rows, strict=True)):
        x = mid_x + k * cell
        for r, (text, target) in enumerate(rows):
            put(y + r, x, text, target)
        for r in range(y, y + band):
            grid.hits.append((r, x, x + cell, ("pile", i)))
        put(keys_y, x, key_label(i), ("pile", i))
    for yy, xx, text, at in sorted(later, key=lambda p: (p[0], p[1])):
        grid.put(yy, xx, text, at)


def _helena_side_w(width: int, cell: int) -> int:
    """The columns beside the four foundation columns on each side, for cards ``cell`` apart."""
    return max(2 * cell + 3, (width - 4 * cell - 2) // 2)


def _helena_per_row(width: int, card_w: int, gap: int) -> int:
    """How many cards of a side pile lie on one row beside the foundations (the pile's key
    label apart), with cards ``card_w`` wide and ``gap`` apart."""
    cell = card_w + gap
    side_w = _helena_side_w(width, cell)
    # (the key's label and a space apart; with a gap of one, the label's own padding is it)
    return max(1, (side_w - card_w - (1 if gap > 1 else 0)) // cell)


def _helena_rows(
    grid: Grid,
    model: RaceModel,
    keys: Keys,
    y: int,
    width: int,
    card_w: int,
    height: int | None = None,
) -> None:
    """St. Helena and Louis on a board too small to lay them out around the foundations: the
    foundations on one line (kings, then aces), then one row a pile in key order, its top card
    (the one you can play) at the right end.  A pile longer than a row goes on in the next,
    indented, so that every card stays on the screen; when those rows would not fit in
    ``height`` lines (a small screen: long piles at 60x20 ran off its bottom, a review), the
    longest piles get them first and the rest show their newest cards after a "+N" of the
    oldest."""
    state = model.state
    assert state is not None
    sel = keys.source
    cell = card_w + 1
    # the foundations' numbers too: the messages name them (f4), which nothing here showed
    line = Text("kings f1-4 ", DIM)
    grid.put(y, 0, line)
    x = line.cell_len
    for f in range(8):
        if f == 4:
            aces = Text(" aces f5-8 ", DIM)
            grid.put(y, x, aces)
            x += aces.cell_len
        fnd = state.foundations[f]
        text = card_text(fnd[-1], "", card_w) if fnd else Text("--".ljust(card_w), DIM)
        grid.put(y, x, text, ("foundation", f))
        x += cell
    y += 1
    label_w = 3
    per_row = max(1, (width - label_w) // cell)
    need = [max(1, -(-len(pile) // per_row)) for pile in state.piles]
    rows = [1] * len(need)
    spare = sum(need) - len(need) if height is None else height - y - len(need)
    for i in sorted(range(len(need)), key=lambda i: -need[i]):  # the longest first
        more = max(0, min(need[i] - 1, spare))
        rows[i] += more
        spare -= more
    for i, pile in enumerate(state.piles):
        grid.put(y, 0, Text(f"{PILE_KEYS[i]:>2} ", "bold cyan" if sel == i else DIM), ("pile", i))
        grid.hits.append((y, 0, width, ("pile", i)))
        if not pile:
            grid.put(y, label_w, Text("__".ljust(card_w), DIM), ("pile", i))
        cells: list[tuple[Text, Target]] = []
        first = 0
        if len(pile) > rows[i] * per_row:  # the oldest cards, not shown: how many
            first = len(pile) - (rows[i] * per_row - 1)
            cells.append((Text(f"+{first}".ljust(card_w), DIM), ("pile", i)))
        for j in range(first, len(pile)):
            top = j == len(pile) - 1
            text = card_text(pile[j], (SELECTED if sel == i else TOP) if top else "", card_w)
            cells.append((text, ("card", i, j)))
        for k, (text, target) in enumerate(cells):
            if k and k % per_row == 0:
                y += 1
                grid.hits.append((y, 0, width, ("pile", i)))
            grid.put(y, label_w + (k % per_row) * cell, text, target)
        y += 1


# -- the race panel -------------------------------------------------------------------------------


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
