"""The real client address behind a trusted proxy, and the per-address connection limit."""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidMessage

from protocol.codec import encode
from protocol.messages import PROTOCOL_VERSION, Hello
from server.app import RaceServer
from server.hub import Hub
from server.limits import Limits, budget_key
from server.store import Store

from .server_helpers import fast_limits, http_get, running_server


def test_hub_limits_connections_per_address() -> None:
    hub = Hub(Limits(max_per_address=2))
    a = hub.connect(0.0, "203.0.113.5")
    b = hub.connect(0.0, "203.0.113.5")
    assert a is not None and b is not None
    assert hub.connect(0.0, "203.0.113.5") is None
    assert hub.connect(0.0, "198.51.100.7") is not None  # another address is not affected
    hub.disconnect(a, 1.0)
    assert hub.connect(1.0, "203.0.113.5") is not None  # a place came free


async def _peer_seen(server: RaceServer, headers: dict[str, str] | list[tuple[str, str]]) -> str:
    async with connect(server.url, additional_headers=headers) as ws:
        await ws.send(encode(Hello(seq=0, version=PROTOCOL_VERSION)))
        await ws.recv()
        conn = next(iter(server.hub.conns.values()))
        return conn.peer


@pytest.mark.parametrize(
    ("trusted", "header", "seen"),
    [
        ((), "203.0.113.9", "127.0.0.1"),  # no proxy trusted: the header is ignored
        (("10.0.0.0/8",), "203.0.113.9", "127.0.0.1"),  # the socket is not a trusted proxy
        (("127.0.0.1",), "203.0.113.9", "203.0.113.9"),  # the proxy's word is taken
        (("127.0.0.0/8",), "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the last hop counts
        (("127.0.0.1",), "not-an-address", "127.0.0.1"),  # garbage is ignored
        # an IPv6 subscriber holds a whole /64: one budget for it, not 2^64
        (("127.0.0.1",), "2001:db8:1:2:aaaa:bbbb:cccc:1", "2001:db8:1:2::/64"),
        (("127.0.0.1",), "::ffff:203.0.113.9", "203.0.113.9"),
    ],
)
async def test_forwarded_address_only_from_a_trusted_proxy(
    trusted: tuple[str, ...], header: str, seen: str
) -> None:
    server = RaceServer(
        "127.0.0.1", 0, limits=fast_limits(), store=Store(":memory:"), trusted_proxies=trusted
    )
    await server.start()
    try:
        assert await _peer_seen(server, {"X-Forwarded-For": header}) == seen
    finally:
        await server.stop()


async def test_a_forwarded_header_sent_twice_takes_the_proxys_line() -> None:
    """A proxy that adds its own X-Forwarded-For line beside the client's (HAProxy's option
    forwardfor): the last line is the proxy's.  Reading it closed the connection with 1011 and
    logged a traceback each time."""
    server = RaceServer(
        "127.0.0.1",
        0,
        limits=fast_limits(),
        store=Store(":memory:"),
        trusted_proxies=("127.0.0.1",),
    )
    await server.start()
    try:
        headers = [("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "203.0.113.9")]
        assert await _peer_seen(server, headers) == "203.0.113.9"
        status, _, _ = await http_get(server, "/races/abc", send=headers)
        assert status == 404
    finally:
        await server.stop()


async def test_per_address_limit_closes_with_1013() -> None:
    server = RaceServer(
        "127.0.0.1", 0, limits=fast_limits(max_per_address=1), store=Store(":memory:")
    )
    await server.start()
    try:
        async with connect(server.url) as first:
            await first.send(encode(Hello(seq=0, version=PROTOCOL_VERSION)))
            await first.recv()
            async with connect(server.url) as second:
                with pytest.raises(ConnectionClosed) as exc:
                    await second.recv()
                assert exc.value.rcvd is not None and exc.value.rcvd.code == 1013
                # the reason says which limit: not "full", which would send them elsewhere
                assert exc.value.rcvd.reason.startswith("your address already has 1 connection")
    finally:
        await server.stop()


def test_budgets_are_kept_per_ipv4_address_and_per_ipv6_64() -> None:
    assert budget_key("203.0.113.5") == "203.0.113.5"
    assert (
        budget_key("2001:db8:0:7::1") == budget_key("2001:db8:0:7:ffff::2") == "2001:db8:0:7::/64"
    )
    assert budget_key("2001:db8:0:8::1") != budget_key("2001:db8:0:7::1")
    assert budget_key("::ffff:198.51.100.7") == "198.51.100.7"
    assert budget_key("") == ""


async def test_an_address_opening_connections_too_fast_is_dropped_before_its_handshake() -> None:
    server = RaceServer(
        "127.0.0.1",
        0,
        limits=fast_limits(connect_rate=0.5, connect_burst=3),
        store=Store(":memory:"),
    )
    await server.start()
    try:
        for _ in range(3):
            async with connect(server.url) as ws:
                await ws.send(encode(Hello(seq=0, version=PROTOCOL_VERSION)))
                await ws.recv()
        with pytest.raises((InvalidMessage, OSError)):  # dropped at once: no handshake, no 101
            async with connect(server.url, open_timeout=5) as ws:
                await ws.recv()
        assert server.hub.metrics["refused_opening"] >= 1
        assert ("127.0.0.1", "connecting_too_fast") in server.refusals.seen
    finally:
        await server.stop()


async def test_http_requests_are_charged_to_the_address_budget_of_connections() -> None:
    """`/metrics` and `/healthz` (and a page that is none of the server's) cost nothing: one
    address sent 644 a second, and each `/metrics` stalled the server 10 ms (a red team)."""
    async with running_server(fast_limits(connect_rate=0.2, connect_burst=4)) as server:
        paths = ["/healthz", "/metrics", "/", "/nowhere"]
        # (the last a handshake that fails: an upgrade to no WebSocket was never charged, the
        # hub charging only those that opened: a review)
        upgrade = [("Upgrade", "websocket")]
        statuses = [
            (await http_get(server, path, upgrade if path == "/nowhere" else ()))[0]
            for path in paths
        ]
        assert statuses[:3] == [200, 200, 426] and statuses[3] in (400, 426)
        refused = 0
        for path in ("/healthz", "/metrics", "/races/abc"):
            try:
                status, headers, body = await http_get(server, path)
            except (OSError, asyncio.IncompleteReadError):
                refused += 1  # dropped before its request was read: the budget said so at once
            else:
                assert status == 429 and int(headers["retry-after"]) >= 1, (status, body)
                assert b"limited to 0.2 a second" in body
                refused += 1
        assert refused == 3
        answered = server.hub.metrics.get("refused_http_rate", 0)  # (429s, not drops)
        assert f'patience_race_refused_total{{why="http_rate"}} {answered}' in (
            server.metrics_text()
        )
        # and the budget is the one a WebSocket's handshake is charged to
        with pytest.raises((InvalidMessage, OSError)):
            async with connect(server.url, open_timeout=5) as ws:
                await ws.recv()
