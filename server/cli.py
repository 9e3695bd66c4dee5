"""``patience-race-server``: run the race server, print the protocol schema, export a race.

Every flag can also be set by an environment variable: ``--grace 30`` or
``PATIENCE_RACE_GRACE=30`` (the flag wins).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import ipaddress
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from protocol.messages import json_schemas

from .admin import export_race, forget_rooms, list_races, locked_store
from .app import RaceServer
from .cluster import ClusterConfig, ClusterJoinError
from .limits import Limits
from .logs import setup_logging
from .pool import DealPool
from .store import Store, default_db_path

ENV_PREFIX = "PATIENCE_RACE_"

GC_THRESHOLDS = (50_000, 20, 10)
"""The garbage collector's thresholds for the server process (Python's default: 700, 10, 10).

The server's own state makes almost no reference cycles (each closed connection leaves a few KB
of the websockets library's objects in cycles, freed by the next collection, and at once when
nobody is connected: ``RaceServer.collect_when_idle``).  But every connection keeps a few dozen
objects alive between two of its frames, so any collection walks tens of thousands of objects
(about 0.5 us each), and a full one the whole heap: with the default thresholds, at 2,000
players, the collector ran several times a second and paused every connection for 100-370 ms
every few seconds (docs/performance.md).  Python counts a collection's trigger in net new
objects, which grow slowly here: with these thresholds a young collection comes about every 30 s
at that load (tens of milliseconds: /metrics has the pauses), a full one far more rarely, and any
cycles are still freed.
"""


def tune_gc() -> int:
    """Once the server is up: freeze what start-up made (modules, classes: never garbage) so no
    collection walks it again, and collect less often.  The objects frozen, counted once."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return gc.get_freeze_count()


Check = Callable[[Any], "str | None"]
"""What is wrong with an option's value, in a few words, or None."""


def _number(text: str) -> float:
    """A finite number (``nan`` and ``inf`` are not settings)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


_number.__name__ = "float"  # what argparse calls it in "invalid float value"
_KINDS: dict[object, str] = {int: "a whole number", _number: "a number"}


def _at_least(low: float) -> Check:
    return lambda v: None if v >= low else f"must be at least {low}"


def _above(low: float) -> Check:
    return lambda v: None if v > low else f"must be more than {low}"


def _between(low: int, high: int) -> Check:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


def _range(low: float, high: float, above: bool = False) -> Check:
    """More than (``above``) or at least ``low``, and at most ``high``: a setting far past what
    any server needs is a typo (a countdown of 10^20 ms, a grace of 10^300 s)."""

    def check(v: float) -> str | None:
        if v < low or (above and v == low):
            return f"must be {'more than' if above else 'at least'} {low:g}"
        if v > high:
            return f"must be at most {high:g}"
        return None

    return check


def _count(text: str) -> int:
    """How many races ``--list-races`` lists: 1 to a million."""
    value = int(text)
    if not 1 <= value <= 1_000_000:
        raise ValueError(text)
    return value


_count.__name__ = "count"  # argparse: "invalid count value"


def _one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def _networks(text: str) -> str | None:
    networks = []
    for net in text.split(","):
        if net.strip():
            try:
                network = ipaddress.ip_network(net.strip(), strict=False)
            except ValueError as exc:
                return str(exc)
            if network.prefixlen == 0:
                # every client's X-Forwarded-For believed: any address it likes, every budget
                return f"{net.strip()} is every address: name the proxy's own"
            if network.prefixlen < (8 if network.version == 4 else 7):
                # (0.0.0.0/1,128.0.0.0/1 is every address too: an operator trial; the widest
                # private networks, 10.0.0.0/8 and fc00::/7, are as wide as a proxy's can be)
                return (
                    f"{net.strip()} is too wide a network for proxies (wider than /8 for IPv4, "
                    "/7 for IPv6): name the proxy's own"
                )
            networks.append(network)
    # and all of them together (256 networks of /8 are every address too; so is
    # ::ffff:0:0/96, every IPv4 address mapped into IPv6: a review)
    v4 = sum(n.num_addresses for n in ipaddress.collapse_addresses(
        [n for n in networks if n.version == 4]))  # fmt: skip
    v6 = [n for n in networks if n.version == 6]
    mapped = sum(n.num_addresses for n in ipaddress.collapse_addresses(
        [n for n in v6 if n.subnet_of(_MAPPED)]))  # fmt: skip
    wide = sum(n.num_addresses for n in ipaddress.collapse_addresses(v6))
    if v4 + mapped > 2**26 or wide > 2**122:
        # (the private networks together, which compose trusts, are about one /8's worth)
        return (
            "the trusted proxies are too many addresses together (more than four /8 networks "
            "of IPv4, or a /6 of IPv6): name the proxies' own"
        )
    return None


_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")


def _host(text: str) -> str | None:
    return None if text.strip() else "must name an address (0.0.0.0 for every one)"


class _BadEnv:
    """An option's value from an environment variable that is nonsense: refused after parsing
    (:func:`config_problem`) if no flag overrides it."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __str__(self) -> str:
        return self.why


