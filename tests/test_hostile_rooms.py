"""Issue 11 against a real server: room floods, abandoned rooms, look-alike and blank names,
private records; and the room's side of issue 10: rematch by agreement, rooms of bots."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from websockets.asyncio.client import connect

from client.net import Connection, ServerError
from protocol.codec import encode
from protocol.messages import (
    PROTOCOL_VERSION,
    CreateRoom,
    GetRace,
    Hello,
    Joined,
    JoinRoom,
    Kicked,
    Leave,
    MoveCmd,
    RaceOver,
    RaceRecordMsg,
    RaceStart,
    Rematch,
    Resume,
    RoomUpdate,
    Settings,
    Snapshot,
    WireMove,
)

from .server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    http_get,
    move,
    room_of,
    running_server,
    start_race,
    wait_until,
)

# -- room floods ------------------------------------------------------------------------------


def proxied_server(**limits: Any):  # type: ignore[no-untyped-def]
    """A server that believes 127.0.0.1's X-Forwarded-For, so a test can speak from several
    addresses."""
    return running_server(fast_limits(**limits), trusted_proxies=("127.0.0.1",))


async def create_and_drop(url: str, address: str, seq: int = 1) -> dict[str, object]:
    """Connect from ``address``, create a room, and drop the connection: the flood's step."""
    import msgpack

    async with connect(url, additional_headers={"X-Forwarded-For": address}) as ws:
        await ws.send(encode(Hello(seq=0, version=PROTOCOL_VERSION)))
        await ws.recv()
        await ws.send(encode(CreateRoom(seq=seq, name="Flood", settings=Settings())))
        answer = msgpack.unpackb(await ws.recv())
        assert isinstance(answer, dict)
        return answer


async def test_one_address_cannot_fill_the_room_cap() -> None:
    async with proxied_server(max_rooms=20, abandoned_s=60.0, max_rooms_per_address=8) as server:
        answers = [await create_and_drop(server.url, "203.0.113.66") for _ in range(30)]
        made = [a for a in answers if a["type"] == "joined"]
        refused = [a for a in answers if a["type"] == "error"]
        assert len(made) == server.hub.limits.max_rooms_per_address == 8
        assert {a["code"] for a in refused} <= {"too_many_rooms", "rate_limited"}
        assert all(a["seq"] == 1 for a in refused)  # each answer names its command
        # everyone else can still open rooms
        other = await create_and_drop(server.url, "198.51.100.7")
        assert other["type"] == "joined"


async def test_room_creation_rate_per_address() -> None:
    async with proxied_server(max_rooms_per_address=100, room_create_burst=3) as server:
        answers = [await create_and_drop(server.url, "203.0.113.67") for _ in range(5)]
        assert [a["type"] for a in answers] == ["joined"] * 3 + ["error"] * 2
        assert answers[-1]["code"] == "rate_limited"
        assert (await create_and_drop(server.url, "203.0.113.68"))["type"] == "joined"


async def test_an_abandoned_lobby_closes_in_seconds_not_the_grace() -> None:
    async with proxied_server(grace_s=60.0, abandoned_s=0.3) as server:
        await create_and_drop(server.url, "203.0.113.70")
        assert len(server.hub.rooms) == 1
        await eventually(lambda: not server.hub.rooms, timeout=3)
        # and the address's budget is given back with it
        assert server.hub.rooms_per_address == {}


async def test_a_lobby_with_someone_connected_stays() -> None:
    async with running_server(fast_limits(abandoned_s=0.2)) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await conns[1].close()  # Bob drops; Ann is still there
        await asyncio.sleep(0.5)
        assert code in server.hub.rooms
        await close_all(conns)


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "\u3164",  # Hangul filler: draws as nothing
        "\u2800",  # braille blank
        "\u115f\u1160",
        "Ann\u3164",
        "a\u0301\u0302\u0303",  # a stack of combining marks
        "x" + "\u0336" * 3,
        "\u0301Ann",
        "...",  # no letter or digit
        "[/]",
        "\u200d",
        "Ann (host)",  # would pass for the host in the lobby, beside the real Ann
        "Ann\uff08host\uff09",  # fullwidth parentheses: NFKC makes them plain ones
        "Ann *",  # the race panel's mark of your own line
        "Ann \u2768host\u2769",  # medium parenthesis ornaments: (host) to the eye
        "Tom [bot]",  # any bracket
        "Bob \u2217",  # asterisk operator
        "Bob \u204e",  # low asterisk
        "Bob \u2731",  # heavy asterisk
        "Ann \u239bhost\u239e",  # bracket pieces (maths symbols)
        "Tom \u23a1bot\u23a4",
        "Ann \u2039host\u203a",  # single angle quotation marks
        "Bob \ua673",  # Slavonic asterisk
        "Bob \u2055",  # flower punctuation mark
        "Bob \u2b51",  # black small star
        "Bob \U0001f7b6",  # a geometric star
        "Eve \u229b",  # circled asterisk operator
    ],
)
async def test_blank_and_stacked_names_are_refused(name: str) -> None:
    async with running_server() as server, Connection(server.url) as conn:
        with pytest.raises(ServerError) as refused:
            await conn.request(CreateRoom(seq=0, name=name, settings=Settings()))
        assert refused.value.code == "bad_name"
        assert server.hub.rooms == {}


