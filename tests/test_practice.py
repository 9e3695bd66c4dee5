"""Practice alone: undo without limit, hints from what the player sees, a record that says so,
and the practice screen driven by its keys (Textual's pilot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from client.cli import main as cli_main
from client.practice import Practice, describe, keys_for
from client.practice_app import PracticeApp
from protocol.config import GameConfig
from protocol.game import new_game
from protocol.moves import DEAL, RESIGN, UNDO, IllegalMove, Kind, Move
from protocol.notation import format_move
from protocol.practice import PracticeGame
from protocol.record import RecordError, ReplayError, load, practice_record, replay

from .test_client_app import wait_until

SPIDER1 = GameConfig("spider", {"suits": 1})


def reveal_move(game: PracticeGame) -> Move:
    """A legal move that turns a face-down card (deal 1 of 1-suit Spider has one)."""
    for m in game.state.legal_moves():
        trial = game.state.copy()
        if m.kind == Kind.TABLEAU and trial.apply(m).turned:
            return m
    raise AssertionError("no move turns a card here")


# -- the game: undo without limit --------------------------------------------------------------


def test_undo_goes_back_past_a_card_turned_and_a_deal() -> None:
    game = PracticeGame(SPIDER1, 1)
    start = game.state.board()
    m = reveal_move(game)
    game.apply(m)
    after_reveal = game.state.board()
    game.apply(DEAL)
    # the race's engine would refuse both undos: a deal and a card turned are final there
    assert game.state.check(UNDO) is not None
    game.apply(UNDO)
    assert game.state.board() == after_reveal
    game.apply(UNDO)
    assert game.state.board() == start
    assert (game.state.moves, game.state.undos) == (2, 2)  # counters never go back
    with pytest.raises(IllegalMove, match="nothing to undo"):
        game.apply(UNDO)
    assert game.notation == [game.notation[0], "d", "u", "u"]


def test_no_undo_after_resigning_or_winning() -> None:
    game = PracticeGame(SPIDER1, 1)
    game.apply(reveal_move(game))
    game.apply(RESIGN)
    assert game.finished and not game.can_undo
    with pytest.raises(IllegalMove, match="resigned"):
        game.apply(UNDO)


def test_the_record_replays_the_practice_way_and_says_hints_were_used(tmp_path: Path) -> None:
    game = PracticeGame(SPIDER1, 1)
    game.apply(reveal_move(game))
    game.apply(UNDO)
    game.hinted()
    game.hinted()
    game.apply(DEAL)
    record = practice_record(game)
    assert record.practice is not None and record.practice.hints == 2
    again = replay(load(record.dumps()))
    assert again.board() == game.state.board()
    # without its practice field the same moves do not replay: a race's undo stops at a reveal
    plain = json.loads(record.dumps())
    del plain["practice"]
    with pytest.raises(ReplayError, match="undo"):
        replay(load(plain))
    # the command line checks it and says what it is
    path = tmp_path / "game.json"
    path.write_text(record.dumps())
    assert cli_main(["replay", str(path)]) == 0


def test_games_of_one_deal_saved_in_the_same_second_keep_their_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two terminals saving the same deal in the same second: the name was checked, then
    written, so one record could land on the other's (14 files for 20 saves, from a trial)."""
    games = [Practice(SPIDER1, 3) for _ in range(6)]
    for i, p in enumerate(games):
        p.game.apply(RESIGN if i % 2 else DEAL)
    monkeypatch.setattr("client.practice.time.strftime", lambda *_: "20261126-120000")
    exists = Path.exists
    # every name looks free when checked, as it would to two processes checking at once
    monkeypatch.setattr(
        Path, "exists", lambda self: False if self.suffix == ".json" else exists(self)
    )
    paths = [p.save_record(tmp_path) for p in games]
    assert len(set(paths)) == 6 and sorted(tmp_path.iterdir()) == sorted(paths)
    for p, path in zip(games, paths, strict=True):
        assert load(path.read_text()).moves == practice_record(p.game).moves
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_a_tampered_practice_record_is_refused() -> None:
    game = PracticeGame(SPIDER1, 1)
    game.apply(reveal_move(game))
    data = json.loads(practice_record(game).dumps())
    data["result"]["undos"] = 3
    with pytest.raises(RecordError, match="undos"):
        replay(load(data))
    data = json.loads(practice_record(game).dumps())
    data["practice"]["hints"] = -1
    with pytest.raises(RecordError):
        load(data)


