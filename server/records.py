"""Finished races' records, served often and cheaply: a cache of their encoded bytes, and a
budget of bytes per client address.

A record is immutable once its race is over, so it is encoded once (msgpack for ``get_race``,
JSON for ``GET /races/<id>``) and kept in a least-recently-used cache bounded by bytes.  Every
address (behind a trusted proxy, the forwarded one) has a token bucket of bytes shared by the
socket and HTTP: a record is sent while the bucket is not empty, then the bucket owes its size,
so any record can be fetched and repeats are slowed to the budget's rate.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from typing import TYPE_CHECKING

import msgpack

from protocol.codec import encode_value
from protocol.messages import RaceRecord

if TYPE_CHECKING:
    from .store import Store

_RACE_RECORD_HEAD = msgpack.packb("type") + msgpack.packb("race_record") + msgpack.packb("seq")
_RECORD_KEY = msgpack.packb("record")


class CachedRecord:
    """One record's encodings, made once: ``packed`` is the record as msgpack, ready to splice
    into a ``race_record`` frame; ``json`` and ``etag`` are the HTTP body and its strong ETag.
    The model itself is not kept (its objects weigh more than these bytes)."""

    __slots__ = ("etag", "json", "packed", "race_id", "size")

    def __init__(self, race_id: str, record: RaceRecord) -> None:
        self.race_id = race_id
        self.packed = encode_value(record.model_dump(mode="python"))
        self.json = record.model_dump_json(indent=1).encode()
        self.etag = '"' + hashlib.sha256(self.json).hexdigest()[:32] + '"'
        self.size = len(self.packed) + len(self.json)

    def frame(self, seq: int) -> bytes:
        """The ``race_record`` event answering ``seq``: a map of type, seq and record, the
        record's bytes spliced in as they are (what :func:`protocol.codec.encode` would make)."""
        return b"\x83" + _RACE_RECORD_HEAD + msgpack.packb(seq) + _RECORD_KEY + self.packed


class RecordCache:
    """Encoded records by race id, least recently used first out, at most ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.entries: OrderedDict[str, CachedRecord] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def lookup(
        self,
        race_id: str,
        finished: dict[str, RaceRecord] | None = None,
        store: Store | None = None,
    ) -> CachedRecord | None:
        """The record of ``race_id`` from the cache, else from ``finished`` or ``store`` (then
        cached); None if there is no such finished race."""
        entry = self.entries.get(race_id)
        if entry is not None:
            self.hits += 1
            self.entries.move_to_end(race_id)
            return entry
        self.misses += 1
        record = finished.get(race_id) if finished is not None else None
        if record is None and store is not None:
            record = store.race_record(race_id)
        if record is None:
            return None
        entry = CachedRecord(race_id, record)
        if entry.size > self.max_bytes:
            return entry  # served, not cached: it would push every other record out, itself too
        self.entries[race_id] = entry
        self.bytes += entry.size
        self.trim()
        return entry

    def trim(self) -> None:
        while self.bytes > self.max_bytes and self.entries:
            _, old = self.entries.popitem(last=False)
            self.bytes -= old.size


class ByteBudget:
    """A token bucket of bytes per client address: ``rate`` bytes a second, ``burst`` at once.

    :meth:`take` lets a send through while the address's bucket is not empty and charges it the
    whole size (the bucket may go below zero: then it must refill first)."""

    def __init__(self, rate: float, burst: int, max_addresses: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.max_addresses = max_addresses
        self.buckets: dict[str, tuple[float, float]] = {}
        """address -> (tokens, when)"""

    def _level(self, address: str, now: float) -> float:
        tokens, at = self.buckets.get(address, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.rate)

    def open(self, address: str, now: float) -> bool:
        """Whether ``address`` may fetch now: asked before a record is looked up, so that an
        address over its budget costs no read, parse or encoding of a record it will not get."""
        return self._level(address, now) > 0

    def take(self, address: str, size: int, now: float) -> bool:
        tokens = self._level(address, now)
        if tokens <= 0:
            self.buckets[address] = (tokens, now)
            return False
        if address not in self.buckets and len(self.buckets) >= self.max_addresses:
            self.prune(now)
        self.buckets[address] = (tokens - size, now)
        return True

    def wait_s(self, address: str, now: float) -> float:
        """Seconds until ``address`` may fetch again."""
        tokens = self._level(address, now)
        return 0.0 if tokens > 0 else math.ceil((-tokens + 1) / self.rate)

    def prune(self, now: float) -> None:
        """Forget full buckets (a forgotten address starts full: the same thing)."""
        full = [a for a in self.buckets if self._level(a, now) >= self.burst]
        for address in full:
            del self.buckets[address]
        if len(self.buckets) >= self.max_addresses:  # all busy: forget the oldest
            for address in list(self.buckets)[: len(self.buckets) // 2]:
                del self.buckets[address]
