"""Every connection's output that the network has not taken yet, bounded; a peer that does not
read is cut (4413).

The server writes a frame straight to its socket while the socket's buffer holds less than
``send_buffer``; past that, frames wait in the connection's :class:`Pipe` (a ``progress``
replaced by a newer one), a task writes them as the buffer drains, and a connection whose
output stays over the bound for ``slow_timeout_s``, or whose queue passes ``max_pending_bytes``
or ``max_pending_frames``, is cut: a close frame after what is buffered, then the socket dropped
with everything waiting (docs/operations.md, "Limits").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State

from .limits import Limits
from .outbox import CLOSE_SLOW

log = logging.getLogger("patience_race.server")


class Pipe:
    """A connection's output that the network has not taken yet, beyond its socket's buffer.

    Frames are written to the socket while its buffer holds less than ``send_buffer``; after
    that they wait here, progress replaced by newer progress, and a task writes them as the
    buffer drains.  ``over_since`` is when the output went over the bound (None while under)."""

    __slots__ = ("bytes", "held", "over_since", "probed_at", "probing", "queue", "task")

    def __init__(self) -> None:
        self.queue: deque[tuple[bytes, bool]] = deque()
        """(frame, is progress)"""
        self.bytes = 0
        self.over_since: float | None = None
        self.task: asyncio.Task[None] | None = None
        self.held: bytes | None = None
        """The newest progress, held while the last probe goes unanswered (:meth:`Output.send`)."""
        self.probing = False
        self.probed_at = -1e9


class Output:
    """The output of every connection of one server (``sockets``, shared with it, by id).

    ``count`` counts an event for /metrics (``progress_coalesced``); ``doom`` is told of a
    connection about to be cut (its frames still arriving are not handled) and answers its
    address, for the log."""

    def __init__(
        self,
        limits: Limits,
        sockets: dict[int, ServerConnection],
        count: Callable[[str], None],
        doom: Callable[[int], str],
    ) -> None:
        self.limits = limits
        self.sockets = sockets
        self.count = count
        self.doom = doom
        self.pipes: dict[int, Pipe] = {}
        self._over: dict[int, Pipe] = {}
        """Connections whose output is over ``send_buffer`` (checked on each tick)."""
        self._probes: set[asyncio.Task[None]] = set()
        """Pings waiting for their answer before a connection's next progress (:meth:`send`)."""
        self.slow_closes = 0

    def open(self, cid: int) -> None:
        self.pipes[cid] = Pipe()

    def close(self, cid: int) -> None:
        """The connection is gone: what waited for it goes."""
        pipe = self.pipes.pop(cid, None)
        self._over.pop(cid, None)
        if pipe is not None and pipe.task is not None:
            pipe.task.cancel()

    def cut_backed_up(self, reason: str) -> None:
        """Cut every connection whose output is over the bound (the server stops: a backed-up
        connection's closing handshake would wait behind its buffer for ever)."""
        for cid in list(self._over):
            ws = self.sockets.get(cid)
            if ws is not None:
                self.cut(cid, ws, reason)

    def stop(self) -> None:
        """Cancel every writing task and probe."""
        for pipe in list(self.pipes.values()):
            if pipe.task is not None:
                pipe.task.cancel()
        for task in list(self._probes):
            task.cancel()

    @property
    def backed_up(self) -> bool:
        """Is any connection's output over the bound (:meth:`check_slow` has work)?"""
        return bool(self._over)

    def send(self, cid: int, ws: ServerConnection, frame: bytes, progress: bool) -> None:
        """Write ``frame`` to ``ws`` now if its socket buffer has room, else queue it (bounded);
        ``progress``: a ``progress`` event, which a newer one replaces.

        A progress waits while the connection's last probe (a ping, at most one every
        ``progress_probe_s``) has gone that long unanswered: the link, or a proxy's buffers
        on the way, still hold what it was given, and only the newest progress is kept for when
        the answer comes.  Anything else goes at once, the progress held first (in order)."""
        if ws.protocol.state is not State.OPEN:
            return
        pipe = self.pipes.get(cid)
        if pipe is None:
            return
        every = self.limits.progress_probe_s
        if progress:
            now = time.monotonic()
            if pipe.probing and now - pipe.probed_at >= every:
                if pipe.held is not None:
                    self.count("progress_coalesced")
                pipe.held = frame
                return
            self._write(cid, ws, pipe, frame, True)
            if not pipe.probing and now - pipe.probed_at >= every:
                pipe.probing, pipe.probed_at = True, now
                task = asyncio.create_task(self._probe(cid, ws, pipe))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)
            return
        if pipe.held is not None:
            held, pipe.held = pipe.held, None
            self._write(cid, ws, pipe, held, True)
        self._write(cid, ws, pipe, frame, False)

    async def _probe(self, cid: int, ws: ServerConnection, pipe: Pipe) -> None:
        """Ping ``ws`` and wait for its answer; then send the progress held meanwhile."""
        try:
            pong = await ws.ping()
            await pong
        except Exception:  # the connection went away: its handler cleans up
            return
        finally:
            pipe.probing = False
        if pipe.held is not None and self.pipes.get(cid) is pipe:
            held, pipe.held = pipe.held, None
            if ws.protocol.state is State.OPEN:
                self._write(cid, ws, pipe, held, True)

    def _write(
        self, cid: int, ws: ServerConnection, pipe: Pipe, frame: bytes, progress: bool
    ) -> None:
        limit = self.limits.send_buffer
        if not pipe.queue and ws.transport.get_write_buffer_size() < limit:
            ws.protocol.send_binary(frame)
            ws.send_data()
            if ws.transport.get_write_buffer_size() >= limit:
                self._mark_over(cid, pipe)
            return
        queue = pipe.queue
        if progress:  # only the latest progress matters: drop the one waiting, if any
            for k, (old, was_progress) in enumerate(queue):
                if was_progress:
                    del queue[k]
                    pipe.bytes -= len(old)
                    self.count("progress_coalesced")
                    break
        queue.append((frame, progress))
        pipe.bytes += len(frame)
        self._mark_over(cid, pipe)
        if len(queue) > 1 and (
            pipe.bytes > self.limits.max_pending_bytes
            or len(queue) > self.limits.max_pending_frames
        ):
            self.cut(cid, ws, "too much output waiting: the connection does not read")
            return
        if pipe.task is None:
            pipe.task = asyncio.create_task(self._pump(cid, ws, pipe))

    def _mark_over(self, cid: int, pipe: Pipe) -> None:
        if pipe.over_since is None:
            pipe.over_since = time.monotonic()
            self._over[cid] = pipe

    async def _pump(self, cid: int, ws: ServerConnection, pipe: Pipe) -> None:
        """Write ``pipe``'s queue as the socket buffer drains."""
        limit = self.limits.send_buffer
        try:
            while pipe.queue:
                drain = getattr(ws, "drain", None)  # (websockets 15-17 have it; else poll)
                if drain is not None:
                    await drain()  # returns when the buffer is under its low-water mark
                if ws.protocol.state is not State.OPEN:
                    return
                if ws.transport.get_write_buffer_size() >= limit:
                    await asyncio.sleep(self.limits.tick_s)
                    continue
                while pipe.queue and ws.transport.get_write_buffer_size() < limit:
                    frame, _ = pipe.queue.popleft()
                    pipe.bytes -= len(frame)
                    ws.protocol.send_binary(frame)
                    ws.send_data()
        except Exception:  # the connection went away: its handler cleans up
            return
        finally:
            pipe.task = None

    def check_slow(self, now: float) -> None:
        """Cut connections whose output stayed over the bound for ``slow_timeout_s``; clear the
        mark of those back under it.  This is the keepalive that works when the buffer is full:
        websockets' own ping waits behind the buffer (its send drains first)."""
        limit = self.limits.send_buffer
        timeout = self.limits.slow_timeout_s
        for cid, pipe in list(self._over.items()):
            ws = self.sockets.get(cid)
            if ws is None:
                self._over.pop(cid, None)
                continue
            if not pipe.queue and ws.transport.get_write_buffer_size() < limit:
                pipe.over_since = None
                self._over.pop(cid, None)
            elif pipe.over_since is not None and now - pipe.over_since >= timeout:
                self.cut(cid, ws, "output not read: the connection is too slow")

    def cut(self, cid: int, ws: ServerConnection, reason: str) -> None:
        """Close a connection that does not read: a close frame goes after what is buffered
        (the peer will not read it), and the socket is dropped at once with everything waiting."""
        pipe = self.pipes.get(cid)
        if pipe is not None:
            pipe.queue.clear()
            pipe.bytes = 0
            if pipe.task is not None:
                pipe.task.cancel()
        self._over.pop(cid, None)
        address = self.doom(cid)
        self.slow_closes += 1
        log.info(
            "slow connection cut",
            extra={
                "fields": {
                    "event": "slow_closed",
                    "conn": cid,
                    "address": address,
                    "reason": reason,
                }
            },
        )
        with contextlib.suppress(Exception):
            if ws.protocol.state is State.OPEN:
                ws.protocol.fail(CLOSE_SLOW, reason)
                ws.send_data()
        ws.transport.abort()

    def pending_bytes(self) -> int:
        """Output waiting in this process, all connections: socket buffers and queues."""
        total = 0
        for cid, ws in self.sockets.items():
            total += ws.transport.get_write_buffer_size()
            pipe = self.pipes.get(cid)
            if pipe is not None:
                total += pipe.bytes
        return total
