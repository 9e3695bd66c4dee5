"""Every refusal and every close code a client can run into, against a real server."""

from __future__ import annotations

import asyncio

import msgpack
import pytest
from websockets.exceptions import ConnectionClosed

from client.net import Connection, ServerError
from protocol.codec import MAX_FRAME
from protocol.messages import (
    PROTOCOL_VERSION,
    CreateRoom,
    Error,
    Joined,
    JoinRoom,
    Leave,
    ListRooms,
    Moved,
    RaceOver,
    Ready,
    Resume,
    RoomList,
    Settings,
    Start,
    WireMove,
    from_wire,
)

from .server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    move,
    pack,
    raw_client,
    raw_close_code,
    raw_recv,
    running_server,
    seat_state,
    start_race,
)


async def expect_error(ws, message: dict | bytes | str, code: str) -> dict:  # type: ignore[no-untyped-def]
    await ws.send(pack(message) if isinstance(message, dict) else message)
    answer = await raw_recv(ws)
    assert answer["type"] == "error", answer
    assert answer["code"] == code, answer
    assert answer["message"]
    return answer


async def still_open(ws) -> None:  # type: ignore[no-untyped-def]
    """The connection still answers commands."""
    await ws.send(pack({"type": "list_rooms", "seq": 999_999}))
    assert (await raw_recv(ws))["type"] == "room_list"


# -- frames that cannot be read, and messages that are not right ------------------------------


async def test_frames_that_cannot_be_read_are_refused_and_the_connection_stays() -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        # malformed msgpack, a text frame, msgpack that is not a map: no seq to answer
        for frame, code in (
            (b"\xc1\xc1\xc1", "bad_frame"),
            (b"\x92\x01", "bad_frame"),  # a truncated array
            ("hello", "bad_frame"),
            (msgpack.packb([1, 2, 3]), "bad_frame"),  # not a map: docs/protocol.md
            (msgpack.packb({"seq": 1}), "bad_message"),
        ):
            answer = await expect_error(ws, frame, code)
            assert answer["seq"] is None
        # an unknown type, and a server event sent as a command
        await expect_error(ws, {"type": "teleport", "seq": 1}, "unknown_type")
        await expect_error(
            ws,
            {
                "type": "welcome",
                "seq": 1,
                "version": "1.0",
                "server": "x",
                "max_frame": 1,
                "rate": 1.0,
                "burst": 1,
            },
            "bad_message",  # read as that event, which a client may not send
        )
        await still_open(ws)
        assert server.hub.rooms == {}


BAD_MESSAGES = [
    {"type": "list_rooms", "seq": 1, "page": 2},  # a field that does not exist
    {"type": "create_room", "seq": 1, "settings": {}},  # a field missing
    {"type": "create_room", "seq": 1, "name": "Ann", "settings": {"seats": True}},
    {"type": "create_room", "seq": 1, "name": "Ann", "settings": {"seats": 4.0}},
    {"type": "create_room", "seq": 1, "name": "Ann", "settings": {"colour": "red"}},
    {"type": "create_room", "seq": 1, "name": "Ann", "settings": {"game": "klondike"}},
    {"type": "join_room", "seq": "1", "code": "ABCDEFGH", "name": "Ann"},
    {"type": "join_room", "seq": -1, "code": "ABCDEFGH", "name": "Ann"},
    {"type": "move", "seq": 1, "move": {"kind": "fly"}},
    {"type": "move", "seq": 1, "move": {"kind": "tableau", "src": 99}},
    {"type": "move", "seq": 1, "move": {"kind": "deal"}, "player": 2},
]


@pytest.mark.parametrize("message", BAD_MESSAGES, ids=lambda m: str(sorted(m.items()))[:60])
async def test_messages_with_a_wrong_field_are_refused(message: dict) -> None:  # type: ignore[type-arg]
    async with running_server() as server, raw_client(server.url) as ws:
        answer = await expect_error(ws, message, "bad_message")
        assert answer["message"].startswith(message["type"])
        await still_open(ws)
        assert server.hub.rooms == {}


