"""The server's few HTTP answers on its WebSocket port: ``/healthz`` for load balancers and
systemd, ``/metrics`` for Prometheus, and ``/races/<id>``, a finished race's public record, from
the hub's encoded-record cache within the address's byte budget.  Functions of a
:class:`~server.app.RaceServer`, which routes the handshake's ``process_request`` here.
"""

from __future__ import annotations

import dataclasses
import time
from http import HTTPStatus
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from .cluster import http_url
from .hub import RECORD_MISS_BYTES
from .metrics import gc_lines

if TYPE_CHECKING:
    from .app import RaceServer


def respond(server: RaceServer, connection: ServerConnection, request: Request) -> Response | None:
    """The server's HTTP answers on its WebSocket port: ``/healthz``, ``/metrics`` and
    ``/races/<id>``, each read with GET or HEAD (HEAD: the headers alone; any other method gets
    ``405``); None for a path that is the WebSocket's."""
    path = request.path.split("?", 1)[0]
    ours = path in ("/healthz", "/metrics") or path.startswith("/races/")
    # every request, a WebSocket's handshake or not, is charged here to the address's budget
    # of new connections (the hub does not charge a handshake again): one that fails (an
    # upgrade to no WebSocket, a page that is not ours, answered 426 or 400 by websockets)
    # cost nothing when only the hub charged (a review)
    address = server.request_address(connection, request)
    now = time.monotonic()
    budget = server.hub.budget(address, now, "connects")
    connection.charged = True  # type: ignore[attr-defined]
    if address and not budget.take(now):
        server.hub.count("refused_http_rate")
        server.refusals.note(address, "connecting_too_fast", now, 429)
        wait = budget.wait(now)
        return too_many(
            f"requests from your address are limited to {server.limits.connect_rate:g} a second:"
            f" try again in {wait:.0f} s\n",
            wait,
        )
    if not ours:
        return None
    method = request.method
    if method not in ("GET", "HEAD"):
        refused = connection.respond(HTTPStatus.METHOD_NOT_ALLOWED, "use GET\n")
        refused.headers["Allow"] = "GET, HEAD"
        return refused
    response = _answer(server, connection, request, path)
    return dataclasses.replace(response, body=b"") if method == "HEAD" else response


def _answer(
    server: RaceServer, connection: ServerConnection, request: Request, path: str
) -> Response:
    if path == "/healthz":
        status = "draining" if server.hub.draining else "ok"
        code = HTTPStatus.SERVICE_UNAVAILABLE if server.hub.draining else HTTPStatus.OK
        return connection.respond(code, status + "\n")
    if path == "/metrics":
        response = connection.respond(HTTPStatus.OK, metrics_text(server, connection))
        response.headers["Content-Type"] = "text/plain; version=0.0.4; charset=utf-8"
        return response
    return race_record(server, connection, request, path.removeprefix("/races/")[:64])


async def respond_in_cluster(
    server: RaceServer, connection: ServerConnection, request: Request
) -> Response | None:
    """As :func:`respond`; a finished race held by another node is redirected
    there (307), wherever its record is in the cluster."""
    response = respond(server, connection, request)
    path = request.path.split("?", 1)[0]
    if (
        response is not None
        and response.status_code == HTTPStatus.NOT_FOUND
        and path.startswith("/races/")
        and server.cluster is not None
    ):
        race_id = path.removeprefix("/races/")[:64]
        held = await server.cluster.find_race(race_id)
        if held is not None:
            response = connection.respond(
                HTTPStatus.TEMPORARY_REDIRECT, f"race {race_id} is on node {held[0]}\n"
            )
            response.headers["Location"] = http_url(held[1], f"races/{race_id}")
    return response


def too_many(text: str, wait: float) -> Response:
    """``429``, saying ``text`` and when to try again (Retry-After, whole seconds, at least 1)."""
    body = text.encode()
    headers = Headers(
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Retry-After", str(int(wait) or 1)),
        ]
    )
    return Response(429, "Too Many Requests", headers, body)