def _env(name: str, default: str | None) -> str | None:
    return os.environ.get(ENV_PREFIX + name.upper().replace("-", "_"), default)


def build_parser() -> argparse.ArgumentParser:
    limits = Limits()
    p = argparse.ArgumentParser(
        prog="patience-race-server",
        description="The Patience Race server: hosts race rooms over WebSockets. "
        "Every option can also be set as an environment variable PATIENCE_RACE_<OPTION> "
        "(for example PATIENCE_RACE_PORT=9000).",
    )
    checks: dict[str, tuple[str, Check]] = {}
    p.set_defaults(_checks=checks)

    def opt(
        name: str,
        default: object,
        help: str,
        type: Callable[[str], Any] = str,
        check: Check | None = None,
    ) -> None:
        """A flag and its environment variable; a value that is not of its ``type``, or that
        ``check`` finds nonsense, is refused in one line naming the flag or the variable."""
        kind = _KINDS.get(type, "a value")
        env = _env(name, None)
        value = default
        if env is not None:
            var = ENV_PREFIX + name.upper().replace("-", "_")
            problem: str | None
            try:
                value = type(env)
            except ValueError:
                problem = f"{var}={env!r} is not {kind}"
            else:
                problem = check(value) if check is not None else None
                problem = None if problem is None else f"{var}={env!r}: {problem}"
            if problem is not None:
                # refused after parsing unless the flag is given: the flag wins (a bad value in
                # the environment stopped a server whose command line overrode it)
                value = _BadEnv(f"{problem} (--{name}: {help})")
        if check is not None:
            checks[name.replace("-", "_")] = (name, check)
        p.add_argument(f"--{name}", type=type, default=value, help=f"{help} (default: {default})")

    opt("host", "127.0.0.1", "address to listen on", check=_host)
    opt("port", 8765, "port to listen on (0: any free port)", int, _between(0, 65535))
    opt("db", str(default_db_path()), "SQLite database file, or :memory:")
    opt(
        "grace",
        limits.grace_s,
        "seconds a dropped player's seat waits for them",
        _number,
        _range(0, 86_400, above=True),
    )
    opt(
        "countdown-ms",
        limits.countdown_ms,
        "countdown before a race starts, in milliseconds (0: none)",
        int,
        _range(0, 60_000),
    )
    opt("max-rooms", limits.max_rooms, "rooms open at once", int, _at_least(1))
    opt(
        "max-rooms-per-address",
        limits.max_rooms_per_address,
        "rooms one client address may hold open at once",
        int,
        _at_least(1),
    )
    opt(
        "rooms-per-minute",
        round(limits.room_create_rate * 60, 3),
        "rooms one client address may open a minute, on average (bursts of 10)",
        _number,
        _above(0),
    )
    opt(
        "joins-per-minute",
        round(limits.join_rate * 60, 3),
        "rooms one client address may join a minute, on average (bursts of 30)",
        _number,
        _above(0),
    )
    opt(
        "resumes-per-minute",
        round(limits.resume_rate * 60, 3),
        "seats one client address may take back a minute, on average (bursts of 60)",
        _number,
        _above(0),
    )
    opt(
        "races-per-minute",
        round(limits.race_rate * 60, 3),
        "races the rooms one client address opened may start a minute, on average (bursts of 20)",
        _number,
        _above(0),
    )
    opt(
        "connects-per-second",
        limits.connect_rate,
        "new connections one client address may open a second, on average (bursts of 100)",
        _number,
        _above(0),
    )
    opt("max-connections", limits.max_connections, "connections open at once", int, _at_least(1))
    opt(
        "max-per-address",
        limits.max_per_address,
        "connections from one client address",
        int,
        _at_least(1),
    )
    opt(
        "rate",
        limits.rate,
        "commands per second per connection, on average",
        _number,
        _range(0.01, 10_000),
    )
    opt("burst", limits.burst, "commands per connection at once", int, _at_least(1))
    opt(
        "idle-timeout",
        limits.idle_timeout_s,
        "seconds before a silent connection outside a race is closed",
        _number,
        _range(0, 86_400, above=True),
    )
    opt(
        "race-idle",
        limits.race_idle_s,
        "seconds a player in a race may go without a move before they are out of it (0: never)",
        _number,
        _range(0, 86_400),
    )
    opt(
        "progress-ms",
        int(limits.progress_interval_s * 1000),
        "a room's progress is sent at most this often, in milliseconds",
        int,
        _between(20, 10_000),
    )
    opt(
        "certified-deals",
        3,
        "deals certified winnable kept ready per game and options (0: rooms cannot ask for one)",
        int,
        _at_least(0),
    )
    opt(
        "certify-seconds",
        20.0,
        "the solver's time for one deal, in a background process",
        _number,
        _range(0, 3600, above=True),
    )
    opt(
        "keep-days",
        limits.keep_days,
        "races older than this many days are deleted with their moves (0: keep every race)",
        _number,
        _at_least(0),
    )
    opt(
        "max-db-mb",
        limits.max_db_mb,
        "past this many megabytes of data in the database the oldest races are deleted, "
        "whatever their age (0: no limit)",
        _number,
        _at_least(0),
    )
    opt(
        "slow-timeout",
        limits.slow_timeout_s,
        "seconds a connection's output may stay backed up (a peer not reading) before it is cut",
        _number,
        _range(0, 3600, above=True),
    )
    opt(
        "open-timeout",
        limits.open_timeout_s,
        "seconds to finish the WebSocket handshake",
        _number,
        _range(0, 600, above=True),
    )
    opt(
        "record-rate",
        int(limits.record_rate // 1024),
        "race record KiB a second per client address (the burst is four times this)",
        int,
        _at_least(1),
    )
    opt("origins", "", "comma-separated Origin values allowed (empty: any)")
    opt(
        "trusted-proxies",
        "",
        "comma-separated addresses or networks (127.0.0.1, 10.0.0.0/8) whose X-Forwarded-For is believed",
        check=_networks,
    )
    opt(
        "node",
        "",
        "this server's name as one node of a cluster, taken in lower case (empty: a single server)",
    )
    opt("redis", "redis://127.0.0.1:6379/0", "the cluster's Redis (with --node)")
    opt(
        "node-url",
        "",
        "where clients are redirected to reach this node: a path on the proxy or a ws:// URL; "
        "{port} is this server's port (empty: /n/NODE/)",
    )
    opt(
        "node-expiry",
        10.0,
        "seconds after which a silent node leaves the cluster",
        _number,
        # (10^9 started: a heartbeat every 8 years, a dead node's rooms listed for ever: a
        # cluster trial)
        _range(0.5, 600.0),
    )
    opt(
        "loop",
        "auto",
        "event loop: asyncio, uvloop, or auto (uvloop when it is installed)",
        check=_one_of("auto", "asyncio", "uvloop"),
    )
    opt(
        "log-format",
        "text",
        "text (for people) or json (for machines)",
        check=_one_of("text", "json"),
    )
    opt(
        "log-level",
        "info",
        "debug, info, warning or error",
        str.lower,
        _one_of("debug", "info", "warning", "error"),
    )
    p.add_argument(
        "--schema",
        action="store_true",
        help="print the protocol's JSON Schema (both directions) and exit",
    )
    p.add_argument(
        "--export", metavar="RACE_ID", help="print a finished race's public record (JSON) and exit"
    )
    p.add_argument(
        "--list-races",
        nargs="?",
        const=50,
        type=_count,
        metavar="N",
        help="list the latest N races (50) in the database, a JSON object a line, and exit",
    )
    p.add_argument(
        "--forget-rooms",
        action="store_true",
        help="end every live room and unfinished race kept in the database (after restoring a "
        "backup made during a race), and exit",
    )
    return p


def raise_open_file_limit() -> None:
    """Every connection is a file descriptor: lift the soft limit (often 1,024) to the hard one,
    so the connection limits, not the process's, decide who is refused."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft == resource.RLIM_INFINITY or soft >= target:
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def config_problem(args: argparse.Namespace) -> str | None:
    """The first option whose value is nonsense, a flag's or an environment variable's (one
    that a flag overrides is not looked at), in one line, or None: before anything is opened
    or created."""
    for value in vars(args).values():
        if isinstance(value, _BadEnv):
            return value.why
    if args.loop == "uvloop" and importlib.util.find_spec("uvloop") is None:
        return NO_UVLOOP
    for dest, (name, check) in args._checks.items():
        value = getattr(args, dest)
        problem = check(value)
        if problem is not None:
            return f"--{name} {value}: {problem}"
    return None


def cluster_config(args: argparse.Namespace) -> ClusterConfig:
    """The node's configuration.  Its name is taken in lower case: host names are not
    case-sensitive, and the systemd template names a node after its host (``%H-%i``), which
    may be written with capitals; ValueError for a name that is not one."""
    return ClusterConfig(args.node.lower(), args.redis, args.node_url, args.node_expiry)


def limits_from_args(args: argparse.Namespace) -> Limits:
    """The server's limits as its flags (and environment) set them."""
    return Limits(
        grace_s=args.grace,
        countdown_ms=args.countdown_ms,
        max_rooms=args.max_rooms,
        max_rooms_per_address=args.max_rooms_per_address,
        room_create_rate=args.rooms_per_minute / 60,
        join_rate=args.joins_per_minute / 60,
        race_rate=args.races_per_minute / 60,
        resume_rate=args.resumes_per_minute / 60,
        connect_rate=args.connects_per_second,
        max_connections=args.max_connections,
        max_per_address=args.max_per_address,
        rate=args.rate,
        burst=args.burst,
        idle_timeout_s=args.idle_timeout,
        race_idle_s=args.race_idle,
        progress_interval_s=args.progress_ms / 1000,
        keep_days=args.keep_days,
        max_db_mb=args.max_db_mb,
        slow_timeout_s=args.slow_timeout,
        open_timeout_s=args.open_timeout,
        record_rate=args.record_rate * 1024,
        record_burst=args.record_rate * 4096,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went (``--schema | head``, ``--list-races | head``): no traceback, and
        # stdout pointed at nothing so that Python's own flush at exit does not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    problem = config_problem(args)
    if problem is not None:
        print(f"patience-race-server: {problem}", file=sys.stderr)
        return 2
    if args.schema:
        print(json.dumps(json_schemas(), indent=1))
        return 0
    if args.forget_rooms and (args.export or args.list_races is not None):
        # (it was left undone behind an export's back: a review)
        print(
            "patience-race-server: --forget-rooms goes alone (not with --export or --list-races)",
            file=sys.stderr,
        )
        return 2
    if args.list_races is not None:
        return list_races(args.db, args.list_races)
    if args.export:
        return export_race(args.db, args.export)
    if args.forget_rooms:
        return forget_rooms(args.db)
    setup_logging(args.log_format, args.log_level)
    raise_open_file_limit()
    limits = limits_from_args(args)
    origins = [o.strip() for o in args.origins.split(",") if o.strip()] or None
    cluster = None
    if args.node:
        try:
            cluster = cluster_config(args)
        except ValueError as exc:
            print(f"patience-race-server: {exc}", file=sys.stderr)  # (names the value)
            return 2
        try:
            import redis  # noqa: F401
        except ImportError:
            print(
                "patience-race-server: --node needs the Redis client: in the checkout the "
                "server runs from, .venv/bin/pip install '.[cluster]' (docs/cluster.md)",
                file=sys.stderr,
            )
            return 2
    lock: int | None = None
    if args.db != ":memory:":
        # a database that cannot be used is said in one line, before anything starts; one
        # server per file: the lock is held until the process ends
        locked = locked_store(args.db)
        if locked is None:
            return 2
        lock, store = locked
        store.close()
    try:
        return _run(args, limits, origins, cluster)
    finally:
        if lock is not None:
            os.close(lock)


def _run(
    args: argparse.Namespace,
    limits: Limits,
    origins: list[str] | None,
    cluster: ClusterConfig | None,
) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        proxies = [p for p in args.trusted_proxies.split(",") if p.strip()]
        factory = loop_factory(args.loop)
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(
                serve(
                    args.host,
                    args.port,
                    args.db,
                    limits,
                    origins,
                    proxies,
                    cluster,
                    DealPool(args.certified_deals, args.certify_seconds)
                    if args.certified_deals > 0
                    else None,
                )
            )
    return 0


NO_UVLOOP = "--loop uvloop needs uvloop: pip install uvloop"
"""Said by :func:`config_problem` before anything is opened, and by :func:`loop_factory`."""


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when asked for (or, with auto, when installed); None for asyncio's own."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":  # a bad setting: exit status 2, as every other
            print(f"patience-race-server: {NO_UVLOOP}", file=sys.stderr)
            raise SystemExit(2) from None
        return None
    return uvloop.new_event_loop


async def serve(
    host: str,
    port: int,
    db: str,
    limits: Limits,
    origins: list[str] | None,
    trusted_proxies: list[str] | None = None,
    cluster: ClusterConfig | None = None,
    pool: DealPool | None = None,
) -> int:
    """Serve until SIGTERM, SIGINT or SIGHUP (exit status 0; each drains: a closed terminal
    sends SIGHUP), or until storage fails (1: a service manager restarts the process)."""
    store = Store(db, group_commit=True, checkpoint_s=1.0)
    server = RaceServer(
        host,
        port,
        limits=limits,
        store=store,
        origins=origins,
        trusted_proxies=trusted_proxies or (),
        cluster=cluster,
        pool=pool,
    )
    stop = server.stopping
    loop = asyncio.get_running_loop()
    # before it listens: a stop asked for while it starts (its rooms restored, its "listening"
    # said) is a drain once it has started, not a kill without one.  SIGHUP: the terminal the
    # server was started from closed (it killed the server without a drain: an operator trial);
    # there is no configuration to read again.  Ignored, as nohup leaves it, it stays ignored:
    # the server was started to outlive its terminal
    stopping = [signal.SIGTERM, signal.SIGINT]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        stopping.append(signal.SIGHUP)
    for sig in stopping:
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except OSError as exc:  # the port is taken, or the address is not this machine's
        print(
            f"patience-race-server: cannot listen on {host}:{port}: "
            f"{(exc.strerror or str(exc)).lower()}",
            file=sys.stderr,
        )
        await server.stop()
        store.close()
        return 2
    except ClusterJoinError as exc:  # Redis away, or refusing this node: systemd tries again
        print(f"patience-race-server: {exc}", file=sys.stderr)
        await server.stop()
        store.close()
        return 0 if stop.is_set() else 2  # (stopped while it waited: as asked)
    server.gc_frozen = tune_gc()
    server.collect_when_idle = True
    await stop.wait()
    await server.drain()
    return 1 if server.failed else 0


if __name__ == "__main__":
    sys.exit(main())
