"""The bot: legal moves only, blind to hidden cards, games that end, and a race on a real server."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from client.bot import (
    LEVELS,
    MOVE_CAP,
    Memory,
    Player,
    choose_move,
    masked,
    play_offline,
    run_bot,
)
from client.net import Connection
from protocol.config import GameConfig
from protocol.game import GameState, new_game, state_class
from protocol.messages import CreateRoom, Joined, MoveCmd, RaceOver, RaceStart, Ready, Settings
from protocol.messages import WireMove as W
from protocol.moves import UNKNOWN, Kind

from .server_helpers import fast_limits, running_server

CONFIGS = [
    GameConfig("spider", {"suits": 1}),
    GameConfig("spider", {"suits": 2}),
    GameConfig("spider", {"suits": 4}),
    GameConfig("spider", {"suits": 4, "relaxed": 2}),
    GameConfig("st-helena"),
    GameConfig("st-helena", {"build": "any", "spaces": "any"}),
    GameConfig("louis"),
    GameConfig("louis", {"build": "any"}),
]
IDS = [c.title for c in CONFIGS]


def random_position(config: GameConfig, number: int, steps: int, rng: random.Random) -> GameState:
    """Deal ``number`` after ``steps`` random legal moves (real moves preferred to deals)."""
    state = new_game(config, number)
    for _ in range(steps):
        legal = state.legal_moves()
        if not legal:
            break
        real = [m for m in legal if m.kind in (Kind.TABLEAU, Kind.FOUNDATION)]
        state.apply(rng.choice(real if real and rng.random() < 0.85 else legal))
    return state


def shuffled_hidden(state: GameState, rng: random.Random) -> GameState:
    """The same visible position with the face-down cards and the stock dealt differently."""
    s = state.copy()
    hidden = [c for p, d in zip(s.piles, s.down, strict=True) for c in p[:d]] + s.stock
    rng.shuffle(hidden)
    hidden = [(c + 7) % 52 for c in hidden]  # other cards entirely, not only another order
    k = 0
    for p, d in zip(s.piles, s.down, strict=True):
        p[:d] = hidden[k : k + d]
        k += d
    s.stock = hidden[k:]
    return s


def test_masked_keeps_only_what_the_seat_sees() -> None:
    state = random_position(CONFIGS[2], 7, 30, random.Random(1))
    m = masked(state)
    assert m.view() == state.view()
    for p, q, d in zip(m.piles, state.piles, m.down, strict=True):
        assert p[:d] == [UNKNOWN] * d
        assert p[d:] == q[d:]
    assert m.stock == [UNKNOWN] * len(state.stock)
    louis = masked(new_game(GameConfig("louis"), 3))
    assert louis.stock == [UNKNOWN] * 84


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_choose_move_is_always_legal(config: GameConfig) -> None:
    rng = random.Random(hash(config.title) % 1000)
    for i in range(6):
        state = random_position(config, 100 + i, rng.randrange(0, 120), rng)
        for level in ("easy", "normal") if i % 2 else LEVELS:
            move = choose_move(state, level, random.Random(i))
            if move is None:
                continue
            assert state.check(move) is None, (level, move)
            assert move.kind not in (Kind.UNDO, Kind.RESIGN)


@pytest.mark.parametrize("config", CONFIGS[:3] + CONFIGS[4:5] + CONFIGS[6:7], ids=lambda c: c.title)
def test_decisions_do_not_depend_on_hidden_cards(config: GameConfig) -> None:
    """The same visible position with other hidden cards, or none known: the same moves."""
    rng = random.Random(5)
    for i in range(3):
        steps = rng.randrange(0, 60)
        state = random_position(config, 200 + i, steps, rng)
        while config.game == "louis" and not state.stock and steps:
            # Louis deals its stock early, and then hides nothing: the three boards were one,
            # and the solver studied each for seconds to no end (a minute of the suite)
            steps //= 2
            state = random_position(config, 200 + i, steps, rng)
        assert config.game == "st-helena" or state.stock or any(state.down)  # something hidden
        other = shuffled_hidden(state, rng)
        blind = state_class(config).from_view(config, state.view())
        assert other.view() == state.view()
        assert blind.view() == state.view().model_copy(update={"can_undo": False})
        # St. Helena hides nothing; Louis only its stock: a strong search there is slow to no end
        for level in LEVELS if config.game == "spider" or i == 0 else ("easy", "normal"):
            moves = {
                repr(choose_move(s, level, random.Random(3), Memory()))
                for s in (state, other, blind)
            }
            assert len(moves) == 1, (level, moves)


def test_a_whole_game_is_played_alike_on_the_blind_copy() -> None:
    """Move by move, a bot on the full state and one on its own blind copy agree."""
    config = GameConfig("spider", {"suits": 2})
    real = new_game(config, 31)
    mine = state_class(config).from_view(config, real.view())
    a, b = Player("normal", random.Random(9)), Player("normal", random.Random(9))
    for _ in range(150):
        ma, mb = a.choose(real), b.choose(mine)
        assert ma == mb
        if ma is None or real.over:
            break
        change = real.apply(ma)
        mine.apply(change.move)
        for p in change.shown:
            mine.show(p)


@pytest.mark.parametrize(
    ("config", "level", "number"),
    [
        (CONFIGS[0], "strong", 1),
        (CONFIGS[1], "normal", 2),
        (CONFIGS[2], "easy", 3),
        (CONFIGS[2], "normal", 4),
        (CONFIGS[3], "normal", 5),
        (CONFIGS[4], "strong", 6),
        (CONFIGS[5], "normal", 7),
        (CONFIGS[6], "easy", 8),
        (CONFIGS[7], "normal", 9),
    ],
    ids=lambda x: x.title if isinstance(x, GameConfig) else str(x),
)
def test_games_end_within_the_cap(config: GameConfig, level: str, number: int) -> None:
    real = new_game(config, number)
    result = play_offline(real, level, random.Random(number))
    assert real.over
    assert result.won or result.resigned or result.stuck
    assert result.moves <= MOVE_CAP[config.game] + 1


def test_spider_one_suit_normal_wins_some() -> None:
    """Not a proof of strength (bench/bots.py measures it): the bot does win easy deals."""
    config = GameConfig("spider", {"suits": 1})
    wins = sum(play_offline(new_game(config, n), "normal", random.Random(n)).won for n in (1, 3))
    assert wins >= 1


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown level"):
        choose_move(new_game(CONFIGS[0], 1), "grandmaster")


async def test_two_bots_race_on_a_real_server(caplog: pytest.LogCaptureFixture) -> None:
    """A host opens a room, two bots join; the host resigns at once, the bots race to the end.
    Their terminals say so (the last line said "watching until the next race" through a race
    the bot played: a new-user trial)."""
    caplog.set_level(logging.INFO, logger="patience_race.bot")
    async with running_server(fast_limits(rate=500.0, burst=500)) as server:
        host = Connection(server.url)
        await host.open()
        j = await host.request(
            CreateRoom(seq=0, name="Host", settings=Settings(game="st-helena", seats=3))
        )
        assert isinstance(j, Joined)
        code = j.room.code
        bots = [
            asyncio.create_task(
                run_bot(server.url, code, name=f"Bot {i}", level="normal", think=0, max_races=1)
            )
            for i in (1, 2)
        ]
        while True:  # wait for both bots to be in and ready
            event = await host.next_event()
            room = getattr(event, "room", None)
            if room is not None and sum(m.ready for m in room.members) == 2:
                break
        await host.request(Ready(seq=0))
        start = await host.wait_for(RaceStart)
        assert start.board is not None
        await host.request(MoveCmd(seq=0, move=W(kind="resign")))
        over = await host.wait_for(RaceOver, timeout=30)
        assert over.reason == "all_done"
        by_name = {s.name: s for s in over.standings}
        assert set(by_name) == {"Host", "Bot 1", "Bot 2"}
        for name in ("Bot 1", "Bot 2"):
            assert by_name[name].status in ("won", "resigned", "stuck")
            assert by_name[name].moves > 0
        await asyncio.wait_for(asyncio.gather(*bots), 10)
        await host.close()
    said = [r.getMessage() for r in caplog.records]
    shown = f"{code[:4]}-{code[4:]}"
    for name in ("Bot 1", "Bot 2"):
        assert f"{name}: racing in room {shown}" in said
        assert f"{name}: race over in room {shown}" in said


async def test_a_bot_task_can_be_cancelled() -> None:
    async with running_server() as server:
        host = Connection(server.url)
        await host.open()
        j = await host.request(CreateRoom(seq=0, name="Host", settings=Settings()))
        assert isinstance(j, Joined)
        task = asyncio.create_task(run_bot(server.url, j.room.code, name="Bot", think=0))
        while True:
            event = await host.next_event()
            room = getattr(event, "room", None)
            if room is not None and any(m.name == "Bot" and m.ready for m in room.members):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        while True:  # the bot left the room
            event = await host.next_event()
            room = getattr(event, "room", None)
            if room is not None and all(m.name != "Bot" for m in room.members):
                break
        await host.close()


async def test_the_bot_command_in_a_racing_room_waits_for_the_next_race() -> None:
    """``patience-race bot CODE`` while the room races: the bot stays, watching, with a seat in
    the next race (it used to leave at once, saying nothing)."""
    import subprocess
    import sys
    from pathlib import Path

    from protocol.messages import Rematch

    from .server_helpers import close_all, host_and_join, room_of, start_race

    async with running_server(fast_limits()) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", "bot", code, "--server", server.url,
            "--think", "0", cwd=Path(__file__).resolve().parents[1],
            stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            loop = asyncio.get_running_loop()
            end = loop.time() + 30
            while not any(m.name == "Bot" for m in room_of(server, code).members.values()):
                assert loop.time() < end and proc.returncode is None, "the bot did not join"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            assert proc.returncode is None, "the bot left"
            bot = next(m for m in room_of(server, code).members.values() if m.name == "Bot")
            assert bot.role == "spectator" and bot.wants_seat
            for c in conns:
                await c.request(MoveCmd(seq=0, move=W(kind="resign")))
            await conns[0].wait_for(RaceOver)
            for c in conns:
                await c.request(Rematch(seq=0))
            while room_of(server, code).state == "results":
                assert loop.time() < end, "the room did not go back to the lobby"
                await asyncio.sleep(0.05)
            assert bot.role == "player"  # seated for the next race
        finally:
            if proc.returncode is None:
                proc.terminate()
            await proc.wait()
            await close_all(conns)


async def test_a_second_bot_without_a_name_takes_the_next_number() -> None:
    """``patience-race bot CODE`` twice: Bot, then Bot 2 (the second used to be refused: "someone
    in this room is already called Bot", exit 1), as people get "Ann 2"."""
    import subprocess
    import sys
    from pathlib import Path

    from .server_helpers import close_all, host_and_join, room_of

    async with running_server(fast_limits()) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        procs = []
        try:
            loop = asyncio.get_running_loop()
            for expected in (["Bot"], ["Bot", "Bot 2"]):
                proc = await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "client.cli", "bot", code, "--server", server.url,
                    cwd=Path(__file__).resolve().parents[1],
                    stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                )  # fmt: skip
                procs.append(proc)
                end = loop.time() + 30
                while sorted(m.name for m in room_of(server, code).members.values() if m.bot) != (
                    expected
                ):
                    assert loop.time() < end, "the bot did not join"
                    assert all(p.returncode is None for p in procs), "a bot gave up"
                    await asyncio.sleep(0.05)
        finally:
            for p in procs:
                if p.returncode is None:
                    p.terminate()
                await p.wait()
            await close_all(conns)