# -- hints ------------------------------------------------------------------------------------


def test_a_hint_reads_only_what_the_player_sees() -> None:
    one = Practice(SPIDER1, 3)
    two = Practice(SPIDER1, 3)
    s = two.game.state
    # other face-down cards and another stock order: nothing the player can see differs
    s.piles[0][0], s.piles[9][0] = s.piles[9][0], s.piles[0][0]
    s.piles[1][0] = (s.piles[1][0] + 7) % 13
    s.stock.reverse()
    assert one.state.view() == two.state.view() and one.state.board() != two.state.board()
    for _ in range(12):
        a, b = one.hint(), two.hint()
        assert a == b
        if a is None or a.kind == Kind.DEAL:
            break
        changed = [one.play(a), two.play(b)]
        if changed[0].shown:
            break  # from here the two deals show different cards
    assert one.game.hints >= 1


def test_hints_play_a_game_forward_and_are_counted() -> None:
    practice = Practice(SPIDER1, 1)
    score = practice.state.score()
    for k in range(30):
        move = practice.hint()
        assert move is not None
        assert practice.state.check(move) is None, f"hint {k} is illegal: {move}"
        text = describe(move, practice.state)
        assert text.startswith("Hint: ") and "keys: " in text
        practice.play(move)
    assert practice.game.hints == 30
    assert practice.state.score() > score
    assert "30 hints" in practice.summary()


def test_hint_keys_name_the_keys_that_play_the_move() -> None:
    state = new_game(GameConfig("st-helena"), 3)
    for m in state.legal_moves():
        keys = keys_for(m, state)
        if m.kind == Kind.TABLEAU:
            assert keys == f"{'1234567890-='[m.src]} {'1234567890-='[m.dst]}"
        elif m.kind == Kind.FOUNDATION:
            assert keys.split()[1] in ("f", "k", "a")
    assert keys_for(DEAL, new_game(SPIDER1, 1)) == "d"


def test_a_hint_names_the_piles_from_1_as_their_keys_do() -> None:
    """The hint's words name the piles as people count them, and as the keys it gives: pile
    2 is key 2 (the first pile is pile 1, not 0)."""
    state = new_game(SPIDER1, 1)
    move = Move(Kind.TABLEAU, 1, 3, 1)
    assert describe(move, state) == "Hint: 2>4, TC from pile 2 onto JC (pile 4) (keys: 2 4)."
    state.piles[4], state.down[4] = [], 0
    for m in state.legal_moves():
        if m.kind == Kind.TABLEAU:
            text = describe(m, state)
            assert f" from pile {m.src + 1} " in text, text
            where = "to the empty pile" if not state.piles[m.dst] else "(pile"
            assert f"{where} {m.dst + 1}" in text, text


def test_a_hint_picks_part_of_a_run_the_way_the_arrow_keys_would() -> None:
    """A hint that moves part of a Spider run picks exactly those cards (``Keys.count``); one
    that moves the unit a pile key picks leaves the count to the keys (0)."""
    from client.practice import picked_count
    from protocol.moves import Move

    state = new_game(SPIDER1, 1)
    # a run of 3 on pile 1 (7C 6C 5C) whose last two (6C 5C) can go onto pile 2's 7C
    state.piles[0] = [*state.piles[0][: state.down[0]], 6, 5, 4]
    state.piles[1] = [*state.piles[1][: state.down[1]], 6]
    part = Move(Kind.TABLEAU, 0, 1, 2)
    assert state.check(part) is None
    assert picked_count(part, state) == 0  # 1>2 moves those two by itself
    assert keys_for(part, state) == "1 2"
    state.piles[1], state.down[1] = [], 0  # onto an empty pile a pile key takes the whole run
    part = Move(Kind.TABLEAU, 0, 1, 2)
    assert state.check(part) is None
    assert picked_count(part, state) == 2 and keys_for(part, state) == "1 ↓ 2"


# -- the screen -------------------------------------------------------------------------------


def board_text(app: PracticeApp) -> str:
    return str(app.query_one("#board", Static).render())


