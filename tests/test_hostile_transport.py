"""The public internet against a real server: clients that never read, msgpack bombs, records
fetched on repeat, half-open connections, and the protocol keeping its word on errors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from client.net import Connection
from protocol.codec import (
    MAX_COMMAND_DEPTH,
    MAX_EVENT_FRAME,
    MAX_FRAME,
    decode,
    decode_command,
    encode,
)
from protocol.messages import (
    PROTOCOL_VERSION,
    GetRace,
    PlayerRecord,
    RaceOver,
    RaceRecord,
    RaceRecordMsg,
    Ready,
    Settings,
)
from server.app import RaceServer
from server.limits import budget_key
from server.outbox import CLOSE_SLOW
from server.race import MAX_ACTIONS
from server.records import ByteBudget, RecordCache
from server.store import Store
from tests.server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    http_get,
    move,
    pack,
    pick_move,
    raw_client,
    raw_recv,
    running_server,
    seat_state,
    start_race,
)
from tests.test_server_errors import expect_error, still_open

# -- 1. clients that never read ------------------------------------------------------------------


async def never_reading(server: RaceServer, code: str, name: str) -> ClientConnection:
    """A spectator whose socket takes almost nothing (tiny SO_RCVBUF) and who stops reading
    once it has joined (its pings off: it answers nothing)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (server.host, server.port))
    ws = await ws_connect(server.url, sock=sock, ping_interval=None, max_size=None)
    await ws.send(pack({"type": "hello", "seq": 0, "version": PROTOCOL_VERSION}))
    assert (await raw_recv(ws))["type"] == "welcome"
    await ws.send(
        pack({"type": "join_room", "seq": 1, "code": code, "name": name, "spectate": True})
    )
    while (answer := await raw_recv(ws))["type"] != "joined":
        assert answer["type"] != "error", answer
    ws.transport.pause_reading()
    return ws


@asynccontextmanager
async def slow_readers(server: RaceServer, code: str, n: int) -> AsyncIterator[list[Any]]:
    readers = [await never_reading(server, code, f"slow{i}") for i in range(n)]
    try:
        yield readers
    finally:
        for ws in readers:
            ws.transport.abort()


def tight_output(**kw: Any) -> Any:
    base: dict[str, Any] = {
        "send_buffer": 8192,
        "max_pending_bytes": 32768,
        "max_pending_frames": 64,
        "slow_timeout_s": 1.0,
        "socket_send_buffer": 4096,
        "rate": 100_000.0,
        "burst": 100_000,
        "max_per_address": 64,
        # (the room's own budget of updates would hold back the toggling that fills the output)
        "room_update_rate": 100_000.0,
        "room_update_burst": 100_000,
    }
    base.update(kw)
    return fast_limits(**base)


async def test_never_reading_clients_are_cut_and_output_stays_bounded() -> None:
    slow = 8
    limits = tight_output(slow_timeout_s=60.0)  # the queue's bound cuts them, not the clock
    async with running_server(limits) as server:
        conns, code, _ = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(seats=2, private=True)
        )
        ann, bob = conns
        async with slow_readers(server, code, slow):
            bound = slow * (limits.send_buffer + limits.max_pending_bytes + 4096)
            highest = 0
            toggles = 0
            # Ann toggles ready: every toggle is a room event to every member, 10 of them
            while server.close_codes.get(CLOSE_SLOW, 0) < slow:
                await ann.request(Ready(seq=0, ready=toggles % 2 == 0))
                toggles += 1
                highest = max(highest, server.pending_bytes())
                assert toggles < 5000, "the readers that never read were never cut"
            assert highest <= bound
            await eventually(lambda: len(server.sockets) == 2)
            assert server.pending_bytes() < limits.send_buffer
            # the healthy pair plays on
            await ann.request(Ready(seq=0, ready=False))
            await start_race(conns)
            await move(ann, "deal")
            await move(bob, "deal")
        await close_all(conns)


