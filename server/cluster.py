"""One node of a cluster: the server's Redis side (docs/cluster.md).

A server started with ``--node NAME --redis URL`` is one node of a cluster.  Rooms stay where they
were made, in one process; Redis only knows *where* each room is, and lists the public ones:

``PREFIX nodes``          set of node names
``PREFIX node:NAME``      the node's advertised URL (what a redirect sends clients to); it
                          expires unless the node's heartbeat renews it
``PREFIX rooms:NAME``     hash: room code -> its public summary as JSON ("" for a private room);
                          expires with the node
``PREFIX race:ID``        the node holding a finished race's record (kept 30 days)
``PREFIX instance:NAME``  which process beats under the name (a random id, expiring as the
                          heartbeat): a second process under a name in use waits, then gives up
``PREFIX departed``       set of the nodes that left lately (stopped, or found dead)...
``PREFIX departed:NAME``  ...each one's URL, and ``departed-rooms:NAME`` its room codes, for
                          :data:`DEPARTED_S`: a node started meanwhile sends them on to it
``PREFIX events``         pub/sub channel: each node's changes, as JSON

Every node keeps in memory the map of room code -> node and the public summaries of the rooms of
every other node (:class:`server.directory.Directory`, plain state; fed by the channel, checked
against the keys every heartbeat and read in full now and then), so the hub, a plain synchronous
state machine, answers from memory at once: a room held elsewhere is a ``redirect`` to its node
(:meth:`Cluster.locate`), ``list_rooms`` adds the other nodes' public rooms
(:meth:`Cluster.remote_summaries`). The node publishes its own rooms by comparing the hub's
rooms with what it published last, a few times a second: the hub is not asked to tell it
anything.

A node that stops removes what is its own; a node that disappears (killed, its machine gone)
is removed by the first other node that sees its heartbeat key expired.  A node starting joins
(Redis has answered its first heartbeat and its first read of the others) before the server
serves anyone, or gives up after a bounded time (:class:`ClusterJoinError`).  Redis going away
later does not stop a node: it goes on serving its own rooms and its players, and registers
again when Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from protocol.messages import RoomSummary

from .directory import Directory

if TYPE_CHECKING:
    from .hub import Hub

log = logging.getLogger("patience_race.server")

NODE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
RACE_RECORD_TTL_S = 30 * 24 * 3600
"""How long Redis remembers which node holds a finished race's record."""
DEPARTED_S = 300.0
"""How long the rooms of a node that left are still redirected to it: a player reconnecting
through any node while it restarts is sent on to it (and retries until it is back) rather than
told the room is gone."""
STOP_S = 3.0
"""The longest each step of a node's leaving (its tasks, its last writes, closing the Redis
client) may take."""
ERROR_LINE_S = 60.0
"""While Redis is away, a ``cluster_error`` line at most this often: the first one of an outage
at once (with its traceback), the next ones with the count of errors since the line before."""
JOIN_EXPIRIES = 3
"""A node starting tries to join its cluster for this many node expiries (30 s by default), then
gives up (:class:`ClusterJoinError`: the server exits with status 2, for systemd or compose to
start it again)."""


