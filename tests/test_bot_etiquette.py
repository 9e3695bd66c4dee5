"""Bots in a room with a person: they join as bots, wait for a person to ask for a rematch before
they do, and leave when no person is left (the room of bots then closes)."""

from __future__ import annotations

import asyncio

from client.bot import run_bot
from client.net import Connection
from protocol.messages import (
    CreateRoom,
    Joined,
    Leave,
    RaceOver,
    RaceStart,
    Ready,
    Rematch,
    RoomUpdate,
    Settings,
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
