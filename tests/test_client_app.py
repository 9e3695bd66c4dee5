"""The terminal client: its plain model and keys, and the Textual app against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from client.app import RaceApp
from client.args import Plan
from client.changes import kept_for
from client.cli import main as cli_main
from client.keys import Keys
from client.model import RaceModel
from client.net import Connection
from client.saved_races import races_dir
from client.seats import saved_seats, seats_path
from client.session import join_command
from protocol.config import GameConfig
from protocol.game import new_game
from protocol.messages import (
    CreateRoom,
    Joined,
    JoinRoom,
    MoveCmd,
    Ready,
    Settings,
    Standing,
    WireMove,
)
from protocol.moves import Kind, tableau

from .server_helpers import StallProxy, close_all, eventually, host_and_join, running_server


def model_with(game: str, number: int, **options: object) -> RaceModel:
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig(game, options), number)
    return model


def test_a_resign_half_confirmed_is_forgotten_at_any_other_key() -> None:
    """x asks "Resign?"; any other key plays on: a later single x asks again, it does not
    resign (the first x would have stayed armed)."""
    model = model_with("st-helena", 3)
    keys = Keys(model)
    assert keys.press("x") is None and "Resign?" in model.status
    keys.press("escape")
    assert keys.press("x") is None and "Resign?" in model.status
    keys.press("1")
    assert keys.press("x") is None and "Resign?" in model.status


def test_keys_pick_a_run_and_take_fewer() -> None:
    model = model_with("spider", 1)
    state = model.state
    assert state is not None
    # build a two-card run by hand on pile 1 (face-up 8H on 9H)
    state.piles[0][-1] = 30  # 5H
    state.piles[0].append(29)  # 4H
    keys = Keys(model)
    assert keys.press("1") is None and keys.source == 0
    assert "5H 4H" in model.status
    assert keys.press("1") is None and keys.count == 1
    assert "Pile 1: 4H" in model.status
    assert keys.press("1") is None and keys.count == 2  # wraps round to the whole run
    # past either end of the run the arrows say so (they did nothing, silently: a trial)
    assert keys.press("up") is None and keys.count == 2 and "the whole run" in model.status
    assert keys.press("down") is None and keys.count == 1 and "whole run" not in model.status
    assert keys.press("down") is None and keys.count == 1 and "the fewest" in model.status


def test_illegal_move_is_explained_and_not_sent() -> None:
    model = model_with("spider", 1)
    keys = Keys(model)
    # pile 1 tops 8H, pile 2 tops TH: 8H cannot go on TH
    assert keys.press("1") is None
    assert keys.press("2") is None
    assert model.status.startswith("Not allowed:") and "TH" in model.status
    assert not keys.pending and keys.source is None


def test_a_move_is_never_sent_twice() -> None:
    model = model_with("spider", 1)
    keys = Keys(model)
    legal = next(m for m in model.state.legal_moves() if m.kind == Kind.TABLEAU)  # type: ignore[union-attr]
    move = keys.press("1234567890"[legal.src])
    assert move is None
    move = keys.press("1234567890"[legal.dst])
    assert move is not None and move.kind == Kind.TABLEAU
    assert keys.pending
    assert keys.press("d") is None and "Waiting" in model.status
    keys.answered()
    assert keys.press("d") is not None


def test_a_picked_pile_offers_f_only_where_it_can_go_home() -> None:
    """A lone Spider card picked said "or f for a foundation" (only a whole suit goes home in
    Spider: a new-user trial); St. Helena's top card can go home."""
    model = model_with("spider", 1)
    keys = Keys(model)
    keys.press("1")
    assert model.status.endswith("Now a target pile.") and "foundation" not in model.status
    helena = model_with("st-helena", 3)
    Keys(helena).press("1")
    assert helena.status.endswith("Now a target pile, or f for a foundation.")


