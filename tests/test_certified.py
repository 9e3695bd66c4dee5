"""Deals certified winnable: the pool filled by a solver process, a room that asks for one, the
commitment that covers the solution, and the reveal that proves it."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque

import pytest

from client.net import Connection, ServerError
from protocol.config import NUMBERINGS, OPTIONS, GameConfig
from protocol.fairness import Witness, check_solution, verify
from protocol.messages import (
    Countdown,
    CreateRoom,
    Error,
    Leave,
    RaceOver,
    RaceStart,
    Ready,
    Settings,
    Start,
)
from server.pool import ALL_GAMES, DealPool, certify, key_of

from .server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    move,
    running_server,
    start_race,
)

ONE_SUIT = GameConfig("spider", {"suits": 1})


async def ready_pool(config: GameConfig, timeout: float = 90) -> DealPool:
    pool = DealPool(size=1, seconds=15, prefill=False)
    pool.start()
    pool.want(config)
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pool.count(config):
        assert loop.time() < end, "the solver certified no deal in time"
        await asyncio.sleep(0.2)
    return pool


async def test_the_pool_holds_deals_the_solver_won() -> None:
    pool = await ready_pool(ONE_SUIT)
    try:
        number, solution = pool.take(ONE_SUIT) or (0, [])
        assert solution and check_solution(ONE_SUIT, number, solution) is None
        assert pool.take(ONE_SUIT) is None  # it was the only one: the next is being made
    finally:
        await pool.stop()


async def test_a_winnable_room_races_a_certified_deal_and_reveals_the_proof() -> None:
    pool = await ready_pool(ONE_SUIT)
    try:
        async with running_server(pool=pool) as server:
            settings = Settings(game="spider", options={"suits": 1}, winnable=True)
            conns, _code, joined = await host_and_join(server.url, ["Ann", "Bob"], settings)
            assert joined[0].room.settings.winnable
            starts = await start_race(conns)
            for c in conns:
                await move(c, "resign")
            over = await conns[0].wait_for(RaceOver)
            reveal = over.reveal
            assert reveal.solution, "a certified deal reveals its solution"
            config = GameConfig(reveal.game, reveal.options, reveal.numbering)
            witness = Witness(start=starts[0].board)
            assert (
                verify(
                    config,
                    reveal.number,
                    reveal.salt,
                    starts[0].commitment,
                    witness,
                    reveal.solution,
                )
                == []
            )
            # the commitment covers the solution: another one does not check out
            other = verify(
                config, reveal.number, reveal.salt, starts[0].commitment, witness, ["1>2"]
            )
            assert any("commitment" in p for p in other)
            await close_all(conns)
    finally:
        await pool.stop()


async def test_the_host_is_told_when_no_certified_deal_is_ready() -> None:
    pool = DealPool(size=1, seconds=1, prefill=False)  # never started: nothing gets ready
    async with running_server(pool=pool) as server:
        settings = Settings(game="spider", options={"suits": 4}, winnable=True)
        conns, code, _ = await host_and_join(server.url, ["Ann"], settings)
        await conns[0].request(Start(seq=0))
        told = await conns[0].wait_for(Error)
        assert told.code == "not_ready" and "certified" in told.message
        # it starts by itself once there is one (it said "try again in a few seconds", and a
        # St. Helena deal took minutes: a new-user trial)
        assert "starts by itself" in told.message and "try again" not in told.message
        assert server.hub.rooms[code].state == "lobby" and code in server.hub.awaiting_start
        await close_all(conns)


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        (Settings(winnable=True), "does not certify"),
        (Settings(winnable=True, deal_number=5), "fixed deal"),
    ],
)
async def test_winnable_settings_that_cannot_be(settings: Settings, why: str) -> None:
    pool = DealPool(prefill=False) if "fixed" in why else None
    async with running_server(pool=pool) as server, Connection(server.url) as conn:
        with pytest.raises(ServerError) as refused:
            await conn.request(CreateRoom(seq=0, name="Ann", settings=settings))
        assert refused.value.code == "bad_settings" and why in refused.value.message


async def test_a_ready_room_starts_as_soon_as_a_certified_deal_is() -> None:
    pool = DealPool(size=1, seconds=1, prefill=False)  # filled by hand below
    config = GameConfig("louis", {})
    async with running_server(pool=pool) as server:
        conns, code, _ = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="louis", winnable=True)
        )
        for c in conns:
            await c.request(Ready(seq=0))
        error = await conns[0].wait_for(Error)
        assert error.code == "not_ready" and "certified" in error.message
        # nothing to try again: it starts by itself (it said "try again in a few seconds")
        assert "starts by itself" in error.message and "try again" not in error.message
        assert server.hub.rooms[code].state == "lobby"
        pool.ready.setdefault(key_of(config), deque()).append((7, ["r"]))
        start = await conns[1].wait_for(RaceStart)
        assert start.board is not None
        assert server.hub.rooms[code].race.solution == ["r"]  # type: ignore[union-attr]
        await close_all(conns)


def every_game() -> list[GameConfig]:
    configs = [
        GameConfig(game, dict(zip(OPTIONS[game], values, strict=True)), numbering)
        for game in OPTIONS
        for values in itertools.product(*OPTIONS[game].values())
        for numbering in NUMBERINGS[game]
    ]
    assert len(set(configs)) == ALL_GAMES == 24
    return configs


def test_naming_every_game_there_is_pushes_out_no_ready_deal() -> None:
    """A room's settings name a game (``want``): one client naming game after game let go of
    the least recently named, ready deals and all (the table held 16 of the 24; a hostile trial
    emptied the pool that way)."""
    pool = DealPool(size=2, seconds=1, prefill=False)
    pool.ready[key_of(ONE_SUIT)] = deque([(7, ["r"]), (8, ["r"])])
    pool.want(ONE_SUIT)
    for _ in range(3):
        for config in every_game():
            pool.want(config)
    assert pool.count(ONE_SUIT) == 2 and len(pool.wanted) == ALL_GAMES


def test_the_solver_works_first_for_a_game_a_room_waits_for() -> None:
    """Whoever names games last does not steer the solver away from a room waiting for a deal."""
    pool = DealPool(size=1, seconds=1, prefill=False)
    assert pool.take(ONE_SUIT) is None  # a room asks: none ready
    for config in every_game()[:10]:  # and someone names ten games after it
        pool.want(config)
    assert pool._needs()[0] == key_of(ONE_SUIT)
    pool.ready[key_of(ONE_SUIT)] = deque([(7, ["r"])])
    pool.starved.pop(key_of(ONE_SUIT))  # (as a deal certified does)
    assert pool._needs()[0] == key_of(every_game()[9])  # then the most recently named


async def test_a_countdown_stopped_gives_its_certified_deal_back() -> None:
    """Ready, not ready, ready...: each countdown took a deal from the pool and a stopped one
    threw it away, so two clients emptied the pool for everyone (a hostile trial)."""
    pool = DealPool(size=1, seconds=1, prefill=False)  # filled by hand, never started
    pool.ready[key_of(ONE_SUIT)] = deque([(7, ["r"])])
    settings = Settings(game="spider", options={"suits": 1}, winnable=True)
    async with running_server(limits=fast_limits(countdown_ms=60_000), pool=pool) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], settings)
        for _ in range(3):
            for c in conns:
                await c.request(Ready(seq=0))
            await conns[0].wait_for(Countdown)
            assert server.hub.rooms[code].state == "countdown" and pool.count(ONE_SUIT) == 0
            await conns[1].request(Ready(seq=0, ready=False))
            assert server.hub.rooms[code].state == "lobby"
            assert pool.ready[key_of(ONE_SUIT)] == deque([(7, ["r"])])
        await close_all(conns)


async def test_a_game_the_solver_seldom_wins_does_not_hold_up_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rooms waiting for Louis (seldom won) and then for Spider: a game whose try failed goes
    behind the other waiting games (first asked, first served kept the solver on Louis while
    the Spider room waited: a review)."""
    louis = GameConfig("louis", {})

    async def certify_fake(
        game: str, options: object, numbering: str, seconds: float
    ) -> tuple[int, list[str]] | None:
        await asyncio.sleep(0.01)
        return None if game == "louis" else (7, ["r"])

    monkeypatch.setattr("server.pool.certify", certify_fake)
    pool = DealPool(size=1, seconds=1, prefill=False)
    assert pool.take(louis) is None and pool.take(ONE_SUIT) is None
    pool.start()
    try:
        loop = asyncio.get_running_loop()
        end = loop.time() + 5
        while not pool.count(ONE_SUIT):
            assert loop.time() < end, "the Spider room waited behind Louis"
            await asyncio.sleep(0.02)
        assert key_of(louis) in pool.starved and key_of(ONE_SUIT) not in pool.starved
        # a room still waiting keeps its game's place, even if another room took its deal
        pool.take(ONE_SUIT)
        pool.starved.pop(key_of(ONE_SUIT), None)
        pool.awaited(ONE_SUIT)
        assert key_of(ONE_SUIT) in pool.starved
    finally:
        await pool.stop()


