"""The server's limits and timings, and the per-connection message budget."""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from protocol.codec import MAX_FRAME


@dataclass
class Limits:
    max_frame: int = MAX_FRAME
    """Bytes in one frame; larger frames close the connection with 1009."""
    rate: float = 20.0
    """Commands a second per connection, on average..."""
    burst: int = 40
    """...with this many at once."""
    max_limited: int = 50
    """Commands refused for rate before the connection is closed (4429)."""
    max_bad: int = 10
    """Unreadable or invalid messages before the connection is closed (4400)..."""
    bad_forget_s: float = 60.0
    """...each forgiven after this long (a client trying a command a newer server knows, now
    and then, is not cut)."""
    max_connections: int = 5000
    max_per_address: int = 64
    """Connections from one client address (behind a trusted proxy, the forwarded address)."""
    connect_rate: float = 20.0
    """New connections one client address may open a second, on average (one address opened
    and closed a thousand a second, each a handshake and a log line)..."""
    connect_burst: int = 100
    """...with this many at once."""
    max_rooms: int = 1000
    max_rooms_per_address: int = 16
    """Rooms one address may hold open at once (rooms it created that still exist)."""
    room_create_rate: float = 1 / 6
    """Rooms one address may create a second, on average (one every six seconds)..."""
    room_create_burst: int = 10
    """...with this many at once."""
    join_rate: float = 0.5
    """Rooms one address may join a second, on average (a join and a leave, over and over, was
    two log lines and a database write each, as fast as the command rate allowed)..."""
    join_burst: int = 30
    """...with this many at once (a class behind one address joining together)."""
    race_rate: float = 1 / 6
    """Races the rooms one address created may start a second, on average (ten a minute; a
    start that finds none left waits, and the race starts by itself when one is).  A start, a
    resign and a rematch over and over in eight rooms was two race records a second, each kept
    for ``keep_days``..."""
    race_burst: int = 20
    """...with this many at once."""
    resume_rate: float = 2.0
    """Seats one address may take back a second, on average (a resume tells the whole room)..."""
    resume_burst: int = 60
    """...with this many at once (a class behind one address, back after a restart)."""
    room_update_rate: float = 4.0
    """Room updates one room sends its members a second, on average: each change (ready, the
    settings, a rematch asked) is sent to every member, and sixteen players toggling ready sent
    each of 47 members 200 KiB a second, cutting those on a slow link (a red team).  Past it the
    changes are sent together in the next update, once the budget allows..."""
    room_update_burst: int = 20
    """...with this many at once."""
    keep_days: float = 30.0
    """Races (finished or not) older than this are deleted, with their moves; 0 keeps all
    (within ``max_db_mb``)."""
    max_db_mb: float = 2048.0
    """Past this many megabytes of data in the database, the oldest races are deleted (live
    rooms' kept), whatever their age: a legal move and its undo over and over, from every
    connection one address may open, stored gigabytes a day, each kept ``keep_days`` (0: no
    limit)."""
    abandoned_s: float = 30.0
    """A room in its lobby or results with nobody connected closes after this long: the grace
    period is for seats in a race, not for rooms nobody is in.  Long enough for a dropped
    client to be back (it tries at most 5 s apart): at 10 s a wifi drop of 9 s lost a host's
    lobby, the code given out to friends with it."""
    hello_timeout_s: float = 10.0
    idle_timeout_s: float = 900.0
    """A connection that sends nothing this long, outside a running race, is closed (4408)."""
    kicked_out_s: float = 600.0
    """How long the address of someone the host removed may not join that room again."""
    race_idle_s: float = 600.0
    """A player still playing a race who makes no move this long is out of it, as if they had
    left (their score stands): a seat nobody plays must not hold the race open for ever (0: never)."""
    stuck_undo_s: float = 60.0
    """A player left with no move, only an undo, who neither undoes nor resigns this long is
    out as stuck (0: only ``race_idle_s`` applies)."""
    grace_s: float = 60.0
    """How long a dropped player's seat waits for them to resume."""
    countdown_ms: int = 3000
    restart_hold_s: float = 15.0
    """After a restart, how long a countdown it cut (or a lobby about to start) waits at most for
    its players to come back (the grace is longer: a player who never comes back must not hold
    everyone a minute)."""
    progress_interval_s: float = 0.25
    """Progress is sent to a room at most this often, however fast its players move: four times a
    second is live to a person, and every event goes to every member (docs/performance.md)."""
    tick_s: float = 0.05
    # -- output, per connection (docs/operations.md, "Limits") --
    send_buffer: int = 64 * 1024
    """Bytes written to a connection's socket and not yet taken by the network: past this, more
    output waits in the connection's queue (and the keepalive clock below runs)."""
    progress_probe_s: float = 1.0
    """A connection that gets progress is pinged at most this often; while such a ping has gone
    this long unanswered, its progress waits (the newest replacing the one waiting) until the
    answer comes.  On a slow link (a few KB a second) every quarter second's progress filled the
    buffers, the server's and a proxy's alike, with minutes of stale ones, and the pong behind
    them came too late: the client reconnected every 15 s (a flaky-network trial)."""
    max_pending_bytes: int = 256 * 1024
    """Bytes waiting in a connection's queue; past this (or ``max_pending_frames``) it is
    closed at once (4413).  Progress waiting is replaced by newer progress, never queued twice."""
    max_pending_frames: int = 256
    slow_timeout_s: float = 15.0
    """A connection whose output stays over ``send_buffer`` this long (a peer that does not
    read, whatever it sends) is closed (4413)."""
    socket_send_buffer: int = 64 * 1024
    """SO_SNDBUF of each accepted socket (Linux doubles it; 0: the kernel's own, which grows to
    4 MiB): what a peer that does not read can hold in the kernel, beyond ``send_buffer``."""
    open_timeout_s: float = 5.0
    """Seconds to finish the WebSocket handshake after the TCP connection opens."""
    # -- race records (server/records.py) --
    record_cache_bytes: int = 32 * 1024 * 1024
    """Encoded race records kept in memory, least recently used out first."""
    record_rate: float = 256 * 1024
    """Record bytes a second per client address (socket and HTTP together)..."""
    record_burst: int = 1024 * 1024
    """...and at once."""