async def test_practice_screen_hint_undo_resign_and_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        header = str(app.top.render())
        assert "Practice" in header and "Spider (1 suit) #1" in header and "0 hints" in header
        # h: a hint in the status line, its pile picked on the board
        await pilot.press("h")
        await wait_until(pilot, lambda: app.model.status.startswith("Hint: "), timeout=15)
        hint = app.model.status
        assert app.practice.game.hints == 1
        # asking again in the same position shows the same hint, not counted again
        await pilot.press("h")
        await pilot.pause(0.3)
        assert app.model.status == hint and app.practice.game.hints == 1
        # its pile is picked already (rules.md): the one key it names plays it
        first = app.practice.hint()
        assert first is not None and first.kind == Kind.TABLEAU
        assert app.keys.source == first.src
        assert f"(pile {first.src + 1} is picked, press " in hint
        key = hint.split(", press ")[1].rstrip(").")
        assert key == "1234567890"[first.dst]
        await pilot.press(key)
        await wait_until(pilot, lambda: app.practice.state.moves == 1)
        assert app.practice.game.notation == [format_move(first, new_game(SPIDER1, 1))]
        # a move that turns a card, then undo goes back past it
        game = app.practice.game
        before = game.state.board()
        m = reveal_move(game)
        await pilot.press("1234567890"[m.src], "1234567890"[m.dst])
        await wait_until(pilot, lambda: game.state.moves == 2)
        assert game.state.board() != before
        await pilot.press("u")
        await wait_until(pilot, lambda: game.state.board() == before)
        assert "1 undo" in str(app.top.render())
        # resign: the results say hints were used and where the record is
        await pilot.press("x", "x")
        await wait_until(pilot, lambda: "You resigned" in board_text(app))
        results = board_text(app)
        assert "1 hint" in results and "Hints were used" in results
        saved = app.practice.saved
        assert saved is not None and saved.parent == tmp_path / "patience-race" / "practice"
        record = load(saved.read_text())
        assert record.practice is not None and record.practice.hints == 1
        assert replay(record).resigned
        # n: a new deal, with a fresh count
        await pilot.press("n")
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        assert app.practice.game.hints == 0 and app.practice.number != 1
        await pilot.press("q", "q")


async def test_the_practice_header_keeps_the_game_and_its_deal_number_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns the header cut the game's title ("Spider (2"): the number to replay the
    deal was lost; the words around it give way first."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    number = 98765432109876543
    app = PracticeApp(GameConfig("spider", {"suits": 2}), number)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        header = app.header().plain
        # the game first; the counters and auto-home whole (the undos and auto-home were cut
        # behind a long number: a trial); the number last, and whole in the status line
        assert header.startswith(" Spider (2 suits)  0:0"), header
        shown = header[:80]
        assert "0 undos  home on" in shown and "#98765" in shown, shown
        assert f"Spider (2 suits) #{number}" in app.model.status
    short = PracticeApp(SPIDER1, 1)
    async with short.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(short))
        header = short.header().plain  # room enough: everything, in the usual order
        assert header.startswith(" Practice ") and header.endswith("Spider (1 suit) #1"), header


async def test_keys_typed_fast_close_the_help_once() -> None:
    """Two keys queued on the help screen before it is gone: the first closes it, the second is
    dropped (a second dismiss popped the app's own screen: ScreenStackError, the game lost)."""
    from textual import events

    app = PracticeApp(GameConfig("spider", {"suits": 2}), 7)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("?")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PracticeHelp")
        help_screen = app.screen
        help_screen.post_message(events.Key("3", "3"))
        help_screen.post_message(events.Key("4", "4"))
        await wait_until(pilot, lambda: app.screen is not help_screen)
        await pilot.pause(0.3)
        assert app.is_running
        await pilot.press("3")
        await wait_until(pilot, lambda: "Pile 3" in app.model.status)


async def test_keys_typed_in_one_burst_all_count_in_practice() -> None:
    """Keys arriving together (over ssh): the move was made in a worker, the keys before it
    ran were dropped ("waiting for the server" in practice), and a target key lost left its
    pile picked, pairing the next keys into a move never typed (a trial)."""
    from textual import events

    app = PracticeApp(GameConfig("st-helena", {"build": "any"}), 12)
    async with app.run_test(size=(100, 36)) as pilot:
        state = app.practice.state.copy()
        typed: list[str] = []
        for _ in range(4):
            move = next(m for m in state.legal_moves() if m.kind in (Kind.TABLEAU, Kind.FOUNDATION))
            typed += keys_for(move, state).split()
            state.apply(move)
        for key in typed:  # one after another, nothing else running in between
            await app.on_key(events.Key(key, key))
        await pilot.pause()
        assert app.practice.state.moves == 4 and app.practice.state.board() == state.board()
        assert "Waiting for the server" not in app.model.status


