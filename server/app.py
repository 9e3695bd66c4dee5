"""The websockets layer: sockets, frames and time around the :class:`~server.hub.Hub`.

Everything the server decides is decided by the hub; this module only decodes frames, feeds the
hub, sends what it answers, closes what it closes, ticks its clock and serves ``/healthz``,
``/metrics`` and ``/races/<id>`` over plain HTTP on the same port.

It also holds the line against the network (docs/operations.md, "Limits"): every connection
has a bounded amount of output waiting (:mod:`server.output`: a peer that does not read is cut,
4413), handshakes in progress count toward the per-address limit, and errors accepting
connections (out of file descriptors) are logged at most once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import ipaddress
import logging
import socket
import time
from collections.abc import Iterable
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Origin

from protocol.codec import DecodeError, decode_command
from protocol.messages import ProgressUpdate

from . import web
from .cluster import Cluster, ClusterConfig, ClusterJoinError
from .hub import Hub
from .limits import NETWORK_SHARE, Limits, budget_key, network_key
from .logs import RefusalLog
from .metrics import GcPauses, Histogram
from .outbox import (
    CLOSE_BAD_INPUT,
    CLOSE_FLOOD,
    CLOSE_FULL,
    CLOSE_IDLE,
    CLOSE_REPLACED,
    CLOSE_SLOW,
    CLOSE_VERSION,
    Outbox,
)
from .output import Output
from .pool import DealPool
from .store import Store

log = logging.getLogger("patience_race.server")

DRAIN_CLOSE_S = 20.0
"""The most a drain waits for clients' closing handshakes (and at most ``grace_s``): within
systemd's ``TimeoutStopSec=30`` (deploy/systemd), which kills a stop that takes longer."""

KNOWN_CLOSES = frozenset(
    {1000, 1001, 1002, 1003, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}
    | {CLOSE_BAD_INPUT, CLOSE_FLOOD, CLOSE_VERSION, CLOSE_IDLE, CLOSE_REPLACED, CLOSE_SLOW}
)
"""The close codes /metrics counts apart: the standard ones and the server's own; any other a
client chose is counted as ``other``."""

_ACCEPT_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}

_REFUSED_CLOSES = {CLOSE_BAD_INPUT: "bad_input", CLOSE_FLOOD: "flooding"}
"""Closes that say a client misbehaved: logged as ``refused`` with its address."""


IDLE_COLLECT_S = 60.0
"""The least time between two collections made because nobody was connected any more."""

CLOSE_LINGER_S = 1.5
"""How long :meth:`RaceServer.close_rooms` waits, at most, for those it told the rooms closed to
fetch the records of the races it stopped before the server goes."""


