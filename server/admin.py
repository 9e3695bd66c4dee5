"""``patience-race-server``'s chores on a database, with no server running: export a finished
race's record, list the races kept, forget the live rooms a backup brought back
(docs/operations.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from protocol.messages import display_code

from .durable import LiveRooms
from .store import Store, StoreError, lock_database


def _read_only(db: str) -> Store | None:
    """``db`` opened read-only (no lock needed, nothing created: a running server may hold the
    file), or None once said why not."""
    if db == ":memory:":
        print(
            "patience-race-server: an in-memory database holds no races to export",
            file=sys.stderr,
        )
        return None
    try:
        return Store(db, readonly=True)
    except StoreError as exc:
        print(f"patience-race-server: {exc}", file=sys.stderr)
        return None


def export_race(db: str, race_id: str) -> int:
    """``--export RACE_ID``: a finished race's record, as JSON on the standard output."""
    store = _read_only(db)
    if store is None:
        return 2
    try:
        record = store.race_record(race_id)
    finally:
        store.close()
    if record is None:
        print(f"patience-race-server: no finished race {race_id!r} in {db}", file=sys.stderr)
        return 1
    print(record.model_dump_json(indent=1))
    return 0


def list_races(db: str, count: int) -> int:
    """``--list-races N``: the latest races kept, one line of JSON each."""
    store = _read_only(db)
    if store is None:
        return 2
    try:
        listed = 0
        for race in store.races(count):
            print(json.dumps(listed_race(race)))
            listed += 1
    finally:
        store.close()
    if not listed:  # (said apart from the list: a pipe reading it gets nothing)
        print(f"patience-race-server: no races in {db} yet", file=sys.stderr)
    return 0


def listed_race(race: dict[str, Any]) -> dict[str, Any]:
    """A race of ``--list-races`` as an operator reads it: the room's code as players write it
    (logs and screens say ``SEZ5-XQFV``), times in UTC (ISO 8601)."""

    def when(t: object) -> str | None:
        if not isinstance(t, int | float):
            return None
        return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")

    room = race.get("room")
    return {
        "id": race["id"],
        "room": display_code(room) if isinstance(room, str) and room else None,
        "started": when(race["started_at"]),
        "ended": when(race["ended_at"]),
        "end_reason": race["end_reason"],
        "title": race["title"],
        "players": race["players"],
        "first": race["first"],
    }


def locked_store(db: str) -> tuple[int, Store] | None:
    """The serving lock of ``db`` and the store on it, or None once said why not."""
    lock: int | None = None
    try:
        lock = lock_database(db)
        return lock, Store(db)
    except StoreError as exc:
        if lock is not None:
            os.close(lock)
        print(f"patience-race-server: {exc}", file=sys.stderr)
        return None


def forget_rooms(db: str) -> int:
    """``--forget-rooms``: end the live rooms kept in ``db`` and mark their races ``lost``, so
    that a server started on it brings none back.  A backup restored after a race it holds had
    ended would bring that race back under way, its deal revealed to everyone since (an
    operator trial).  Refused while a server holds the file."""
    if db == ":memory:" or not os.path.isfile(db):
        print(f"patience-race-server: no such database: {db}", file=sys.stderr)
        return 2
    locked = locked_store(db)
    if locked is None:
        return 2
    lock, store = locked
    try:
        live = LiveRooms(store)
        codes = [code for code, _ in live.docs()]
        for code in codes:
            live.forget(code)
        lost = store.end_unfinished(set(), time.time())
        store.commit()
    finally:
        store.close()
        os.close(lock)
    print(
        f"patience-race-server: {db}: {len(codes)} live room(s) forgotten, "
        f"{lost} unfinished race(s) ended as lost"
    )
    return 0