async def test_a_half_pressed_resign_does_not_carry_into_a_new_deal() -> None:
    """x, then n n for a new deal, then x: the new deal was resigned on one key (a review)."""
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 36)) as pilot:
        await pilot.press("x", "n", "n", "x")
        assert not app.practice.state.resigned and "Resign?" in app.model.status
        for other in ("n", "o", "h"):  # practice's own keys play on too (a review)
            await pilot.press("escape", "x", other, "x")
            assert not app.practice.state.resigned, other


async def test_a_hint_that_comes_after_a_move_of_the_players_is_dropped() -> None:
    """A hint is worked out meanwhile: one for the position before the player's own move would
    pick a pile and name keys for a board that is gone (the next key played a move never
    hinted)."""
    import threading

    app = PracticeApp(SPIDER1, 1)
    release = threading.Event()
    hint = app.practice.hint

    def slow_hint() -> Move | None:
        move = hint()  # for the position the player asked in
        release.wait(10)
        return move

    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        app.practice.hint = slow_hint  # type: ignore[method-assign]
        await pilot.press("h")
        await wait_until(pilot, lambda: app.thinking)
        await pilot.press("d")  # the player deals meanwhile
        await wait_until(pilot, lambda: app.practice.state.moves == 1)
        release.set()
        await wait_until(pilot, lambda: not app.thinking)
        await pilot.pause(0.2)
        assert not app.model.status.startswith("Hint"), app.model.status
        assert app.keys.source is None


def test_practice_footers_offer_the_hint_and_the_undo_it_has() -> None:
    """Practice's own keys, h and u, on every game's keys line (and a click on them presses
    them): a hint was to be found only in the help."""
    from client.widgets import footer_key

    for config in (SPIDER1, GameConfig("st-helena", {}), GameConfig("louis", {})):
        footer = PracticeApp(config, 1).footer()
        assert "h hint" in footer and "u undo" in footer, footer
        assert footer_key(footer, footer.index("h hint")) == "h"


def test_practice_footers_fit_80_columns() -> None:
    """Every game's practice footer whole at 80 columns (St. Helena's was 79: '? he…')."""
    from rich.cells import cell_len

    for config in (SPIDER1, GameConfig("st-helena", {}), GameConfig("louis", {})):
        app = PracticeApp(config, 1)
        assert cell_len(app.footer()) <= 78, app.footer()


async def test_a_suit_completed_in_practice_goes_home_by_itself() -> None:
    """Auto-home in practice (it died: PracticeApp.send_move had no by_itself, the game lost)."""
    from protocol.solver import solve_deal

    line = solve_deal(SPIDER1, 14).engine_moves[:19]  # a complete suit after these
    app = PracticeApp(SPIDER1, 14)
    async with app.run_test(size=(100, 30)) as pilot:
        for move in line:
            await app.send_move(move)
        await wait_until(pilot, lambda: any(app.practice.state.foundations))
        await pilot.pause(0.2)
        assert app.is_running


async def click_key(app: PracticeApp, pilot: Any, label: str) -> None:
    """Click the item ``label`` of the keys line (the status line's last line)."""
    from client.widgets import StatusBar

    keys_y = str(app.query_one("#status", StatusBar).render()).count("\n")
    await pilot.click("#status", offset=(app.footer_shown.index(label) + 1, keys_y))


async def test_the_keys_on_the_status_line_can_be_clicked() -> None:
    """Redeal, undo, resign... had no click target: a click on a key in the status line presses
    it (twice for those that ask to confirm), and a click closes the help."""
    app = PracticeApp(GameConfig("st-helena", {}), 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        await click_key(app, pilot, "rr redeal")
        await wait_until(pilot, lambda: "Redeal?" in app.model.status)
        await click_key(app, pilot, "rr redeal")
        await wait_until(pilot, lambda: app.practice.state.redeals_left == 1)
        await pilot.press("?")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "PracticeHelp")
        await pilot.click(offset=(5, 5))
        await wait_until(pilot, lambda: type(app.screen).__name__ != "PracticeHelp")


