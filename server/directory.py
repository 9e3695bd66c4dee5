"""What a cluster node knows of the others (docs/cluster.md), as plain state: which nodes are
alive and where, which node holds each room, the other nodes' public rooms, which node holds a
finished race's record, and where the rooms of the nodes that left lately went.

:class:`server.cluster.Cluster` feeds it from Redis (its keys and its channel) and the hub asks
it, synchronously, where a room is (:meth:`Directory.locate`) and what the other nodes list
(:meth:`Directory.remote_summaries`).  Nothing here does I/O or reads a clock: the times are
given, so every rule can be tested without Redis.
"""

from __future__ import annotations

import contextlib
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.messages import RoomSummary

SUMMARY_FIELDS = frozenset(RoomSummary.model_fields)
"""What this node reads of another's public room: a newer node may publish more."""
KNOWN_RACES = 10_000
"""Finished races of other nodes whose node is remembered in memory (``get_race`` over the
WebSocket); older ones are still found over HTTP, which asks Redis."""


@dataclass
class Directory:
    """The other nodes, their rooms and their races, as this node last heard of them."""

    nodes: dict[str, str] = field(default_factory=dict)
    """Other live nodes: name -> advertised URL."""
    where: dict[str, str] = field(default_factory=dict)
    """Room code -> the other node holding it."""
    public: dict[str, dict[str, str]] = field(default_factory=dict)
    """Other node -> its public rooms: code -> summary JSON (parsed only when listed)."""
    races: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Finished race id -> the other node holding its record (the latest :data:`KNOWN_RACES`)."""
    departed: dict[str, tuple[str, str, float]] = field(default_factory=dict)
    """Room code -> (node, URL, until when) for the rooms of nodes that left: not listed, but
    still redirected to their node until then."""

    # -- what the hub asks -------------------------------------------------------------------

    def locate(self, code: str, now: float) -> tuple[str, str] | None:
        """(node, URL) of the other node holding room ``code``, or of the node that held it and
        left less than its time ago (a player reconnecting while it restarts is sent on to it)."""
        node = self.where.get(code)
        if node is not None:
            url = self.nodes.get(node)
            return (node, url) if url is not None else None
        gone = self.departed.get(code)
        if gone is not None and gone[2] > now:
            return gone[0], gone[1]
        return None

    def locate_race(self, race_id: str) -> tuple[str, str] | None:
        """(node, URL) of the live node holding finished race ``race_id``, if known here."""
        node = self.races.get(race_id)
        if node is None:
            return None
        url = self.nodes.get(node)
        return (node, url) if url is not None else None

    def remote_summaries(self, limit: int) -> list[RoomSummary]:
        """Up to ``limit`` public rooms of the other nodes, those one can join first (a lobby
        with a free seat), then the other lobbies, then races, then results (as each node
        lists its own; who opened them is not published, so no cap by address here).  A summary
        that does not read is left out."""
        out: list[RoomSummary] = []
        for node, rooms in self.public.items():
            if node not in self.nodes:
                continue
            for doc in rooms.values():
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    # the fields this node knows: a newer node's summary has more (an upgrade
                    # going through the nodes one by one must not hide its rooms here)
                    known = {k: v for k, v in json.loads(doc).items() if k in SUMMARY_FIELDS}
                    out.append(RoomSummary.model_validate(known))

        def order(r: RoomSummary) -> int:
            if r.state == "lobby":
                return 0 if r.players < r.seats else 1
            return 2 if r.state in ("countdown", "racing") else 3

        out.sort(key=order)  # (stable: each node's own order kept within a rank)
        return out[:limit]

    # -- what the cluster tells it -----------------------------------------------------------

    def rooms_of(self, node: str) -> list[str]:
        """The codes of the rooms ``node`` holds."""
        return [c for c, n in self.where.items() if n == node]

    def replace(self, node: str, rooms: Mapping[str, str]) -> None:
        """``node``'s rooms, read in full: code -> public summary ("" for a private room)."""
        for code in [c for c in self.rooms_of(node) if c not in rooms]:
            del self.where[code]
        for code in rooms:
            self.where[code] = node
        self.public[node] = {c: d for c, d in rooms.items() if d}

    def drop(self, node: str, until: float) -> None:
        """``node`` left (stopped, or found dead): its rooms are redirected to it until
        ``until``, and no longer listed."""
        url = self.nodes.pop(node, None)
        self.public.pop(node, None)
        for code in self.rooms_of(node):
            del self.where[code]
            if url is not None:
                self.departed[code] = (node, url, until)

    def departed_rooms(self, node: str, url: str, codes: Iterable[str], until: float) -> None:
        """Rooms of a node that left before this one heard of it (as Redis remembers them):
        redirected to it until ``until``, unless another node holds them now."""
        for code in codes:
            if code not in self.where:
                self.departed[code] = (node, url, until)

    def forget_departed(self, now: float) -> None:
        """Stop redirecting the rooms of the nodes that left whose time is over."""
        for code in [c for c, (_n, _u, until) in self.departed.items() if until <= now]:
            del self.departed[code]

    def apply(self, message: object) -> str | None:
        """A change another node published (see :meth:`server.cluster.Cluster._publish`):
        ``{"node", "url", "set": {code: summary}, "del": [code], "races": [id]}``, or
        ``{"node", "bye": true}`` when it stops.  Returns the node that said goodbye (for the
        caller to :meth:`drop` and log), else None.  A message any part of which does not read
        changes nothing; a node deletes only its own rooms."""
        if not isinstance(message, dict):
            return None
        node = message.get("node")
        if not isinstance(node, str):
            return None
        if message.get("bye"):
            return node
        url = message.get("url")
        changed = message.get("set") or {}
        deleted = message.get("del") or []
        races = message.get("races") or []
        if not (
            (url is None or isinstance(url, str))
            and isinstance(changed, dict)
            and all(isinstance(c, str) and isinstance(d, str) for c, d in changed.items())
            and isinstance(deleted, list)
            and all(isinstance(c, str) for c in deleted)
            and isinstance(races, list)
            and all(isinstance(r, str) for r in races)
        ):
            return None
        if url is not None:
            self.nodes[node] = url
        public = self.public.setdefault(node, {})
        for code, doc in changed.items():
            self.where[code] = node
            if doc:
                public[code] = doc
            else:
                public.pop(code, None)
        for code in deleted:
            if self.where.get(code) == node:
                del self.where[code]
            public.pop(code, None)
        for rid in races:
            self.races[rid] = node
            self.races.move_to_end(rid)  # (announced again: the latest, kept longest)
        while len(self.races) > KNOWN_RACES:
            self.races.popitem(last=False)
        return None