def _raw_socket(port: int) -> socket.socket:
    """A WebSocket by hand, with a small receive buffer, that has said hello (nothing read)."""
    import base64

    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16))
    s.sendall(
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert b" 101 " in head.split(b"\r\n")[0]
    s.sendall(_frame(0x2, pack({"type": "hello", "seq": 0, "version": PROTOCOL_VERSION})))
    return s


def _frame(opcode: int, payload: bytes) -> bytes:
    """A client frame (masked with a zero key: the payload as is), up to 64 KiB."""
    n = len(payload)
    size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return bytes([0x80 | opcode]) + size + b"\0\0\0\0" + payload


def _ping_flood(port: int, seconds: float) -> tuple[int, str]:
    """A raw client: the handshake, hello, then WebSocket pings as fast as it can, never reading
    (each ping makes the server write a pong).  (pings sent, how it ended)"""
    s = _raw_socket(port)
    pings = _frame(0x9, b"x" * 125) * 64
    s.settimeout(2)
    sent = 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            s.sendall(pings)
            sent += 64
        return sent, "still open"
    except OSError as exc:
        return sent, type(exc).__name__
    finally:
        s.close()


async def test_pings_from_a_peer_that_never_reads_are_bounded() -> None:
    """A pong is written for each ping straight to the socket, past the output queue: a peer
    that pings without reading grew the server's buffer by 20 MB a second until the idle
    timeout.  Now it is cut as soon as the buffer passes the connection's bound."""
    limits = tight_output(slow_timeout_s=3600.0)  # the bound cuts it, not the clock
    async with running_server(limits) as server:
        port = int(server.url.rsplit(":", 1)[1])
        flood = asyncio.create_task(asyncio.to_thread(_ping_flood, port, 20.0))
        highest = 0
        while not flood.done():
            highest = max(highest, server.pending_bytes())
            await asyncio.sleep(0.01)
        sent, ended = await flood
        assert ended != "still open", f"{sent} pings and never cut"
        assert server.output.slow_closes == 1
        # the buffer never held much more than the bound (one read's worth of pongs past it)
        assert highest <= limits.send_buffer + limits.max_pending_bytes + 64 * 1024
        await eventually(lambda: not server.sockets)


def _slow_record_reader(port: int, race_id: str) -> tuple[int, bool]:
    """Ask for a big record, read nothing for a while, send a keepalive ping (websockets sends
    one every 20 s), then read it all: (bytes read, whether the connection was cut)."""
    s = _raw_socket(port)
    s.sendall(_frame(0x2, pack({"type": "get_race", "seq": 1, "race_id": race_id})))
    time.sleep(0.5)  # a slow link: nothing read yet, the record fills the server's buffer
    s.sendall(_frame(0x9, b"keepalive"))
    time.sleep(0.3)
    got = 0
    s.settimeout(3)
    cut = False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += len(chunk)
    except TimeoutError:
        pass  # all read: the server keeps the connection
    except OSError:
        cut = True
    s.close()
    return got, cut


async def test_a_keepalive_ping_while_a_big_record_is_read_slowly_cuts_nothing() -> None:
    """The pong cut counts only what the peer's frames made the server write: a big record in
    the buffer, read slowly, with a keepalive ping meanwhile, was cut as 'does not read'."""
    limits = fast_limits(record_burst=4 * 1024 * 1024, record_rate=4 * 1024 * 1024)
    async with running_server(limits) as server:
        await finished_record(server)
        record = big_record("c" * 12, moves=30000)
        server.hub.finished[record.race_id] = record
        port = int(server.url.rsplit(":", 1)[1])
        got, cut = await asyncio.to_thread(_slow_record_reader, port, record.race_id)
        assert not cut and server.output.slow_closes == 0
        assert got > limits.send_buffer + limits.max_pending_bytes  # the whole record came


async def test_the_server_stops_with_a_never_reading_client_backed_up() -> None:
    """Its closing handshake would wait behind its full buffer for ever: it is cut instead."""
    limits = tight_output(slow_timeout_s=3600.0, max_pending_bytes=10**7, max_pending_frames=10**5)
    server = RaceServer("127.0.0.1", 0, limits=limits, store=Store(":memory:"))
    await server.start()
    stopped = False
    try:
        conns, code, _ = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(seats=2, private=True)
        )
        async with slow_readers(server, code, 1):
            toggles = 0
            while not any(p.queue for p in server.output.pipes.values()):
                await conns[0].request(Ready(seq=0, ready=toggles % 2 == 0))
                toggles += 1
                assert toggles < 5000
            await close_all(conns)
            await asyncio.wait_for(server.stop(), 20)  # (a guard: without the cut, never)
            stopped = True
            assert server.output.slow_closes == 1
    finally:
        if not stopped:
            await server.stop()
        assert server.store is not None
        server.store.close()