@dataclass(frozen=True)
class ClusterConfig:
    node: str
    """This node's name: lower-case letters, digits, ``.``, ``-`` and ``_``; unique in the
    cluster, and the path ``/n/NAME/`` on the proxy."""
    redis_url: str
    url: str = ""
    """What clients are redirected to: a path on the proxy (``/n/NODE/``, the default) or a
    whole ``ws://``/``wss://`` URL; ``{port}`` is replaced by the port the server listens on."""
    expiry_s: float = 10.0
    """A node whose heartbeat stops is removed after this long; it beats four times as often."""
    prefix: str = "patience-race:"

    def __post_init__(self) -> None:
        if not NODE_NAME.match(self.node):
            raise ValueError(
                f"node name {self.node!r}: 1 to 63 lower-case letters, digits, ., - or _, "
                "starting with a letter or digit"
            )
        if not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"redis URL {self.redis_url!r}: redis://HOST:PORT/DB")
        db = urlsplit(self.redis_url).path.strip("/")
        if self.redis_url.startswith(("redis://", "rediss://")) and db and not db.isdigit():
            # (".../abc" joined database 0, another cluster's: a cluster trial)
            raise ValueError(
                f"redis URL {shown_url(self.redis_url)!r}: the database is a number, not {db!r}"
            )
        if self.url and not (self.url.startswith("/") or self.url.startswith(("ws://", "wss://"))):
            # (an http:// one started, and every player sent there hit an error: a trial)
            raise ValueError(
                f"node URL {self.url!r}: a path on the proxy (/n/NODE/) or a ws:// or wss:// URL"
            )
        if self.expiry_s < 0.5:
            raise ValueError("the node expiry is at least 0.5 s")

    @property
    def join_s(self) -> float:
        """How long a node starting tries to join before it gives up."""
        return JOIN_EXPIRIES * self.expiry_s

    def advertised(self, port: int) -> str:
        url = self.url or f"/n/{self.node}/"
        return url.replace("{port}", str(port))


class ClusterJoinError(Exception):
    """A node starting could not join its cluster: Redis did not answer (or refused it) for
    :attr:`ClusterConfig.join_s`.  The message says which Redis and why, never a password."""


def shown_url(url: str) -> str:
    """A Redis URL fit for a log line: its password, if any, replaced by ``***``."""
    password = urlsplit(url).password
    if password:
        url = url.replace(f":{password}@", ":***@", 1)
    return re.sub(r"(?i)([?&]password=)[^&#]*", r"\1***", url)


class NameTaken(Exception):
    """Another node, alive, beats under this node's name."""


def said(exc: BaseException) -> str:
    """An exception in a few words: its type, and its message if it has one.  A Redis client's
    error names the type and Redis's own words only: redis-py writes a failed pipeline's
    command into its message (``Command # 1 (HSET patience-race:rooms:a 8AZ7DG4N) of pipeline
    caused error``), with the code of a private room in it (review)."""
    text = str(exc)
    if type(exc).__module__.split(".")[0] == "redis":
        text = re.sub(r"Command # \d+ \(.*\) of pipeline caused error: ?", "", text)
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:200]


def http_url(ws_url: str, path: str) -> str:
    """``path`` (no leading slash) on the node whose WebSocket URL is ``ws_url``, over HTTP."""
    if ws_url.startswith("ws://"):
        ws_url = "http://" + ws_url.removeprefix("ws://")
    elif ws_url.startswith("wss://"):
        ws_url = "https://" + ws_url.removeprefix("wss://")
    return ws_url.rstrip("/") + "/" + path


