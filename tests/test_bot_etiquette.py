"""Bots in a room with a person: they join as bots, wait for a person to ask for a rematch before
they do, and leave when no person is left (the room of bots then closes)."""

from __future__ import annotations

import asyncio

import pytest

from client.bot import run_bot
from client.net import Connection
from protocol.messages import (
    CreateRoom,
    Joined,
    Leave,
    MoveCmd,
    RaceOver,
    RaceStart,
    Ready,
    Rematch,
    RoomUpdate,
    Settings,
    WireMove,
)

from .server_helpers import eventually, fast_limits, running_server, wait_until


async def test_bots_follow_a_person_to_the_rematch_and_leave_with_them() -> None:
    async with running_server(fast_limits(countdown_ms=50)) as server:
        ann = Connection(server.url)
        await ann.open()
        # a race of two seconds: everyone's score when the time is up
        settings = Settings(game="spider", options={"suits": 1}, mode="score", time_limit=2)
        joined = await ann.request(CreateRoom(seq=0, name="Ann", settings=settings))
        assert isinstance(joined, Joined)
        code = joined.room.code
        bots = [
            asyncio.create_task(run_bot(server.url, code, name=f"Bot {i}", think=0.05))
            for i in (1, 2)
        ]
        try:
            room = await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 3)
            assert [m.bot for m in room.room.members] == [False, True, True]
            await ann.request(Ready(seq=0))
            await ann.wait_for(RaceStart, timeout=10)
            await ann.wait_for(RaceOver, timeout=10)
            await asyncio.sleep(1.5)
            hub_room = server.hub.rooms[code]
            assert hub_room.state == "results"  # the bots have not taken it back to the lobby
            assert not any(m.rematch for m in hub_room.members.values())
            # the person asks: the bots agree, everyone is ready, the next race starts
            await ann.request(Rematch(seq=0))
            await ann.wait_for(RaceStart, timeout=10)
            # the person leaves for good: the bots go too and the room closes
            await ann.request(Leave(seq=0))
            await eventually(lambda: code not in server.hub.rooms, timeout=10)
            await asyncio.wait_for(asyncio.gather(*bots), 10)
        finally:
            for b in bots:
                b.cancel()
            await asyncio.gather(*bots, return_exceptions=True)
            await ann.close()


async def test_bots_hurry_once_every_person_has_finished() -> None:
    """A person resigns early: the bots, paced at a minute a move, play on as fast as the
    server allows so the results come in seconds, not hours."""
    async with running_server(fast_limits(countdown_ms=50)) as server:
        ann = Connection(server.url)
        await ann.open()
        settings = Settings(game="spider", options={"suits": 1})
        joined = await ann.request(CreateRoom(seq=0, name="Ann", settings=settings))
        assert isinstance(joined, Joined)
        code = joined.room.code
        bot = asyncio.create_task(run_bot(server.url, code, name="Slow", level="easy", think=60))
        try:
            await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 2)
            await ann.request(Ready(seq=0))
            await ann.wait_for(RaceStart, timeout=10)
            await ann.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            over = await ann.wait_for(RaceOver, timeout=120)
            slow = next(s for s in over.standings if s.name == "Slow")
            assert slow.status != "playing" and slow.moves > 10
        finally:
            bot.cancel()
            await asyncio.gather(bot, return_exceptions=True)
            await ann.close()


def test_bots_hurry_only_when_no_person_plays_and_no_clock_runs() -> None:
    from client.bot import people_done
    from protocol.messages import Member, Progress, RoomInfo

    def progress(pid: int, status: str) -> Progress:
        return Progress(
            id=pid, name=f"p{pid}", status=status, score=0, score2=None, turned=0, suits=0,
            foundation_cards=0, moves=0, undos=0, connected=True, finish_ms=None, score_ms=0,
        )  # fmt: skip

    def room(time_limit: int) -> RoomInfo:
        members = [
            Member.model_construct(id=1, name="Ann", bot=False),
            Member.model_construct(id=2, name="Bot", bot=True),
        ]
        settings = Settings(game="spider", time_limit=time_limit)
        return RoomInfo.model_construct(members=members, settings=settings)

    playing = [progress(1, "playing"), progress(2, "playing")]
    resigned = [progress(1, "resigned"), progress(2, "playing")]
    assert not people_done(room(0), playing)
    assert people_done(room(0), resigned)
    assert not people_done(room(300), resigned)  # the clock decides scores: pace matters
    assert not people_done(room(0), [progress(2, "playing")])  # bots alone: nobody waits


