"""Rooms against a real server: the host's settings and kicks, seats, the public list, leaving,
and empty rooms going away."""

from __future__ import annotations

import pytest

from client.net import Connection, ServerError
from protocol.messages import (
    Countdown,
    CreateRoom,
    Joined,
    JoinRoom,
    Kick,
    Kicked,
    Leave,
    ListRooms,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Ready,
    Resume,
    RoomList,
    RoomUpdate,
    Settings,
    Start,
    UpdateSettings,
)

from .server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    move,
    play,
    room_of,
    running_server,
    start_race,
    wait_until,
)


async def test_host_changes_settings_in_the_lobby_only() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        ann, bob, cy = conns
        await bob.request(Ready(seq=0))
        await wait_until(ann, RoomUpdate, lambda u: u.room.members[1].ready)
        new = Settings(
            game="st-helena",
            options={"build": "any"},
            mode="score",
            time_limit=300,
            undo="off",
            seats=4,
            private=True,
        )
        await ann.request(UpdateSettings(seq=0, settings=new))
        for c in (bob, cy):
            update = await wait_until(c, RoomUpdate, lambda u: u.room.settings.game == "st-helena")
            ps = update.room.settings
            assert (ps.title, ps.mode, ps.time_limit, ps.undo, ps.seats, ps.private) == (
                "St. Helena (build any)",
                "score",
                300,
                "off",
                4,
                True,
            )
            assert ps.options == {"build": "any", "spaces": "none"}
            assert not any(m.ready for m in update.room.members)  # every ready flag cleared
        assert room_of(server, code).config.title == "St. Helena (build any)"
        # only the host; seats never fewer than the players seated; only in the lobby
        with pytest.raises(ServerError) as not_host:
            await bob.request(UpdateSettings(seq=0, settings=Settings()))
        assert not_host.value.code == "not_host"
        with pytest.raises(ServerError) as seats:
            await ann.request(UpdateSettings(seq=0, settings=Settings(seats=2)))
        assert seats.value.code == "bad_settings"
        with pytest.raises(ServerError) as bad:
            await ann.request(UpdateSettings(seq=0, settings=Settings(options={"suits": 5})))
        assert bad.value.code == "bad_settings"
        assert room_of(server, code).settings == new  # a refusal changes nothing
        await start_race(conns)
        with pytest.raises(ServerError) as racing:
            await ann.request(UpdateSettings(seq=0, settings=Settings()))
        assert racing.value.code == "wrong_state"
        await close_all(conns)


async def test_host_kicks_before_and_after_a_race_not_during() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        ann, bob, cy = conns
        with pytest.raises(ServerError) as not_host:
            await bob.request(Kick(seq=0, id=joined[2].you))
        assert not_host.value.code == "not_host"
        with pytest.raises(ServerError) as self_kick:
            await ann.request(Kick(seq=0, id=joined[0].you))
        assert self_kick.value.code == "bad_message"
        with pytest.raises(ServerError) as nobody:
            await ann.request(Kick(seq=0, id=99))
        assert nobody.value.code == "not_in_room"

        await ann.request(Kick(seq=0, id=joined[2].you))
        kicked = await cy.wait_for(Kicked)
        assert code[:4] in kicked.message
        update = await wait_until(bob, RoomUpdate, lambda u: len(u.room.members) == 2)
        assert [m.name for m in update.room.members] == ["Ann", "Bob"]
        # Cy stays connected, out of the room: free to look elsewhere, and to come back
        with pytest.raises(ServerError) as out:
            await cy.request(Ready(seq=0))
        assert out.value.code == "not_in_room"
        with pytest.raises(ServerError) as old_token:
            await cy.request(Resume(seq=0, code=code, token=joined[2].token))
        assert old_token.value.code == "bad_token"
        assert isinstance(await cy.request(ListRooms(seq=0)), RoomList)

        await start_race([ann, bob])
        with pytest.raises(ServerError) as racing:
            await ann.request(Kick(seq=0, id=joined[1].you))
        assert racing.value.code == "wrong_state"
        await move(ann, "resign")
        await move(bob, "resign")
        await ann.wait_for(RaceOver)
        await ann.request(Kick(seq=0, id=joined[1].you))
        await bob.wait_for(Kicked)
        assert [m.name for m in room_of(server, code).info().members] == ["Ann"]
        await close_all(conns)


async def test_seats_spectators_and_start_by_the_host() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings(seats=2))
        ann, bob = conns
        # the room is full: a third comes in to watch; anyone may ask to watch
        async with Connection(server.url) as cy:
            j = await cy.request(JoinRoom(seq=0, code=code, name="Cy"))
            assert isinstance(j, Joined) and j.role == "spectator"
            assert j.room.members[-1].role == "spectator"
            summary = next(r for r in (await cy.request(ListRooms(seq=0))).rooms if r.code == code)
            assert (summary.players, summary.seats, summary.spectators) == (2, 2, 1)
            # the host starts once everyone else is ready (the host counts as ready)
            await bob.request(Ready(seq=0))
            assert room_of(server, code).state == "lobby"  # Ann is not ready yet
            await ann.request(Start(seq=0))
            countdown = await cy.wait_for(Countdown)
            assert countdown.ms == 50
            start = await cy.wait_for(RaceStart)
            assert start.board is None
            with pytest.raises(ServerError) as twice:
                await ann.request(Start(seq=0))
            assert twice.value.code == "wrong_state"
        await close_all(conns)