def race_record(
    server: RaceServer, connection: ServerConnection, request: Request, race_id: str
) -> Response:
    """``GET /races/<id>``: the record's JSON from the cache, with an ETag (a matching
    ``If-None-Match`` gets ``304``), cacheable for ever (a finished race never changes), within
    the address's byte budget shared with ``get_race`` (over it: ``429`` and Retry-After)."""
    hub = server.hub
    address = server.request_address(connection, request)
    now = time.monotonic()
    over = not hub.record_budget.open(address, now)
    misses = hub.records.misses
    entry = None if over else hub.records.lookup(race_id, hub.finished, server.store)
    if entry is None and not over:
        hub.record_budget.take(address, RECORD_MISS_BYTES, now)  # a lookup all the same
        return connection.respond(HTTPStatus.NOT_FOUND, "no finished race with that id\n")
    if entry is not None:
        body, etag = entry.json, entry.etag
        cache = [("ETag", etag), ("Cache-Control", "public, max-age=31536000, immutable")]
        # (a header sent twice is two lines: get() raised on them, a 500 and a traceback)
        if etag in ", ".join(request.headers.get_all("If-None-Match")):
            if hub.records.misses != misses:
                # read from the database and encoded for its ETag: charged as the record (304s
                # of records cycled past the cache cost a second of the loop for free: a trial)
                hub.record_budget.take(address, len(body), now)
            return Response(304, "Not Modified", Headers(cache), b"")
    if entry is None or not hub.record_budget.take(address, len(body), now):
        hub.count("record_budget_refused")
        server.refusals.note(address, "record_rate", now, 429)
        wait = hub.record_budget.wait_s(address, now)
        return too_many(
            f"race records to your address are limited to {server.limits.record_rate / 1024:.0f}"
            f" KiB a second: try again in {wait:.0f} s\n",
            wait,
        )
    headers = Headers(
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("X-Content-Type-Options", "nosniff"),  # names in it are never read as HTML
            *cache,
        ]
    )
    return Response(200, "OK", headers, body)