@pytest.mark.parametrize(
    "lookalike",
    [
        "\u0410nn",  # Cyrillic A
        "\uff21nn",  # fullwidth A
        "ANN",
        "\U0001d400nn",  # mathematical bold A
        "\u0391nn",  # Greek Alpha
        "Ann\u200b",  # refused outright: a zero-width space
    ],
)
async def test_names_that_look_the_same_clash(lookalike: str) -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        async with Connection(server.url) as other:
            with pytest.raises(ServerError) as refused:
                await other.request(JoinRoom(seq=0, code=code, name=lookalike))
            assert refused.value.code in ("name_taken", "bad_name")
            # a name that merely shares letters is fine
            joined = await other.request(JoinRoom(seq=0, code=code, name="Anna"))
            assert isinstance(joined, Joined)
        await close_all(conns)


async def test_fullwidth_names_are_stored_in_their_plain_form() -> None:
    async with running_server() as server:
        conns, _, joined = await host_and_join(server.url, ["\uff22\uff4f\uff42"], Settings())
        assert joined[0].room.members[0].name == "Bob"
        await close_all(conns)


# -- private records -----------------------------------------------------------------------------


async def test_a_private_rooms_record_does_not_carry_its_code() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings(private=True))
        starts = await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        race_id = starts[0].race_id
        answer = await conns[0].request(GetRace(seq=0, race_id=race_id))
        assert isinstance(answer, RaceRecordMsg) and answer.record.room is None
        status, _, body = await http_get(server, f"/races/{race_id}")
        assert status == 200 and code.encode() not in body
        await close_all(conns)


async def test_a_public_rooms_record_names_its_room() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        starts = await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        answer = await conns[0].request(GetRace(seq=0, race_id=starts[0].race_id))
        assert isinstance(answer, RaceRecordMsg) and answer.record.room == code
        await close_all(conns)


# -- rematch by agreement, rooms of bots ------------------------------------------------------------


async def finish(conns: list[Connection]) -> None:
    for c in conns:
        await move(c, "resign")
    for c in conns:
        await c.wait_for(RaceOver)


async def test_results_stay_until_every_player_asks() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        ann, bob, cy = conns
        await start_race(conns)
        await finish(conns)
        await ann.request(Rematch(seq=0))
        seen = await wait_until(cy, RoomUpdate, lambda u: any(m.rematch for m in u.room.members))
        assert seen.room.state == "results"
        await bob.request(Rematch(seq=0))
        await asyncio.sleep(0.1)
        assert server.hub.rooms[code].state == "results"  # Cy is still looking at them
        await cy.request(Rematch(seq=0))
        # everyone asked: back to the lobby, everyone ready, so the next race counts down
        for c in conns:
            await c.wait_for(RaceStart)
        await close_all(conns)


async def test_a_player_who_dropped_does_not_hold_up_the_rematch() -> None:
    async with running_server() as server:
        conns, _, _ = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        await start_race(conns)
        await finish(conns)
        await conns[2].close()
        await conns[0].request(Rematch(seq=0))
        await conns[1].request(Rematch(seq=0))
        # the next race starts at once for those still here: Cy, away, sits it out
        nxt = await wait_until(conns[0], RoomUpdate, lambda u: u.room.state == "countdown")
        ready = {m.name: m.ready for m in nxt.room.members}
        assert ready == {"Ann": True, "Bob": True, "Cy": False}
        race = room_of(server, nxt.room.code).race
        assert race is not None and sorted(s.name for s in race.seats.values()) == ["Ann", "Bob"]
        await close_all(conns[:2])


async def test_a_spectator_cannot_end_the_results() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        async with Connection(server.url) as watcher:
            await watcher.request(JoinRoom(seq=0, code=code, name="Eve", spectate=True))
            await start_race(conns)
            await finish(conns)
            with pytest.raises(ServerError) as refused:
                await watcher.request(Rematch(seq=0))
            assert refused.value.code == "not_a_player"
            assert server.hub.rooms[code].state == "results"
        await close_all(conns)


async def join_bot(url: str, code: str, name: str) -> Connection:
    bot = Connection(url)
    await bot.open()
    joined = await bot.request(JoinRoom(seq=0, code=code, name=name, bot=True))
    assert isinstance(joined, Joined)
    return bot


async def test_a_room_left_with_only_bots_closes_after_its_race() -> None:
    async with running_server(fast_limits(grace_s=0.3)) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        ann = conns[0]
        bots = [await join_bot(server.url, code, f"Bot {i}") for i in (1, 2)]
        update = await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 3)
        assert [m.bot for m in update.room.members] == [False, True, True]
        await start_race([ann, *bots])
        await ann.close()  # the person goes away for good, past the grace...
        await asyncio.sleep(0.5)
        await finish(bots)  # ...and the bots' race ends
        for b in bots:
            kicked = await b.wait_for(Kicked)
            assert "only bots" in kicked.message
        assert code not in server.hub.rooms
        await close_all(bots)


async def test_bots_alone_in_a_lobby_are_closed_when_the_person_leaves() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        bot = await join_bot(server.url, code, "Bot 1")
        await conns[0].request(Leave(seq=0))
        kicked = await bot.wait_for(Kicked)
        assert "only bots" in kicked.message
        assert code not in server.hub.rooms
        await close_all([*conns, bot])


# -- resume tells the next sequence number ----------------------------------------------------------


async def test_snapshot_gives_the_next_seq() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        for _ in range(3):
            await move(conns[0], "deal")
        expected = conns[0].next_seq()  # the first number Ann's seat has not used
        await conns[0].close()
        async with Connection(server.url) as again:
            snap = await again.request(Resume(seq=0, code=code, token=joined[0].token))
            assert isinstance(snap, Snapshot)
            # numbers go on from the highest the seat or this resume used
            assert snap.next_seq == max(expected, snap.seq + 1)
            answer = await again.resend(MoveCmd(seq=snap.next_seq, move=WireMove(kind="deal")))
            assert answer.type == "moved"
        await close_all(conns)
