"""Live races across a restart: how long bringing rooms back takes, and what keeping them costs.

    .venv/bin/python bench/restart.py [--rooms 250] [--players 8] [--moves 40] [--seed 1]

The hub is driven directly (no sockets), on a real SQLite file with group commit as the server
runs it.  ``--rooms`` rooms of ``--players`` players race Spider (2 suits); each player makes up
to ``--moves`` moves, committed in groups of one per room (as when every player of a room moves
in the same turn of the event loop).  Then:

- **restart**: a new store and hub on the same file; the time ``Hub.restore`` takes to bring
  every room back (reading the documents, dealing every race again, replaying every move through
  the rules engine).  Goal (issue 12): under 2 s for 250 rooms in progress.
- **cost per move**: the same moves handled and committed by a hub that keeps live rooms and by
  one that does not (``hub.live = None``: moves stored, as before issue 12), in the same run,
  alternating rounds; the ratio is the extra durability's cost.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from protocol.messages import (
    PROTOCOL_VERSION,
    CreateRoom,
    Hello,
    JoinRoom,
    MoveCmd,
    Ready,
    Settings,
    to_wire,
)
from protocol.moves import Kind
from server.hub import Hub
from server.limits import Limits
from server.store import Store

LIMITS = Limits(
    countdown_ms=0,
    max_rooms=100000,
    max_rooms_per_address=100000,
    room_create_burst=100000,
    rate=1e9,
    burst=10**9,
)


class Driver:
    """Rooms of players on a hub, every command through ``Hub.handle``."""

    def __init__(self, hub: Hub, rng: random.Random) -> None:
        self.hub = hub
        self.rng = rng
        self.t = 1000.0
        self.seq: dict[int, int] = {}
        self.rooms: list[tuple[str, list[int]]] = []

    def cmd(self, cid: int, make) -> object:  # type: ignore[no-untyped-def]
        seq = self.seq[cid] = self.seq.get(cid, 0) + 1
        out = self.hub.handle(cid, make(seq), self.t)
        return out.replies[0] if out.replies else None

    def conn(self) -> int:
        cid = self.hub.connect(self.t, "")
        assert cid is not None
        self.cmd(cid, lambda s: Hello(seq=s, version=PROTOCOL_VERSION))
        return cid

    def room(self, players: int) -> None:
        settings = Settings(game="spider", options={"suits": 2})
        host = self.conn()
        joined = self.cmd(host, lambda s: CreateRoom(seq=s, name="P1", settings=settings))
        code = joined.room.code  # type: ignore[attr-defined]
        cids = [host]
        for i in range(2, players + 1):
            c = self.conn()
            self.cmd(c, lambda s, i=i: JoinRoom(seq=s, code=code, name=f"P{i}"))
            cids.append(c)
        for c in cids:
            self.cmd(c, lambda s: Ready(seq=s))
        self.t += 1
        self.hub.tick(self.t)  # the countdown (0 ms) ends: racing
        self.rooms.append((code, cids))

    def round(self) -> int:
        """One move for every player still racing; a commit per room."""
        made = 0
        for code, cids in self.rooms:
            room = self.hub.rooms[code]
            race = room.race
            assert race is not None
            for cid in cids:
                member = self.hub.conns[cid].member
                assert member is not None
                seat = race.seats[member.id]
                if seat.status != "playing":
                    continue
                legal = seat.state.legal_moves()
                real = [m for m in legal if m.kind in (Kind.TABLEAU, Kind.FOUNDATION)]
                if not legal:
                    continue
                m = self.rng.choice(real if real and self.rng.random() < 0.9 else legal)
                self.cmd(cid, lambda s, m=m: MoveCmd(seq=s, move=to_wire(m)))
                made += 1
            if self.hub.store is not None:
                self.hub.store.commit()
        self.t += 0.05
        return made


def build(path: Path, rooms: int, players: int, moves: int, seed: int, live: bool) -> Driver:
    store = Store(path, group_commit=True)
    hub = Hub(LIMITS, store)
    if not live:
        hub.live = None
    d = Driver(hub, random.Random(seed))
    for _ in range(rooms):
        d.room(players)
    store.commit()
    return d


def time_moves(d: Driver, rounds: int) -> tuple[int, float]:
    made = 0
    t0 = time.perf_counter()
    for _ in range(rounds):
        made += d.round()
    return made, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rooms", type=int, default=250)
    p.add_argument("--players", type=int, default=8)
    p.add_argument("--moves", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        # -- cost per move: the two hubs in alternating rounds -----------------------------
        kept = build(Path(tmp) / "kept.sqlite3", args.rooms, args.players, 0, args.seed, True)
        plain = build(Path(tmp) / "plain.sqlite3", args.rooms, args.players, 0, args.seed, False)
        costs: dict[str, list[float]] = {"kept": [], "plain": []}
        for _ in range(args.moves):
            for name, d in (("plain", plain), ("kept", kept)):
                made, took = time_moves(d, 1)
                if made:
                    costs[name].append(took / made)
        per = {k: statistics.median(v) * 1e6 for k, v in costs.items()}
        assert kept.hub.store is not None and plain.hub.store is not None
        moves_made = sum(
            len(s.moves) for r in kept.hub.rooms.values() for s in r.race.seats.values()
        )  # type: ignore[union-attr]
        kept.hub.store.close()
        plain.hub.store.close()

        # -- restart: the file of the hub that kept its rooms ----------------------------------
        t0 = time.perf_counter()
        store = Store(Path(tmp) / "kept.sqlite3", group_commit=True)
        hub = Hub(LIMITS, store)
        back = hub.restore(time.monotonic())
        store.commit()
        took = time.perf_counter() - t0
        store.close()

    print(f"rooms {args.rooms} x {args.players} players, {moves_made} moves in all")
    print(f"restart: {back} rooms back in {took:.3f} s (goal: under 2 s for 250 rooms)")
    print(
        f"cost per move (handled + committed): {per['kept']:.0f} us with live rooms kept, "
        f"{per['plain']:.0f} us without: ratio {per['kept'] / per['plain']:.2f}"
    )


if __name__ == "__main__":
    main()