BudgetKind = Literal["rooms", "joins", "resumes", "races", "connects"]
"""What an address's token buckets are for (``Hub.budget``)."""


def budget_key(address: str) -> str:
    """The key a client address's budgets (connections, rooms, record bytes) are kept under: an
    IPv4 address itself (an IPv4-mapped IPv6 one as IPv4), an IPv6 address its /64 network,
    which one subscriber usually holds whole (per address, a /64 would be 2^64 budgets)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


NETWORK_SHARE = 4
"""An IPv6 /48 may hold at most this many times what one /64 may (connections, rooms): one
subscriber often has a /56 or a /48, 256 or 65,536 budget keys, and from one /56 a red team
opened the server's thousand rooms in 12 s."""


def network_key(key: str) -> str | None:
    """The IPv6 /48 that budget key ``key`` (a /64, :func:`budget_key`) lies in; None for an
    IPv4 address or anything else."""
    if not key.endswith("/64"):
        return None
    try:
        return str(ipaddress.IPv6Network(key).supernet(new_prefix=48))
    except ValueError:
        return None


def over_share(held: dict[str, int], key: str, most: int) -> bool:
    """Whether ``key`` (a budget key) holds ``most`` of what ``held`` counts, or its IPv6 /48
    :data:`NETWORK_SHARE` times that."""
    if held.get(key, 0) >= most:
        return True
    wide = network_key(key)
    return wide is not None and held.get(wide, 0) >= NETWORK_SHARE * most


def count_held(held: dict[str, int], key: str, delta: int) -> None:
    """Count ``delta`` more (or fewer) held by ``key`` and by its IPv6 /48 in ``held``; a count
    down to nothing is dropped."""
    for k in (key, network_key(key)):
        if k:
            n = held.get(k, 0) + delta
            if n > 0:
                held[k] = n
            else:
                held.pop(k, None)


class TokenBucket:
    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.at = now

    def wait(self, now: float) -> float:
        """Seconds until :meth:`take` can succeed (0: now); takes nothing."""
        tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate

    def give_back(self) -> None:
        """A token taken for something that did not happen after all."""
        self.tokens = min(float(self.burst), self.tokens + 1)

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class AddressBudgets:
    """Each client address's token buckets, one of each kind: creating rooms, joining them,
    taking seats back, starting races in the rooms it created, opening connections.  A bucket
    that has refilled holds nothing worth keeping, so the table is trimmed of the oldest ones
    past a bound (twice the connections the server takes, at least 1,000)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def get(self, peer: str, now: float, kind: BudgetKind = "rooms") -> TokenBucket:
        key = peer if kind == "rooms" else f"{kind} {peer}"
        bucket = self.buckets.get(key)
        if bucket is None:
            limits = self.limits
            rate, burst = {
                "rooms": (limits.room_create_rate, limits.room_create_burst),
                "joins": (limits.join_rate, limits.join_burst),
                "resumes": (limits.resume_rate, limits.resume_burst),
                "connects": (limits.connect_rate, limits.connect_burst),
                "races": (limits.race_rate, limits.race_burst),
            }[kind]
            bucket = TokenBucket(rate, burst, now)
            self.buckets[key] = bucket
            while len(self.buckets) > max(1000, 2 * limits.max_connections):
                self.buckets.popitem(last=False)
        else:
            self.buckets.move_to_end(key)
        return bucket
