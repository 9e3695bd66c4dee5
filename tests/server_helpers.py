"""Helpers for tests against a real server on 127.0.0.1, port 0."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from client.net import Connection, Disconnected
from protocol import cards
from protocol.codec import EVENT_LIMITS
from protocol.codec import decode as decode_leniently
from protocol.fairness import Witness
from protocol.game import GameState
from protocol.messages import (
    PROTOCOL_VERSION,
    Command,
    CreateRoom,
    Event,
    Joined,
    JoinRoom,
    MoveCmd,
    Moved,
    PublicSettings,
    RaceRecord,
    RaceStart,
    Ready,
    Reveal,
    Settings,
    Snapshot,
    Standing,
    WireMove,
    to_wire,
)
from protocol.messages import WIRE_KINDS as KINDS
from protocol.moves import Kind, Move, Placed
from server.app import RaceServer
from server.hub import Room
from server.limits import Limits
from server.store import Store

STRICT_EVENTS = dataclasses.replace(EVENT_LIMITS, drop_unknown_fields=False)


def decode(frame: bytes) -> Command | Event:
    """A server's frame read exactly as the schema says: a client drops the fields it does not
    know (a newer minor version's), a test must not, as a field outside the schema is a server
    bug (a hidden card leaked in a field of its own, say)."""
    return decode_leniently(frame, STRICT_EVENTS)


def fast_limits(**kw: Any) -> Limits:
    base = {"countdown_ms": 50, "grace_s": 5.0, "progress_interval_s": 0.02, "tick_s": 0.01}
    base.update(kw)
    return Limits(**base)  # type: ignore[arg-type]


@asynccontextmanager
async def running_server(
    limits: Limits | None = None, store: Store | None = None, **options: Any
) -> AsyncIterator[RaceServer]:
    """A server on 127.0.0.1, any free port; ``options`` go to :class:`RaceServer`.  Its store
    is closed at the end (without a drain: as a crash would leave it)."""
    server = RaceServer(
        "127.0.0.1",
        0,
        limits=limits or fast_limits(),
        store=store or Store(":memory:"),
        **options,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        if server.store is not None:
            server.store.close()


class Recorder(Connection):
    """A connection that keeps every raw frame it received, for fairness scans."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.frames: list[bytes] = []

    async def open(self, **kw: Any) -> Any:
        welcome = await super().open(**kw)
        assert self.ws is not None
        original = self.ws.recv_messages.get  # keep the frames as they arrive

        async def tap(*a: Any, **k: Any) -> Any:
            frame = await original(*a, **k)
            if isinstance(frame, bytes):
                self.frames.append(frame)
            return frame

        self.ws.recv_messages.get = tap  # type: ignore[method-assign]
        return welcome

    def decoded(self) -> list[Any]:
        return [decode(f) for f in self.frames]


async def host_and_join(
    url: str, names: Iterable[str], settings: Settings, conn_cls: type[Connection] = Connection
) -> tuple[list[Connection], str, list[Joined]]:
    conns: list[Connection] = []
    joined: list[Joined] = []
    names = list(names)
    host = conn_cls(url)
    await host.open()
    j = await host.request(CreateRoom(seq=0, name=names[0], settings=settings))
    assert isinstance(j, Joined)
    conns.append(host)
    joined.append(j)
    code = j.room.code
    more, more_joined = await join_all(url, code, names[1:], conn_cls)
    return conns + more, code, joined + more_joined


async def join_all(
    url: str, code: str, names: Iterable[str], conn_cls: type[Connection] = Connection
) -> tuple[list[Connection], list[Joined]]:
    """A connection for each name, joined to room ``code`` in turn (players while seats last)."""
    conns: list[Connection] = []
    joined: list[Joined] = []
    for name in names:
        c = conn_cls(url)
        await c.open()
        j = await c.request(JoinRoom(seq=0, code=code, name=name))
        assert isinstance(j, Joined)
        conns.append(c)
        joined.append(j)
    return conns, joined


async def start_race(conns: list[Connection]) -> list[RaceStart]:
    for c in conns:
        await c.request(Ready(seq=0))
    return [await c.wait_for(RaceStart) for c in conns]


async def move(conn: Connection, kind: str, src: int = -1, dst: int = -1, count: int = 0) -> Moved:
    answer = await conn.request(
        MoveCmd(seq=0, move=WireMove(kind=kind, src=src, dst=dst, count=count))
    )  # type: ignore[arg-type]
    assert isinstance(answer, Moved)
    return answer


async def close_all(conns: Iterable[Connection]) -> None:
    await asyncio.gather(*(c.close() for c in conns))


def hidden_names(state: Any) -> set[str]:
    """Names of cards that are face down or in the stock, and appear nowhere face up."""
    hidden = [c for p, d in zip(state.piles, state.down, strict=True) for c in p[:d]] + list(
        state.stock
    )
    shown = [c for p, d in zip(state.piles, state.down, strict=True) for c in p[d:]]
    shown += [c for f in state.foundations for c in f]
    return {cards.name(c) for c in hidden} - {cards.name(c) for c in shown}


# -- more helpers for the server suite --------------------------------------------------------

CARD_RE = re.compile(r"^[A23456789TJQK][CSHD]$")
CARD_IN_TEXT = re.compile(r"\b[A23456789TJQK][CSHD]\b")


def room_of(server: RaceServer, code: str) -> Room:
    return server.hub.rooms[code]


def seat_state(server: RaceServer, code: str, member_id: int) -> GameState:
    """The server's own copy of a seat's board (hidden cards included): tests choose moves with it."""
    race = room_of(server, code).race
    assert race is not None
    return race.seats[member_id].state


def pick_move(state: GameState, *, prefer: str = "score", deals: bool = True) -> WireMove | None:
    """A legal move: the one that raises the score most (``prefer="score"``), or a move that
    shows no card (``prefer="quiet"``, for undo tests); deals and redeals only as a last resort
    (never with ``deals=False``: None when nothing else is left)."""
    moves = state.legal_moves()
    assert moves, "no legal move left"
    plain = [m for m in moves if m.kind not in (Kind.DEAL, Kind.REDEAL)]
    if not plain and not deals:
        return None

    def gain(m: Move) -> int:
        copy = state.copy()
        change = copy.apply(m)
        if prefer == "quiet":
            return -len(change.shown)
        return copy.score() * 10 + len(change.shown)

    return to_wire(max(plain or moves, key=gain))


async def play(
    conn: Connection,
    server: RaceServer,
    code: str,
    member_id: int,
    n: int,
    prefer: str = "score",
    deals: bool = True,
) -> list[Moved]:
    """Up to ``n`` legal moves for a seat, each acknowledged (fewer if ``deals`` is False and
    only a deal or redeal is left)."""
    answers = []
    for _ in range(n):
        wire = pick_move(seat_state(server, code, member_id), prefer=prefer, deals=deals)
        if wire is None:
            break
        answers.append(await move(conn, wire.kind, wire.src, wire.dst, wire.count))
    return answers


async def wait_until(
    conn: Connection, kind: type[Any], check: Callable[[Any], bool], timeout: float = 5
) -> Any:
    """The next event of type ``kind`` that passes ``check`` (others are dropped)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        event = await conn.wait_for(kind, max(0.01, end - loop.time()))
        if check(event):
            return event


async def closed_code(conn: Connection, timeout: float = 5) -> int | None:
    """Wait for the server to close ``conn``; the close code it sent."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        try:
            await conn.next_event(max(0.01, end - loop.time()))
        except Disconnected as gone:
            return gone.code


def continue_seq(conn: Connection, after: int) -> None:
    """Number the next commands of ``conn`` above ``after`` (a seat's numbers go on after a
    resume, whatever the connection would have used next)."""
    conn._seq = itertools.count(max(conn.next_seq(), after + 1))


# -- raw websocket clients: frames as they are --------------------------------------------------


def pack(message: dict[str, Any]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


async def raw_recv(ws: ClientConnection, timeout: float = 5) -> dict[str, Any]:
    frame = await asyncio.wait_for(ws.recv(), timeout)
    assert isinstance(frame, bytes), "the server sends binary frames only"
    data = msgpack.unpackb(frame, raw=False)
    assert isinstance(data, dict)
    decode(frame)  # every server frame is a valid protocol message
    return data


async def raw_close_code(ws: ClientConnection, timeout: float = 5) -> int | None:
    """Read until the server closes; the close code it sent."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd else None


@asynccontextmanager
async def raw_client(url: str, hello: bool = True) -> AsyncIterator[ClientConnection]:
    async with ws_connect(url, max_size=None) as ws:
        if hello:
            await ws.send(pack({"type": "hello", "seq": 0, "version": PROTOCOL_VERSION}))
            assert (await raw_recv(ws))["type"] == "welcome"
        yield ws


# -- HTTP on the same port ---------------------------------------------------------------------


async def http_get(
    server: RaceServer, path: str, send: Sequence[tuple[str, str]] = (), method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """GET ``path`` (with the request headers ``send``; or another ``method``): status, headers
    (lower case), body (none for HEAD, whatever its Content-Length says)."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        extra = "".join(f"{k}: {v}\r\n" for k, v in send)
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n{extra}"
            "Connection: close\r\n\r\n".encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        length = 0 if method == "HEAD" else int(headers.get("content-length", "0"))
        body = await asyncio.wait_for(reader.readexactly(length), 5)
        return status, headers, body
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


# -- frame scans for the fairness tests ---------------------------------------------------------


def leaves(value: Any) -> Iterator[Any]:
    """Every scalar in a decoded msgpack message (map keys included)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from leaves(v)
    else:
        yield value


def cards_in(frame: bytes) -> set[str]:
    """Every card name in a frame: as a value of its own, or a word in a message."""
    found = set()
    for leaf in leaves(msgpack.unpackb(frame, raw=False)):
        if isinstance(leaf, str):
            if CARD_RE.match(leaf):
                found.add(leaf)
            else:
                found.update(CARD_IN_TEXT.findall(leaf))
    return found


def mentions(frame: bytes, number: int, salt: str | None = None) -> bool:
    """Whether a frame holds the deal number (or the salt) in any form."""
    text = str(number)
    if text.encode() in frame or (salt and salt.encode() in frame):
        return True
    if number < 2**64 and number.to_bytes(8, "big") in frame:
        return True
    for leaf in leaves(msgpack.unpackb(frame, raw=False)):
        if isinstance(leaf, int) and not isinstance(leaf, bool) and leaf == number:
            return True
        if isinstance(leaf, str) and (text in leaf or (salt and salt in leaf)):
            return True
    return False


def witness_of(start: RaceStart | Snapshot, answers: Iterable[Moved]) -> Witness:
    """What a player was shown, for :func:`protocol.fairness.verify`."""
    assert start.board is not None
    w = Witness(start=start.board)
    for m in answers:
        played = Move(KINDS[m.move.kind], m.move.src, m.move.dst, m.move.count)
        w.saw(played, [Placed(s.pile, s.index, cards.parse(s.card)) for s in m.shown])
    return w


async def eventually(check: Callable[[], bool], timeout: float = 3) -> None:
    """Wait until ``check()`` holds (server-side state that no event announces)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        assert loop.time() < end, "the condition never held"
        await asyncio.sleep(0.01)


class Lines(logging.Handler):
    """The structured fields of every line a logger writes (the ``lines`` fixture)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.fields: list[dict[str, object]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.fields.append(dict(getattr(record, "fields", {}) or {}))

    def events(self, name: str) -> list[dict[str, object]]:
        return [f for f in self.fields if f.get("event") == name]


class StallProxy:
    """A TCP proxy in front of a server whose link can stall: while :attr:`stalled`, nothing
    goes through either way, and what was sent meanwhile is delivered when it ends (``drop``:
    lost instead), as on a wifi that stops for a while and comes back."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stalled = False
        self.drop = False
        self.to_client_only = False
        """The stall holds only what the server sends: the client's commands get through."""
        self._going = asyncio.Event()
        self._going.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"ws://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def stall(self, drop: bool = False, to_client_only: bool = False) -> None:
        self.stalled, self.drop, self.to_client_only = True, drop, to_client_only
        self._going.clear()

    def go(self) -> None:
        self.stalled = False
        self._going.set()

    async def __aenter__(self) -> StallProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer, False)),
            asyncio.create_task(self._pump(up_reader, writer, True)),
        ]
        self._tasks.update(pumps)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        # the other way delivers what it holds before the end (a late answer, a late move)
        await asyncio.wait(pumps, timeout=1)
        for task in pumps:
            task.cancel()
            self._tasks.discard(task)
        for w in (writer, up_writer):
            w.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, to_client: bool
    ) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                held = self.stalled and (to_client or not self.to_client_only)
                if held and self.drop:
                    continue
                if held:
                    await self._going.wait()
                writer.write(data)
                await writer.drain()


# -- race records kept on a player's computer -----------------------------------------------------


def one_suit_record(race_id: str = "", standings: Sequence[Standing] = ()) -> RaceRecord:
    """A finished race's record (Spider, 1 suit, deal 1), as a client keeps it."""
    settings = PublicSettings(
        game="spider", options={"suits": 1}, numbering="pysolfc", mode="first", time_limit=0,
        undo="safe", seats=2, private=False, fixed_deal=False, title="Spider (1 suit)",
    )  # fmt: skip
    reveal = Reveal(
        game="spider", options={"suits": 1}, numbering="pysolfc", number=1, salt="00",
        commitment="c",
    )  # fmt: skip
    return RaceRecord(
        race_id=race_id, room=None, settings=settings, started_at=0.0, ended_at=1.0,
        reveal=reveal, standings=list(standings), players=[],
    )  # fmt: skip