async def test_settings_that_do_not_exist_are_bad_settings() -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        for i, settings in enumerate(
            (
                {"game": "spider", "options": {"suits": 3}},
                {"game": "st-helena", "options": {"suits": 2}},
                {"game": "louis", "numbering": "xpat2"},
                {"mode": "score"},  # score needs a time limit
                {"deal_number": 0},
                {"game": "spider", "options": {"suits": "1"}},  # a number is a number
                {"game": "spider", "options": {"suits": "\u00b2"}},  # (a traceback: a review)
                {"game": "st-helena", "options": {"build": 1}},
            ),
            start=1,
        ):
            await expect_error(
                ws,
                {"type": "create_room", "seq": i, "name": "Ann", "settings": settings},
                "bad_settings",
            )
        assert server.hub.rooms == {}


async def test_hello_first_and_version_mismatch() -> None:
    async with running_server() as server:
        async with raw_client(server.url, hello=False) as ws:
            answer = await expect_error(ws, {"type": "list_rooms", "seq": 0}, "hello_first")
            assert answer["seq"] == 0  # a command before hello is still answered by its seq
            await ws.send(pack({"type": "hello", "seq": 1, "version": PROTOCOL_VERSION}))
            assert (await raw_recv(ws))["type"] == "welcome"
            await still_open(ws)
        async with raw_client(server.url, hello=False) as ws:
            answer = await expect_error(
                ws, {"type": "hello", "seq": 0, "version": "2.0"}, "version_mismatch"
            )
            assert answer["seq"] == 0
            assert await raw_close_code(ws) == 4426
        # another minor version is welcome
        async with raw_client(server.url, hello=False) as ws:
            await ws.send(pack({"type": "hello", "seq": 0, "version": "1.7", "client": "x"}))
            welcome = await raw_recv(ws)
            assert welcome["type"] == "welcome" and welcome["version"] == PROTOCOL_VERSION
            assert welcome["max_frame"] == MAX_FRAME


async def test_no_hello_in_time_is_closed_4408() -> None:
    async with (
        running_server(fast_limits(hello_timeout_s=0.1)) as server,
        raw_client(server.url, hello=False) as ws,
    ):
        assert await raw_close_code(ws) == 4408


async def test_sequence_numbers_must_increase() -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        await ws.send(pack({"type": "list_rooms", "seq": 5}))
        assert (await raw_recv(ws))["type"] == "room_list"
        answer = await expect_error(
            ws, {"type": "create_room", "seq": 3, "name": "Ann", "settings": {}}, "bad_message"
        )
        assert "sequence" in answer["message"] and answer["seq"] == 3
        assert server.hub.rooms == {}


# -- size, flooding, garbage: the connection is closed -------------------------------------------


async def test_oversized_frame_closes_1009_and_the_largest_frame_does_not() -> None:
    async with running_server() as server:
        async with raw_client(server.url) as ws:
            # exactly the limit: read, refused as a message, and the connection stays
            empty = len(msgpack.packb({"type": "list_rooms", "seq": 1, "pad": ""}))
            pad = "x" * (MAX_FRAME - empty - 2)  # a str 16 header is 2 bytes longer than a fixstr
            frame = msgpack.packb({"type": "list_rooms", "seq": 1, "pad": pad})
            assert len(frame) == MAX_FRAME
            await expect_error(ws, frame, "bad_frame")  # a string past any command's
            await still_open(ws)
        async with raw_client(server.url) as ws:
            await ws.send(msgpack.packb({"type": "list_rooms", "seq": 1, "pad": "x" * MAX_FRAME}))
            assert await raw_close_code(ws) == 1009
        await eventually(lambda: 1009 in server.close_codes)
        assert server.close_codes[1009] == 1


async def test_flooding_is_refused_then_closed_4429() -> None:
    limits = fast_limits(rate=2.0, burst=5, max_limited=4)
    async with running_server(limits) as server, raw_client(server.url) as ws:
        # hello took one token: four more commands pass, then the refusals
        for seq in range(1, 20):
            await ws.send(pack({"type": "list_rooms", "seq": seq}))
        answers = []
        with pytest.raises(Exception):  # noqa: B017 - the close ends the reading
            while True:
                answers.append(await raw_recv(ws, timeout=2))
        assert [a["type"] for a in answers[:4]] == ["room_list"] * 4
        refusals = answers[4:]
        assert len(refusals) == 4
        assert all(a["type"] == "error" and a["code"] == "rate_limited" for a in refusals)
        assert [a["seq"] for a in refusals] == [5, 6, 7, 8]
        assert ws.close_code == 4429


