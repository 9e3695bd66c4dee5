"""The client's network connection: commands with sequence numbers, their answers, and events.

    async with Connection("ws://127.0.0.1:8765") as conn:
        joined = await conn.request(JoinRoom(seq=0, code="K7QM-X2PF", name="Ann"))
        event = await conn.next_event()

``request`` numbers the command, sends it and returns the server's first answer to it (raising
:class:`ServerError` for an ``error``); every other event waits in order for ``next_event``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self
from urllib.parse import urljoin

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from protocol.codec import MAX_EVENT_FRAME, DecodeError, decode, encode
from protocol.messages import (
    PROTOCOL_VERSION,
    Command,
    Error,
    Event,
    Hello,
    ProgressUpdate,
    Redirect,
    Welcome,
)

log = logging.getLogger("patience_race.net")

DEFAULT_URL = "ws://127.0.0.1:8765"
MAX_REDIRECTS = 3
"""How many ``redirect`` answers one command follows (docs/cluster.md)."""
URL_ENV = "PATIENCE_RACE_SERVER"
PING_S = 5.0
PING_TIMEOUT_S = 8.0
CLOSE_TIMEOUT_S = 2.0
"""A ping every 5 s, answered within 8: a link that stalls silently is given up within 13 s
(websockets' own keepalive waited for a close too: at its 10 s default a stall took 20 to 22 s
to notice).  A late answer is waited for while other frames keep coming (up to
:data:`PONG_LATE_S`): a slow link is alive, its pong behind what it is still carrying (a
player on a slow link reconnected every 15 s while the race came in: a flaky-network trial)."""
PONG_LATE_S = 30.0


MAX_EVENTS = 4096
"""Events waiting to be read: past it a ``progress`` (the next one says it all again) is dropped,
and any other event ends the connection (a server that floods, or a reader stuck: the seat is
taken back, the snapshot says everything again)."""

TRANSIENT = frozenset({"shutting_down", "server_busy", "rate_limited"})
"""Error codes that say "later", not "never" (a server stopping or full, an address over a
budget): a reconnection, the player's or a bot's, tries again."""


class ServerError(Exception):
    """The server refused a command."""

    def __init__(self, error: Error) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.code = error.code
        self.message = error.message


class Disconnected(Exception):
    """The connection is gone (``code`` and ``reason`` as the server closed it, if it did)."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"disconnected ({code}): {reason}" if code else "disconnected")
        self.code = code
        self.reason = reason