@pytest.mark.parametrize("time_limit", [0, 600])
async def test_a_bot_that_only_shuffles_when_every_person_is_done_resigns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, time_limit: int
) -> None:
    """Every person done: a bot that shows no card, deals or sends nothing home for HURRY_IDLE
    moves resigns (bots went on to the 1,500-move cap: the results a minute and more later);
    with a time limit, where it keeps its pace, after PACED_IDLE (an easy bot shuffled for 13
    minutes of a 15-minute race, the results waiting on it: club-night trial)."""
    import logging

    import client.bot

    # (each limit where it applies, the other short: a race with no time limit used the
    # timed race's limit too: a review)
    monkeypatch.setattr(client.bot, "HURRY_IDLE", 3 if not time_limit else 1)
    monkeypatch.setattr(client.bot, "PACED_IDLE", 3 if time_limit else 1)
    caplog.set_level(logging.INFO, logger="patience_race.bot")
    async with running_server(fast_limits(countdown_ms=50)) as server:
        ann = Connection(server.url)
        await ann.open()
        settings = Settings(
            game="spider", options={"suits": 4}, deal_number=2, time_limit=time_limit
        )
        joined = await ann.request(CreateRoom(seq=0, name="Ann", settings=settings))
        assert isinstance(joined, Joined)
        code = joined.room.code
        bot = asyncio.create_task(run_bot(server.url, code, name="Bot", level="easy", think=0.05))
        try:
            await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 2)
            await ann.request(Ready(seq=0))
            await ann.wait_for(RaceStart, timeout=10)
            await ann.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            over = await ann.wait_for(RaceOver, timeout=60)
            standing = next(s for s in over.standings if s.name == "Bot")
            assert standing.status == "resigned" and standing.moves < 1500
            assert "nothing more to gain in 3 moves" in caplog.text  # its own limit
        finally:
            bot.cancel()
            await asyncio.gather(bot, return_exceptions=True)
            await ann.close()


async def test_a_bot_stuck_with_only_an_undo_resigns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bot's move that leaves it no move but an undo: it resigns at once (a bot does not undo),
    rather than keep the others waiting for the server's minute (stuck_undo_s) to run out."""
    import server.race
    from protocol.game import GameConfig
    from protocol.game import state_class as real_state_class

    from .rules_helpers import one_move_from_stuck

    class OneMoveFromStuck:
        """Every seat's board of a St. Helena race: either move leaves only an undo."""

        @staticmethod
        def from_deal(_deal: object) -> object:
            return one_move_from_stuck()

    def planted(config: GameConfig) -> object:
        return OneMoveFromStuck if config.game == "st-helena" else real_state_class(config)

    monkeypatch.setattr(server.race, "state_class", planted)
    async with running_server(fast_limits(countdown_ms=50, stuck_undo_s=600.0)) as server_:
        ann = Connection(server_.url)
        await ann.open()
        joined = await ann.request(
            CreateRoom(seq=0, name="Ann", settings=Settings(game="st-helena"))
        )
        assert isinstance(joined, Joined)
        bot = asyncio.create_task(
            run_bot(server_.url, joined.room.code, name="Bot", level="strong", think=0.05)
        )
        try:
            await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 2)
            await ann.request(Ready(seq=0))
            await ann.wait_for(RaceStart, timeout=10)
            room = server_.hub.rooms[joined.room.code]
            assert room.race is not None
            seat = next(s for s in room.race.seats.values() if s.name == "Bot")
            await eventually(lambda: seat.status != "playing", timeout=20)
            assert seat.status == "resigned" and seat.moves[1:] == [
                "resign"
            ]  # (either move: 2>1, 1>2)
            assert seat.moves[0] in ("2>1", "1>2")
            await ann.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            over = await ann.wait_for(RaceOver, timeout=10)
            assert next(s for s in over.standings if s.name == "Bot").status == "resigned"
        finally:
            bot.cancel()
            await asyncio.gather(bot, return_exceptions=True)
            await ann.close()
