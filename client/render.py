"""The boards, as rich text from the plain :class:`~client.model.RaceModel`: Spider's here,
St. Helena's and Louis's in :mod:`client.helena_board`, a watcher's view of the race in
:mod:`client.panel` (the race panel beside the board is there too; the screens around the board,
lobby, countdown, results, header, footer and help, are :mod:`client.screens`).

Boards are drawn on a :class:`~client.grid.Grid` that remembers what each cell shows, so a mouse
click can be mapped back to a card, a pile, a foundation or the stock.
"""

from __future__ import annotations

from rich.text import Text

from protocol.config import SPIDER

from .grid import BACK, DIM, SELECTED, Grid, Target, card_text
from .helena_board import helena_board
from .keys import PILE_KEYS, Keys
from .model import RaceModel
from .panel import watching
from .text import plural

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
        helena_board(grid, model, keys, height, width)
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