async def test_a_rate_limited_command_is_not_done() -> None:
    limits = fast_limits(rate=0.5, burst=1, max_limited=10)
    async with running_server(limits) as server, raw_client(server.url) as ws:
        await ws.send(pack({"type": "create_room", "seq": 1, "name": "Ann", "settings": {}}))
        answer = await raw_recv(ws)
        assert answer["type"] == "error" and answer["code"] == "rate_limited"
        assert answer["seq"] == 1
        assert server.hub.rooms == {}


async def test_garbage_again_and_again_closes_4400() -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        for _ in range(9):
            await expect_error(ws, b"\xc1", "bad_frame")
        await still_open(ws)  # nine is not too many
        await ws.send(b"\xc1")
        assert (await raw_recv(ws))["code"] == "bad_frame"
        assert await raw_close_code(ws) == 4400


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["", "   ", "x" * 25, "Ann\x07", "An\u200bn", "\t\n", "Bob\u202e", "\ue000", "\ud800x"],
)
async def test_bad_names_are_refused(name: str) -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        frame = msgpack.packb(
            {"type": "create_room", "seq": 1, "name": name, "settings": {}},
            unicode_errors="surrogatepass",
        )
        answer = await expect_error(ws, frame, "bad_frame" if "\ud800" in name else "bad_name")
        assert answer["seq"] == (None if "\ud800" in name else 1)
        assert server.hub.rooms == {}


async def test_names_are_tidied_and_must_differ_in_a_room() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["  Ann   Lee ", "Bob"], Settings())
        assert joined[0].room.members[0].name == "Ann Lee"
        async with Connection(server.url) as other:
            for taken in ("ann lee", "BOB", "Ann \t Lee"):
                with pytest.raises(ServerError) as refused:
                    await other.request(JoinRoom(seq=0, code=code, name=taken))
                assert refused.value.code == "name_taken"
            longest = "É" + "x" * 23  # 24 characters: the most a name may hold
            joined_ok = await other.request(JoinRoom(seq=0, code=code, name=longest))
            assert isinstance(joined_ok, Joined)
            assert joined_ok.room.members[-1].name == longest
        await close_all(conns)


# -- moves that are refused ------------------------------------------------------------------


async def test_moves_outside_a_race_or_by_a_non_player_are_refused() -> None:
    async with running_server() as server:
        async with Connection(server.url) as lone:
            with pytest.raises(ServerError) as nowhere:
                await move(lone, "deal")
            assert nowhere.value.code == "not_in_room"
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        with pytest.raises(ServerError) as lobby:
            await move(ann, "deal")
        assert lobby.value.code == "race_not_running"
        watcher = Connection(server.url)
        await watcher.open()
        await watcher.request(JoinRoom(seq=0, code=code, name="Cy", spectate=True))
        await start_race(conns)
        with pytest.raises(ServerError) as spectator:
            await move(watcher, "deal")
        assert spectator.value.code == "not_a_player"
        # a move names no seat: a field for another seat is refused, nothing is played
        before = seat_state(server, code, joined[1].you).board()
        assert ann.ws is not None
        await ann.ws.send(
            pack({"type": "move", "seq": 50, "player": joined[1].you, "move": {"kind": "deal"}})
        )
        refused = await ann.wait_for(Error)
        assert refused.code == "bad_message" and "player" in refused.message
        assert seat_state(server, code, joined[1].you).board() == before
        assert seat_state(server, code, joined[0].you).moves == 0
        # another seat's token cannot be used to play from a connection already seated
        with pytest.raises(ServerError) as stolen:
            await ann.request(Resume(seq=0, code=code, token=joined[1].token))
        assert stolen.value.code == "already_in_room"
        # nor a made-up one from a fresh connection
        async with Connection(server.url) as thief:
            with pytest.raises(ServerError) as bad:
                await thief.request(Resume(seq=0, code=code, token="x" * 32))
            assert bad.value.code == "bad_token"
        # a move is always for your own seat
        bob_before = seat_state(server, code, joined[1].you).board()
        played = await move(ann, "deal")
        assert isinstance(played, Moved) and len(played.shown) == 10
        assert seat_state(server, code, joined[1].you).board() == bob_before
        await move(ann, "resign")
        with pytest.raises(ServerError) as done:
            await move(ann, "deal")
        assert done.value.code == "player_done"
        # after the race
        await move(bob, "resign")
        await ann.wait_for(RaceOver)
        with pytest.raises(ServerError) as over:
            await move(bob, "deal")
        assert over.value.code == "race_not_running"
        await close_all([ann, bob, watcher])