async def test_a_room_closed_in_its_countdown_gives_its_certified_deal_back() -> None:
    """A host alone: start (the countdown takes a deal), then leave: the room closed and the
    deal was thrown away, a room's creation the only cost of draining the pool (a review)."""
    pool = DealPool(size=1, seconds=1, prefill=False)  # filled by hand, never started
    pool.ready[key_of(ONE_SUIT)] = deque([(7, ["r"])])
    settings = Settings(game="spider", options={"suits": 1}, winnable=True)
    async with running_server(limits=fast_limits(countdown_ms=60_000), pool=pool) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], settings)
        await conns[0].request(Start(seq=0))
        await conns[0].wait_for(Countdown)
        assert pool.count(ONE_SUIT) == 0
        await conns[0].request(Leave(seq=0))
        await eventually(lambda: code not in server.hub.rooms, 5)
        assert pool.ready[key_of(ONE_SUIT)] == deque([(7, ["r"])])
        await close_all(conns)


async def test_a_solver_killed_by_a_system_call_filter_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """systemd's SystemCallFilter kills a process with SIGSYS: the error says so, and what to allow."""
    real = asyncio.create_subprocess_exec

    async def killed(*_args: object, **kw: object) -> asyncio.subprocess.Process:
        return await real("sh", "-c", "kill -SYS $$", **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("server.pool.asyncio.create_subprocess_exec", killed)
    with pytest.raises(RuntimeError, match=r"killed by SIGSYS .*allow setpriority"):
        await certify("spider", {"suits": 1}, "pysolfc", 1.0)


async def test_a_failing_solver_is_retried_ever_less_often_and_counted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every failure is counted (``/metrics``); the pool waits 1, 2, 4... s (up to a minute)
    before the next try, and tells the whole story (a traceback) at the 1st, 2nd, 4th..."""

    async def broken(*_args: object) -> None:
        raise RuntimeError("server.certify exited 1")

    monkeypatch.setattr("server.pool.certify", broken)
    pool = DealPool(size=1, seconds=1, prefill=False)
    try:
        async with running_server(pool=pool) as server:
            pool.want(ONE_SUIT)
            loop = asyncio.get_running_loop()
            end = loop.time() + 10
            while pool.failed < 3:
                assert loop.time() < end, "the pool did not retry"
                await asyncio.sleep(0.05)
            text = server.metrics_text()
    finally:
        await pool.stop()
    errors = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "solver_error"]
    assert [r.fields["retry_s"] for r in errors[:3]] == [1.0, 2.0, 4.0]  # type: ignore[attr-defined]
    assert [r.exc_info is not None for r in errors[:3]] == [True, True, False]
    assert 'patience_race_certify_total{result="failed"} 3' in text
    assert "patience_race_certified_ready 0" in text


async def test_the_certify_counts_add_up_to_the_deals_tried() -> None:
    """Won, not won and failed are three parts of the deals tried: a failure is not also
    counted as a deal the solver did not win (an alert on not_won fired for a crashing one)."""
    pool = DealPool(size=1, seconds=1, prefill=False)
    try:
        async with running_server(pool=pool) as server:
            pool.tried, pool.certified, pool.failed = 6, 2, 1
            text = server.metrics_text()
    finally:
        await pool.stop()
    assert 'patience_race_certify_total{result="won"} 2' in text
    assert 'patience_race_certify_total{result="not_won"} 3' in text
    assert 'patience_race_certify_total{result="failed"} 1' in text


async def test_a_solver_out_of_time_is_a_warning_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server paused (SIGSTOP, two minutes) logged ERROR solver_error with two tracebacks for
    a certification whose time ran out meanwhile: no fault, a warning."""

    async def slow(*_args: object) -> None:
        raise TimeoutError

    monkeypatch.setattr("server.pool.certify", slow)
    pool = DealPool(size=1, seconds=1, prefill=False)
    try:
        async with running_server(pool=pool):
            pool.want(ONE_SUIT)
            loop = asyncio.get_running_loop()
            end = loop.time() + 10
            while pool.failed < 1:
                assert loop.time() < end, "the pool did not try"
                await asyncio.sleep(0.05)
    finally:
        await pool.stop()
    said = [r for r in caplog.records if getattr(r, "fields", {}).get("event") == "solver_error"]
    assert said and all(r.levelname == "WARNING" and r.exc_info is None for r in said)
    assert said[0].getMessage() == "certify took longer than 32 s: tried again later"
