"""St. Helena and Louis boards, as PySolFC lays them out: the kings above the aces in the middle
and the twelve piles around them, each fanned so that its top card lies next to the foundations;
on a board too small for that, one row a pile (:func:`helena_board`)."""

from __future__ import annotations

from rich.text import Text

from .grid import DIM, SELECTED, TOP, Grid, Target, card_text
from .keys import PILE_KEYS, Keys
from .model import RaceModel
from .text import plural


def helena_board(grid: Grid, model: RaceModel, keys: Keys, height: int, width: int) -> None:
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
                if per_row_of(width, w, g) >= longest + spare
            ),
            sizes[-1],
        )
        model.helena_layout = (sticky, card_w, gap, False)
    cell = card_w + gap
    side_w = side_width(width, cell)
    mid_x = side_w + 1
    band = max(3, (height - y - 4) // 2)
    sel = keys.source
    room = side_w - card_w - 1  # beside the foundations, the pile's key label apart
    per_row = per_row_of(width, card_w, gap)
    # once a deal has needed the rows on this screen, it keeps them until the next deal or a
    # resize: one card more or less must not redraw the whole board elsewhere under the mouse
    if in_rows or max(vertical) > band or max(side) > per_row:
        # too small a board for every card around the foundations (80x24 with the race panel,
        # or a pile grown past its place): one row a pile, so that no card is ever folded away.
        # (A side pile longer than its row went on in the rows beside piles 1-4 or 7-10, its
        # cards in line with theirs, and was read as theirs: a St. Helena trial.)
        model.helena_layout = (sticky, card_w, gap, True)
        _in_rows(grid, model, keys, y - (1 if height >= 30 else 0), width, card_w, height)
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


def side_width(width: int, cell: int) -> int:
    """The columns beside the four foundation columns on each side, for cards ``cell`` apart."""
    return max(2 * cell + 3, (width - 4 * cell - 2) // 2)


def per_row_of(width: int, card_w: int, gap: int) -> int:
    """How many cards of a side pile lie on one row beside the foundations (the pile's key
    label apart), with cards ``card_w`` wide and ``gap`` apart."""
    cell = card_w + gap
    side_w = side_width(width, cell)
    # (the key's label and a space apart; with a gap of one, the label's own padding is it)
    return max(1, (side_w - card_w - (1 if gap > 1 else 0)) // cell)


def _in_rows(
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