async def test_illegal_moves_say_why_and_change_nothing() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="st-helena", undo="off")
        )
        ann, _bob = conns
        await start_race(conns)
        state = seat_state(server, code, joined[0].you)
        before = (state.board(), state.moves)
        tries = [
            ("tableau", 0, 0, "illegal_move"),
            ("tableau", 0, 15, "illegal_move"),
            ("deal", -1, -1, "illegal_move"),  # St. Helena has no stock
            ("undo", -1, -1, "undo_off"),
        ]
        # and a pile to a foundation the first deal forbids it (piles 1-4 play to the kings)
        tries += [
            ("foundation", src, dst, "illegal_move")
            for src in range(4)
            for dst in range(4, 8)
            if state.check(from_wire(WireMove(kind="foundation", src=src, dst=dst))) is not None
        ][:1]
        for kind, src, dst, code_ in tries:
            with pytest.raises(ServerError) as refused:
                await move(ann, kind, src, dst)
            assert refused.value.code == code_
            assert len(refused.value.message) > 10
            assert (state.board(), state.moves) == before
        assert server.hub.metrics.get("moves_illegal_move", 0) >= 3
        assert "moves_ok" not in server.hub.metrics
        assert server.hub.metrics.get("moves_undo_off") == 1
        await close_all(conns)


async def test_lobby_refusals() -> None:
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings(seats=2))
        ann, bob = conns
        with pytest.raises(ServerError) as not_host:
            await bob.request(Start(seq=0))
        assert not_host.value.code == "not_host"
        with pytest.raises(ServerError) as not_ready:
            await ann.request(Start(seq=0))
        assert not_ready.value.code == "not_ready" and "Bob" in not_ready.value.message
        with pytest.raises(ServerError) as twice:
            await ann.request(CreateRoom(seq=0, name="Ann", settings=Settings()))
        assert twice.value.code == "already_in_room"
        with pytest.raises(ServerError) as again:
            await ann.request(JoinRoom(seq=0, code=code, name="Ann2"))
        assert again.value.code == "already_in_room"
        async with Connection(server.url) as other:
            with pytest.raises(ServerError) as missing:
                await other.request(JoinRoom(seq=0, code="ZZZZ-ZZZZ", name="Cy"))
            assert missing.value.code == "room_not_found"
            with pytest.raises(ServerError) as no_room:
                await other.request(Leave(seq=0))
            assert no_room.value.code == "not_in_room"
            with pytest.raises(ServerError) as no_ready:
                await other.request(Ready(seq=0))
            assert no_ready.value.code == "not_in_room"
            rooms = await other.request(ListRooms(seq=0))
            assert isinstance(rooms, RoomList) and [r.code for r in rooms.rooms] == [code]
        await close_all(conns)


async def test_too_many_rooms_and_too_many_connections() -> None:
    async with running_server(fast_limits(max_rooms=1, max_connections=2)) as server:
        a = Connection(server.url)
        b = Connection(server.url)
        await a.open()
        await b.open()
        await a.request(CreateRoom(seq=0, name="Ann", settings=Settings()))
        with pytest.raises(ServerError) as full:
            await b.request(CreateRoom(seq=0, name="Bob", settings=Settings()))
        assert full.value.code == "too_many_rooms"
        async with raw_client(server.url, hello=False) as c:
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(c.recv(), 5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
            assert closed.value.rcvd.reason == "the server is full: try again later"
        await close_all([a, b])