def test_nothing_picked_or_half_confirmed_carries_into_the_next_race() -> None:
    """A pile, an x or an r pressed as a race's time ran out acted in the next: pile 12 picked
    in St. Helena crashed the client at the next Spider race's up arrow (IndexError), one x
    resigned, one r redealt, and a pile key made a move never chosen (a trial)."""
    model = model_with("st-helena", 3)
    model.race_id = "r1"
    keys = Keys(model)
    assert keys.press("=") is None and keys.source == 11
    model.race_id, model.state = "r2", new_game(GameConfig("spider", {"suits": 1}), 1)
    assert keys.press("up") is None and keys.source is None  # (crashed)
    for key, word in (("x", "Resign?"), ("r", "Redeal?")):
        model.race_id, model.state = f"{key}1", new_game(GameConfig("st-helena", {}), 3)
        assert keys.press(key) is None and word in model.status
        model.race_id = f"{key}2"
        assert keys.press(key) is None  # asks again: the first press was another race's
        assert word in model.status


def test_resign_needs_two_presses() -> None:
    model = model_with("st-helena", 3)
    keys = Keys(model)
    assert keys.press("x") is None and "Resign?" in model.status
    move = keys.press("x")
    assert move is not None and move.kind == Kind.RESIGN
    assert model.state is not None
    model.state.apply(move)
    # Spider has no pile 11 or 12: said (it did nothing, silently: a trial)
    spider = model_with("spider", 3)
    assert Keys(spider).press("-") is None and "1 to 9, and 0 for pile 10" in spider.status
    # resigned: a pile key is refused at once (it picked the pile, refused at the target: a trial)
    assert keys.press("1") is None and keys.source is None
    assert "you have resigned" in model.status


async def wait_until(pilot: object, cond: Callable[[], bool], timeout: float = 8.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError("timed out waiting")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


def text_of(app: RaceApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def test_a_deal_fixed_on_the_command_line_stays_through_the_lobbys_changes() -> None:
    """``host st-helena --deal 5``, then t for a time limit: the room said "random deal" (any
    host key dropped the fixed deal).  It stays now; another game drops it (a trial).  A host
    who took the seat back (``join``) has no number on this side: the server keeps it
    (``keep_deal``; a client could not change a setting without dropping the deal: a docs-only
    client trial)."""
    async with running_server() as server:
        settings = Settings(game="st-helena", deal_number=5)
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=settings))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            app.plan.settings = None  # as after a resume: the number is the server's alone
            room = server.hub.rooms[app.model.room.code]  # type: ignore[union-attr]
            for key, changed in (("t", "time_limit"), ("u", "undo"), ("o", "options")):
                before = getattr(room.settings, changed)
                await pilot.press(key)
                await wait_until(pilot, lambda: getattr(room.settings, changed) != before)  # noqa: B023
                assert room.settings.deal_number == 5, key
                assert app.model.room is not None and app.model.room.settings.fixed_deal
            await pilot.press("g")
            await wait_until(pilot, lambda: room.settings.game != "st-helena")
            assert room.settings.deal_number is None
            assert "random deal" in app.model.status


async def test_a_lobby_key_waiting_for_its_answer_holds_no_other_key() -> None:
    """``r`` on a stalled link: its command awaited in the key handler held every key, ``?``
    and ``q`` too, for up to 10 s (a code review). The lobby's keys are done in order apart:
    ``?`` answers at once, and the keys pressed meanwhile follow the answer."""
    from client.widgets import HelpScreen

    async with running_server() as server:
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=Settings()))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            session = app.session
            assert session is not None
            answered = asyncio.Event()
            ready = session.ready

            async def stalled_ready(value: bool = True) -> None:
                await answered.wait()
                await ready(value)

            session.ready = stalled_ready  # type: ignore[method-assign]
            # (the answer comes after 5 s whatever happens: a key handler held would otherwise
            # hold this test for ever)
            later = asyncio.get_running_loop().call_later(5.0, answered.set)
            await pilot.press("r")
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), 3.0)
            assert not answered.is_set(), "? waited for r's answer"
            await pilot.press("escape")
            room = server.hub.rooms[app.model.room.code]  # type: ignore[union-attr]
            before = room.settings.seats
            await pilot.press("+")  # a host key pressed meanwhile: done after the answer
            await pilot.pause(0.2)
            assert room.settings.seats == before and not any(m.ready for m in room.members.values())
            answered.set()
            later.cancel()
            await wait_until(pilot, lambda: room.settings.seats == before + 1)


