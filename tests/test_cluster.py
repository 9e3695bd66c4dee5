"""A cluster on this machine: a real Redis, three real server nodes, nginx where it is installed,
and the project's own client following redirects (docs/cluster.md)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from client.model import RaceModel
from client.net import Connection
from client.session import Session
from protocol.messages import (
    CreateRoom,
    GetRace,
    Joined,
    JoinRoom,
    Leave,
    ListRooms,
    ProgressUpdate,
    RaceRecordMsg,
    Redirect,
    Resume,
    RoomList,
    Settings,
    Snapshot,
    Start,
)
from server.app import RaceServer
from server.cluster import ClusterConfig, ClusterJoinError, shown_url
from server.store import Store
from tests.server_helpers import Lines, fast_limits, move, pick_move, seat_state, start_race
from tests.test_deploy import verify_unit

redis_asyncio = pytest.importorskip("redis.asyncio", reason="the Redis client: pip install redis")

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "cluster"
EXPIRY = 1.0
"""Node expiry in these tests (a heartbeat every 0.25 s)."""


def _redis_server() -> str:
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if found is None:
        pytest.skip(
            "redis-server is not installed (.ci/run installs it from Debian's packages when it can)"
        )
    return found


class RedisProcess:
    """A real Redis on a Unix socket of its own (no port to collide on)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.sock = folder / "redis.sock"
        self.url = f"unix://{self.sock}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        self.proc = subprocess.Popen(
            [_redis_server(), "--port", "0", "--unixsocket", str(self.sock), "--save", "",
             "--appendonly", "no", "--dir", str(self.folder), "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for _ in range(1000):
            if self.sock.exists():
                return self.url
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited")
            time.sleep(0.01)
        raise RuntimeError("redis-server did not open its socket")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture
def redis_process(tmp_path: Path) -> Iterator[RedisProcess]:
    redis = RedisProcess(tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@pytest.fixture
def redis_url(redis_process: RedisProcess) -> str:
    return redis_process.url


def node_config(redis_url: str, name: str, url: str = "ws://127.0.0.1:{port}") -> ClusterConfig:
    return ClusterConfig(name, redis_url, url, expiry_s=EXPIRY)


@asynccontextmanager
async def cluster_node(
    redis_url: str, name: str, url: str = "ws://127.0.0.1:{port}", db: str = ":memory:"
) -> AsyncIterator[RaceServer]:
    server = RaceServer(
        "127.0.0.1",
        0,
        limits=fast_limits(),
        store=Store(db),
        cluster=node_config(redis_url, name, url),
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        if server.store is not None:
            server.store.close()


async def eventually(check: Any, timeout: float, what: str) -> Any:
    """Poll ``check()`` (a coroutine function) until it returns something true."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = await check()
        if value:
            return value
        assert loop.time() < end, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def redis_client(url: str) -> AsyncIterator[Any]:
    """A Redis client for a test's own look at the keys, every wait of it bounded."""
    r = redis_asyncio.from_url(
        url, decode_responses=True, socket_connect_timeout=2, socket_timeout=5
    )
    try:
        yield r
    finally:
        async with asyncio.timeout(5):
            await r.aclose()


async def listed(url: str) -> set[str]:
    async with Connection(url) as conn:
        answer = await conn.request(ListRooms(seq=0))
    assert isinstance(answer, RoomList)
    return {r.code for r in answer.rooms}


async def create(url: str, name: str, private: bool = False) -> tuple[Connection, str]:
    conn = Connection(url)
    await conn.open()
    joined = await conn.request(
        # a fixed deal, so that Ann and Bob always have a move that is not a deal (about 1 random
        # deal in 300 has none)
        CreateRoom(seq=0, name=name, settings=Settings(seats=3, private=private, deal_number=1))
    )
    assert isinstance(joined, Joined)
    return conn, joined.room.code


def fetch(url: str) -> tuple[bytes, str]:
    """GET ``url``, redirects followed: the body and the URL it came from."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read(), response.url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_single_server_needs_no_redis() -> None:
    """The default install: a server with no node option never imports the Redis client."""
    code = (
        "import sys, server.app, server.cli, client.session\n"
        "assert 'redis' not in sys.modules, 'redis imported'\n"
        "assert server.cli.build_parser().parse_args([]).node == ''\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_bad_node_name_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "server.cli", "--node", "Node 1!", "--db", ":memory:"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "node name 'node 1!'" in result.stderr


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--node-url", "http://x.example/"], "node URL 'http://x.example/': a path on the proxy"),
        (["--node-url", "nonsense"], "node URL 'nonsense'"),
        (["--redis", "redis://127.0.0.1:6379/abc"], "the database is a number, not 'abc'"),
        (["--node-expiry", "1e9"], "--node-expiry 1000000000.0: must be at most 600"),
    ],
)
def test_a_node_configured_with_nonsense_stops_at_start(flags: list[str], said: str) -> None:
    """Each of these started, and failed the players later, or never: an http:// node URL
    crashed the clients sent there, a database "abc" joined database 0 (another cluster), an
    expiry of 10^9 s kept a dead node's rooms listed for ever (a cluster trial)."""
    result = subprocess.run(
        [sys.executable, "-m", "server.cli", "--node", "node1", "--db", ":memory:", *flags],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and said in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_node_without_the_redis_client_is_told_how_to_install_it() -> None:
    """The operator trial: the message said pip install 'patience-race[cluster]', which only
    works from a package index, which the project is not on; it now gives the command of
    docs/cluster.md, from the checkout."""
    code = (
        "import sys\n"
        "class NoRedis:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'redis' or name.startswith('redis.'):\n"
        "            raise ImportError('no redis here')\n"
        "sys.meta_path.insert(0, NoRedis())\n"
        "import server.cli\n"
        "sys.exit(server.cli.main(['--node', 'node1', '--db', ':memory:']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    command = ".venv/bin/pip install '.[cluster]'"
    assert command in result.stderr and "patience-race[cluster]" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert command in (ROOT / "docs" / "cluster.md").read_text()


def test_the_flag_table_gives_the_defaults() -> None:
    """docs/cluster.md's flags say what a node uses when they are not set (the operator trial
    found no default for --redis)."""
    from server.cli import build_parser

    defaults = build_parser().parse_args([])
    rows = {
        line.split("|")[1].strip().split()[0].strip("`"): line
        for line in (ROOT / "docs" / "cluster.md").read_text().splitlines()
        if line.startswith("| `--")
    }
    assert f"default `{defaults.redis}`" in rows["--redis"]
    assert f"({defaults.node_expiry:g})" in rows["--node-expiry"]
    assert "default `/n/NAME/`" in rows["--node-url"]


async def test_three_nodes_list_every_room_and_route_players_to_it(redis_url: str) -> None:
    async with AsyncExitStack() as stack:
        nodes = [
            await stack.enter_async_context(cluster_node(redis_url, f"node{i}")) for i in (1, 2, 3)
        ]
        urls = [n.url for n in nodes]
        conns: list[Connection] = []
        stack.push_async_callback(lambda: asyncio.gather(*(c.close() for c in conns)))
        codes = []
        for i, url in enumerate(urls):
            conn, code = await create(url, f"Host{i + 1}")
            conns.append(conn)
            codes.append(code)
        hidden, secret = await create(urls[0], "Hider", private=True)
        conns.append(hidden)

        # every public room is listed from every node; the private one from none
        for url in urls:
            await eventually(
                lambda url=url: _has(listed(url), set(codes)), 5, f"all rooms listed at {url}"
            )
            assert secret not in await listed(url)

        # a player connected to node 1 joins the room held by node 3 (the project's client
        # follows the redirect), and races a player who connected to node 2
        room = codes[2]
        ann = Session(urls[0], RaceModel())
        ann.remember = False
        await ann.connect()
        joined = await ann.join(room, "Ann")
        assert isinstance(joined, Joined) and joined.room.code == room
        assert ann.conn is not None and ann.conn.url == urls[2] and ann.node_url == urls[2]
        conns.append(ann.conn)
        bob = Connection(urls[1])
        await bob.open()
        conns.append(bob)
        # what the client follows: the node's documented redirect
        raw = await bob.resend(JoinRoom(seq=bob.next_seq(), code=room, name="Bob"))
        assert isinstance(raw, Redirect)
        assert (raw.code, raw.node, raw.url) == (room, "node3", urls[2])
        joined = await bob.request(JoinRoom(seq=0, code=room.lower(), name="Bob"))
        assert isinstance(joined, Joined) and bob.url == urls[2]

        host = conns[2]
        racers = [host, ann.conn, bob]
        await start_race(racers)
        server = nodes[2]
        live = server.hub.rooms[room]
        by_name = {m.name: m.id for m in live.members.values()}
        ids = {host: by_name["Host3"], ann.conn: by_name["Ann"], bob: by_name["Bob"]}
        for _ in range(3):
            for conn in (ann.conn, bob):
                wire = pick_move(seat_state(server, room, ids[conn]), deals=False)
                if wire is not None:
                    await move(conn, wire.kind, wire.src, wire.dst, wire.count)
        progress = await _progress_with_moves(host, {"Ann", "Bob"})
        assert {p.name for p in progress.players} >= {"Ann", "Bob"}
        race_id = live.race.race_id if live.race else ""
        for conn in racers:
            await conn.request(Leave(seq=0))
        assert race_id in server.hub.finished

        # the finished race is read from any node: redirected over the WebSocket ...
        async def redirected() -> bool:
            return (
                nodes[0].cluster is not None and nodes[0].cluster.locate_race(race_id) is not None
            )

        await eventually(redirected, 5, "node 1 learns where the race is")
        reader = Connection(urls[0])
        await reader.open()
        conns.append(reader)
        record = await reader.request(GetRace(seq=0, race_id=race_id))
        assert isinstance(record, RaceRecordMsg) and record.record.race_id == race_id
        # ... and over HTTP, with a 307 to the node that holds it
        http1 = urls[0].replace("ws://", "http://")
        # (urllib follows the 307; it blocks, so it runs beside the servers' loop)
        body, where = await asyncio.to_thread(fetch, f"{http1}/races/{race_id}")
        assert json.loads(body)["race_id"] == race_id
        assert where.startswith(urls[2].replace("ws://", "http://"))
        with pytest.raises(urllib.error.HTTPError) as missing:
            await asyncio.to_thread(fetch, f"{http1}/races/nosuchrace")
        assert missing.value.code == 404

        # a node that stops removes its rooms at once
        await stack_close_node(nodes[1])
        await eventually(lambda: _lacks(listed(urls[0]), {codes[1]}), 5, "node 2's room gone")
        async with redis_client(redis_url) as r:
            assert await r.sismember("patience-race:nodes", "node2") == 0
            assert await r.exists("patience-race:rooms:node2", "patience-race:node:node2") == 0


async def stack_close_node(server: RaceServer) -> None:
    await server.stop()  # (stopping again on the way out does nothing)


async def _has(rooms: Any, codes: set[str]) -> bool:
    return codes <= await rooms


async def _lacks(rooms: Any, codes: set[str]) -> bool:
    return not (codes & await rooms)


async def _progress_with_moves(conn: Connection, names: set[str]) -> ProgressUpdate:
    while True:
        event = await conn.wait_for(ProgressUpdate, 5)
        moved = {p.name for p in event.players if p.moves > 0}
        if names <= moved:
            return event


class NodeProcess:
    """``patience-race-server --node`` as a subprocess, to be killed for real."""

    def __init__(self, redis_url: str, name: str, db: Path) -> None:
        self.args = ["--node", name, "--redis", redis_url, "--node-url", "ws://127.0.0.1:{port}"]
        self.args += ["--node-expiry", str(EXPIRY), "--db", str(db), "--log-format", "json"]
        self.port = 0
        self.url = ""
        self.proc: asyncio.subprocess.Process | None = None
        self._rest: asyncio.Task[None] | None = None

    async def start(self) -> str:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", *self.args, "--port", str(self.port),
            cwd=ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stderr is not None
        while True:
            line = await asyncio.wait_for(self.proc.stderr.readline(), 15)
            assert line, "the node stopped before listening"
            event = json.loads(line)
            if event.get("event") == "listening":
                self.url = event["url"]
                self.port = int(self.url.rsplit(":", 1)[1])
                self._rest = asyncio.create_task(self._read_rest())
                return self.url

    async def _read_rest(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while await self.proc.stderr.readline():
            pass

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(self.proc.wait(), 30)
        if self._rest is not None:
            await self._rest

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self._rest is not None:
            self._rest.cancel()


async def solo_races(node: RaceServer, n: int, stack: AsyncExitStack) -> list[str]:
    """``n`` races on ``node``, one after the other, each of a player alone who deals and
    resigns: their ids (the players' connections closed with ``stack``)."""
    conns: list[Connection] = []
    stack.push_async_callback(lambda: asyncio.gather(*(c.close() for c in conns)))
    ids = []
    for k in range(n):
        conn, code = await create(node.url, f"Solo {k}")
        conns.append(conn)
        await conn.request(Start(seq=0))
        room = node.hub.rooms[code]
        for _ in range(200):
            if room.state == "racing":
                break
            await asyncio.sleep(0.01)
        await move(conn, "deal")
        await move(conn, "resign")
        assert room.race is not None
        ids.append(room.race.race_id)
    return ids


async def test_races_finished_together_are_all_announced_whatever_memory_keeps(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node told the others of the races in its records kept in memory, which are bounded by
    their moves: races finished together past that bound were never announced, and the others
    answered 404 for them (a review)."""
    import server.lifecycle

    monkeypatch.setattr(server.lifecycle, "FINISHED_MOVES", 1)  # one record kept in memory
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(cluster_node(redis_url, "node1"))
        two = await stack.enter_async_context(cluster_node(redis_url, "node2"))
        ids = await solo_races(one, 3, stack)
        assert len(one.hub.finished) == 1  # memory kept one; all three are to be announced

        async def all_known() -> bool:
            assert two.cluster is not None
            return all(two.cluster.locate_race(rid) is not None for rid in ids)

        await eventually(all_known, 5, "node 2 learns where every race is")


async def test_a_second_node_under_a_name_in_use_is_refused_and_harms_nobody(
    redis_url: str,
) -> None:
    """A second node started under the name of a live one (a cloned host) joined silently, took
    its rooms' routing, and on its stop removed the first from the cluster (a cluster trial)."""
    async with cluster_node(redis_url, "twin") as first:
        second = RaceServer(
            "127.0.0.1", 0, limits=fast_limits(), store=Store(":memory:"),
            cluster=node_config(redis_url, "twin"),
        )  # fmt: skip
        try:
            with pytest.raises(ClusterJoinError) as refused:
                await second.start()
            assert "node name twin is in use by another node, alive" in str(refused.value)
            assert first.url in str(refused.value)
        finally:
            await second.stop()
            if second.store is not None:
                second.store.close()
        async with redis_client(redis_url) as r:  # the first is untouched
            assert await r.get("patience-race:node:twin") == first.url
            assert "twin" in await r.smembers("patience-race:nodes")
        # the first stopped, the name is free at once
        assert first.cluster is not None
    async with cluster_node(redis_url, "twin") as again:
        assert again.cluster is not None and again.cluster.joined


async def test_a_node_started_after_another_left_still_sends_its_rooms_on(
    redis_url: str, tmp_path: Path
) -> None:
    """Node c killed, then node b restarted: b had never known c's rooms, said a resume's room
    "has closed", and the client forgot the seat for good, though c came back with it (a
    cluster trial).  Who left, and their rooms, are remembered in Redis for a while."""
    async with AsyncExitStack() as stack:
        watcher = await stack.enter_async_context(cluster_node(redis_url, "keeper"))
        killed = NodeProcess(redis_url, "killed", tmp_path / "killed.sqlite3")
        stack.push_async_callback(killed.close)
        await killed.start()
        host, code = await create(killed.url, "Host")
        await eventually(lambda: _has(listed(watcher.url), {code}), 5, "the room listed")
        await killed.kill()  # no goodbye: the keeper finds it dead
        await host.close()
        await eventually(lambda: _lacks(listed(watcher.url), {code}), EXPIRY * 3, "unlisted")
        # a graceful stop leaves its rooms behind it too
        stopped = await stack.enter_async_context(cluster_node(redis_url, "stopped"))
        conn, stopped_code = await create(stopped.url, "Ann")
        await conn.close()
        stopped_url = stopped.url
        await stopped.stop()
        # a node started after both left sends their rooms on to them
        async with cluster_node(redis_url, "late") as late:
            assert late.cluster is not None
            assert late.cluster.locate(code) == ("killed", killed.url)
            assert late.cluster.locate(stopped_code) == ("stopped", stopped_url)
            probe = Connection(late.url)
            await probe.open()
            try:
                raw = await probe.resend(JoinRoom(seq=probe.next_seq(), code=code, name="Bo"))
                assert isinstance(raw, Redirect) and raw.url == killed.url
            finally:
                await probe.close()
        # back, a node is no longer one that left
        await killed.start()
        async with redis_client(redis_url) as r:
            await eventually(
                lambda: _is_zero(r.sismember("patience-race:departed", "killed")), 5, "forgotten"
            )


async def _is_zero(value: Any) -> bool:
    return await value == 0


async def test_after_redis_restarts_empty_every_stored_race_is_found_again(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a FLUSHALL (a Redis without persistence restarted), only the races still in a
    node's memory were written again: the others answered 404 on every other node (a cluster
    trial)."""
    import server.lifecycle

    monkeypatch.setattr(server.lifecycle, "FINISHED_MOVES", 1)  # memory keeps one of three
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(cluster_node(redis_url, "node1"))
        ids = await solo_races(one, 3, stack)
        async with redis_client(redis_url) as r:
            keys = [f"patience-race:race:{rid}" for rid in ids]
            await eventually(lambda: _all_set(r, keys), 5, "every race announced")
            await r.flushall()
            await eventually(lambda: _all_set(r, keys), EXPIRY * 3, "every race written again")


async def _all_set(r: Any, keys: list[str]) -> bool:
    return all(v is not None for v in await r.mget(keys))


async def test_two_nodes_started_together_under_one_name_one_joins(redis_url: str) -> None:
    """Both saw the name free, then both beat under it (a check, then a set: a review): the
    name is claimed at once."""
    twins = [
        RaceServer(
            "127.0.0.1", 0, limits=fast_limits(), store=Store(":memory:"),
            cluster=node_config(redis_url, "twin"),
        )
        for _ in range(2)
    ]  # fmt: skip
    try:
        results = await asyncio.gather(*(s.start() for s in twins), return_exceptions=True)
        joined = [r is None for r in results]
        assert sorted(joined) == [False, True], results
        refused = next(r for r in results if r is not None)
        assert isinstance(refused, ClusterJoinError) and "in use by another node" in str(refused)
    finally:
        for s in twins:
            await s.stop()
            if s.store is not None:
                s.store.close()


async def test_a_killed_node_leaves_the_list_and_its_rooms_come_back_with_it(
    redis_url: str, tmp_path: Path
) -> None:
    async with AsyncExitStack() as stack:
        node1 = await stack.enter_async_context(cluster_node(redis_url, "node1"))
        node3 = NodeProcess(redis_url, "node3", tmp_path / "node3.sqlite3")
        stack.push_async_callback(node3.close)
        await node3.start()
        host, code = await create(node3.url, "Host")
        token_holder = Session(node1.url, RaceModel())
        token_holder.remember = False
        await token_holder.connect()
        await eventually(lambda: _has(listed(node1.url), {code}), 5, "node 3's room listed")
        joined = await token_holder.join(code, "Ann")
        assert isinstance(joined, Joined) and token_holder.node_url == node3.url
        token = joined.token

        await node3.kill()  # no goodbye: only its heartbeat stops
        await host.close()
        assert token_holder.conn is not None
        await token_holder.conn.close()
        # gone from the list within the expiry (and a heartbeat of the node that notices)
        await eventually(lambda: _lacks(listed(node1.url), {code}), EXPIRY * 3, "room unlisted")
        assert node1.cluster is not None and "node3" not in node1.cluster.directory.nodes
        async with redis_client(redis_url) as r:
            assert await r.sismember("patience-race:nodes", "node3") == 0

        # while it is down, its rooms are still sent on to it (a player reconnecting through
        # any node retries there until it is back, rather than being told the room is gone)
        probe = Connection(node1.url)
        await probe.open()
        stack.push_async_callback(probe.close)
        raw = await probe.resend(Resume(seq=probe.next_seq(), code=code, token=token))
        assert isinstance(raw, Redirect) and (raw.node, raw.url) == ("node3", node3.url)

        # the node comes back on the same port and database: its rooms are listed again and
        # the seat is resumed through any node
        await node3.start()
        await eventually(lambda: _has(listed(node1.url), {code}), 5, "room listed again")
        again = Session(node1.url, RaceModel())
        again.remember = False
        await again.connect()
        stack.push_async_callback(again.close)
        snap = await again._request(Resume(seq=0, code=code, token=token))
        assert isinstance(snap, Snapshot) and snap.room.code == code
        assert again.node_url == node3.url


async def test_a_node_that_disappears_is_removed_in_one_line(redis_url: str, lines: Lines) -> None:
    """The operator trial's kill -9 of one of two nodes: the survivor logged two identical
    ``node_removed`` lines (both of its loops over the dead nodes dropped it)."""
    async with cluster_node(redis_url, "node1") as node1, cluster_node(redis_url, "node2") as node2:
        assert node1.cluster is not None and node2.cluster is not None
        survivor = node1.cluster

        async def knows_node2() -> bool:
            return "node2" in survivor.directory.nodes

        await eventually(knows_node2, 5, "node 1 knows node 2")
        await node2.cluster.kill()  # no goodbye: only its heartbeat stops

        async def removed() -> bool:
            return "node2" not in survivor.directory.nodes

        await eventually(removed, EXPIRY * 4, "node 2 removed")
        await asyncio.sleep(EXPIRY)  # a few more heartbeats and reads of the set
        gone = [f for f in lines.events("node_removed") if f["node"] == "node2"]
        assert gone == [{"event": "node_removed", "node": "node2", "why": "expired"}]


@pytest.mark.parametrize("how", ["flushall", "restart"])
async def test_after_redis_restarts_empty_no_live_node_is_logged_removed(
    redis_process: RedisProcess, lines: Lines, how: str
) -> None:
    """After a FLUSHALL every node logged every other node removed ("gone"), all of them alive
    and back a heartbeat later: alerts on node_removed fired at every Redis restart (a cluster
    trial; a real restart, its connections dropped first, did it still: a review)."""
    redis_url = redis_process.url
    async with cluster_node(redis_url, "node1") as node1, cluster_node(redis_url, "node2") as node2:
        assert node1.cluster is not None and node2.cluster is not None

        async def both_known() -> bool:
            one, two = node1.cluster, node2.cluster
            assert one is not None and two is not None
            return "node2" in one.directory.nodes and "node1" in two.directory.nodes

        await eventually(both_known, 5, "the nodes know each other")
        if how == "flushall":
            async with redis_client(redis_url) as r:
                await r.flushall()
        else:
            redis_process.stop()
            await asyncio.sleep(EXPIRY / 2)
            redis_process.start()  # empty: no persistence
        await eventually(lambda: _registered_again(node1, node2), EXPIRY * 6, "registered again")
        await asyncio.sleep(EXPIRY * 2)  # heartbeats and reads of the set
        assert lines.events("node_removed") == []
        assert "node2" in node1.cluster.directory.nodes and "node1" in node2.cluster.directory.nodes


async def _registered_again(*nodes: RaceServer) -> bool:
    return all(n.cluster is not None and n.cluster._registered for n in nodes)


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


async def test_a_node_serves_nobody_until_it_has_joined(redis_url: str, lines: Lines) -> None:
    """The operator trial: a node served players before it joined (a join for another node's
    room was "no room", not a redirect) and logged ``cluster_joined`` though Redis refused it.
    Here Redis refuses node 2's user at first: node 2 waits, says so once, accepts no
    connection, and joins at its next try once the user is let in; its first connection is
    redirected."""
    secret = "pw-not-in-logs"
    sock = redis_url.removeprefix("unix://")
    async with AsyncExitStack() as stack:
        node1 = await stack.enter_async_context(cluster_node(redis_url, "node1"))
        host, code = await create(node1.url, "Host")
        stack.push_async_callback(host.close)
        node2 = RaceServer(
            "127.0.0.1",
            0,
            limits=fast_limits(),
            store=Store(":memory:"),
            cluster=ClusterConfig(
                "node2", f"unix://node2:{secret}@{sock}", "ws://127.0.0.1:{port}", expiry_s=2.0
            ),
        )
        stack.push_async_callback(node2.stop)
        starting = asyncio.create_task(node2.start())
        stack.callback(starting.cancel)  # (done by then, unless the test failed)

        async def waiting() -> bool:
            return bool(lines.events("cluster_waiting"))

        await eventually(waiting, 5, "node 2 says it waits")
        assert not starting.done() and not lines.events("listening")[1:]
        assert not await asyncio.to_thread(accepts, node2.port), "served before it joined"
        said = lines.events("cluster_waiting")
        assert said[0]["node"] == "node2" and "invalid username-password" in str(said[0]["error"])
        async with redis_client(redis_url) as r:
            await r.execute_command("ACL", "SETUSER", "node2", "on", f">{secret}", "allkeys",
                                    "allchannels", "+@all")  # fmt: skip
        await asyncio.wait_for(starting, 5)
        events = [f["event"] for f in lines.fields if f.get("node") == "node2" or
                  f.get("url") == node2.url]  # fmt: skip
        assert events == ["cluster_waiting", "cluster_joined", "listening"]
        joined = lines.events("cluster_joined")[-1]
        assert joined["node"] == "node2" and joined["nodes"] == 2 and "waited_s" in joined
        assert len(lines.events("cluster_waiting")) == 1
        assert secret not in json.dumps(lines.fields)
        # the first connection to node 2 is sent on to node 1's room
        probe = Connection(node2.url)
        await probe.open()
        stack.push_async_callback(probe.close)
        raw = await probe.resend(JoinRoom(seq=probe.next_seq(), code=code, name="Ann"))
        assert isinstance(raw, Redirect) and (raw.node, raw.url) == ("node1", node1.url)


async def test_a_node_that_cannot_join_gives_up_having_served_nobody(
    tmp_path: Path, lines: Lines
) -> None:
    """No Redis at all: the node tries for three node expiries, then start() fails with one
    message naming the Redis (never its password); nothing was served and the database's
    clock was not touched (the downtime until a start that joins is charged to nobody)."""
    url = f"unix://{tmp_path}/no-redis.sock?db=0&password=hush"
    store = Store(str(tmp_path / "node.sqlite3"))
    server = RaceServer(
        "127.0.0.1",
        0,
        limits=fast_limits(),
        store=store,
        cluster=ClusterConfig("node1", url, expiry_s=0.5),
    )
    try:
        began = time.monotonic()
        with pytest.raises(ClusterJoinError) as failed:
            await server.start()
        assert 1.0 <= time.monotonic() - began <= 3.0
        message = str(failed.value)
        assert "cannot join the cluster" in message and "password=***" in message
        assert "hush" not in message and "hush" not in json.dumps(lines.fields)
        assert not lines.events("cluster_joined") and not lines.events("listening")
        assert not await asyncio.to_thread(accepts, server.port)
    finally:
        await server.stop()
    assert server.hub.live is not None and server.hub.live.alive_at() is None
    store.close()


def test_the_server_exits_with_status_2_when_its_node_cannot_join(tmp_path: Path) -> None:
    """Under systemd (Restart=on-failure) or compose (restart: unless-stopped): one line on
    standard error and status 2, and the service manager starts it again."""
    result = subprocess.run(
        [sys.executable, "-m", "server.cli", "--node", "node1", "--port", "0",
         "--redis", f"unix://:hush@{tmp_path}/no-redis.sock", "--node-expiry", "0.5",
         "--db", str(tmp_path / "node.sqlite3"), "--certified-deals", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("patience-race-server: cannot join the cluster: Redis at unix://:***@")
    assert "Traceback" not in result.stderr and "hush" not in result.stderr
    assert "listening" not in result.stderr


def test_a_node_waiting_for_redis_stops_at_once_when_told(tmp_path: Path) -> None:
    """SIGTERM while a node waited for Redis at its start was heard only when the wait was
    over, half a minute on (systemctl stop hung; cluster.md: "Stopping it while it waits ends
    it at once": a cluster trial)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "--node", "node1", "--port", "0",
         "--redis", f"unix://{tmp_path}/no-redis.sock", "--node-expiry", "20",
         "--db", str(tmp_path / "node.sqlite3"), "--certified-deals", "0"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # its first try, failed: it waits
            if "cluster_waiting" in line or "waiting" in line:
                break
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=20)[1]
        assert time.monotonic() - started < 5, rest
        assert proc.returncode == 0, rest
        assert "stopped while waiting to join the cluster" in rest and "Traceback" not in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_redis_urls_are_logged_without_their_password() -> None:
    assert shown_url("redis://:s3cret@redis:6379/0") == "redis://:***@redis:6379/0"
    assert shown_url("rediss://app:s3cret@r.example:6380/1") == "rediss://app:***@r.example:6380/1"
    assert shown_url("unix:///run/redis.sock?db=0&password=s3cret") == (
        "unix:///run/redis.sock?db=0&password=***"
    )
    assert shown_url("redis://redis:6379/0") == "redis://redis:6379/0"


def _nginx() -> str:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        pytest.skip(
            "nginx is not installed (.ci/run installs it from Debian's packages when it can)"
        )
    return nginx


async def front_nginx(stack: AsyncExitStack, folder: Path, upstreams: str, locations: str) -> int:
    """A real nginx on a free port of 127.0.0.1 in front of the nodes, with these upstreams and
    locations and the shipped proxy settings (stopped with ``stack``): its port."""
    nginx = _nginx()
    port = free_port()
    conf = folder / "conf"
    conf.mkdir()
    (folder / "logs").mkdir()
    (conf / "locations.conf").write_text(locations.replace("/etc/nginx/patience-race/", f"{conf}/"))
    shutil.copy(DEPLOY / "nginx" / "proxy.conf", conf / "proxy.conf")
    (conf / "upstreams.conf").write_text(upstreams)
    (folder / "nginx.conf").write_text(
        f"pid {folder}/nginx.pid;\nerror_log {folder}/logs/error.log;\n"
        "daemon off;\nevents {}\n"
        f"http {{\n access_log off;\n include {conf}/upstreams.conf;\n"
        " map $http_upgrade $connection_upgrade { default upgrade; '' close; }\n"
        f" server {{\n  listen 127.0.0.1:{port};\n  include {conf}/locations.conf;\n }}\n}}\n"
    )
    proc = subprocess.Popen(
        [nginx, "-p", str(folder), "-c", str(folder / "nginx.conf")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip

    async def stop_nginx() -> None:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 10)
        assert proc.stderr is not None
        proc.stderr.close()

    stack.push_async_callback(stop_nginx)

    async def up() -> bool:
        assert proc.poll() is None, "nginx stopped"
        return await asyncio.to_thread(accepts, port)

    await eventually(up, 10, "nginx listening")
    return port


async def test_nginx_routes_each_node_path_and_any_node(redis_url: str, tmp_path: Path) -> None:
    _nginx()
    async with AsyncExitStack() as stack:
        nodes = [
            await stack.enter_async_context(cluster_node(redis_url, f"node{i}", url=""))
            for i in (1, 2, 3)
        ]
        assert all(n.cluster is not None and n.cluster.url == f"/n/node{i}/" for i, n in
                   zip((1, 2, 3), nodes, strict=True))  # fmt: skip
        # the shipped locations and proxy settings, with upstreams on this machine's nodes
        ups = "upstream patience_race_any {\n"
        ups += "".join(f" server 127.0.0.1:{n.port};\n" for n in nodes) + "}\n"
        ups += "".join(
            f"upstream patience_race_node{i} {{ server 127.0.0.1:{n.port}; }}\n"
            for i, n in zip((1, 2, 3), nodes, strict=True)
        )
        locations = (DEPLOY / "nginx" / "locations.conf").read_text()
        port = await front_nginx(stack, tmp_path, ups, locations)
        front = f"ws://127.0.0.1:{port}/"
        host, code = await create(f"ws://127.0.0.1:{port}/n/node3/", "Host")
        stack.push_async_callback(host.close)
        assert code in nodes[2].hub.rooms
        for i in (1, 2):  # every node lists it, through its own path on nginx
            at = f"ws://127.0.0.1:{port}/n/node{i}/"
            await eventually(lambda at=at: _has(listed(at), {code}), 5, f"listed at {at}")
        # whichever node "/" reached, the client ends on node 3's public path
        for name in ("Ann", "Bob"):
            conn = Connection(front)
            await conn.open()
            stack.push_async_callback(conn.close)
            joined = await conn.request(JoinRoom(seq=0, code=code, name=name))
            assert isinstance(joined, Joined) and joined.room.code == code
            assert conn.url in (front, f"ws://127.0.0.1:{port}/n/node3/")
        assert {m.name for m in nodes[2].hub.rooms[code].members.values()} == {
            "Host",
            "Ann",
            "Bob",
        }


LOCAL_SED = (
    "sed \"s/HOSTNAME/$(hostname | tr '[:upper:]' '[:lower:]')/\" "
    "deploy/cluster/nginx/locations-local.conf"
)
"""How docs/cluster.md makes the systemd nodes' locations.conf for this host."""


def local_locations() -> str:
    """deploy/cluster/nginx/locations-local.conf for this host, made as docs/cluster.md says."""
    assert LOCAL_SED in (ROOT / "docs" / "cluster.md").read_text(), "the command the docs give"
    done = subprocess.run(
        ["sh", "-c", LOCAL_SED], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


async def test_the_systemd_nodes_nginx_files_route_each_node_and_any_node(
    redis_url: str, tmp_path: Path
) -> None:
    """The operator trial: the systemd cluster had no nginx files that work outside compose.
    deploy/cluster/nginx/upstreams-local.conf and locations-local.conf, installed as
    docs/cluster.md says, in front of nodes named as the template names them (``%H-%i``: this
    host's name, lower case, and the instance), with only their ports moved off 8701 and 8702."""
    _nginx()
    host_name = socket.gethostname().lower()
    if not re.match(r"^[a-z0-9][a-z0-9._-]{0,59}$", host_name):
        pytest.skip(f"this host's name {host_name!r} makes no node name")
    async with AsyncExitStack() as stack:
        nodes = [
            await stack.enter_async_context(cluster_node(redis_url, f"{host_name}-{i}", url=""))
            for i in ("01", "02")
        ]
        ups = (DEPLOY / "nginx" / "upstreams-local.conf").read_text()
        for i, node in zip(("01", "02"), nodes, strict=True):
            assert f"127.0.0.1:87{i}" in ups
            ups = ups.replace(f"127.0.0.1:87{i}", f"127.0.0.1:{node.port}")
        port = await front_nginx(stack, tmp_path, ups, local_locations())
        second = f"ws://127.0.0.1:{port}/n/{host_name}-02/"
        host, code = await create(second, "Host")
        stack.push_async_callback(host.close)
        assert code in nodes[1].hub.rooms
        first = f"ws://127.0.0.1:{port}/n/{host_name}-01/"
        await eventually(lambda: _has(listed(first), {code}), 5, "listed through node 1's path")
        front = f"ws://127.0.0.1:{port}/"
        for name in ("Ann", "Bob"):  # "/" reaches either node; both end on node 2
            conn = Connection(front)
            await conn.open()
            stack.push_async_callback(conn.close)
            joined = await conn.request(JoinRoom(seq=0, code=code, name=name))
            assert isinstance(joined, Joined) and conn.url in (front, second)
        assert {m.name for m in nodes[1].hub.rooms[code].members.values()} == {"Host", "Ann", "Bob"}


async def test_a_node_taken_for_dead_writes_its_rooms_again(redis_url: str) -> None:
    """A node another node removed (its heartbeat late past the expiry, say) registers again,
    with every room it holds, at its next heartbeat."""
    async with cluster_node(redis_url, "node1") as node:
        host, code = await create(node.url, "Host")
        try:
            async with redis_client(redis_url) as r:

                async def written() -> bool:
                    return bool(await r.hexists("patience-race:rooms:node1", code))

                await eventually(written, 5, "the room written down")
                # what another node does to a node whose heartbeat key expired
                await r.srem("patience-race:nodes", "node1")
                await r.delete("patience-race:rooms:node1")
                await eventually(written, EXPIRY * 2, "the room written again")
                assert await r.sismember("patience-race:nodes", "node1") == 1
        finally:
            await host.close()


# -- deploy/cluster, checked without Docker ------------------------------------------------------


def test_cluster_compose_wires_redis_nodes_and_nginx() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    nodes = {k: v for k, v in services.items() if k.startswith("node")}
    assert len(nodes) >= 2 and "redis" in services
    locations = (DEPLOY / "nginx" / "locations.conf").read_text()
    upstreams = (DEPLOY / "nginx" / "upstreams.conf").read_text()
    published: set[str] = set()
    for name, node in nodes.items():
        env = node["environment"]
        assert env["PATIENCE_RACE_NODE"] == name
        assert env["PATIENCE_RACE_REDIS"].startswith("redis://redis:")
        # players reach the nodes through nginx only: a node's port is published for a
        # scraper on the host's loopback (each its own), never on the network
        ports = node["ports"]
        assert len(ports) == 1 and re.fullmatch(r"127\.0\.0\.1:87\d\d:8765", ports[0]), ports
        published.add(ports[0])
        assert any(v.endswith(":/data") for v in node["volumes"]), "a database of its own"
        assert (DEPLOY / "../.." / node["build"]["dockerfile"]).resolve().is_file()
        # nginx sends /n/NAME/ to it, and / to any node
        assert f"location /n/{name}/ {{\n    proxy_pass http://patience_race_{name}/;" in locations
        assert f"upstream patience_race_{name} {{ server {name}:8765;" in upstreams
        assert f"server {name}:8765 max_fails" in upstreams
        assert node["depends_on"]["redis"]["condition"] == "service_healthy"
    assert len(published) == len(nodes)
    nginx = services["nginx"]
    assert set(nginx["depends_on"]) == set(nodes)
    for volume in nginx["volumes"]:
        source = volume.split(":")[0]
        if source.startswith("./nginx"):
            assert (DEPLOY / source).is_file(), source
    assert '"redis>=5"' in (DEPLOY / "Dockerfile").read_text()


@pytest.mark.parametrize("variant", ["compose", "local"])
def test_cluster_nginx_site_is_accepted(tmp_path: Path, variant: str) -> None:
    """``nginx -t`` on the site with compose's upstreams (node1:8765, made to resolve here) and
    with the systemd nodes' files for this host, as docs/cluster.md installs them (as is)."""
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    openssl = shutil.which("openssl")
    if nginx is None or openssl is None:
        pytest.skip("nginx or openssl is not installed (.ci/run installs nginx when it can)")
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(certs / "privkey.pem"), "-out", str(certs / "fullchain.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    conf = tmp_path / "conf"
    conf.mkdir()
    if variant == "compose":
        locations = (DEPLOY / "nginx" / "locations.conf").read_text()
        # the compose names do not resolve here: the same upstreams on this machine's addresses
        upstreams = (DEPLOY / "nginx" / "upstreams.conf").read_text()
        for i in (1, 2, 3):
            upstreams = upstreams.replace(f"node{i}:8765", f"127.0.0.1:{8700 + i}")
    else:
        locations = local_locations()
        assert "HOSTNAME" not in locations and "location /n/" in locations
        upstreams = (DEPLOY / "nginx" / "upstreams-local.conf").read_text()
    (conf / "locations.conf").write_text(locations.replace("/etc/nginx/patience-race/", f"{conf}/"))
    proxy = (DEPLOY / "nginx" / "proxy.conf").read_text()
    (conf / "proxy.conf").write_text(proxy.replace("/etc/nginx/patience-race/", f"{conf}/"))
    (conf / "upstreams.conf").write_text(upstreams)
    site = (DEPLOY / "nginx" / "site.conf").read_text()
    site = site.replace("/etc/nginx/patience-race/", f"{conf}/")
    site = site.replace("/etc/nginx/certs/", f"{certs}/")
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "logs").mkdir()
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/logs/error.log;\nevents {{}}\n"
        f"http {{\n access_log off;\n include {tmp_path}/site.conf;\n}}\n"
    )
    result = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr


def test_systemd_template_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (DEPLOY / "systemd" / "patience-race-server@.service").read_text()
    assert "Environment=PATIENCE_RACE_NODE=%H-%i" in unit
    assert "Environment=PATIENCE_RACE_DB=/var/lib/patience-race/node-%i.sqlite3" in unit
    assert "KillSignal=SIGTERM" in unit and "Restart=on-failure" in unit
    verify_unit(
        analyze,
        tmp_path,
        unit,
        "patience-race-server@.service",
        instance="patience-race-server@01.service",
    )


async def test_nodes_go_on_without_redis_and_register_again_when_it_is_back(
    redis_process: RedisProcess,
) -> None:
    url = redis_process.url
    async with cluster_node(url, "node1") as node1, cluster_node(url, "node2") as node2:
        host, code = await create(node1.url, "Host")
        try:
            await eventually(lambda: _has(listed(node2.url), {code}), 5, "listed on node 2")
            redis_process.stop()
            # the node's own rooms and players go on
            guest = Connection(node1.url)
            await guest.open()
            joined = await guest.request(JoinRoom(seq=0, code=code, name="Guest"))
            assert isinstance(joined, Joined)
            await guest.close()
            redis_process.start()  # an empty Redis: everything is written again
            async with redis_client(url) as r:

                async def back() -> bool:
                    return bool(await r.hexists("patience-race:rooms:node1", code))

                await eventually(back, 10, "node 1's room written again")
            await eventually(lambda: _has(listed(node2.url), {code}), 10, "listed on node 2 again")
            newcomer = Connection(node2.url)
            await newcomer.open()
            joined = await newcomer.request(JoinRoom(seq=0, code=code, name="Late"))
            assert isinstance(joined, Joined) and newcomer.url == node1.url
            await newcomer.close()
        finally:
            await host.close()


async def test_a_redis_outage_is_logged_once_then_counted_and_its_end_said(
    redis_process: RedisProcess, lines: Lines
) -> None:
    """The operator trial: each node wrote a ``cluster_error`` line about every 2.5 s for as long
    as Redis was away (heartbeat and listener alike), and nothing said when it was back.  Now:
    the first error at once, then a line at most every ``error_line_s`` with the count since the
    line before, and one ``cluster_recovered`` line when Redis answers again."""
    async with cluster_node(redis_process.url, "node1") as node:
        cluster = node.cluster
        assert cluster is not None
        cluster.error_line_s = 1.0
        redis_process.stop()
        began = time.monotonic()

        async def many_errors() -> bool:
            return cluster.errors >= 12 and time.monotonic() - began > 2.5

        await eventually(many_errors, 15, "errors while Redis is away")
        assert not lines.events("cluster_recovered")
        errors = lines.events("cluster_error")
        assert 2 <= len(errors) <= 2 + (time.monotonic() - began) / cluster.error_line_s
        assert errors[0]["count"] == 1 and "outage_s" not in errors[0]
        assert all(e["count"] > 1 and e["outage_s"] > 0 for e in errors[1:])
        redis_process.start()

        async def recovered() -> bool:
            return bool(lines.events("cluster_recovered"))

        await eventually(recovered, 10, "the end of the outage said")
        back = lines.events("cluster_recovered")
        assert len(back) == 1 and back[0]["node"] == "node1" and back[0]["outage_s"] > 2
        errors = lines.events("cluster_error")
        assert back[0]["errors"] == cluster.errors >= sum(int(e["count"]) for e in errors)
        await asyncio.sleep(4 * cluster.heartbeat_s)  # all quiet once it is back
        assert len(lines.events("cluster_error")) == len(errors)
        assert len(lines.events("cluster_recovered")) == 1


async def test_a_silent_redis_costs_a_node_little(
    tmp_path: Path, redis_process: RedisProcess
) -> None:
    """A Redis that takes connections and never answers (a hung machine, a bad proxy): a node
    starting gives up in bounded time, having served nobody; a node that had joined goes on
    serving its own rooms and players, and stops in bounded time."""
    held: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(ConnectionError):
            while await reader.read(65536):
                pass

    sock = tmp_path / "silent.sock"
    listener = await asyncio.start_unix_server(silent, path=str(sock))
    try:
        async with asyncio.timeout(60):
            with pytest.raises(ClusterJoinError, match="TimeoutError"):
                async with cluster_node(f"unix://{sock}", "node1"):
                    pass
        assert held, "the node never tried the silent Redis"
    finally:
        for writer in held:
            writer.close()
        listener.close()
        await listener.wait_closed()

    assert redis_process.proc is not None
    async with asyncio.timeout(60):
        async with cluster_node(redis_process.url, "node1") as node:
            redis_process.proc.send_signal(signal.SIGSTOP)  # silent from now on
            try:
                host, code = await create(node.url, "Host")
                guest = Connection(node.url)
                await guest.open()
                joined = await guest.request(JoinRoom(seq=0, code=code, name="Guest"))
                assert isinstance(joined, Joined) and len(joined.room.members) == 2
                await guest.close()
                await host.close()
                began = time.monotonic()
                await node.stop()
                assert time.monotonic() - began < 15
            finally:
                redis_process.proc.send_signal(signal.SIGCONT)
        # its last writes could not be made: counted as a Redis failure, and it stopped anyway
        assert node.cluster is not None and node.cluster.stopped and node.cluster.errors > 0


async def test_a_task_deaf_to_its_cancel_does_not_hold_a_node_stopping(redis_url: str) -> None:
    """A cancel swallowed inside a client library (the node's task goes on as if nothing had
    happened) once held a node's stop for ever, and CI with it: the stop now waits for its
    tasks a bounded time, logs the ones stuck, and still removes what is its own."""
    release = asyncio.Event()

    async def deaf() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await release.wait()  # the cancel swallowed

    stuck: asyncio.Task[None] | None = None
    try:
        async with asyncio.timeout(60):
            async with cluster_node(redis_url, "node1") as node:
                assert node.cluster is not None
                stuck = asyncio.create_task(deaf())
                node.cluster._tasks.append(stuck)
                await asyncio.sleep(0)
        assert not stuck.done()  # the stop went on without it
        async with redis_client(redis_url) as r:
            assert await r.sismember("patience-race:nodes", "node1") == 0
    finally:
        release.set()
        if stuck is not None:
            await stuck


def test_a_redis_error_is_logged_without_the_command_it_failed() -> None:
    """redis-py writes a failed pipeline's command into the error (the HSET of a private room's
    code): the log line keeps Redis's words only (review)."""
    from redis.exceptions import ReadOnlyError

    from server.cluster import said

    exc = ReadOnlyError(
        "Command # 1 (HSET patience-race:rooms:a 8AZ7DG4N) of pipeline caused error: "
        '("You can\'t write against a read only replica.",)'
    )
    text = said(exc)
    assert "8AZ7DG4N" not in text and "HSET" not in text
    assert text.startswith("ReadOnlyError: ") and "read only replica" in text
    assert said(ValueError("bad")) == "ValueError: bad"


def test_a_redis_error_is_logged_without_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """The first error of an outage is logged with its traceback, unless it is Redis's own:
    the traceback repeats the message, the failed command and its private code with it."""
    from redis.exceptions import ReadOnlyError

    from server.cluster import Cluster
    from server.hub import Hub

    cluster = Cluster(Hub(), ClusterConfig("n1", "redis://127.0.0.1:1/0", "ws://h:{port}"), 1)
    caplog.set_level(logging.WARNING, logger="patience_race.server")
    try:
        raise ReadOnlyError("Command # 1 (HSET k 8AZ7DG4N) of pipeline caused error: ('RO',)")
    except ReadOnlyError:
        cluster._failed("publish")
    records = [r for r in caplog.records if r.getMessage() == "cluster_error"]
    assert len(records) == 1 and not records[0].exc_info
    assert "8AZ7DG4N" not in caplog.text
    cluster._failing.clear()  # a new outage, from a bug of ours: its traceback is logged
    caplog.clear()
    try:
        raise KeyError("oops")
    except KeyError:
        cluster._failed("publish")
    assert [bool(r.exc_info) for r in caplog.records] == [True]


@pytest.mark.parametrize(
    ("target", "said"),
    [("ws://127.0.0.1:1/", "cannot be reached"), ("http://127.0.0.1:1/", "cannot be reached")],
)
async def test_a_redirect_to_a_node_that_is_down_is_a_drop_not_a_traceback(
    target: str, said: str
) -> None:
    """`join`/`watch` through a node whose neighbour, holding the room, was down ended in a
    Textual traceback (a proxy's 502, or a node URL that is no WebSocket's: a cluster trial).
    A scripted node answers the join with a redirect to ``target``."""
    from websockets.asyncio.server import serve

    from client.net import Disconnected
    from protocol.codec import decode_command, encode
    from protocol.messages import PROTOCOL_VERSION, Hello, Welcome

    async def node(ws: Any) -> None:
        async for frame in ws:
            cmd = decode_command(frame)
            if isinstance(cmd, Hello):
                welcome = Welcome(
                    seq=cmd.seq, version=PROTOCOL_VERSION, server="node1", max_frame=65536,
                    rate=20.0, burst=40,
                )  # fmt: skip
                await ws.send(encode(welcome))
            else:
                redirect = Redirect(seq=cmd.seq, code="ABCD2345", node="node2", url=target)
                await ws.send(encode(redirect))

    async with serve(node, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        conn = Connection(f"ws://127.0.0.1:{port}")
        await conn.open()
        try:
            with pytest.raises(Disconnected) as caught:
                await conn.request(JoinRoom(seq=0, code="ABCD2345", name="Pam"))
            assert said in caught.value.reason and target in caught.value.reason
            assert "try again in a moment" in caught.value.reason
            # whoever waits for events learns it too (they waited for ever: a review)
            assert await asyncio.wait_for(conn.events.get(), 1) is caught.value
        finally:
            await conn.close()