async def test_a_click_on_the_board_drops_the_quit_question() -> None:
    """ "qq quit" clicked, a card clicked, "qq quit" clicked once more: the program quit at once,
    the game lost (a mouse trial).  A click on the board drops the question, as a key does."""
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        await click_key(app, pilot, "qq quit")
        await wait_until(pilot, lambda: "Quit?" in app.model.status)
        assert app.grid is not None
        y, x0, _, _ = next(h for h in app.grid.hits if h[3][0] == "card")
        await pilot.click("#board", offset=(x0 + 1, y))
        await wait_until(pilot, lambda: app.keys.source is not None)
        await click_key(app, pilot, "qq quit")
        await wait_until(pilot, lambda: "Quit?" in app.model.status)
        assert app.is_running  # asked again, not gone
        await click_key(app, pilot, "qq quit")
        await wait_until(pilot, lambda: not app.is_running)


async def test_a_right_click_puts_the_picked_run_down() -> None:
    """Right and middle clicks played as left ones (a mouse trial): they put the picked run
    down, as escape does, and play nothing."""
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        assert app.grid is not None
        y, x0, _, _ = next(h for h in app.grid.hits if h[3][0] == "card")
        for button in (3, 2):
            await pilot.click("#board", offset=(x0 + 1, y))  # the left button picks
            await wait_until(pilot, lambda: app.keys.source is not None)
            await pilot.click("#board", offset=(x0 + 1, y), button=button)
            await wait_until(pilot, lambda: app.keys.source is None)
            assert app.practice.state.moves == 0
        # and, as any click on the board, it drops a quit question
        await pilot.press("q")
        await wait_until(pilot, lambda: app.quit_armed)
        await pilot.click("#board", offset=(x0 + 1, y), button=3)
        await wait_until(pilot, lambda: not app.quit_armed)
        await pilot.press("q")
        await pilot.pause(0.2)
        assert app.is_running and "Quit?" in app.model.status


def test_a_click_on_the_picked_piles_key_puts_its_run_down() -> None:
    """A run picked (three cards), then a click on its own pile's key: put down, as escape
    does (not one card fewer, as its key pressed again does)."""
    from client import render

    app = PracticeApp(SPIDER1, 1)
    state = app.practice.state
    state.piles[0] = [*state.piles[0][: state.down[0]], 6, 5, 4]  # 7C 6C 5C
    app.keys.press("1")
    assert app.keys.source == 0 and app.keys.movable(0) == 3
    app.grid = render.board_grid(app.model, app.keys, 18, 46)
    y, x0, _, _ = next(h for h in app.grid.hits if h[3] == ("pile", 0))
    app.board_click(x0, y)
    assert app.keys.source is None and app.keys.count == 0
    assert app.practice.state.moves == 0


async def test_clicks_that_cannot_play_say_why() -> None:
    """A click on Home with no pile picked, and on an empty stock, did nothing and said
    nothing (a mouse trial)."""
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)

        def where(kind: str) -> tuple[int, int]:
            assert app.grid is not None
            y, x0, _, _ = next(h for h in app.grid.hits if h[3][0] == kind)
            return x0 + 1, y

        await pilot.click("#board", offset=where("foundation"))
        await wait_until(pilot, lambda: "Pick a pile first" in app.model.status)
        for _ in range(5):
            await pilot.press("d")
        await wait_until(pilot, lambda: not app.practice.state.stock)
        app.model.status = ""
        await pilot.click("#board", offset=where("stock"))
        await wait_until(pilot, lambda: "stock" in app.model.status.lower())


async def test_the_practice_header_keeps_the_hints_with_a_long_deal_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns a random deal's number (20 digits) and a long title leave the counters to be
    cut: the hints, what practice counts, are not the ones cut (new-user trial)."""
    from protocol.game import GameConfig

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    config = GameConfig("st-helena", {"spaces": "any"})
    app = PracticeApp(config, 21358235365794540359)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.5)
        shown = str(app.top.render())[:80]  # what 80 columns show of it (the rest is cut)
        assert "0 hints  0 moves  0 undos" in shown and "#2135823536" in shown, shown
        assert "#21358235365794540359" in app.model.status


async def test_the_st_helena_board_stays_put_through_a_message_of_two_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the app, at 120x40: a refusal that takes two lines moved the whole board up a line,
    and back with the next message (second new-user trial, then review: the first fix did
    nothing in the apps)."""
    from protocol.game import GameConfig

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = PracticeApp(GameConfig("st-helena", {}), 5)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)

        def kings_row() -> int:
            assert app.grid is not None
            return next(y for y, _, _, t in app.grid.hits if t == ("foundation", 0))

        before = kings_row()
        await pilot.press("9", "f")  # 3H to a foundation: refused, in two lines at 120 columns
        await pilot.pause(0.3)
        assert app.model.status.startswith("Not allowed") and len(app.model.status) > 118
        assert kings_row() == before