class RaceServer:
    """One server process: ``await start()``, then ``await stop()`` (or ``drain()``)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        limits: Limits | None = None,
        store: Store | None = None,
        origins: Iterable[str] | None = None,
        trusted_proxies: Iterable[str] = (),
        cluster: ClusterConfig | None = None,
        pool: DealPool | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.limits = limits or Limits()
        self.store = store
        if store is not None:
            # the server commits, in groups, before it acknowledges anything written (_flush)
            store.group_commit = True
        # the browsers' origins allowed, and no Origin at all: the terminal client sends none
        # (every one was refused with 403 when --origins was set: an operator trial), and a
        # program other than a browser could send any it likes, so refusing it guards nothing
        self.origins: list[Origin | None] | None = (
            [*(Origin(o) for o in origins), None] if origins else None
        )
        self.trusted = [
            ipaddress.ip_network(p.strip(), strict=False) for p in trusted_proxies if p.strip()
        ]
        self.pool = pool
        """Deals certified winnable, filled by a solver process in the background."""
        self.hub = Hub(self.limits, store, pool=pool)
        self.cluster_config = cluster
        self.cluster: Cluster | None = None
        """This node's Redis side, when the server is a node of a cluster (docs/cluster.md)."""
        self.sockets: dict[int, ServerConnection] = {}
        self.output = Output(self.limits, self.sockets, self.hub.count, self._doom)
        """Each connection's output beyond its socket buffer, bounded (slow readers cut)."""
        self.opening: dict[str, int] = {}
        """Connections per socket address whose WebSocket handshake is not done yet."""
        self.opening_total = 0
        self.refused_early = 0
        self._accept_log_at = 0.0
        self.refusals = RefusalLog(log)
        """``refused`` lines: an address closed or refused for abuse, at most one a minute."""
        self._accept_errors = 0
        self._old_exception_handler: Any = None
        self.server: Server | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._doomed: set[int] = set()
        """Connections the hub closed: frames still arriving on them are not handled."""
        self._close_started: set[int] = set()
        self._held: list[tuple[Outbox, float | None]] = []
        """Outboxes waiting for the group commit (in order: nothing overtakes them)."""
        self._flush_handle: asyncio.Handle | None = None
        self.frames_sent = 0
        self.frames_received = 0
        self.stopping = asyncio.Event()
        """Set when the process should drain and stop (the CLI also sets it on SIGTERM)."""
        self.failed = False
        """Storage failed: the process drained itself and should exit with an error."""
        self.restored = False
        """The rooms in the database were brought back (start got that far): from then on the
        server's clock is kept in the database, and its stop notes when it went down."""
        self.close_codes: dict[int, int] = {}
        self.started = time.monotonic()
        self.handling = Histogram(
            "patience_race_command_seconds",
            "Time from reading a command off its socket to having written every frame it causes.",
        )
        self.gc_pauses = GcPauses()
        self.gc_frozen = 0
        """Objects frozen at start-up (the command line's server freezes them once it is up)."""
        self.collect_when_idle = False
        """Run a full collection once connections have closed and nobody is connected (looked
        at each tick, at most once a minute): the command line's server, which collects
        rarely (``server.cli.tune_gc``), sets it."""
        self._collected_at = -IDLE_COLLECT_S
        self._closed_since_collect = 0
        self.loop_lag = Histogram(
            "patience_race_loop_lag_seconds",
            "How late the event loop woke for its clock tick: how long a frame can wait unread.",
        )

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    async def start(self) -> None:
        """Bind the port, join the cluster (a node), bring the rooms back, then accept
        connections: nobody is served before all of it is done.  A node that cannot join its
        cluster raises :class:`~server.cluster.ClusterJoinError` (after ``join_s``), having
        served nobody and changed nothing in the database."""
        # bound now (the port is known: a node's URL may name it), accepting only at the end
        self.server = await serve(
            self._handler,
            self.host,
            self.port,
            create_connection=self._connection_class(),
            open_timeout=self.limits.open_timeout_s,
            write_limit=self.limits.send_buffer,
            max_size=self.limits.max_frame,
            max_queue=16,
            # msgpack frames are small: compressing them costs more CPU (and a zlib context per
            # connection) than the bytes it saves
            compression=None,
            # a client gone silent (a laptop asleep, a dead link) is noticed within 25 s: at
            # 20 + 20 it took up to 45, and a ready player asleep was seated in the next race
            ping_interval=10,
            ping_timeout=10,
            close_timeout=5,
            process_request=self._process_request
            if self.cluster_config is None
            else self._process_request_cluster,
            origins=self.origins,
            server_header="patience-race",
            start_serving=False,
        )
        sock = next(iter(self.server.sockets))
        self.port = sock.getsockname()[1]
        if self.cluster_config is not None:
            # joined before anything else: a room held by another node is a redirect from the
            # first connection on, and the time spent waiting for Redis is downtime, charged to
            # nobody, not the restored seats' grace or their races' clocks
            self.cluster = Cluster(self.hub, self.cluster_config, self.port)
            # a stop asked for meanwhile ends the wait at once (SIGTERM was heard only once the
            # wait was over, half a minute on: a cluster trial): it has served nobody yet
            joining = asyncio.ensure_future(self.cluster.start())
            stop = asyncio.ensure_future(self.stopping.wait())
            try:
                await asyncio.wait({joining, stop}, return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                joining.cancel()  # start itself cancelled: no join left running (a review)
                raise
            finally:
                stop.cancel()
            if not joining.done():
                joining.cancel()
                with contextlib.suppress(asyncio.CancelledError, ClusterJoinError):
                    await joining
                raise ClusterJoinError("stopped while waiting to join the cluster")
            joining.result()  # (its ClusterJoinError, if it gave up)
            self.hub.cluster = self.cluster
        if self.pool is not None:
            self.pool.start()
        restored = self.hub.restore(time.monotonic())
        self.restored = True
        if restored:
            log.info("restored", extra={"fields": {"event": "restored", "rooms": restored}})
        if self.cluster is not None and restored:
            await self.cluster.publish()  # listed again before their players come back
        loop = asyncio.get_running_loop()
        self._old_exception_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        self._ticker = asyncio.create_task(self._tick_forever())
        await self.server.start_serving()
        self.gc_pauses.attach()
        loop_name = type(loop).__module__.split(".")[0]  # asyncio or uvloop
        log.info(
            "listening",
            extra={"fields": {"event": "listening", "url": self.url, "loop": loop_name}},
        )

    async def stop(self) -> None:
        self.gc_pauses.detach()
        if self.pool is not None:
            await self.pool.stop()
        if self.cluster is not None:
            await self.cluster.stop()  # its rooms leave the list; they come back with the node
        if (
            self.restored
            and self.hub.live is not None
            and self.store is not None
            and not self.store.closed
        ):
            with contextlib.suppress(Exception):
                # the downtime starts now (after a drain: at its start, noted then)
                self.hub.live.alive(self.hub.wall())
        if self._ticker is not None:
            asyncio.get_running_loop().set_exception_handler(self._old_exception_handler)
        self._flush()
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        # a connection whose output is backed up would hold its close (and the server's) for ever:
        # its closing handshake waits behind the buffer.  It reads nothing anyway: cut it.
        self.output.cut_backed_up("the server is stopping")
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        self.output.stop()

    async def close_rooms(self, why: str) -> None:
        """Close every room for good, telling everyone ``why``, then stop (a server that will not
        come back: the one inside ``patience-race play``, whose player quit)."""
        stopping = any(room.state == "racing" for room in self.hub.rooms.values())
        self._deliver(self.hub.close_all(time.monotonic(), why))
        self._flush()
        # whoever is still connected (a friend who joined play's room) fetches the record of
        # a race this stops, to keep it: this server will not be there to ask (a records
        # trial); a moment for it, less once they have all gone (none from a lobby, or results:
        # those races' records were fetched as they ended)
        loop = asyncio.get_running_loop()
        until = loop.time() + (CLOSE_LINGER_S if stopping else 0.0)
        while self.sockets and loop.time() < until:
            await asyncio.sleep(0.05)
        await self.stop()

    async def drain(self, retry_ms: int = 5000) -> None:
        """Graceful stop (SIGTERM): tell everyone, close with 1012, keep every received move."""
        log.info(
            "draining", extra={"fields": {"event": "draining", "connections": len(self.sockets)}}
        )
        self._deliver(self.hub.drain(retry_ms))
        self._flush()
        if self._closing:
            wait = min(self.limits.grace_s, DRAIN_CLOSE_S)
            await asyncio.wait(set(self._closing), timeout=wait)
        await self.stop()
        if self.store is not None:
            self.store.close()

    # -- connections ------------------------------------------------------------------------

    async def _handler(self, ws: ServerConnection) -> None:
        self._opened(ws)
        peer = self.client_address(ws)
        cid = self.hub.connect(time.monotonic(), peer, getattr(ws, "charged", False))
        if cid is None:
            why = self.hub.refused_why
            n = self.limits.max_per_address
            reason = {
                "restarting": "the server is restarting: try again in a moment",
                "server_full": "the server is full: try again later",
                "connecting_too_fast": "your address opens connections too fast: wait a little",
                "network_full": f"your network (its IPv6 /48) already has {NETWORK_SHARE * n} "
                "connections open here, the most it may: close one",
            }.get(
                why,
                f"your address already has {n} connection{'' if n == 1 else 's'} "
                "open here, the most it may: close one",
            )
            if why != "restarting":
                # (the /48's refusal under the /48, not the innocent /64 a ban would hit)
                whose = network_key(peer) or peer if why == "network_full" else peer
                self.refusals.note(whose, why, time.monotonic(), CLOSE_FULL)
            await ws.close(CLOSE_FULL, reason)
            self._count_close(CLOSE_FULL)
            return
        self.sockets[cid] = ws
        self.output.open(cid)
        try:
            async for frame in ws:
                if cid not in self._doomed:  # after a close decision, frames are dropped
                    self._on_frame(cid, frame)
        except ConnectionClosed:
            pass
        finally:
            self.sockets.pop(cid, None)
            self.output.close(cid)
            self._doomed.discard(cid)
            self._close_started.discard(cid)
            self._closed_since_collect += 1
            self._deliver(self.hub.disconnect(cid, time.monotonic()))
            # the code this server sent (1009, 4400...; the client's own, echoed, if it closed
            # first): a connection the server fails has no closing handshake to read it from
            sent = ws.protocol.close_sent
            code = sent.code if sent is not None else ws.close_code
            self._count_close(int(code) if code is not None else 1006)

    def _on_frame(self, cid: int, frame: bytes | str) -> None:
        """One frame from a connection, decoded, handled and answered.  (A method of its own,
        so that nothing of it stays referenced while the connection waits for its next frame:
        fewer live objects for the garbage collector to walk.)"""
        now = time.monotonic()
        self.frames_received += 1
        try:
            message = decode_command(frame)
        except DecodeError as exc:
            self._deliver(self.hub.bad_input(cid, exc.code, exc.message, exc.seq, now))
            return
        try:
            out = self.hub.handle(cid, message, now)
        except Exception:  # a bug must not take the server down: log it, tell the client
            log.exception(
                "command failed",
                extra={
                    "fields": {
                        "event": "internal_error",
                        "conn": cid,
                        "type": getattr(message, "type", "?"),
                    }
                },
            )
            out = self.hub.bad_input(
                cid,
                "bad_message",
                "the server could not handle that message",
                getattr(message, "seq", None),
                now,
            )
        self._deliver(out, now)

    def client_address(self, ws: ServerConnection) -> str:
        """The player's address: the socket's, or X-Forwarded-For's when the socket is a trusted proxy."""
        return self.request_address(ws, ws.request)

    def request_address(self, ws: ServerConnection, request: Request | None) -> str:
        peer = str(ws.remote_address[0]) if ws.remote_address else ""
        if not self._is_trusted(peer):
            return budget_key(peer)
        # the proxy overwrites the header; if a chain was passed along, the last hop is the
        # proxy's view; a proxy that adds its own line beside the client's (HAProxy's option
        # forwardfor) sends the header twice: the last line is the proxy's (get() raised on it)
        lines = request.headers.get_all("X-Forwarded-For") if request is not None else []
        candidate = lines[-1].split(",")[-1].strip() if lines else ""
        try:
            return budget_key(str(ipaddress.ip_address(candidate)))
        except ValueError:
            return budget_key(peer)

    def _count_close(self, code: int) -> None:
        # a client closing first picks its own code: any other than these counts as 0 ("other"),
        # so that clients cannot make /metrics a series a code
        if code not in KNOWN_CLOSES:
            code = 0
        self.close_codes[code] = self.close_codes.get(code, 0) + 1

    def _deliver(self, out: Outbox, received: float | None = None) -> None:
        """Send what the hub answered, once what it wrote is committed.

        Moves handled in one turn of the event loop are committed together, at the start of the
        next turn (group commit): one transaction instead of one per move.  Until then their
        answers wait here, and so does everything after them, so nothing (a progress event, say)
        tells of a move before its acknowledgement.  Closes are decided at once: no further
        frame from a connection being closed is handled."""
        for close in out.closes:
            if close.conn in self.sockets:
                self._doomed.add(close.conn)
                why = _REFUSED_CLOSES.get(close.code)
                conn = self.hub.conns.get(close.conn) if why is not None else None
                if why is not None and conn is not None:
                    self.refusals.note(conn.peer, why, time.monotonic(), close.code)
        store = self.store
        if self._held or (store is not None and store.pending):
            self._held.append((out, received))
            if self._flush_handle is None:
                self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)
            return
        self._dispatch(out, received)

    def _flush(self) -> None:
        """Commit the moves of the last turn, then send everything held for it."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        held, self._held = self._held, []
        if self.store is not None and self.store.pending:
            try:
                self.store.commit()
            except Exception:
                self._storage_failed(held)
                return
        for out, received in held:
            self._dispatch(out, received)

    def _storage_failed(self, held: list[tuple[Outbox, float | None]]) -> None:
        """The moves of the last turn could not be committed: none of them is acknowledged
        (their answers are dropped), and a server that cannot keep moves takes none: it drains,
        telling everyone to come back (the operator sees why in the log and /healthz)."""
        log.exception(
            "commit failed: draining",
            extra={"fields": {"event": "storage_error", "unanswered": len(held)}},
        )
        assert self.store is not None
        with contextlib.suppress(Exception):
            self.store.rollback()
        self.hub.count("storage_errors")
        self.failed = True
        self.stopping.set()  # the CLI drains (everyone told, 1012), stops and exits 1

    def _dispatch(self, out: Outbox, received: float | None = None) -> None:
        sends = out.sends
        i = 0
        while i < len(sends):
            event = sends[i][1]
            targets: list[tuple[int, ServerConnection]] = []
            while i < len(sends) and sends[i][1] is event:
                cid = sends[i][0]
                ws = self.sockets.get(cid)
                if ws is not None:
                    targets.append((cid, ws))
                i += 1
            if targets:
                frame = out.frame(event)
                progress = isinstance(event, ProgressUpdate)
                for cid, ws in targets:
                    self.output.send(cid, ws, frame, progress)
                self.frames_sent += len(targets)
        for close in out.closes:
            ws = self.sockets.get(close.conn)
            if ws is not None and close.conn not in self._close_started:
                self._close_started.add(close.conn)
                task = asyncio.create_task(ws.close(close.code, close.reason))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
        if received is not None:
            self.handling.observe(time.monotonic() - received)

    # -- output: bounded per connection ----------------------------------------------------

    def _doom(self, cid: int) -> str:
        """A connection the output cuts: its frames still arriving are not handled; its
        address, for the log line."""
        self._doomed.add(cid)
        conn = self.hub.conns.get(cid)
        return conn.peer if conn is not None else ""

    def pending_bytes(self) -> int:
        """Output waiting in this process, all connections: socket buffers and queues."""
        return self.output.pending_bytes()

    def _overflowed(self, ws: ServerConnection) -> None:
        """What ``ws``'s own frames made the server write (pongs) piled up past the queue's
        bound, unread: cut it."""
        cid = next((c for c, w in self.sockets.items() if w is ws), None)
        if cid is None:  # still in its handshake (or gone): nothing to tell anyone
            self.hub.count("refused_opening")
            ws.transport.abort()
            return
        self.output.cut(cid, ws, "too much output waiting: the connection does not read")

    # -- opening: handshakes count toward the limits ----------------------------------------

    def _connection_class(self) -> type[ServerConnection]:
        app = self

        class Connection(ServerConnection):
            """Counts itself from the TCP accept, not only from the finished handshake."""

            opening_key: str | None = None

            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                super().connection_made(transport)
                # (the same transport, as the stream transport it is: websockets casts it)
                app._accepting(self, self.transport)

            def connection_lost(self, exc: Exception | None) -> None:
                app._opened(self)
                super().connection_lost(exc)

            auto_written = 0
            """Bytes the protocol wrote by itself (pongs) since the buffer was last drained."""

            def data_received(self, data: bytes) -> None:
                before = self.transport.get_write_buffer_size()
                super().data_received(data)
                # what the peer's own frames make us write (a pong to each ping, a close)
                # goes straight to the socket, past the output queue and its bound: a peer
                # that pings without reading grew the buffer by 20 MB a second, for ever.  Only
                # those bytes count here (a big record being read slowly is the queue's
                # business: a keepalive ping during it must not cut its reader)
                after = self.transport.get_write_buffer_size()
                if after <= app.limits.send_buffer:
                    self.auto_written = 0
                elif after > before:
                    self.auto_written += after - before
                    if self.auto_written > app.limits.max_pending_bytes:
                        app._overflowed(self)

        return Connection

    def _accepting(self, ws: ServerConnection, transport: asyncio.Transport) -> None:
        """A TCP connection opened.  It counts toward its address's limit (and the server's)
        from now on; one past the limit may still finish its handshake, to hear why it is
        refused (1013); more are dropped at once."""
        limits = self.limits
        if limits.socket_send_buffer:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, limits.socket_send_buffer)
        peername = transport.get_extra_info("peername")
        peer = str(peername[0]) if peername else ""
        # a trusted proxy holds everyone's connections (each is counted once forwarded); an IPv6
        # subscriber's whole /64 is one client
        peer = "" if self._is_trusted(peer) else budget_key(peer)
        busy = len(self.hub.conns) + self.opening_total
        mine = self.hub.per_address.get(peer, 0) + self.opening.get(peer, 0) if peer else 0
        now = time.monotonic()
        # an address out of its budget for new connections is dropped before its handshake
        # (the budget itself is charged by the hub once the handshake is over)
        fast = bool(peer) and self.hub.budget(peer, now, "connects").wait(now) > 0
        if busy > limits.max_connections or (peer and mine > limits.max_per_address) or fast:
            self.refused_early += 1
            self.hub.count("refused_opening")
            if busy > limits.max_connections:
                why = "server_full"
            else:
                why = "connecting_too_fast" if fast else "too_many_connections"
            self.refusals.note(peer, why, now)
            transport.abort()
            return
        ws.opening_key = peer  # type: ignore[attr-defined]
        self.opening_total += 1
        if peer:
            self.opening[peer] = self.opening.get(peer, 0) + 1

    def _opened(self, ws: ServerConnection) -> None:
        """The handshake is over (done, or the connection lost): no longer opening."""
        peer = getattr(ws, "opening_key", None)
        if peer is None:
            return
        ws.opening_key = None  # type: ignore[attr-defined]
        self.opening_total -= 1
        if peer:
            left = self.opening.get(peer, 1) - 1
            if left > 0:
                self.opening[peer] = left
            else:
                self.opening.pop(peer, None)

    def _collect_idle(self, now: float) -> None:
        """Connections closed, and nobody is connected now: a full collection pauses nobody.
        Each closed connection leaves its websockets objects in reference cycles (a protocol's
        parser holds the protocol; a dropped one's stored error, its traceback), about 3 KB,
        which only a collection frees; with the server's thresholds a quiet server ran none for
        hours, 1,355 closed connections still held after a soak (a soak trial)."""
        if (
            self._closed_since_collect
            and not self.sockets
            and now - self._collected_at >= IDLE_COLLECT_S
        ):
            self._collected_at, self._closed_since_collect = now, 0
            gc.collect()

    def _is_trusted(self, peer: str) -> bool:
        if not self.trusted or not peer:
            return False
        try:
            ip = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(ip in net for net in self.trusted)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Errors accepting connections (out of file descriptors: asyncio retries a second later)
        are logged at most once a second, one line, no traceback; the rest as before."""
        exc = context.get("exception")
        if (
            isinstance(exc, OSError)
            and exc.errno in _ACCEPT_ERRNOS
            and "accept" in str(context.get("message", ""))
        ):
            self._accept_errors += 1
            self.hub.count("accept_errors")
            now = time.monotonic()
            if now - self._accept_log_at >= 1.0:
                self._accept_log_at = now
                log.warning(
                    "cannot accept connections",
                    extra={
                        "fields": {
                            "event": "accept_error",
                            "error": errno.errorcode.get(exc.errno or 0, str(exc.errno)),
                            "count": self._accept_errors,
                        }
                    },
                )
            return
        if self._old_exception_handler is not None:
            self._old_exception_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    async def _tick_forever(self) -> None:
        tick = self.limits.tick_s
        while True:
            due = time.monotonic() + tick
            await asyncio.sleep(tick)
            now = time.monotonic()
            self.loop_lag.observe(max(0.0, now - due))
            if self.output.backed_up:
                self.output.check_slow(now)
            if self.collect_when_idle:
                self._collect_idle(now)
            try:
                self._deliver(self.hub.tick(now))
                self.refusals.flush(now)
            except Exception:
                log.exception("tick failed", extra={"fields": {"event": "internal_error"}})

    # -- HTTP (server/web.py) ----------------------------------------------------------------

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        return web.respond(self, connection, request)

    async def _process_request_cluster(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        return await web.respond_in_cluster(self, connection, request)

    def metrics_text(self) -> str:
        return web.metrics_text(self)