async def test_a_full_buffer_is_detected_and_progress_is_coalesced() -> None:
    """Only progress flows (a race on): the queue never outgrows its bound, because progress
    waiting is replaced by newer progress, and the peer is cut when its output has not moved
    for ``slow_timeout_s``: the keepalive that works when the buffer is full."""
    # (the probe off: progress reaches the queue, where the newer replaces the one waiting;
    # with it, the progress of a peer that answers no ping is held, one frame, below)
    limits = tight_output(slow_timeout_s=1.0, progress_probe_s=1e9)
    async with running_server(limits) as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(seats=2, private=True)
        )
        async with slow_readers(server, code, 3):
            await start_race(conns)
            moves = 0
            while server.close_codes.get(CLOSE_SLOW, 0) < 3:
                # a move and its undo, again and again: progress changes every time (Ann, then
                # Bob: a player's race holds at most MAX_ACTIONS moves and undos)
                who = (moves // (MAX_ACTIONS // 2)) % 2
                player, you = conns[who], joined[who].you
                wire = pick_move(seat_state(server, code, you))
                assert wire is not None
                moved = await move(player, wire.kind, wire.src, wire.dst, wire.count)
                if moved.can_undo:
                    await move(player, "undo")
                moves += 1
                assert moves < 2 * (MAX_ACTIONS // 2), "the readers that never read were never cut"
                for pipe in server.output.pipes.values():
                    assert sum(1 for _, progress in pipe.queue if progress) <= 1
            assert server.hub.metrics.get("progress_coalesced", 0) > 0
            assert server.output.slow_closes == 3
            await move(conns[1 - who], "resign")  # the race goes on
        await close_all(conns)


async def test_a_peer_that_answers_no_ping_is_held_one_progress() -> None:
    """With the probe on (the default), a watcher that reads nothing, and so answers no ping,
    is held its newest progress, one frame, whatever the race does: nothing piles up for it
    (the keepalive then closes it, in 20 s)."""
    async with running_server(tight_output(slow_timeout_s=60.0)) as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(seats=2, private=True)
        )
        async with slow_readers(server, code, 3):
            await start_race(conns)

            async def play(seconds: float) -> None:
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    wire = pick_move(seat_state(server, code, joined[0].you))
                    assert wire is not None
                    moved = await move(conns[0], wire.kind, wire.src, wire.dst, wire.count)
                    if moved.can_undo:
                        await move(conns[0], "undo")
                    await asyncio.sleep(0.01)  # (a race holds at most MAX_ACTIONS of them)

            await play(1.5)
            before = server.pending_bytes()  # what queued before the race (its start...)
            coalesced = server.hub.metrics.get("progress_coalesced", 0)
            await play(2.0)
            assert server.pending_bytes() == before  # nothing more for them
            assert sum(1 for p in server.output.pipes.values() if p.held is not None) == 3
            assert server.hub.metrics.get("progress_coalesced", 0) > coalesced + 10
            assert not server.output.slow_closes
            await move(conns[1], "resign")  # the race goes on
        await close_all(conns)


# -- 2. msgpack bombs ------------------------------------------------------------------------------

BOMBS = [
    b"\xdc\x10\x00" * 1000,  # nested array 16 headers of 4,096 items each
    (b"\xdc\x10\x00" * (MAX_FRAME // 3))[:MAX_FRAME],
    b"\x9f" * MAX_FRAME,  # fixarrays nested as deep as the frame goes
    b"\x81\xa1a" * (MAX_FRAME // 3),  # maps nested as deep as the frame goes
    b"\xde\x01\x00" * (MAX_FRAME // 3),
    b"\xdf\xff\xff\xff\xff",  # a map of 4 billion entries
    # valid msgpack, a command's shape, nested deeper than any command
    msgpack.packb({"type": "list_rooms", "seq": 1, "x": [[[[[[1]]]]]]}),
]


def test_bombs_are_refused_before_anything_is_built() -> None:
    for bomb in BOMBS:
        try:
            decode_command(bomb)
        except ValueError as exc:
            assert getattr(exc, "code", None) == "bad_frame", (bomb[:8], exc)
        else:
            raise AssertionError(f"{bomb[:8]!r} was decoded")
    # the deepest command there is still passes
    deep = {"type": "create_room", "seq": 1, "name": "Ann", "settings": {"options": {"suits": 2}}}
    assert decode_command(pack(deep)).type == "create_room"  # type: ignore[union-attr]
    assert MAX_COMMAND_DEPTH >= 3


def test_a_frame_past_a_limit_says_which() -> None:
    """A third-party client's frame past a limit is told which limit, not 'not msgpack'."""
    said = {}
    for name, value in {
        "string": {"type": "hello", "seq": 0, "version": "1.1", "client": "x" * 2000},
        "fields": {str(i): i for i in range(20)},
        "items": {"type": "hello", "seq": 0, "version": [1] * 20},
        "binary": {"type": "hello", "seq": 0, "version": b"1.1"},
    }.items():
        try:
            decode_command(msgpack.packb(value))
        except ValueError as exc:
            assert getattr(exc, "code", None) == "bad_frame"
            said[name] = str(exc)
    assert said == {
        "string": "past a limit: a string of 2,000 bytes: at most 1,024",
        "fields": "past a limit: a map of 20 fields: at most 16",
        "items": "past a limit: an array of 20 items: at most 16",
        "binary": "past a limit: a binary value: none allowed",
    }
    with pytest.raises(ValueError, match=r"^not a msgpack message"):
        decode_command(b"\xc1")  # never used in msgpack


async def test_bombs_get_bad_frame_and_the_connection_stays() -> None:
    async with running_server(fast_limits(max_bad=100)) as server, raw_client(server.url) as ws:
        for bomb in BOMBS:
            answer = await expect_error(ws, bomb, "bad_frame")
            assert answer["seq"] is None
        await still_open(ws)


async def test_events_are_read_with_generous_limits() -> None:
    """Commands are strict, events generous: a record past 64 KiB and past 4,096 moves a player
    decodes on the client side (``decode``), and is refused as a command."""
    async with running_server() as server:
        await finished_record(server)
    record = big_record("r" * 12, moves=5000)
    frame = encode(RaceRecordMsg(seq=3, record=record))
    assert MAX_FRAME < len(frame) < MAX_EVENT_FRAME
    event = decode(frame)
    assert isinstance(event, RaceRecordMsg) and len(event.record.players[0].moves) == 5000
    try:
        decode_command(frame)
    except ValueError as exc:
        assert getattr(exc, "code", None) == "bad_frame"
    else:
        raise AssertionError("a command frame over the limit was decoded")


# -- 5. errors carry the command's seq ----------------------------------------------------------


async def test_errors_to_a_readable_command_carry_its_seq() -> None:
    async with running_server() as server, raw_client(server.url) as ws:
        for message, code in (
            ({"type": "teleport", "seq": 7}, "unknown_type"),
            ({"type": "list_rooms", "seq": 8, "page": 2}, "bad_message"),
            ({"type": "ready", "seq": 9, "ready": "yes"}, "bad_message"),
            ({"type": "join_room", "seq": 10, "code": 5, "name": "Ann"}, "bad_message"),
        ):
            answer = await expect_error(ws, message, code)
            assert answer["seq"] == message["seq"], (message, answer)
        # a seq that is not a valid one is not echoed
        answer = await expect_error(ws, {"type": "teleport", "seq": True}, "unknown_type")
        assert answer["seq"] is None
        # msgpack that is not a map: bad_frame, as docs/protocol.md says
        answer = await expect_error(ws, msgpack.packb([1, 2, 3]), "bad_frame")
        assert answer["seq"] is None
        await still_open(ws)


# -- 3. records: cache, budget, HTTP caching ------------------------------------------------------


def big_record(race_id: str, moves: int) -> RaceRecord:
    """A finished race's record with ``moves`` moves for each of its two players."""
    base = RACE_RECORD_TEMPLATE
    assert base is not None
    players = [
        PlayerRecord(
            id=p.id,
            name=p.name,
            moves=["3>7:2"] * moves,
            times_ms=list(range(moves)),
            board=p.board,
        )
        for p in base.players
    ]
    return base.model_copy(update={"race_id": race_id, "players": players})


RACE_RECORD_TEMPLATE: RaceRecord | None = None


async def finished_record(server: RaceServer) -> RaceRecord:
    global RACE_RECORD_TEMPLATE
    conns, _, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings(private=True))
    await start_race(conns)
    for c in conns:
        await move(c, "resign")
    over = await conns[0].wait_for(RaceOver)
    await close_all(conns)
    record = server.hub.finished[over.race_id]
    RACE_RECORD_TEMPLATE = record
    return record


async def test_records_come_from_the_cache_within_a_byte_budget() -> None:
    limits = fast_limits(record_rate=1.0, record_burst=150_000)
    async with running_server(limits) as server:
        await finished_record(server)
        record = big_record("b" * 12, moves=6000)  # past 64 KiB, past 4,096 moves a player
        server.hub.finished[record.race_id] = record
        async with Connection(server.url) as ann:
            got = await ann.request(GetRace(seq=0, race_id=record.race_id))
            assert isinstance(got, RaceRecordMsg) and got.record == record  # the client reads it
            size = len(encode(got))
            assert size > MAX_FRAME
            assert server.hub.records.misses == 1
            again = await ann.request(GetRace(seq=0, race_id=record.race_id))
            assert again == got.model_copy(update={"seq": again.seq})  # type: ignore[union-attr]
            assert server.hub.records.hits == 1
            # 150,000 bytes at once: the third fetch finds the bucket empty
            refused = await expect_client_error(ann, GetRace(seq=0, race_id=record.race_id))
            assert refused[0] == "rate_limited" and "KiB a second" in refused[1]
            # HTTP shares the budget
            status, headers, _ = await http_get(server, f"/races/{record.race_id}")
            assert status == 429 and int(headers["retry-after"]) >= 1
            # refused before the record is looked up: no read, parse or encoding for nothing
            server.hub.records.entries.clear()
            server.hub.records.bytes = 0
            misses = server.hub.records.misses
            status, _, _ = await http_get(server, f"/races/{record.race_id}")
            refused = await expect_client_error(ann, GetRace(seq=0, race_id=record.race_id))
            assert status == 429 and refused[0] == "rate_limited"
            assert server.hub.records.misses == misses and not server.hub.records.entries
        assert server.hub.records.bytes <= limits.record_cache_bytes


async def expect_client_error(conn: Connection, command: Any) -> tuple[str, str]:
    from client.net import ServerError

    try:
        await conn.request(command)
    except ServerError as exc:
        return exc.code, exc.message
    raise AssertionError("the command was not refused")


async def test_http_records_have_an_etag_and_are_immutable() -> None:
    async with running_server() as server:
        record = await finished_record(server)
        status, headers, body = await http_get(server, f"/races/{record.race_id}")
        assert status == 200 and RaceRecord.model_validate_json(body) == record
        etag = headers["etag"]
        assert "immutable" in headers["cache-control"]
        assert headers["x-content-type-options"] == "nosniff"
        reader, writer = await asyncio.open_connection(server.host, server.port)
        try:
            writer.write(
                f"GET /races/{record.race_id} HTTP/1.1\r\nHost: x\r\n"
                f"If-None-Match: {etag}\r\nConnection: close\r\n\r\n".encode()
            )
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            assert head.split(b" ")[1] == b"304"
            assert etag.encode() in head
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        # the header twice (a cache and a proxy each adding theirs): read as one list, where it
        # was a 500 and a traceback in the log
        twice = [("If-None-Match", '"other"'), ("If-None-Match", etag)]
        status, _, _ = await http_get(server, f"/races/{record.race_id}", send=twice)
        assert status == 304
        # a 304 from the cache is free; one that read and encoded the record pays for it (304s
        # of records cycled past the cache kept the loop busy for free: a red-team trial)
        key = budget_key("127.0.0.1")
        server.hub.record_budget.rate = 1.0  # (a byte a second: what is charged stays seen)
        level = server.hub.record_budget.buckets[key][0]
        status, _, _ = await http_get(server, f"/races/{record.race_id}", send=twice)
        assert status == 304 and server.hub.record_budget.buckets[key][0] >= level
        server.hub.records.entries.clear()
        server.hub.records.bytes = 0
        status, _, _ = await http_get(server, f"/races/{record.race_id}", send=twice)
        assert status == 304
        assert level - server.hub.record_budget.buckets[key][0] >= len(body) - 10
        server.hub.record_budget.rate = 256 * 1024
        # a race that is not there costs the address's record budget too, as get_race's does
        before = server.hub.record_budget.buckets[budget_key("127.0.0.1")][0]
        status, _, _ = await http_get(server, "/races/nosuchrace00")
        assert status == 404
        after = server.hub.record_budget.buckets[budget_key("127.0.0.1")][0]
        assert before - after > 8 * 1024  # (less what refilled meanwhile)


async def test_a_record_whose_etag_does_not_match_is_sent_whole() -> None:
    """``If-None-Match`` with another tag (a copy from before an upgrade changed the encoding,
    another race's) is answered with the record, not a 304 that keeps the wrong copy."""
    async with running_server() as server:
        record = await finished_record(server)
        status, headers, body = await http_get(server, f"/races/{record.race_id}")
        assert status == 200
        stale = [("If-None-Match", '"' + "0" * 32 + '"')]
        again = await http_get(server, f"/races/{record.race_id}", send=stale)
        assert again[0] == 200 and again[2] == body and again[1]["etag"] == headers["etag"]


async def test_the_record_cache_is_bounded_by_bytes_and_the_budget_refills() -> None:
    async with running_server() as server:
        await finished_record(server)
    records = {f"r{i:011d}": big_record(f"r{i:011d}", moves=500) for i in range(20)}
    one = RecordCache(10**9).lookup("r00000000000", records).size  # type: ignore[union-attr]
    cache = RecordCache(one * 5)
    for race_id in records:
        assert cache.lookup(race_id, records) is not None
    assert cache.bytes <= one * 5 and len(cache.entries) == 5
    assert cache.lookup("missing", records) is None
    # a record bigger than the whole cache is served but not cached: it pushed everything out
    small = RecordCache(one // 2)
    small.lookup("r00000000001", records)
    assert small.lookup("r00000000000", records) is not None and not small.entries
    budget = ByteBudget(rate=100.0, burst=1000)
    assert budget.take("a", 5000, 0.0)  # any record once: the bucket then owes it
    assert not budget.take("a", 10, 1.0) and budget.take("b", 10, 1.0)
    assert budget.wait_s("a", 1.0) >= 39
    assert budget.take("a", 10, 41.0)


async def test_the_record_cache_keeps_the_records_read_last_and_one_too_big_pushes_none_out() -> (
    None
):
    """Least recently *read* goes first (a record fetched again and again stays, however many
    others pass through), and a record bigger than the whole cache is served without emptying
    it of every other."""
    async with running_server() as server:
        await finished_record(server)
    records = {f"r{i:011d}": big_record(f"r{i:011d}", moves=50) for i in range(5)}
    records["huge00000000"] = big_record("huge00000000", moves=5000)
    one = RecordCache(10**9).lookup("r00000000000", records).size  # type: ignore[union-attr]
    cache = RecordCache(one * 3)
    for race_id in ("r00000000000", "r00000000001", "r00000000002"):
        cache.lookup(race_id, records)
    cache.lookup("r00000000000", records)  # read again: the newest
    cache.lookup("r00000000003", records)  # one goes: the least recently read, r...1
    assert list(cache.entries) == ["r00000000002", "r00000000000", "r00000000003"]
    hits = cache.hits
    assert cache.lookup("huge00000000", records) is not None
    assert list(cache.entries) == ["r00000000002", "r00000000000", "r00000000003"]
    assert cache.bytes == 3 * one
    cache.lookup("r00000000000", records)
    assert cache.hits == hits + 1


def test_an_address_owing_record_bytes_is_not_forgotten_when_the_table_fills() -> None:
    """Past ``max_addresses`` the full buckets are forgotten (a forgotten address starts full:
    the same thing); one still owing bytes is kept, or a client with many addresses could wipe
    its own debt."""
    budget = ByteBudget(rate=100.0, burst=1000, max_addresses=3)
    assert budget.take("a", 50_000, 0.0)  # owes 49,000 bytes: 490 s to refill
    assert budget.take("b", 10, 0.0) and budget.take("c", 10, 0.0)
    for i in range(10):  # new addresses, the table full: it is pruned
        budget.take(f"new{i}", 10, 100.0 + i)
    assert not budget.open("a", 120.0) and not budget.take("a", 10, 120.0)
    assert budget.wait_s("a", 120.0) > 300


# -- 4. half-open connections --------------------------------------------------------------------


async def test_handshakes_in_progress_count_toward_the_address_limit() -> None:
    limits = fast_limits(max_per_address=4, open_timeout_s=30.0)
    async with running_server(limits) as server:
        loop = asyncio.get_running_loop()
        socks = []
        try:
            for _ in range(40):  # TCP open, the handshake never sent
                s = socket.socket()
                s.setblocking(False)
                await loop.sock_connect(s, (server.host, server.port))
                socks.append(s)
            await eventually(lambda: server.refused_early + server.opening_total == 40)
            assert server.opening_total <= limits.max_per_address + 1
            # the rest were dropped at once: each reads the end of its stream
            dropped = 0
            for s in socks:
                with contextlib.suppress(BlockingIOError):
                    try:
                        if s.recv(1) == b"":
                            dropped += 1
                    except ConnectionResetError:
                        dropped += 1
            assert dropped == server.refused_early >= 35
        finally:
            for s in socks:
                s.close()
        await eventually(lambda: server.opening_total == 0)
        async with Connection(server.url) as ann:  # the address can come back
            assert ann.welcome is not None


async def test_a_handshake_that_never_finishes_is_dropped() -> None:
    async with running_server(fast_limits(open_timeout_s=0.2)) as server:
        reader, writer = await asyncio.open_connection(server.host, server.port)
        try:
            writer.write(b"GET / HTTP/1.1\r\n")  # and never the rest
            assert await asyncio.wait_for(reader.read(), 5) == b""
            await eventually(lambda: server.opening_total == 0)
        finally:
            writer.close()


def test_accept_errors_are_logged_once_a_second_and_the_file_limit_is_raised() -> None:
    """A server at its open-file limit: accept() fails with EMFILE.  One line a second, no
    tracebacks; and the server raised its soft limit to the hard one at start."""
    hard = 80

    def low_limits() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, hard))

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "server.cli",
            "--port",
            "0",
            "--db",
            ":memory:",
            "--max-per-address",
            "1000",
            "--max-connections",
            "1000",
            "--loop",
            "asyncio",
        ],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=low_limits,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    socks: list[socket.socket] = []
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = int(line.rsplit(":", 1)[1].split()[0].strip("/"))
        soft = _soft_limit(proc.pid)
        assert soft == hard
        for _ in range(hard + 20):
            s = socket.create_connection(("127.0.0.1", port))
            socks.append(s)
        time.sleep(2.5)  # (not a timed assertion: the server needs some seconds of EMFILE)
        for s in socks:
            s.close()
        proc.terminate()
        err = proc.communicate(timeout=10)[1]
    finally:
        for s in socks:
            s.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err, err[-2000:]
    lines = [x for x in err.splitlines() if "accept_error" in x]
    assert 1 <= len(lines) <= 4, err[-2000:]


def _soft_limit(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for row in f:
            if row.startswith("Max open files"):
                return int(row.split()[3])
    raise AssertionError("no open-file limit")


# -- 1b. a slow link that reads everything, slowly ----------------------------------------------


@asynccontextmanager
async def throttled(server: RaceServer, rate: int) -> AsyncIterator[str]:
    """A TCP relay to ``server`` whose server-to-client side carries ``rate`` bytes a second
    (a hotel's wifi behind a proxy): it reads from the server as a proxy does, into buffers
    of the usual size, so what the link has not carried waits there, where the server's own
    socket cannot see it.  The URL to connect to."""
    tasks: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, slow: bool) -> None:
        try:
            while data := await reader.read(rate // 10 if slow else 65536):
                writer.write(data)
                await writer.drain()
                if slow:
                    await asyncio.sleep(0.1)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(server.host, server.port)
        for t in (
            asyncio.create_task(pipe(client_r, server_w, False)),
            asyncio.create_task(pipe(server_r, client_w, True)),
        ):
            tasks.add(t)
            t.add_done_callback(tasks.discard)

    relay_server = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = relay_server.sockets[0].getsockname()[1]
    try:
        yield f"ws://127.0.0.1:{port}"
    finally:
        relay_server.close()
        for t in list(tasks):
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await relay_server.wait_closed()


async def test_a_slow_link_gets_fresh_progress_and_its_pong_in_time() -> None:
    """A link of a couple of KB a second that reads everything: progress, many times a
    second, filled the buffers on the way (the server's, a proxy's) with minutes of stale
    progress, the pong waited behind them and the client, finding no answer to its ping,
    reconnected every 15 s (a flaky-network trial).  Progress now waits while a ping goes
    unanswered (``progress_probe_s``), which a proxy's buffers do not hide: what arrives is
    recent, a ping is answered within seconds, and a drain's notice still comes before its
    close (held progress made it lost once: a review)."""
    limits = fast_limits(rate=100_000.0, burst=100_000, progress_interval_s=0.1)
    async with running_server(limits) as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob", "Cy", "Dee"], Settings(seats=4, private=True)
        )
        async with throttled(server, 2000) as url, raw_client(url) as eve:
            await eve.send(
                pack({"type": "join_room", "seq": 1, "code": code, "name": "Eve", "spectate": True})
            )
            while (await raw_recv(eve))["type"] != "joined":
                pass
            await start_race(conns)
            began = time.monotonic()  # the race's time 0, near enough
            seen: list[tuple[float, float]] = []  # (when received, the race's time in it)
            kinds: list[str] = []

            async def watch() -> None:
                while True:
                    event = msgpack.unpackb(await eve.recv())
                    kinds.append(event["type"])
                    if event["type"] == "progress":
                        seen.append((time.monotonic(), event["elapsed_ms"] / 1000))

            watching = asyncio.create_task(watch())
            while time.monotonic() < began + 8:  # Ann plays and undoes: progress each time
                wire = pick_move(seat_state(server, code, joined[0].you))
                assert wire is not None
                moved = await move(conns[0], wire.kind, wire.src, wire.dst, wire.count)
                if moved.can_undo:
                    await move(conns[0], "undo")
                await asyncio.sleep(0.02)
            asked = time.monotonic()
            await asyncio.wait_for(await eve.ping(), 30)
            answered = time.monotonic() - asked
            when, elapsed = seen[-1]  # how far behind the race the latest progress was
            behind = when - began - elapsed
            assert answered < 6.0 and behind < 6.0, (answered, behind, len(seen))
            assert server.hub.metrics.get("progress_coalesced", 0) > 0
            await server.drain()
            await asyncio.wait_for(asyncio.gather(watching, return_exceptions=True), 30)
            assert kinds[-1] == "notice" and server.output.slow_closes == 0, kinds[-3:]
        await close_all(conns)