def metrics_text(server: RaceServer, asking: ServerConnection | None = None) -> str:
    """The Prometheus text of ``/metrics`` (docs/operations.md); ``asking``: the connection of
    the request being answered, itself still opening, which is not counted as opening (the
    gauge never read 0, and an alert on it never cleared: a soak trial)."""
    hub = server.hub
    opening = server.opening_total
    if asking is not None and getattr(asking, "opening_key", None) is not None:
        opening -= 1
    racing = sum(1 for r in hub.rooms.values() if r.state == "racing")
    lines = [
        "# HELP patience_race_connections Open WebSocket connections.",
        "# TYPE patience_race_connections gauge",
        f"patience_race_connections {len(server.sockets)}",
        "# HELP patience_race_rooms Rooms open.",
        "# TYPE patience_race_rooms gauge",
        f"patience_race_rooms {len(hub.rooms)}",
        "# HELP patience_race_races_running Races running now.",
        "# TYPE patience_race_races_running gauge",
        f"patience_race_races_running {racing}",
        "# HELP patience_race_races_total Races started and finished.",
        "# TYPE patience_race_races_total counter",
        f'patience_race_races_total{{event="started"}} {hub.metrics.get("races_started", 0)}',
        f'patience_race_races_total{{event="finished"}} {hub.metrics.get("races_finished", 0)}',
        "# HELP patience_race_moves_total Moves received, by result.",
        "# TYPE patience_race_moves_total counter",
    ]
    for key, value in sorted(hub.metrics.items()):
        if key.startswith("moves_"):
            lines.append(
                f'patience_race_moves_total{{result="{key.removeprefix("moves_")}"}} {value}'
            )
    lines += [
        "# HELP patience_race_rejected_total Commands refused, by error code.",
        "# TYPE patience_race_rejected_total counter",
    ]
    # (one series a code: a code refused both before and while handling, bad_message, was two
    # series of one name and label, which a scraper takes as a broken page)
    rejected: dict[str, int] = {}
    for key, value in hub.metrics.items():
        for prefix in ("rejected_", "bad_input_"):
            if key.startswith(prefix):
                code = key.removeprefix(prefix)
                rejected[code] = rejected.get(code, 0) + value
    for code, value in sorted(rejected.items()):
        lines.append(f'patience_race_rejected_total{{code="{code}"}} {value}')
    lines += [
        "# HELP patience_race_closes_total Connections closed, by close code.",
        "# TYPE patience_race_closes_total counter",
    ]
    for close_code, value in sorted(server.close_codes.items()):
        label = close_code or "other"
        lines.append(f'patience_race_closes_total{{code="{label}"}} {value}')
    lines += [
        "# HELP patience_race_uptime_seconds Seconds since the server started.",
        "# TYPE patience_race_uptime_seconds gauge",
        f"patience_race_uptime_seconds {time.monotonic() - server.started:.1f}",
    ]
    lines += [
        "# HELP patience_race_frames_total WebSocket messages, by direction.",
        "# TYPE patience_race_frames_total counter",
        f'patience_race_frames_total{{direction="received"}} {server.frames_received}',
        f'patience_race_frames_total{{direction="sent"}} {server.frames_sent}',
    ]
    lines += [
        "# HELP patience_race_output_pending_bytes Output written and not yet taken by the network, all connections.",
        "# TYPE patience_race_output_pending_bytes gauge",
        f"patience_race_output_pending_bytes {server.pending_bytes()}",
        "# HELP patience_race_connections_opening TCP connections whose WebSocket handshake is not done.",
        "# TYPE patience_race_connections_opening gauge",
        f"patience_race_connections_opening {opening}",
        "# HELP patience_race_refused_total Connections dropped before their handshake, accept() failures, and HTTP requests answered 429 for the address's budget.",
        "# TYPE patience_race_refused_total counter",
        f'patience_race_refused_total{{why="opening"}} {server.refused_early}',
        f'patience_race_refused_total{{why="accept_error"}} {server._accept_errors}',
        f'patience_race_refused_total{{why="http_rate"}} {hub.metrics.get("refused_http_rate", 0)}',
        "# HELP patience_race_restore_lost_total Rooms that could not be brought back at start (their race ended aborted), and races an older version left unfinished (ended lost).",
        "# TYPE patience_race_restore_lost_total counter",
        f'patience_race_restore_lost_total{{what="rooms"}} {hub.metrics.get("rooms_lost", 0)}',
        f'patience_race_restore_lost_total{{what="races"}} {hub.metrics.get("races_lost", 0)}',
        "# HELP patience_race_record_cache_bytes Encoded race records held in memory.",
        "# TYPE patience_race_record_cache_bytes gauge",
        f"patience_race_record_cache_bytes {hub.records.bytes}",
    ]
    pool = server.pool
    if pool is not None:
        won, failed = pool.certified, pool.failed
        lines += [
            "# HELP patience_race_certify_total Deals the background solver tried, by result.",
            "# TYPE patience_race_certify_total counter",
            f'patience_race_certify_total{{result="won"}} {won}',
            f'patience_race_certify_total{{result="not_won"}} {pool.tried - won - failed}',
            f'patience_race_certify_total{{result="failed"}} {failed}',
            "# HELP patience_race_certified_ready Deals certified winnable ready for rooms.",
            "# TYPE patience_race_certified_ready gauge",
            f"patience_race_certified_ready {sum(len(d) for d in pool.ready.values())}",
        ]
    lines += server.handling.lines() + server.loop_lag.lines()
    lines += server.gc_pauses.histogram.lines() + gc_lines(server.gc_frozen)
    return "\n".join(lines) + "\n"