class Connection:
    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: str = "patience-race",
        seqs: Iterator[int] | None = None,
    ) -> None:
        self.url = url
        self.client = client
        self.ws: ClientConnection | None = None
        self.welcome: Welcome | None = None
        self.events: asyncio.Queue[Event | Disconnected] = asyncio.Queue()
        self._pending: dict[int, asyncio.Future[Event]] = {}
        # Sequence numbers only have to increase for a seat, across connections and restarts of
        # the client: starting from the clock in milliseconds keeps them increasing (the rate
        # limit allows far fewer than 1000 commands a second).
        self._seq = seqs if seqs is not None else itertools.count(int(time.time() * 1000))
        self._reader: asyncio.Task[None] | None = None
        self._keepalive: asyncio.Task[None] | None = None
        self.heard = 0.0
        """When a frame last came (the event loop's clock): a sign of life as good as a pong."""
        self.closed: Disconnected | None = None

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, *exc: type[BaseException] | BaseException | TracebackType | None
    ) -> None:
        await self.close()

    def next_seq(self) -> int:
        return next(self._seq)

    async def open(self, *, open_timeout: float = 10) -> Welcome:
        self.ws = await connect(
            self.url,
            max_size=MAX_EVENT_FRAME,
            open_timeout=open_timeout,
            ping_interval=None,  # (the keepalive below: any frame is a sign of life)
            close_timeout=CLOSE_TIMEOUT_S,
        )
        self.closed = None
        self.heard = asyncio.get_running_loop().time()
        self._reader = asyncio.create_task(self._read())
        self._keepalive = asyncio.create_task(self._keep_alive(self.ws))
        self._keepalive.add_done_callback(_retrieved)
        welcome = await self.request(Hello(seq=0, version=PROTOCOL_VERSION, client=self.client))
        assert isinstance(welcome, Welcome)
        self.welcome = welcome
        return welcome

    async def close(self, timeout: float | None = None) -> None:
        """Close the connection; with ``timeout``, a closing handshake the server does not
        answer in time is cut short (the socket aborted), and the reader stops all the same (a
        bot's close cut short from outside left both behind: a review)."""
        self._stop_keepalive()
        try:
            if self.ws is not None:
                try:
                    await asyncio.wait_for(self.ws.close(), timeout)
                except TimeoutError:
                    self.ws.transport.abort()
        finally:
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader

    async def send_raw(self, data: bytes | str) -> None:
        """Send a frame as it is (tests of bad input)."""
        assert self.ws is not None
        await self.ws.send(data)

    async def request(self, command: Command, timeout: float = 10) -> Event:
        """Send ``command`` (its ``seq`` replaced by the next number) and return its answer.

        A ``redirect`` (the room is held by another node of a cluster) is followed: the
        connection moves to the node's URL (a path is resolved against the current URL) and
        the command is sent again there, at most :data:`MAX_REDIRECTS` times."""
        for _hop in range(MAX_REDIRECTS + 1):
            if self.ws is None or self.closed is not None:
                raise self.closed or Disconnected(None, "not connected")
            command = command.model_copy(update={"seq": self.next_seq()})
            answer = await self.resend(command, timeout)
            if not isinstance(answer, Redirect):
                return answer
            await self.move_to(urljoin(self.url, answer.url))
        raise ServerError(
            Error(seq=command.seq, code="room_not_found", message="redirected too many times")
        )

    async def move_to(self, url: str) -> None:
        """Close this connection and open one to ``url`` in its place (nothing is queued for
        the connection closed: it was left, not lost)."""
        self._stop_keepalive()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self.ws is not None:
            await self.ws.close()
        self.url = url
        try:
            await self.open()
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI, Disconnected) as exc:
            # the node holding the room is down (a proxy's 502, nothing listening), silent, or
            # its address is no WebSocket's: said as a drop, which every caller handles (a join
            # through a node whose neighbour was down ended in a traceback: a cluster trial)
            why = (
                "no answer"
                if isinstance(exc, TimeoutError)
                else getattr(exc, "strerror", None) or str(exc)
            )
            # what open() made is let go: the socket and its reader (a node that took the
            # connection and never said welcome kept both, out of every close's reach: a review)
            self._stop_keepalive()
            if self.ws is not None:
                self.ws.transport.abort()
                self.ws = None
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._reader
            self.closed = Disconnected(
                None,
                f"the server node holding the room, {url}, cannot be reached ({why}): it may "
                "be restarting; try again in a moment",
            )
            self.events.put_nowait(self.closed)  # whoever reads the events learns it too
            raise self.closed from None

    async def resend(self, command: Command, timeout: float = 10) -> Event:
        """Send ``command`` with its own ``seq`` (a repeat is answered again, never applied twice)."""
        assert self.ws is not None
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._pending[command.seq] = future
        try:
            await self.ws.send(encode(command))
            answer = await asyncio.wait_for(future, timeout)
        except ConnectionClosed as exc:
            raise self._gone(exc) from None
        finally:
            self._pending.pop(command.seq, None)
            if future.done() and not future.cancelled():
                # the reader may have failed it as the send failed: that error is raised above
                # (left unread, asyncio printed "Future exception was never retrieved")
                future.exception()
        if isinstance(answer, Error):
            raise ServerError(answer)
        return answer

    async def next_event(self, timeout: float | None = 10) -> Event:
        item = await asyncio.wait_for(self.events.get(), timeout)
        if isinstance(item, Disconnected):
            self.events.put_nowait(item)  # stays closed for every later reader
            raise item
        return item

    async def wait_for(self, kind: type[Any], timeout: float = 10) -> Any:
        """The next event of type ``kind``; others before it are dropped."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            event = await self.next_event(max(0.0, end - loop.time()))
            if isinstance(event, kind):
                return event

    def _gone(self, exc: ConnectionClosed) -> Disconnected:
        rcvd = exc.rcvd
        return Disconnected(rcvd.code if rcvd else None, rcvd.reason if rcvd else "connection lost")

    async def _keep_alive(self, ws: ClientConnection) -> None:
        """Ping every :data:`PING_S`; a pong not come :data:`PING_TIMEOUT_S` after the ping or
        after the last frame, whichever is later (and :data:`PONG_LATE_S` after the ping at
        most), ends the connection: the socket is dropped, and the reader says it is lost."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                await asyncio.sleep(PING_S)
                pong = asyncio.ensure_future(await ws.ping())
                pong.add_done_callback(_retrieved)
                asked = loop.time()
                while not pong.done():
                    now = loop.time()
                    deadline = min(max(asked, self.heard) + PING_TIMEOUT_S, asked + PONG_LATE_S)
                    if now >= deadline:
                        ws.transport.abort()
                        return
                    await asyncio.wait([pong], timeout=deadline - now)
                if pong.cancelled() or pong.exception() is not None:
                    return  # the connection closed meanwhile: the reader says so
        except ConnectionClosed:
            return

    def _stop_keepalive(self) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
            self._keepalive = None

    async def _read(self) -> None:
        assert self.ws is not None
        loop = asyncio.get_running_loop()
        try:
            async for frame in self.ws:
                self.heard = loop.time()
                try:
                    event = decode(frame)
                except DecodeError:
                    continue
                if not isinstance(event, Event):
                    continue
                seq = getattr(event, "seq", None)
                future = self._pending.get(seq) if seq is not None else None
                if future is not None and not future.done():
                    future.set_result(event)
                elif self.events.qsize() < MAX_EVENTS:
                    self.events.put_nowait(event)
                elif not isinstance(event, ProgressUpdate):
                    await self.ws.close(1008, "too many events unread")
                    break
        except ConnectionClosed as exc:
            self.closed = self._gone(exc)
        else:
            self.closed = self._gone_clean()
        self._stop_keepalive()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(self.closed)
        self.events.put_nowait(self.closed)

    def _gone_clean(self) -> Disconnected:
        assert self.ws is not None
        return Disconnected(self.ws.close_code, self.ws.close_reason or "closed")


def _retrieved(done: asyncio.Future[Any]) -> None:
    """Take a finished future's exception, so that none is printed as never retrieved (under
    the game's screen): the keepalive's pong, and the keepalive itself."""
    if not done.cancelled() and done.exception() is not None:
        log.debug("keepalive: %s", done.exception())