async def test_a_fixed_deal_stays_on_a_server_that_knows_no_keep_deal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 1.1 server refuses ``keep_deal`` as a field it does not know (the change was refused,
    and counted as a bad message: a review): to one, the number fixed on the command line is
    sent again, as before 1.2."""
    from client.session import Session

    monkeypatch.setattr(Session, "speaks", lambda self, version: False)
    sent: list[tuple[int | None, bool]] = []
    update = Session.update_settings

    async def spy(self: Session, settings: Settings, keep_deal: bool = False) -> None:
        sent.append((settings.deal_number, keep_deal))
        await update(self, settings, keep_deal)

    monkeypatch.setattr(Session, "update_settings", spy)
    async with running_server() as server:
        settings = Settings(game="st-helena", deal_number=5)
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=settings))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            room = server.hub.rooms[app.model.room.code]  # type: ignore[union-attr]
            await pilot.press("t")
            await wait_until(pilot, lambda: room.settings.time_limit != 0)
            assert room.settings.deal_number == 5
            assert sent == [(5, False)]  # no keep_deal: the number itself


def test_which_protocol_the_server_speaks() -> None:
    from client.net import Connection as Conn
    from client.session import Session
    from protocol.messages import Welcome

    session = Session.__new__(Session)
    session.conn = Conn("ws://127.0.0.1:1")
    for theirs, wanted, says in (
        ("1.2", "1.2", True), ("1.3", "1.2", True), ("1.1", "1.2", False),
        ("2.0", "1.2", False), ("x", "1.2", False),
    ):  # fmt: skip
        session.conn.welcome = Welcome(
            seq=0, version=theirs, server="s", max_frame=1, rate=1.0, burst=1
        )
        assert session.speaks(wanted) is says, theirs


async def test_a_watcher_presses_r_in_the_lobby_to_race() -> None:
    """``watch`` then a change of mind: r in the lobby takes a free seat (it had to be quit
    and join again: a race-night trial)."""
    async with running_server() as server:
        ann, code = await ann_hosts(server.url)
        app = RaceApp(Plan(action="watch", name="Dee", url=server.url, code=code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            assert app.model.role == "spectator"
            assert app.footer_shown.startswith("r: take a seat and race")
            await pilot.press("r")
            await wait_until(pilot, lambda: app.model.role == "player")
            me = app.model.me_member()
            assert me is not None and me.ready
            # saved as a join's seat is: a drop or a quit can take it back
            assert [s["name"] for s in saved_seats(server.url, code)] == ["Dee"]
        await ann.close()


async def ann_hosts(url: str) -> tuple[Connection, str]:
    """Ann, a connection of her own, opens a room: her connection and its code."""
    ann = Connection(url)
    await ann.open()
    joined = await ann.request(CreateRoom(seq=0, name="Ann", settings=Settings()))
    assert isinstance(joined, Joined)
    return ann, joined.room.code


async def bob_joins(app: RaceApp, pilot: object, url: str) -> Connection:
    """Bob, a connection of his own, joins the room the app is in (once it is in one)."""
    await wait_until(pilot, lambda: app.model.room is not None)
    assert app.model.room is not None
    bob = Connection(url)
    await bob.open()
    await bob.request(JoinRoom(seq=0, code=app.model.room.code, name="Bob"))
    await wait_until(pilot, lambda: len(app.model.room.members) == 2)  # type: ignore[union-attr]
    return bob


async def test_not_ready_after_start_drops_the_start_said_ready() -> None:
    """The host's s said "you are ready: waiting for Bob"; r made them not ready, and the
    status line went on saying they were (a trial)."""
    async with running_server() as server:
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=Settings()))
        async with app.run_test(size=(100, 30)) as pilot:
            bob = await bob_joins(app, pilot, server.url)
            await pilot.press("s")
            await wait_until(pilot, lambda: "You are ready: waiting for Bob" in app.model.status)
            await pilot.press("r")
            await wait_until(pilot, lambda: not app.model.me_member().ready)  # type: ignore[union-attr]
            assert "waiting for Bob" not in app.model.status
            await bob.close()


async def test_a_quit_asked_in_the_lobby_is_not_carried_into_the_race() -> None:
    """q in the lobby asked "Leave the room? Press q again"; escape left it armed, the host
    started, and one q in the race quit it (a race-night trial). Escape says so and disarms it,
    and a race started since disarms it too."""
    async with running_server() as server:
        ann, code = await ann_hosts(server.url)
        bob = await bob_joins_code(server.url, code)
        app = RaceApp(Plan(action="join", name="Cid", url=server.url, code=code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            await pilot.press("q")
            assert app.quit_armed and app.model.status.startswith("Leave the room?")
            await pilot.press("escape")
            assert not app.quit_armed and app.model.status == "Staying."
            await pilot.press("r")
            await wait_until(pilot, lambda: bool(app.model.me_member().ready))  # type: ignore[union-attr]
            await pilot.press("q")  # armed again, and then the race starts
            assert app.quit_armed
            for conn in (bob, ann):
                await conn.request(Ready(seq=0))
            await wait_until(pilot, lambda: app.model.phase == "racing", 10.0)
            await pilot.press("q")
            await pilot.pause(0.2)
            assert app.is_running and app.model.phase == "racing"
            assert app.model.status.startswith("Quit?"), app.model.status
        await close_all([ann, bob])


async def bob_joins_code(url: str, code: str) -> Connection:
    bob = Connection(url)
    await bob.open()
    await bob.request(JoinRoom(seq=0, code=code, name="Bob"))
    return bob


async def test_each_ready_key_says_where_it_leaves_you() -> None:
    """Back in the lobby ready ("ready for the next race"), r made Bob not ready and the line
    went on saying he was ready; a host's key pressed by Bob did nothing, silently (a trial)."""
    async with running_server() as server:
        ann, code = await ann_hosts(server.url)
        app = RaceApp(Plan(action="join", name="Bob", url=server.url, code=code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            me = app.model.me_member
            await pilot.press("r")
            await wait_until(pilot, lambda: bool(me() and me().ready))  # type: ignore[union-attr]
            assert app.model.status == "You are ready (r: not ready)."
            await pilot.press("r")
            await wait_until(pilot, lambda: not me().ready)  # type: ignore[union-attr]
            assert app.model.status == "You are not ready (r: ready)."
            await pilot.press("g")
            assert app.model.status.startswith("Only the host (Ann) changes the room")
            assert server.hub.rooms[code].settings.game == "spider"
        await ann.close()


async def test_a_certified_deal_can_be_asked_for_in_plays_lobby() -> None:
    """``play``'s own server had no solver unless started with ``--deal winnable``: w in its
    lobby said "this server does not certify deals" (a trial)."""
    app = RaceApp(Plan(action="host", name="Ann", settings=Settings(game="st-helena")))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.model.room is not None)
        await pilot.press("w")
        await wait_until(pilot, lambda: app.model.room.settings.winnable)  # type: ignore[union-attr]
        assert "does not certify" not in app.model.status


async def test_leaving_a_lobby_with_others_in_it_asks_first() -> None:
    """One q in the lobby left the room at once: the seat and the host's part gone, nothing
    said, and the README's "join within a minute resumes it" did not hold (a new-user trial).
    With others in the room, q asks first; alone, it leaves at once as before."""
    async with running_server() as server:
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=Settings()))
        async with app.run_test(size=(100, 30)) as pilot:
            bob = await bob_joins(app, pilot, server.url)
            code = app.model.room.code  # type: ignore[union-attr]
            await pilot.press("q")
            await pilot.pause(0.1)
            assert app.is_running
            assert app.model.status.startswith("Leave the room? Press q again")
            assert "the host's part passes on" in app.model.status
            await pilot.press("q")
            await wait_until(pilot, lambda: not app.is_running)
        # the seat is given up, and the host's part passed on
        members = server.hub.rooms[code].members
        await eventually(lambda: [m.name for m in members.values()] == ["Bob"])
        assert server.hub.rooms[code].host == next(iter(members))
        await bob.close()
        alone = RaceApp(Plan(action="host", name="Cy", url=server.url, settings=Settings()))
        async with alone.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: alone.model.room is not None)
            await pilot.press("q")  # alone: nobody to leave behind, it leaves at once
            await wait_until(pilot, lambda: not alone.is_running)