async def test_a_proxy_answering_502_while_the_server_restarts_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind nginx a restarting server is an HTTP 502 to the WebSocket handshake: the bot tries
    again until it gives up quietly (it died: 'cannot reach the race server ... HTTP 502')."""
    import client.bot as bot

    answered = 0

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        await reader.readuntil(b"\r\n\r\n")
        answered += 1
        writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr(bot, "RECONNECT_FOR", 2.0)
    seat = bot._Seat(
        conn=None,  # type: ignore[arg-type]
        code="ABCD2345",
        name="Bot",
        you=1,
        token="t" * 32,
        room=None,  # type: ignore[arg-type]
        role="player",
        player=None,  # type: ignore[arg-type]
        pacer=None,  # type: ignore[arg-type]
    )
    try:
        assert await bot._reconnect(seat, f"ws://127.0.0.1:{port}") is None
        assert answered >= 2
    finally:
        server.close()
        await server.wait_closed()


def test_bots_of_one_level_each_have_their_own_tempo() -> None:
    """Three strong bots played the same moves and finished within a second of each other: each
    bot's pauses are its level's scaled by a tempo of its own, within 15 %."""
    import client.bot as bot
    from client.strategy import PACE

    pacers = [bot.Pacer(PACE["strong"], 20.0, 40, random.Random(seed)) for seed in range(3)]
    tempos = [p.tempo for p in pacers]
    assert len(set(tempos)) == 3
    assert all(1 - bot.TEMPO_SPREAD <= t <= 1 + bot.TEMPO_SPREAD for t in tempos)
    for p in pacers:
        mean = sum(p.pause() for _ in range(2000)) / 2000
        assert abs(mean - PACE["strong"].mean * p.tempo) < 0.02