class Cluster:
    """The node's Redis side: ``await start()``, ``await stop()``; the hub reads it at once."""

    def __init__(self, hub: Hub, config: ClusterConfig, port: int) -> None:
        self.hub = hub
        self.config = config
        self.node = config.node
        self.url = config.advertised(port)
        self.instance = secrets.token_hex(8)
        """This process, told apart from another under the same name (:meth:`start`)."""
        p = config.prefix
        self.k_nodes = p + "nodes"
        self.k_departed_set = p + "departed"
        self.k_channel = p + "events"
        self.heartbeat_s = config.expiry_s / 4
        self.expiry_ms = int(config.expiry_s * 1000)
        self.directory = Directory()
        """What this node knows of the others (the rooms of those that left are redirected to
        them for :data:`DEPARTED_S`)."""
        # what this node published of itself
        self._published: dict[str, str] = {}
        self._redis: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._refreshing = asyncio.Lock()
        self._registered = False
        """False at first and after an error: the next heartbeat writes everything again."""
        self.error_line_s = ERROR_LINE_S
        self._failing: set[str] = set()
        """What has failed since Redis last answered it: ``heartbeat`` (writing and reading the
        keys), ``listen`` (the channel).  An outage lasts until both work again."""
        self._outage_since = 0.0
        self._outage_errors = 0
        self._unlogged = 0
        """Errors since the last ``cluster_error`` line (counted in the next one)."""
        self._next_error_line = 0.0
        self._next_full = 0.0
        self._next_summaries = 0.0
        self.stopped = False
        self.errors = 0
        self.joined = False
        """Whether :meth:`start` let it in: a node stopped before (its wait cut short, a name
        in use) has nothing of its own in Redis to remove, and must not remove another's."""
        self._hold_drops_until = 0.0
        """Until when the nodes missing from Redis are not dropped (it was found empty)."""
        self._ever_registered = False
        self._clash_said = False

    def k_node(self, node: str) -> str:
        return f"{self.config.prefix}node:{node}"

    def k_instance(self, node: str) -> str:
        return f"{self.config.prefix}instance:{node}"

    def k_departed(self, node: str) -> str:
        return f"{self.config.prefix}departed:{node}"

    def k_departed_rooms(self, node: str) -> str:
        return f"{self.config.prefix}departed-rooms:{node}"

    def k_rooms(self, node: str) -> str:
        return f"{self.config.prefix}rooms:{node}"

    def k_race(self, race_id: str) -> str:
        return f"{self.config.prefix}race:{race_id}"

    # -- what the hub asks (synchronous, from memory) -----------------------------------------

    def locate(self, code: str) -> tuple[str, str] | None:
        """(node, URL) of the other node holding room ``code``, if one does."""
        return self.directory.locate(code, time.monotonic())

    def locate_race(self, race_id: str) -> tuple[str, str] | None:
        return self.directory.locate_race(race_id)

    def remote_summaries(self, limit: int) -> list[RoomSummary]:
        """Up to ``limit`` public rooms of the other nodes (:meth:`Directory.remote_summaries`)."""
        return self.directory.remote_summaries(limit)

    async def find_race(self, race_id: str) -> tuple[str, str] | None:
        """(node, URL) of the node holding finished race ``race_id``, asking Redis if need be."""
        found = self.locate_race(race_id)
        if found is not None or self._redis is None:
            return found
        try:
            node = await self._redis.get(self.k_race(race_id))
            if node is None or node == self.node:
                return None
            url = await self._redis.get(self.k_node(node))
        except Exception:
            self._failed("find_race")
            return None
        return (node, url) if url is not None else None

    # -- life --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Join the cluster: this node registered (its first heartbeat) and the other nodes
        read (its first refresh), both answered by Redis.  Until then the server serves nobody
        (server/app.py): a join for another node's room would be told "no room" instead of
        being redirected.  Redis away or refusing this node (a wrong password) is tried again
        every heartbeat, said in one ``cluster_waiting`` line, for :attr:`ClusterConfig.join_s`;
        then :class:`ClusterJoinError`."""
        try:
            import redis.asyncio as aioredis
        except ImportError:
            raise RuntimeError(
                "a cluster node needs the Redis client: in the checkout the server runs from, "
                ".venv/bin/pip install '.[cluster]' (docs/cluster.md)"
            ) from None
        self._redis = aioredis.from_url(
            self.config.redis_url,
            decode_responses=True,
            socket_connect_timeout=2,
            socket_timeout=max(2.0, self.heartbeat_s),
            health_check_interval=30,
        )
        began = time.monotonic()
        deadline = began + self.config.join_s
        while True:
            try:
                # a Redis that takes connections and never answers costs at most the time left
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    # a name another node beats under (a cloned host, a copied unit): waited
                    # out, as a node just killed would be (its key lapses within the expiry),
                    # then refused; two nodes under one name took each other's rooms and
                    # removed each other (a cluster trial)
                    # claimed at once (two processes started together both saw it free, then
                    # both beat under it: a review)
                    key = self.k_instance(self.node)
                    claimed = await self._redis.set(key, self.instance, nx=True, px=self.expiry_ms)
                    held = None if claimed else await self._redis.get(key)
                    if held is not None and held != self.instance:
                        url = await self._redis.get(self.k_node(self.node))
                        raise NameTaken(
                            f"node name {self.node} is in use by another node, alive (at "
                            f"{url}): give each node its own --node"
                        )
                    self.joined = True  # (from its first beat, what it wrote is its own)
                    await self._beat()
                    await self._refresh(full=True)
                break
            except Exception as exc:
                self.errors += 1
                self._registered = False
                if self.errors == 1:
                    log.warning(
                        "cluster_waiting",
                        extra={
                            "fields": {
                                "event": "cluster_waiting",
                                "node": self.node,
                                "redis": shown_url(self.config.redis_url),
                                "error": said(exc),
                                "for_s": round(self.config.join_s, 1),
                            }
                        },
                    )
                left = deadline - time.monotonic()
                if left < self.heartbeat_s / 2:  # no time for another try worth the name
                    self.stopped = True
                    await self._close_client()
                    raise ClusterJoinError(
                        f"cannot join the cluster: Redis at {shown_url(self.config.redis_url)} "
                        f"did not let node {self.node} in within {self.config.join_s:g} s "
                        f"({self.errors} tries; the last: {said(exc)})"
                    ) from None
                await asyncio.sleep(min(self.heartbeat_s, left - self.heartbeat_s / 2))
        self._tasks = [
            asyncio.create_task(self._publish_forever()),
            asyncio.create_task(self._listen_forever()),
        ]
        fields: dict[str, object] = {
            "event": "cluster_joined",
            "node": self.node,
            "url": self.url,
            "nodes": len(self.directory.nodes) + 1,
        }
        if self.errors:
            fields["waited_s"] = round(time.monotonic() - began, 1)
        log.info("cluster_joined", extra={"fields": fields})

    async def publish(self) -> None:
        """Write and announce this node's rooms now (the server's, once they are back at start),
        rather than at the next turn of the publishing loop; an error is one like the loop's."""
        try:
            await self._publish()
        except Exception:
            self._failed("publish")

    async def stop(self) -> None:
        """Remove what is this node's own: its heartbeat, its rooms, its place in the set.

        Bounded: a Redis that does not answer (or a client stuck closing a socket) costs at
        most a few seconds of the server's shutdown, never holds it."""
        if self.stopped:
            return
        self.stopped = True
        await self._end_tasks()
        if self._redis is None:
            return
        if not self.joined:
            await self._close_client()
            return
        try:
            async with asyncio.timeout(STOP_S):
                async with self._redis.pipeline(transaction=True) as pipe:
                    # its rooms come back with it (a restart): sent on to it meanwhile
                    self._write_departed(pipe, self.node, self.url, list(self.hub.rooms))
                    pipe.srem(self.k_nodes, self.node)
                    pipe.delete(
                        self.k_node(self.node),
                        self.k_rooms(self.node),
                        self.k_instance(self.node),
                    )
                    pipe.publish(self.k_channel, json.dumps({"node": self.node, "bye": True}))
                    await pipe.execute()
        except Exception:
            self._failed("stop")
        await self._close_client()
        log.info("cluster_left", extra={"fields": {"event": "cluster_left", "node": self.node}})

    async def kill(self) -> None:
        """Stop without removing anything, as a node that dies does (tests, benchmarks)."""
        self.stopped = True
        await self._end_tasks()
        await self._close_client()

    async def _end_tasks(self) -> None:
        """Cancel the publishing and listening tasks and wait for them, a bounded time."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=STOP_S)
            if pending:
                log.warning(
                    "cluster_task_stuck",
                    extra={
                        "fields": {
                            "event": "cluster_task_stuck",
                            "node": self.node,
                            "tasks": len(pending),
                        }
                    },
                )
        self._tasks = []

    def _write_departed(self, pipe: Any, node: str, url: str, codes: list[str]) -> None:
        """Into ``pipe``: node ``node`` left, its rooms ``codes`` at ``url``, remembered in
        Redis for :data:`DEPARTED_S` (in each node's memory only, a node started after the
        death never knew them: it said "the room has closed", and the client forgot the seat,
        for good: a cluster trial)."""
        ms = int(DEPARTED_S * 1000)
        pipe.sadd(self.k_departed_set, node)
        pipe.pexpire(self.k_departed_set, ms)  # (the set too: it lapses with its last entry)
        pipe.set(self.k_departed(node), url, px=ms)
        pipe.delete(self.k_departed_rooms(node))
        if codes:
            pipe.sadd(self.k_departed_rooms(node), *codes)
            pipe.pexpire(self.k_departed_rooms(node), ms)

    async def _read_departed(self, alive: dict[str, str]) -> None:
        """The rooms of the nodes that left lately, as Redis remembers them (:meth:`_write_departed`)."""
        r = self._redis
        names = [n for n in await r.smembers(self.k_departed_set) if n != self.node]
        now = time.monotonic()
        for node in names:
            if node in alive:
                continue
            url = await r.get(self.k_departed(node))
            if url is None:  # forgotten: its time is over
                await r.srem(self.k_departed_set, node)
                continue
            left_ms = await r.pttl(self.k_departed(node))
            until = now + max(0, left_ms) / 1000
            codes = await r.smembers(self.k_departed_rooms(node))
            self.directory.departed_rooms(node, url, codes, until)

    async def _close_client(self) -> None:
        if self._redis is None:
            return
        with contextlib.suppress(Exception):
            async with asyncio.timeout(STOP_S):
                await self._redis.aclose()

    def _failed(self, what: str) -> None:
        """Redis could not be reached or answered wrong: everything is written again once it
        answers.  Logged without flooding the log: the first error of an outage at once, with
        its traceback; then a line at most every :attr:`error_line_s`, with the count of errors
        since the line before (one every heartbeat otherwise, for as long as Redis is away)."""
        self.errors += 1
        self._registered = False
        now = time.monotonic()
        first = not self._failing
        self._failing.add("listen" if what == "listen" else "heartbeat")
        if first:
            self._outage_since = now
            self._outage_errors = 0
            self._unlogged = 0
            self._next_error_line = now
        self._outage_errors += 1
        self._unlogged += 1
        if now < self._next_error_line:
            return
        fields: dict[str, object] = {
            "event": "cluster_error",
            "node": self.node,
            "during": what,
            "error": said(exc) if (exc := sys.exc_info()[1]) is not None else "",
            "count": self._unlogged,
        }
        if not first:
            fields["outage_s"] = round(now - self._outage_since, 1)
        # the first error's traceback, unless Redis's: its message may hold a command's keys
        error = sys.exc_info()[1]
        trace = first and not (error is not None and type(error).__module__.startswith("redis"))
        log.warning("cluster_error", exc_info=trace, extra={"fields": fields})
        self._unlogged = 0
        self._next_error_line = now + self.error_line_s

    def _answered(self, what: str) -> None:
        """Redis answered ``what`` (``heartbeat`` or ``listen``) again: once both work, the
        outage is over, said in one ``cluster_recovered`` line."""
        if not self._failing:
            return
        self._failing.discard(what)
        if self._failing:
            return
        log.info(
            "cluster_recovered",
            extra={
                "fields": {
                    "event": "cluster_recovered",
                    "node": self.node,
                    "outage_s": round(time.monotonic() - self._outage_since, 1),
                    "errors": self._outage_errors,
                }
            },
        )

    # -- publishing this node's rooms ----------------------------------------------------------

    async def _publish_forever(self) -> None:
        step = min(0.2, self.heartbeat_s)
        next_beat = time.monotonic() + self.heartbeat_s
        while not self.stopped:  # a cancel swallowed by a client library ends it too
            await asyncio.sleep(step)
            try:
                await self._publish()
                now = time.monotonic()
                if now >= next_beat:
                    next_beat = now + self.heartbeat_s
                    await self._beat()
                    await self._refresh(full=now >= self._next_full)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._failed("heartbeat")
                await asyncio.sleep(self.heartbeat_s)

    async def _beat(self) -> None:
        """The heartbeat: this node's URL and rooms live on for another expiry."""
        r = self._redis
        async with r.pipeline(transaction=True) as pipe:
            pipe.sadd(self.k_nodes, self.node)
            pipe.set(self.k_node(self.node), self.url, px=self.expiry_ms)
            pipe.get(self.k_instance(self.node))  # (in the transaction: before the set)
            pipe.set(self.k_instance(self.node), self.instance, px=self.expiry_ms)
            pipe.pexpire(self.k_rooms(self.node), self.expiry_ms)
            added, _, other, _, _ = await pipe.execute()
        if other is not None and other != self.instance and not self._clash_said:
            # another process beats under this name (this one paused past its expiry, and a
            # new one took the name): said, loud, once (a review)
            self._clash_said = True
            log.error(
                "node_name_clash",
                extra={"fields": {"event": "node_name_clash", "node": self.node}},
            )
        self._answered("heartbeat")
        if added and self._ever_registered:
            # missing from the set it had joined: Redis restarted empty, or this node was taken
            # for dead; the others are missing too until their next beat (a real restart drops
            # the connections first, and the hold came too late: a review)
            self._hold_drops_until = time.monotonic() + self.config.expiry_s
        if added and self._registered:
            # taken for dead (a pause longer than the expiry), or Redis lost everything (it
            # restarted empty): the others are missing from it too until their next beat, and
            # are not taken for dead meanwhile (each was logged removed, alive: a cluster trial)
            log.warning(
                "cluster_rejoined",
                extra={"fields": {"event": "cluster_rejoined", "node": self.node}},
            )
            self._registered = False
        if not self._registered:
            # (again) after Redis was away: everything is written anew; back, it is no longer
            # one that left
            async with r.pipeline(transaction=True) as pipe:
                pipe.srem(self.k_departed_set, self.node)
                pipe.delete(self.k_departed(self.node), self.k_departed_rooms(self.node))
                await pipe.execute()
            self._registered = True
            self._ever_registered = True
            self._published = {}
            # the races it holds, announced again (Redis may have lost them)
            unannounced = self.hub.unannounced
            waiting = set(unannounced)
            unannounced.extend(rid for rid in self.hub.finished if rid not in waiting)
            if added:
                # Redis did not have this node: it lost everything, or this is the node's
                # start (not after every error of a Redis that kept it all: each would read
                # the database on the loop and set every race again: a review)
                await self._mark_stored_races()
            self._next_summaries = 0.0
            await self._publish()

    async def _mark_stored_races(self) -> None:
        """Write down again where every race in this node's database is (for what is left of
        their 30 days): after Redis restarted empty, the races not in memory were answered 404
        by every other node (a cluster trial)."""
        store = self.hub.store
        if store is None:
            return
        wall = self.hub.wall()
        kept = store.finished_since(wall - RACE_RECORD_TTL_S)
        for start in range(0, len(kept), 1000):
            async with self._redis.pipeline(transaction=False) as pipe:
                for rid, ended in kept[start : start + 1000]:
                    left = int(RACE_RECORD_TTL_S - (wall - ended))
                    if left > 0:
                        pipe.set(self.k_race(rid), self.node, ex=left, nx=True)
                await pipe.execute()

    async def _publish(self) -> None:
        """Write and announce what changed among this node's rooms since the last time: new
        and closed rooms at once; the summaries of the others once a heartbeat."""
        hub = self.hub
        published = self._published
        now = time.monotonic()
        every = now >= self._next_summaries
        if every:
            self._next_summaries = now + self.heartbeat_s
        changed: dict[str, str] = {}
        for code, room in hub.rooms.items():
            if code in published and not every:
                continue
            doc = "" if room.settings.private else room.summary().model_dump_json()
            if published.get(code) != doc:
                changed[code] = doc
        gone = [code for code in published if code not in hub.rooms]
        races = list(hub.unannounced)
        if not (changed or gone or races):
            return
        async with self._redis.pipeline(transaction=False) as pipe:
            if changed:
                pipe.hset(self.k_rooms(self.node), mapping=changed)
                pipe.pexpire(self.k_rooms(self.node), self.expiry_ms)
            if gone:
                pipe.hdel(self.k_rooms(self.node), *gone)
            for rid in races:
                pipe.set(self.k_race(rid), self.node, ex=RACE_RECORD_TTL_S)
            message = {"node": self.node, "url": self.url, "set": changed, "del": gone}
            if races:
                message["races"] = races
            pipe.publish(self.k_channel, json.dumps(message))
            await pipe.execute()
        published.update(changed)
        for code in gone:
            published.pop(code, None)
        if races:  # (the others, finished meanwhile, wait for the next round)
            sent = set(races)
            left = [rid for rid in hub.unannounced if rid not in sent]
            hub.unannounced.clear()
            hub.unannounced.extend(left)

    # -- learning about the other nodes ------------------------------------------------------

    async def _refresh(self, full: bool) -> None:
        """Which nodes are alive (every heartbeat): a node whose key expired is dropped, here
        and from Redis; a node new to this one, or every node now and then, is read in full.
        One at a time (the heartbeat's and the listener's): two reading the same dead node
        would each remove it."""
        async with self._refreshing:
            await self._refresh_now(full)

    async def _refresh_now(self, full: bool) -> None:
        r = self._redis
        known = self.directory.nodes
        names = sorted(n for n in await r.smembers(self.k_nodes) if n != self.node)
        urls = await r.mget([self.k_node(n) for n in names]) if names else []
        alive = {n: u for n, u in zip(names, urls, strict=True) if u is not None}
        dead = [n for n in names if n not in alive]
        if dead:
            async with r.pipeline(transaction=False) as pipe:
                pipe.srem(self.k_nodes, *dead)
                pipe.delete(*(self.k_rooms(n) for n in dead))
                for n in dead:
                    url = known.get(n)
                    if url is not None:
                        self._write_departed(pipe, n, url, self.directory.rooms_of(n))
                await pipe.execute()
        # one line per node removed: a node this one knew, and one it never heard of (that
        # died before this node learned of it) that it took out of the set
        knew = set(known)
        # (and while this node is not registered again after an error: what it reads of a
        # Redis just back may be empty)
        holding = time.monotonic() < self._hold_drops_until or (
            self._ever_registered and not self._registered
        )
        for node in [n for n in known if n not in alive and not holding]:
            self._drop(node, "expired" if node in dead else "gone")
        for node in dead:
            if node not in knew:
                self._drop(node, "expired")
        self.directory.forget_departed(time.monotonic())
        fresh = [n for n in alive if full or n not in known]
        known.update(alive)
        for node in fresh:
            rooms = await r.hgetall(self.k_rooms(node))
            self.directory.replace(node, rooms)
        if full:
            await self._read_departed(alive)
            self._next_full = time.monotonic() + 30.0

    def _drop(self, node: str, why: str) -> None:
        self.directory.drop(node, time.monotonic() + DEPARTED_S)
        log.info(
            "node_removed",
            extra={"fields": {"event": "node_removed", "node": node, "why": why}},
        )

    async def _listen_forever(self) -> None:
        while not self.stopped:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.k_channel)
                # messages may have been missed while not subscribed: read everything again
                await self._refresh(full=True)
                self._answered("listen")
                while not self.stopped:
                    message = await pubsub.get_message(timeout=self.heartbeat_s * 4)
                    if message is not None and message.get("type") == "message":
                        self._on_message(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception:
                self._failed("listen")
                await asyncio.sleep(self.heartbeat_s)
            finally:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(STOP_S):  # a close can hang (redis-py #3941)
                        await pubsub.aclose()

    def _on_message(self, data: str) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict) or message.get("node") == self.node:
            return
        gone = self.directory.apply(message)
        if gone is not None:
            self._drop(gone, "stopped")