async def test_watching_under_a_name_taken_says_what_to_do() -> None:
    """``watch CODE --name Ann`` in a room with an Ann: refused, and no way forward said (a
    new-user trial)."""
    async with running_server() as server:
        ann, code = await ann_hosts(server.url)
        app = RaceApp(Plan(action="watch", name="Ann", url=server.url, code=code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.phase == "gone")
            assert "already called" in app.model.status
            assert "pass --name with another name" in app.model.status
        await ann.close()


async def test_keys_typed_after_a_move_left_without_an_answer_are_said_not_sent() -> None:
    """d, then d again while the first waits on a stalled link: back, one deal was made and
    the second key dropped, silently (a bad-network trial)."""
    async with running_server() as server, StallProxy(server.port) as proxy:
        settings = Settings(options={"suits": 1})
        app = RaceApp(Plan(action="host", name="Ann", url=proxy.url, settings=settings))
        async with app.run_test(size=(100, 30)) as pilot:
            bob = await bob_joins(app, pilot, server.url)
            assert app.session is not None
            app.session.answer_timeout = 0.5
            await bob.request(Ready(seq=0))
            await pilot.press("s")
            await wait_until(
                pilot, lambda: app.model.phase == "racing" and app.model.state is not None
            )
            proxy.stall(drop=True)
            await pilot.press("d", "d")
            await pilot.pause(0.2)
            proxy.go()
            await wait_until(pilot, lambda: "Reconnected" in app.model.status, 15)
            assert "1 key typed after it was not sent." in app.model.status, app.model.status
            await bob.close()


async def test_r_past_zero_does_not_claim_to_stop_the_countdown() -> None:
    """The start not heard a second past zero (a stalled link): r said "You stopped the
    countdown" of one already over (a trial)."""
    import time

    from .server_helpers import fast_limits

    async with running_server(fast_limits(countdown_ms=60_000)) as server:
        app = RaceApp(Plan(action="host", name="Ann", url=server.url, settings=Settings()))
        async with app.run_test(size=(100, 30)) as pilot:
            bob = await bob_joins(app, pilot, server.url)
            await bob.request(Ready(seq=0))
            await pilot.press("s")
            await wait_until(pilot, lambda: app.model.phase == "countdown")
            app.model.countdown_end = time.monotonic() - 2.0  # as if the start were late
            await pilot.press("r")
            assert app.model.status == "The race should have started: waiting for the server..."
            assert server.hub.rooms[app.model.room.code].state == "countdown"  # type: ignore[union-attr]
            await bob.close()


async def test_race_in_the_app_against_a_real_server() -> None:
    async with running_server() as server:
        app = RaceApp(
            Plan(
                action="host",
                name="Ann",
                url=server.url,
                # a fixed deal with a tableau move to play by keys (about 1 random deal in 170
                # offers none: only the stock's deal)
                settings=Settings(game="spider", options={"suits": 1}, deal_number=1),
            )
        )
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            code = app.model.room.code  # type: ignore[union-attr]
            assert f"{code[:4]}-{code[4:]}" in text_of(app, "#board")
            # Bob joins from a plain connection
            bob = Connection(server.url)
            await bob.open()
            await bob.request(JoinRoom(seq=0, code=code.lower(), name="Bob"))
            await wait_until(pilot, lambda: "Bob" in text_of(app, "#board"))
            await pilot.press("r")
            await bob.request(Ready(seq=0))
            await wait_until(pilot, lambda: app.model.phase in ("countdown", "racing"))
            await wait_until(pilot, lambda: app.model.phase == "racing")
            assert "Stock 50" in text_of(app, "#board")
            state = app.model.state
            assert state is not None
            # a legal move by keys
            legal = next(m for m in state.legal_moves() if m.kind == Kind.TABLEAU)
            await pilot.press("1234567890"[legal.src], "1234567890"[legal.dst])
            await wait_until(pilot, lambda: state.moves == 1 and not app.keys.pending)
            # no hints in a race: h says so and plays nothing
            await pilot.press("h")
            assert "No hints in a race" in app.model.status
            await pilot.pause(0.2)
            assert state.moves == 1 and app.keys.source is None
            # an illegal one: a deal is fine, but a pile onto itself-like nonsense is refused locally
            bad = next(
                (s, d) for s in range(10) for d in range(10)
                if s != d and state.check(tableau(s, d)) is not None
            )  # fmt: skip
            await pilot.press("1234567890"[bad[0]], "1234567890"[bad[1]])
            assert "Not allowed" in app.model.status
            assert state.moves == 1
            # a deal
            await pilot.press("d")
            await wait_until(pilot, lambda: len(state.stock) == 40)
            assert "Stock 40" in text_of(app, "#board")
            # Bob's progress shows up live, even while Ann reads the help overlay
            await pilot.press("?")
            await wait_until(pilot, lambda: app.screen is not app.screen_stack[0])
            await bob.request(MoveCmd(seq=0, move=WireMove(kind="deal")))
            await wait_until(
                pilot, lambda: any(p.name == "Bob" and p.moves == 1 for p in app.model.progress)
            )
            await pilot.pause(0.3)
            assert "1 move," in str(app.side.render())
            await pilot.press("escape")
            await wait_until(pilot, lambda: app.screen is app.screen_stack[0])
            assert "Bob" in text_of(app, "#side")
            # both resign: results, with the deal verified against every card Ann saw
            await pilot.press("x", "x")
            await bob.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            await wait_until(pilot, lambda: app.model.phase == "results")
            results = text_of(app, "#board")
            assert "Results" in results and "Ann" in results and "Bob" in results
            assert app.model.verified is True
            assert "deal verified" in results
            assert f"Race {app.model.race_id}:" in results  # the id to fetch its public record
            # and kept on this computer, for the next morning (nobody could find the night's
            # races without their ids: a race-night trial), the results pointing to the server
            kept = races_dir() / f"{app.model.race_id}.json"
            await wait_until(pilot, kept.exists)
            assert "/races/" in text_of(app, "#board")
            await bob.close()
            await pilot.press("q")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli_main(["races"]) == 0
        listed = out.getvalue()
        assert "Spider" in listed and "Ann: resigned, score" in listed, listed
        assert f"patience-race replay {kept}" in listed


async def test_app_reconnects_and_resumes() -> None:
    async with running_server() as server:
        app = RaceApp(
            Plan(action="host", name="Ann", url=server.url, settings=Settings(game="st-helena"))
        )
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            bob = Connection(server.url)
            await bob.open()
            await bob.request(JoinRoom(seq=0, code=app.model.room.code, name="Bob"))  # type: ignore[union-attr]
            await pilot.press("r")
            await bob.request(Ready(seq=0))
            await wait_until(pilot, lambda: app.model.phase == "racing")
            auto = app.auto_home
            await pilot.press("o")  # Spider's auto-home: here it says so, and changes nothing
            assert app.auto_home == auto and "o is for Spider" in app.model.status
            state = app.model.state
            assert state is not None
            # the deal is random: play a card if one can move (some deals have none), else redeal
            move = next(
                (m for m in state.legal_moves() if m.kind in (Kind.TABLEAU, Kind.FOUNDATION)),
                None,
            )
            key = "1234567890-="
            if move is None:
                await pilot.press("r", "r")
            elif move.kind == Kind.TABLEAU:
                await pilot.press(key[move.src], key[move.dst])
            else:  # k or a: the foundation itself, even where the card fits both of its suit's
                await pilot.press(key[move.src], "k" if move.dst < 4 else "a")
            await wait_until(
                pilot, lambda: app.model.state is not None and app.model.state.moves == 1
            )
            board_before = app.model.state.board()
            # the server drops Ann's connection
            ann = next(
                c
                for c, conn in server.hub.conns.items()
                if conn.member and conn.member.name == "Ann"
            )
            ws = server.sockets[ann]
            await ws.close(1011, "test drop")
            await wait_until(pilot, lambda: "Reconnected" in app.model.status, timeout=10)
            assert app.model.phase == "racing"
            assert app.model.state is not None and app.model.state.board() == board_before
            members = {m.name: m.connected for m in app.model.room.members}  # type: ignore[union-attr]
            assert members["Ann"] is True
            # quitting mid-race keeps the seat: the way back is said, with the code the header
            # no longer shows once its line is long, on screen and on the terminal afterwards
            hint = join_command(app.model.room.code, server.url)  # type: ignore[union-attr]
            await pilot.press("q")
            kept = kept_for(app.model.grace_s)
            assert kept != "for a while"  # the server said how long (welcome's grace_ms)
            # (the command itself is in the farewell, on a line of its own: in the status line
            # it broke in two at 80 columns, a terminals trial)
            assert (
                f"your seat is kept {kept}: the command that takes it back is printed as you leave"
                in app.model.status
            )
            await pilot.press("q")
            assert app.farewell == f"Your seat is kept {kept}. To take it back:\n  {hint}"
            await bob.close()


async def test_quitting_a_seat_that_could_not_be_saved_says_it_cannot_be_taken_back() -> None:
    """With a seats file that cannot be written, quitting said "your seat is kept for a
    while: patience-race join CODE takes it back", and that command made a watcher."""
    path = seats_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not json")
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Bob"], Settings())
        app = RaceApp(Plan(action="join", name="Ann", url=server.url, code=code))
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda: app.model.phase == "lobby")
            assert "could not be saved" in app.model.status
            await pilot.press("r")
            await conns[0].request(Ready(seq=0))
            await wait_until(pilot, lambda: app.model.phase == "racing", timeout=10)
            await pilot.press("q")
            assert "could not be saved on this computer" in app.model.status
            await pilot.press("q")
        assert app.farewell is not None and "cannot be taken back" in app.farewell
        assert str(path) in app.farewell and path.read_bytes() == b"not json"
        await close_all(conns)