def test_no_color_draws_every_card_in_the_terminals_own_colour(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NO_COLOR: Textual greyed red cards to dark grey on near black (1.6:1, hard to read);
    now colours are dropped and the terminal's own text colour is used, bold kept."""
    from rich.segment import Segment
    from rich.style import Style
    from textual.color import Color
    from textual.filter import Monochrome, NoColor

    from client.grid import RED

    monkeypatch.setenv("NO_COLOR", "1")
    app = PracticeApp(GameConfig("spider", {"suits": 2}), 1)
    filters = app.get_line_filters()
    assert any(isinstance(f, NoColor) for f in filters)
    assert not any(isinstance(f, Monochrome) for f in filters)
    segments = [Segment("5H", Style.parse(f"{RED} on grey11"))]
    for f in filters:
        segments = f.apply(segments, Color(0, 0, 0))
    style = segments[0].style
    assert style is not None and style.bold
    assert style.color is not None and style.color.is_default
    assert style.bgcolor is not None and style.bgcolor.is_default


async def test_escape_and_a_key_read_together_are_both_meant_in_practice() -> None:
    """As in a race: escape then 2, read together as alt+2, dropped the pick and the 2 too."""
    from textual import events

    app = PracticeApp(GameConfig("spider", {"suits": 1}), 1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("1")
        assert app.keys.source == 0
        app.post_message(events.Key("alt+3", "3"))
        await pilot.pause(0.2)
        assert app.keys.source == 2


async def test_undoing_a_suit_sent_home_by_itself_is_not_redone_by_the_next_move() -> None:
    """Practice: u after a suit went home by itself, then a move: the suit went home again at
    once and the undo was quietly cancelled (a rules trial). As in a race, the undo turns the
    sending home off and says so; and o in St. Helena says it is Spider's."""
    from protocol.solver import solve_deal

    line = solve_deal(SPIDER1, 14).engine_moves
    app = PracticeApp(SPIDER1, 14)
    async with app.run_test(size=(100, 30)) as pilot:
        for move in line[:19]:
            await app.send_move(move)
        await wait_until(pilot, lambda: any(app.practice.state.foundations))
        await pilot.press("u")
        assert not any(app.practice.state.foundations)
        assert "no longer go home by themselves" in app.model.status and not app.auto_home
        nxt = next(m for m in line[19:] if m.kind == Kind.TABLEAU)
        await app.send_move(nxt)
        await pilot.pause(0.1)
        assert not any(app.practice.state.foundations)  # the undo stands
    helena = PracticeApp(GameConfig("st-helena"), 12)
    async with helena.run_test(size=(100, 30)) as pilot:
        await pilot.press("o")
        assert helena.model.status.startswith("o is for Spider") and helena.auto_home


async def test_a_long_title_gives_way_to_the_deal_number_in_the_practice_header() -> None:
    """At 100 columns, "Spider (4 suits, relaxed 2, xpat2 numbering) #1234" was cut to "#…"
    (a rules trial): the options give way, the number stays."""
    app = PracticeApp(GameConfig("spider", {"relaxed": 2}, "xpat2"), 1234)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        header = app.header().plain
        assert header.startswith(" Spider (4 suits, …) #1234  0:0") and len(header) <= 100
        assert "0 undos  home on" in header
    # the options left out are marked so: "St. Helena (build any)" read as spaces none (a
    # St. Helena trial)
    helena = PracticeApp(GameConfig("st-helena", {"build": "any", "spaces": "any"}), 3)
    async with helena.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        for _ in range(66):
            helena.practice.game.state.moves += 1  # (the counters grow)
        header = helena.header().plain
        assert header.startswith(" St. Helena (build any, …) #3"), header


def test_hints_that_go_round_in_circles_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hints followed went round in circles for fifty moves of a lost 4-suit endgame, a queen
    from pile 1 to 8 and back (a new-user trial): a hint back to a position the hints followed
    went through says so instead.  An undo, or a move of the player's own, is no circle: the
    same hint again after an undo, or a move back after a poor one, is a hint (a review)."""
    import client.practice as practice_module

    def reversible(p: Practice) -> list[tuple[Move, Move]]:
        start = p.state.board()
        pairs = []
        for m in p.state.legal_moves():
            if m.kind != Kind.TABLEAU:
                continue
            after = p.state.copy()
            after.apply(m)
            if sum(after.down) != sum(p.state.down):
                continue
            for r in after.legal_moves():
                back = after.copy()
                if r.kind == Kind.TABLEAU:
                    back.apply(r)
                    if back.board() == start:
                        pairs.append((m, r))
        return pairs

    p = Practice(GameConfig("spider", {"suits": 1}), 1)
    for _ in range(60):  # played on by the hints until a move can be taken back by another
        pairs = reversible(p)
        if pairs:
            break
        hinted = p.hint()
        assert hinted is not None
        p.play(hinted)
    else:
        pytest.fail("no move with a way back")
    there, back_again = pairs[0]
    script = iter([there, back_again, there, back_again])
    monkeypatch.setattr(practice_module, "choose_move", lambda *a, **k: next(script))
    # followed: there, then the hint back is a circle
    assert p.hint() == there
    p.play(there)
    assert p.hint() is None and p.circling
    # undone: the same hint again is a hint, and followed once more it starts a new run
    p.play(Move(Kind.UNDO))
    assert p.hint() == there and not p.circling
    # a move of the player's own (the same one, not asked for), and the hint back is a hint
    p._last_hint = None  # (as if not asked: played by the player's own choice)
    p.play(there)
    assert p.hint() == back_again and not p.circling


STUCK_ST_HELENA_1 = " ".join(
    (
        "9>f8 11>12 5>f5 2>f4 11>7 11>f2 9>1 9>11 11>f4 11>f4 5>f4 12>9 12>9 r 2>f6 5>f8 1>f1",
        "1>f1 4>f1 1>f3 7>f4 5>f6 6>1 10>9 10>f1 r 9>f4 7>11 6>11 6>f4 5>f4 6>f2 8>f2 6>f6 7>1",
        "5>10 3>4 3>6 5>7 3>5 3>f1 7>f1 7>f1 7>f7 10>f7 10>f7 8>10 4>3 4>3 4>7 1>4 1>4 1>9 1>f3",
        "8>f3 8>f5 8>f4",
    )
).split()
"""St. Helena deal 1 played to a position with no move left (a St. Helena trial's game)."""


async def test_a_practice_game_left_stuck_is_saved_as_stuck(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README: a practice game played to its end, "won, stuck or resigned", is saved; one left
    with no move at all was not (quitting said it would not be, and it was not: a St. Helena
    trial)."""
    from protocol.notation import parse_move

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = PracticeApp(GameConfig("st-helena", {}), 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for text in STUCK_ST_HELENA_1:
            assert app.play(parse_move(text)), text
        assert app.practice.state.stuck and not app.practice.game.finished
        assert "No move left" in app.model.status
        await pilot.press("q")
        assert "the game is saved as stuck" in app.model.status
        await pilot.press("q")
    saved = app.practice.saved
    assert saved is not None and saved.parent == tmp_path / "patience-race" / "practice"
    done = replay(load(saved.read_text()))
    assert done.stuck and not done.resigned


@pytest.mark.parametrize(("chosen", "drawn"), [("textual-light", "textual-dark"), ("nord", "nord")])
async def test_the_board_is_drawn_on_a_dark_theme_in_colours_16_colour_terminals_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str, drawn: str
) -> None:
    """``TEXTUAL_THEME=textual-light`` drew the black cards white on light grey, and with 16
    colours the wide cards' red came out magenta and yellow bright red (an appearance trial): a
    light theme gives way to the dark one (a dark one of one's own stays), and the named colours
    are drawn as ones a 16-colour terminal shows as themselves."""
    from rich.color import Color, ColorSystem
    from textual.app import App
    from textual.filter import ANSIToTruecolor

    from client.grid import PALETTE

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    app = PracticeApp(SPIDER1, 1)
    app.set_reactive(App.theme, chosen)  # as $TEXTUAL_THEME sets it
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        assert app.theme == drawn and app.current_theme.dark
        assert app.ansi_theme is PALETTE
        truecolor = [f for f in app._filters if isinstance(f, ANSIToTruecolor)]
        assert truecolor and truecolor[0]._terminal_theme is PALETTE
    for number, name in enumerate(["red", "green", "yellow", "blue", "magenta", "cyan"], 1):
        for shade in (PALETTE.ansi_colors[number], PALETTE.ansi_colors[number + 8]):
            shown = Color.from_triplet(shade).downgrade(ColorSystem.STANDARD).number
            assert shown in (number, number + 8), (name, shade.hex, shown)


@pytest.mark.parametrize(
    ("config", "number"),
    [
        (GameConfig("spider", {"suits": 1}), 12345),
        (GameConfig("spider", {"suits": 2, "relaxed": 1}, "xpat2"), 5),
        (GameConfig("st-helena", {"build": "any", "spaces": "any"}), 77),
        (GameConfig("louis", {}), 10**19 + 3),
    ],
)
def test_practice_left_unfinished_says_how_to_play_the_deal_again(
    config: GameConfig, number: int
) -> None:
    """Quitting practice mid-game printed nothing: the deal's number was only in the header, cut
    at 80 columns (a records trial).  The command it prints plays the very same game."""
    import shlex

    from client.args import make_config
    from client.cli import build_parser, practice_command

    words = shlex.split(practice_command(config, number))
    assert words[:2] == ["patience-race", "practice"]
    args = build_parser().parse_args(words[1:])
    again = make_config(args.game, args)
    assert again == config and again.check_number(args.deal) == number


def test_practice_says_how_to_play_again_only_a_deal_left_unfinished(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Quit mid-game: the command that plays the deal again; over (resigned), the record's
    file instead, and no command to play a game that is saved."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr("client.cli.can_draw", lambda: True)
    resign = False

    def run(app: PracticeApp) -> None:
        if resign:
            app.play(RESIGN)

    monkeypatch.setattr(PracticeApp, "run", run)
    assert cli_main(["practice", "spider", "--suits", "1", "--deal", "5"]) == 0
    out = capsys.readouterr().out
    assert "to play this deal again: patience-race practice spider --suits 1 " in out
    assert out.rstrip().endswith("--deal 5") and "record" not in out
    resign = True
    assert cli_main(["practice", "spider", "--suits", "1", "--deal", "5"]) == 0
    out = capsys.readouterr().out
    assert "the record of your last game is in" in out and str(tmp_path) in out
    assert "play this deal again" not in out


async def test_the_board_is_drawn_again_back_from_the_background() -> None:
    """Ctrl+Z, then fg: the terminal showed the header alone until something changed (each
    widget given the text it had drew nothing: a client trial); back, every widget draws."""
    from textual.widgets import Static

    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        drawn: list[object] = []
        update = Static.update

        def counting(widget: Static, *args: object, **kwargs: object) -> None:
            drawn.append(widget)
            update(widget, *args, **kwargs)  # type: ignore[arg-type]

        Static.update = counting  # type: ignore[method-assign,assignment]
        try:
            app.refresh_view()
            assert app.main_view not in drawn  # the same board: not drawn again
            app.app_resume_signal.publish(app)
            await pilot.pause(0.1)
            assert app.main_view in drawn and app.status_line in drawn
        finally:
            Static.update = update  # type: ignore[method-assign]


async def test_a_quit_question_dropped_leaves_the_status_line() -> None:
    """q, then another key: the question stayed on the status line, and the next q asked it
    again, as if q did nothing (a client trial)."""
    app = PracticeApp(SPIDER1, 1)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "Stock 50" in board_text(app))
        await pilot.press("q")
        assert app.quit_armed and app.model.status.startswith("Quit? Press q again")
        await pilot.press("j")  # no key of the game's
        assert not app.quit_armed and not app.model.status.startswith("Quit?")
        await pilot.press("q")
        assert app.quit_armed  # asked again, as said
        await pilot.press("1")  # a key that says something of its own keeps its words
        assert not app.quit_armed and app.model.status.startswith("Pile 1")
        await pilot.press("q", "escape")  # no, as in the lobby; the pile stays picked
        assert not app.quit_armed and app.model.status == "Staying." and app.keys.source == 0
        await pilot.press("escape")
        assert app.keys.source is None


async def test_a_practice_game_won_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The winning move's notation stayed on the status line ("9>1"), where a resignation
    says "You resigned." (a client trial)."""
    from protocol.solver import solve_deal

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    line = solve_deal(SPIDER1, 14).engine_moves
    app = PracticeApp(SPIDER1, 14)
    async with app.run_test(size=(100, 30)) as pilot:
        app.auto_home = False  # (every move the solver's own)
        for move in line:
            app.play(move)
        await pilot.pause()
        assert app.practice.state.won
        assert app.model.status == "You won!"
        # and the results say it too, with the moves it took
        await pilot.pause(0.3)
        moves = app.practice.state.moves
        assert app.practice.summary().startswith("You won in ")
        assert "You won in " in board_text(app) and f"{moves} moves" in board_text(app)