async def test_the_host_may_start_alone() -> None:
    async with running_server() as server, Connection(server.url) as ann:
        j = await ann.request(CreateRoom(seq=0, name="Ann", settings=Settings(game="louis")))
        assert isinstance(j, Joined)
        await ann.request(Ready(seq=0))  # one player ready: no countdown on its own
        assert room_of(server, j.room.code).state == "lobby"
        await ann.request(Start(seq=0))
        start = await ann.wait_for(RaceStart)
        assert start.board is not None and start.board.game == "louis"
        await move(ann, "resign")
        over = await ann.wait_for(RaceOver)
        assert [s.name for s in over.standings] == ["Ann"]


async def test_the_public_list_leaves_out_private_rooms() -> None:
    async with running_server() as server:
        conns = [Connection(server.url) for _ in range(4)]
        for c in conns:
            await c.open()
        public1 = await conns[0].request(CreateRoom(seq=0, name="A", settings=Settings()))
        secret = await conns[1].request(
            CreateRoom(seq=0, name="B", settings=Settings(private=True))
        )
        public2 = await conns[2].request(
            CreateRoom(
                seq=0,
                name="C",
                settings=Settings(
                    game="spider", options={"suits": 2}, mode="score", time_limit=60, seats=3
                ),
            )
        )
        listed = await conns[3].request(ListRooms(seq=0))
        assert isinstance(listed, RoomList)
        by_code = {r.code: r for r in listed.rooms}
        assert set(by_code) == {public1.room.code, public2.room.code}
        assert secret.room.code not in by_code
        two = by_code[public2.room.code]
        assert (two.title, two.mode, two.state, two.players, two.seats, two.spectators) == (
            "Spider (2 suits)",
            "score",
            "lobby",
            1,
            3,
            0,
        )
        # its time limit (1.4: the list said "score" and nothing of the minute)
        assert two.time_limit == 60 and by_code[public1.room.code].time_limit == 0
        # a private room is joined by its code, in any case, with or without the dash
        typed = f"{secret.room.code[:4]}-{secret.room.code[4:]}".lower()
        j = await conns[3].request(JoinRoom(seq=0, code=typed, name="D"))
        assert isinstance(j, Joined) and j.room.code == secret.room.code
        # a room going private leaves the list
        await conns[0].request(UpdateSettings(seq=0, settings=Settings(private=True)))
        relisted = await conns[3].request(ListRooms(seq=0))
        assert [r.code for r in relisted.rooms] == [public2.room.code]
        await close_all(conns)


async def test_empty_rooms_are_cleaned_up() -> None:
    async with running_server(fast_limits(grace_s=0.3)) as server:
        # everyone leaves
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await ann.request(Leave(seq=0))
        update = await wait_until(bob, RoomUpdate, lambda u: len(u.room.members) == 1)
        assert update.room.members[0].host  # Bob is the host now
        await bob.request(Leave(seq=0))
        assert code not in server.hub.rooms
        with pytest.raises(ServerError) as gone:
            await ann.request(JoinRoom(seq=0, code=code, name="Ann"))
        assert gone.value.code == "room_not_found"
        assert (await ann.request(ListRooms(seq=0))).rooms == []
        # everyone drops and stays away past the grace
        more, code2, _ = await host_and_join(server.url, ["Cy", "Dee"], Settings())
        await close_all(more)
        assert code2 in server.hub.rooms  # seats are kept during the grace
        await eventually(lambda: code2 not in server.hub.rooms)
        # a room whose race was on ends it and goes away too
        racing, code3, _ = await host_and_join(server.url, ["Eve", "Fay"], Settings())
        await start_race(racing)
        await racing[0].request(Leave(seq=0))
        await racing[1].request(Leave(seq=0))
        assert code3 not in server.hub.rooms
        assert len(server.hub.finished) == 1
        record = next(iter(server.hub.finished.values()))
        assert {s.status for s in record.standings} == {"left"}
        assert server.hub.rooms == {}
        await close_all([ann, bob, *racing])


async def test_leaving_during_a_race_keeps_the_score() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await start_race(conns)
        answers = await play(ann, server, code, joined[0].you, 3)
        await ann.request(Leave(seq=0))
        progress = await wait_until(
            bob, ProgressUpdate, lambda p: any(x.status == "left" for x in p.players)
        )
        left = next(p for p in progress.players if p.name == "Ann")
        assert left.score == answers[-1].score and left.finish_ms is not None
        await move(bob, "resign")
        over = await bob.wait_for(RaceOver)
        ann_standing = next(s for s in over.standings if s.name == "Ann")
        assert ann_standing.status == "left" and ann_standing.score == answers[-1].score
        await close_all(conns)