async def test_a_redraw_once_the_app_is_gone_does_nothing() -> None:
    """The session may still call back once the app has quit (its reader, a reconnect): the
    redraw is then a no-op.  (The guard tested ``App.is_mounted``, a method: always true, so
    the app drew on its closed screens, and raised outside its context.)"""
    async with running_server() as server:
        app = RaceApp(
            Plan(action="host", name="Ann", url=server.url, settings=Settings(game="st-helena"))
        )
        drawn: list[str] = []
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            assert "Ann" in text_of(app, "#board")  # drawn while it runs
        app._draw = lambda: drawn.append("after quitting")  # type: ignore[method-assign]
        session = app.session
        assert session is not None
        session.on_change()
        app.refresh_view()
        assert drawn == []
    # nor before it runs (nothing to draw on yet)
    never_run = RaceApp(Plan(action="host", name="Ann", url="ws://127.0.0.1:9/"))
    never_run._draw = lambda: drawn.append("before running")  # type: ignore[method-assign]
    never_run.refresh_view()
    assert drawn == []


async def test_a_race_raced_in_under_another_seat_is_kept_too() -> None:
    """A player whose seat was released, back after the end as a new member (another id), was
    never given that race in ``races`` (a verification trial): it is theirs by name too; a
    race someone else raced in is not kept."""
    from client.model import LastResults
    from client.saved_races import saved_races
    from protocol.messages import RaceRecord

    from .server_helpers import one_suit_record

    cid = Standing(
        rank=1, id=3, name="Cid", status="disconnected", score=24, score2=None,
        finish_ms=13_000, score_ms=9_000, moves=4, undos=0,
    )  # fmt: skip

    class Fetching:
        url, remember = "ws://127.0.0.1:1", True

        async def race_record(self, race_id: str) -> RaceRecord:
            return one_suit_record(race_id, [cid])

    for name, kept in (("Cid", True), ("Dee", False)):
        app = RaceApp(Plan(action="join", name=name, url="ws://127.0.0.1:1", code="ABCD2345"))
        app.session = Fetching()  # type: ignore[assignment]
        app.model.name, app.model.you, app.model.role = name, 7, "spectator"
        race_id = f"race{name}"
        app.model.last = LastResults(
            race_id=race_id, title="Spider (1 suit)", game="spider", standings=[cid],
            reveal=one_suit_record().reveal, verdict=None, verified=None,
        )  # fmt: skip
        app._place_record()
        await asyncio.gather(*app.record_tasks)
        assert (race_id in {r.race_id for _, r in saved_races()}) is kept, name


async def test_r_on_results_the_room_has_left_gets_you_ready_in_its_lobby() -> None:
    """The host took the room to the lobby; Cid, still reading the results, pressed r: nothing
    happened, and the host saw him "waiting" (a verification trial). r is ready there, as n;
    while the room is on its results, r says n asks for the rematch."""
    from protocol.messages import RaceOver, Start

    async with running_server() as server:
        ann, code = await ann_hosts(server.url)
        app = RaceApp(Plan(action="join", name="Cid", url=server.url, code=code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.model.room is not None)
            await pilot.press("r")
            await ann.request(Ready(seq=0))
            await wait_until(pilot, lambda: app.model.phase == "racing", 10.0)
            await pilot.press("x", "x")
            await ann.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            await ann.wait_for(RaceOver)
            await wait_until(pilot, lambda: app.model.holding)
            await pilot.press("r")
            assert app.model.status == "On the results: n asks for a rematch."
            await ann.request(Start(seq=0))  # the host: to the lobby at once
            room = server.hub.rooms[code]
            await wait_until(pilot, lambda: app.model.room.state == "lobby")  # type: ignore[union-attr]
            assert app.model.holding  # still reading the results
            await pilot.press("r")
            await wait_until(pilot, lambda: not app.model.holding)
            await wait_until(pilot, lambda: [m.ready for m in room.members.values()][1])
        await ann.close()


async def test_play_on_a_port_in_use_says_so() -> None:
    """``play --port N`` with N taken said "Could not get into the room: [Errno 98] error while
    attempting to bind" (a new-user trial): the port is named, and what to do."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = RaceApp(Plan(action="play", name="Ann", port=port, settings=Settings()))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.failed is not None)
        assert app.failed == (
            f"port {port} is in use on this computer (another server?): give another --port, "
            "or none for any free one"
        )


def _racing_a_bot(url: str) -> Plan:
    """Ann hosts a 1-suit room with one bot, slow (its moves change nothing here)."""
    settings = Settings(game="spider", options={"suits": 1})
    return Plan(action="host", name="Ann", url=url, settings=settings, bots=1, bot_think=5.0)


async def _race_started(pilot: Pilot[None], app: RaceApp) -> None:
    """Once the bot is in, the host's s, and the race is on."""
    await wait_until(
        pilot, lambda: app.model.room is not None and len(app.model.room.members) == 2, 10
    )
    await pilot.press("s")
    await wait_until(pilot, lambda: app.model.phase == "racing", timeout=10)


async def test_quitting_a_race_with_bots_says_they_leave_and_how_to_come_back() -> None:
    """A host with ``--bots`` quit mid-race: the bots left for good (they run in the host's
    program), and neither the prompt nor the farewell said so plainly (a race-night trial)."""
    async with running_server() as server:
        app = RaceApp(_racing_a_bot(server.url))
        async with app.run_test(size=(100, 30)) as pilot:
            await _race_started(pilot, app)
            hint = join_command(app.model.room.code, server.url)  # type: ignore[union-attr]
            await pilot.press("q")
            kept = kept_for(app.model.grace_s)
            assert (
                f"your bots leave the race for good; your seat is kept {kept}: the command that "
                "takes it back is printed as you leave" in app.model.status
            )
            await pilot.press("q")
            assert app.farewell is not None
            assert app.farewell.startswith(f"Your seat is kept {kept} (your bots left the race")
            assert hint in app.farewell


async def test_quitting_once_your_seat_was_released_promises_no_seat() -> None:
    """Back after the grace, watching: q said "your seat is kept 60 s: ... takes it back", and
    the farewell the same, of a seat already released (a review)."""
    async with running_server() as server:
        app = RaceApp(_racing_a_bot(server.url))
        async with app.run_test(size=(100, 30)) as pilot:
            await _race_started(pilot, app)
            app.model.seat_released = True  # as the snapshot of a return after the grace sets it
            await pilot.press("q")
            assert app.model.status == (
                "Quit? Press q again (your seat in this race was released; your bots leave the "
                "race for good)."
            )
            await pilot.press("q")
            assert app.farewell is None


async def test_quitting_waits_for_its_bots_together_and_not_long() -> None:
    """A host's bots were waited for one after another, 5 s each: 15 of them held the program
    past the grace its farewell promised (a verification trial).  Bots slow to leave are waited
    for together, a few seconds at most."""
    from client.app import BOTS_LEAVE_S

    release = asyncio.Event()
    cancelled = 0

    async def stubborn() -> None:  # a bot whose leaving hangs (a close never answered)
        nonlocal cancelled
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled += 1
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):
                    await release.wait()

    app = RaceApp(Plan(action="host", name="Ann", url="ws://127.0.0.1:9"))
    app.bots = [asyncio.create_task(stubborn()) for _ in range(4)]
    await asyncio.sleep(0)
    # one after another, each bot held on was cancelled again and waited for again: never
    # done; together, the wait ends after BOTS_LEAVE_S whatever the bots do
    await asyncio.wait_for(app.shutdown(), 4 * BOTS_LEAVE_S)
    assert cancelled == 4
    release.set()
    await asyncio.gather(*app.bots)
