"""Databases the server cannot use are said in one line (exit 2), old races are deleted and
their space given back, and a private room's code is never kept."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protocol.messages import RaceOver, Settings
from server.durable import LiveRooms
from server.store import MIGRATIONS, SCHEMA_V1, SCHEMA_VERSION, Store, StoreError

from .server_helpers import (
    close_all,
    fast_limits,
    host_and_join,
    move,
    running_server,
    start_race,
)

ROOT = Path(__file__).resolve().parents[1]


def run_server(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The real command, on ``db``; it is expected to refuse it at once."""
    return subprocess.run(
        [sys.executable, "-m", "server.cli", "--port", "0", "--db", str(db), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PATIENCE_RACE_CERTIFIED_DEALS": "0"},
    )


def a_database_with_races(path: Path, races: int, moves: int = 200) -> None:
    store = Store(path)
    with store.db:
        for i in range(races):
            rid = f"race{i:08d}"
            store.db.execute(
                "INSERT INTO races(id, room, settings, commitment, started_at, ended_at, "
                "end_reason, record) VALUES (?, 'ROOMCODE', '{}', 'c', ?, ?, 'all_done', ?)",
                (rid, 1000.0 + i, 2000.0 + i, "x" * 2000),
            )
            store.db.executemany(
                "INSERT INTO moves(race_id, player_id, idx, move, t_ms) VALUES (?, 1, ?, '1>2', ?)",
                [(rid, j, j) for j in range(moves)],
            )
    store.close()


def damaged(path: Path, how: str) -> None:
    if how == "garbage":
        path.write_bytes(os.urandom(8192))
    elif how == "truncated":
        a_database_with_races(path, 50)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif how == "foreign":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE races (id INTEGER PRIMARY KEY, horse TEXT, odds REAL)")
        db.commit()
        db.close()
    elif how == "foreign_with_meta":
        # another program's database that happens to have a table named and shaped as one of
        # ours (a key-value ``meta`` is common): still not ours
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE races (id INTEGER PRIMARY KEY, horse TEXT, odds REAL)")
        db.commit()
        db.close()
    elif how == "newer":
        a_database_with_races(path, 1)
        db = sqlite3.connect(path)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 5}")
        db.commit()
        db.close()


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("garbage", "not a database this server can read"),
        ("truncated", "damaged"),
        ("foreign", "not a patience-race database"),
        ("foreign_with_meta", "not a patience-race database"),
        ("newer", "newer version"),
    ],
)
def test_a_database_it_cannot_use_is_said_in_one_line(tmp_path: Path, how: str, said: str) -> None:
    db = tmp_path / "races.sqlite3"
    damaged(db, how)
    before = db.read_bytes()
    done = run_server(db)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # no traceback
    assert str(db) in lines[0] and said in lines[0]
    assert "Traceback" not in done.stderr
    assert db.read_bytes() == before  # nothing was written to it
    for flag in ("--list-races",):  # the offline commands say the same
        again = run_server(db, flag)
        assert again.returncode == 2 and said in again.stderr


def test_a_database_it_cannot_write_is_said_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file restored as root into a service's directory opens, read-only, all the same: the
    store finds out at once and says what to do, instead of failing at the first move."""
    db = tmp_path / "races.sqlite3"
    a_database_with_races(db, 2)
    before = db.read_bytes()
    real_connect = sqlite3.connect

    def read_only(path: str, *args: object, **kw: object) -> sqlite3.Connection:
        return real_connect(f"file:{path}?mode=ro", *args, uri=True, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("server.store.sqlite3.connect", read_only)
    with pytest.raises(StoreError) as refused:
        Store(db)
    said = str(refused.value)
    assert str(db) in said and "cannot be written" in said and "chown --reference" in said
    monkeypatch.undo()
    assert db.read_bytes() == before
    Store(db).close()  # writable again: opens


def test_what_keeps_a_database_from_being_written_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of the server's own user with mode 444 was told to change owner, and the -shm file
    its failed start left read-only kept it failing after a ``chmod`` (an operator trial): the
    file that stops it is named, and the command that mends it."""
    from server.store import _unwritable

    db = tmp_path / "races.sqlite3"
    a_database_with_races(db, 1)
    shm = tmp_path / "races.sqlite3-shm"
    shm.write_bytes(b"")
    real_access = os.access
    monkeypatch.setattr(
        "server.store.os.access", lambda f, mode: real_access(f, mode) and Path(f) != shm
    )
    said = _unwritable(str(db))
    assert f"the mode of {shm} lets nobody write" in said and f"chmod 600 {db}*" in said
    monkeypatch.undo()
    if os.geteuid() == 0:  # (only root can give a file to another user)
        os.chown(shm, 61999, 61999)
        said = _unwritable(str(db))
        assert f"{shm} belong(s) to another user" in said
        assert f"chown --reference={tmp_path} {db}*" in said


def test_a_database_from_before_versions_is_adopted_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "races.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_V1)
    db.execute(
        "INSERT INTO races(id, room, settings, commitment, started_at) "
        "VALUES ('old', 'R', '{}', 'c', 1.0)"
    )
    db.commit()
    db.close()
    store = Store(path)
    try:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.db.execute("SELECT count(*) FROM races").fetchone()[0] == 1
        assert store.db.execute("SELECT count(*) FROM live_rooms").fetchone()[0] == 0
    finally:
        store.close()


def test_a_version_2_database_keeps_its_seat_answers_without_their_commands(
    tmp_path: Path,
) -> None:
    """Schema 3 added each answer's command (type and digest): answers written before come
    back with their number and frames, the command unknown."""
    path = tmp_path / "races.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    db.execute("PRAGMA user_version=2")
    db.execute(
        "INSERT INTO seat_answers(room, member, slot, seq, frames) VALUES ('R', 1, 5, 5, ?)",
        (b"\x00\x00\x00\x02ok",),
    )
    db.commit()
    db.close()
    store = Store(path)
    try:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        live = LiveRooms(store)
        assert live.answers("R") == {1: [(5, (b"ok",), None)]}
        live.answer("R", 1, 6, (b"no",), ("move", b"12345678"))
        assert live.answers("R")[1][1] == (6, (b"no",), ("move", b"12345678"))
    finally:
        store.close()


def test_a_newer_database_is_refused_by_the_store(tmp_path: Path) -> None:
    damaged(tmp_path / "x.sqlite3", "newer")
    with pytest.raises(StoreError, match="newer version"):
        Store(tmp_path / "x.sqlite3")


def test_a_database_one_version_newer_is_refused_too(tmp_path: Path) -> None:
    """The next version's database (the one an operator rolling back meets) is refused as any
    newer one, by the server and by the offline commands, and left as it was."""
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 1)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="newer version"):
        Store(path)
    with pytest.raises(StoreError, match="newer version"):
        Store(path, readonly=True)
    assert path.read_bytes() == before


def test_a_database_with_a_damaged_page_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """A file whose header and schema read well but one of whose pages is garbage (a disk
    error) is refused at start, not at the first move that reaches that page."""
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 50)
    data = bytearray(path.read_bytes())
    page = 4096
    middle = len(data) // page // 2
    data[middle * page : middle * page + 100] = b"\xff" * 100
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as refused:
        Store(path)
    assert str(path) in str(refused.value) and "is damaged" in str(refused.value)
    done = run_server(path)
    assert done.returncode == 2 and "is damaged" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, no traceback


def test_a_database_missing_one_of_its_tables_is_refused(tmp_path: Path) -> None:
    """A versioned database that lost a table (dropped by hand, a partial restore) is said to be
    damaged at start: no race would be written to it."""
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 2, moves=1)
    db = sqlite3.connect(path)
    db.execute("DROP TABLE race_players")
    db.commit()
    db.close()
    with pytest.raises(StoreError) as refused:
        Store(path)
    said = str(refused.value)
    assert str(path) in said and "missing its tables race_players" in said and "damaged" in said


def test_old_races_are_deleted_and_the_space_given_back(tmp_path: Path) -> None:
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 300)
    store = Store(path)
    try:
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
        gone = 0
        while True:
            n = store.prune(cutoff=1000.0 + 250, keep={"race00000003"}, batch=100)
            if not n and not store.vacuum_left:
                break
            gone += n
        assert gone == 249  # 250 older than the cutoff, one of them kept (a live room's)
        left = {r[0] for r in store.db.execute("SELECT id FROM races")}
        assert "race00000003" in left and len(left) == 51
        orphans = store.db.execute(
            "SELECT count(*) FROM moves WHERE race_id NOT IN (SELECT id FROM races)"
        ).fetchone()[0]
        assert orphans == 0
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shrunk = path.stat().st_size
        assert shrunk < size * 0.4, (size, shrunk)
    finally:
        store.close()


def test_the_size_held_against_the_cap_leaves_out_free_pages(tmp_path: Path) -> None:
    """A file made before incremental vacuum keeps its freed pages until an offline VACUUM:
    counted as data, ``--max-db-mb`` would go on deleting every race, the newest too."""
    path = tmp_path / "races.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_V1)  # no auto_vacuum: the pages freed stay in the file
    db.close()
    a_database_with_races(path, 100, moves=20)
    store = Store(path)
    try:
        full = store.data_bytes()
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        assert store.prune(cutoff=1000.0 + 50, keep=set(), batch=1000) == 50
        assert store.db.execute("PRAGMA page_count").fetchone()[0] == pages  # not given back
        assert store.data_bytes() < full * 0.7
    finally:
        store.close()


def test_races_left_unfinished_are_ended_lost_but_those_of_live_rooms(tmp_path: Path) -> None:
    """At start, a race no live room carries on is ended ``lost``; one a restored room goes on
    with stays under way (not listed as lost, nor counted so in /metrics)."""
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 3, moves=1)
    store = Store(path)
    try:
        store.db.execute("UPDATE races SET ended_at = NULL, end_reason = NULL, record = NULL")
        assert store.end_unfinished({"race00000001"}, 5000.0) == 2
        rows = dict(store.db.execute("SELECT id, end_reason FROM races").fetchall())
        assert rows == {"race00000000": "lost", "race00000001": None, "race00000002": "lost"}
    finally:
        store.close()


async def test_the_server_runs_the_retention_itself(tmp_path: Path) -> None:
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 20, moves=5)
    from .server_helpers import fast_limits

    async with running_server(fast_limits(keep_days=1), store=Store(path)) as server:
        assert server.store is not None
        deadline = time.monotonic() + 5
        while server.store.db.execute("SELECT count(*) FROM races").fetchone()[0]:
            assert time.monotonic() < deadline, "the retention did not run"
            await __import__("asyncio").sleep(0.05)
        assert server.hub.metrics["races_deleted"] == 20


async def test_a_database_past_its_size_loses_its_oldest_races_whatever_their_age(
    tmp_path: Path,
) -> None:
    """A legal move and its undo over and over, from every connection of one address, is a
    stored row each: gigabytes a day, each kept ``keep_days`` (a hostile trial).  Past
    ``max_db_mb`` the oldest races go, however young, until the data is back under it."""
    path = tmp_path / "races.sqlite3"
    a_database_with_races(path, 200)
    store = Store(path)
    full = store.data_bytes()
    cap_mb = full / 2 / 2**20
    limits = fast_limits(keep_days=30, max_db_mb=cap_mb)
    # every race an hour old: far younger than keep_days
    store.db.execute("UPDATE races SET started_at = started_at + ?", (time.time() - 3600,))
    store.db.commit()
    async with running_server(limits, store=store) as server:
        deadline = time.monotonic() + 20
        while store.data_bytes() > cap_mb * 2**20:
            assert time.monotonic() < deadline, "the database stayed past its size"
            await asyncio.sleep(0.05)
        left = [r[0] for r in store.db.execute("SELECT id FROM races ORDER BY id")]
        assert 0 < len(left) < 200
        assert left == [f"race{i:08d}" for i in range(200 - len(left), 200)]  # the newest kept
        assert server.hub.metrics["races_deleted"] == 200 - len(left)


async def test_a_private_rooms_code_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "races.sqlite3"
    async with running_server(store=Store(path)) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings(private=True))
        await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        await close_all(conns)
        assert server.store is not None
        listed = server.store.races()
        assert listed and all(r["room"] in ("", None) for r in listed)
        raw = server.store.db.execute("SELECT room, record FROM races").fetchall()
        assert all(code not in (room or "") + (record or "") for room, record in raw)


def test_a_room_forgotten_leaves_no_answers_behind() -> None:
    """A closed room's seats' answers go with it: else the table grows with every room ever
    closed, and a new room given the same code would, after a restart, answer a seat's command
    with the old room's answer to that number."""
    store = Store(":memory:")
    live = LiveRooms(store)
    live.answer("ROOMCODE", 1, 5, (b"old answer",), ("move", b"12345678"))
    live.answer("OTHERONE", 1, 5, (b"kept",), ("move", b"12345678"))
    live.forget("ROOMCODE")
    assert live.answers("ROOMCODE") == {}
    assert live.answers("OTHERONE") == {1: [(5, (b"kept",), ("move", b"12345678"))]}
    store.close()


def test_members_who_come_and_go_leave_no_answers_behind() -> None:
    """Each seat's last answers are written down (`seat_answers`) and were deleted only with
    the room: spectators joining, sending commands and leaving a room that stays open grew the
    table without end, past `--max-db-mb` (a red team: 43,493 rows in two minutes)."""
    from protocol.messages import (
        PROTOCOL_VERSION,
        CreateRoom,
        Hello,
        JoinRoom,
        Kick,
        Leave,
        ListRooms,
        Ready,
    )
    from server.hub import Hub
    from server.limits import Limits

    store = Store(":memory:")
    hub = Hub(Limits(), store=store, wall=lambda: 1_700_000_000.0)
    now = 1000.0

    def session(first: object) -> tuple[int, object]:
        cid = hub.connect(now)
        assert cid is not None
        hub.handle(cid, Hello(seq=0, version=PROTOCOL_VERSION), now)
        out = hub.handle(cid, first, now)  # type: ignore[arg-type]
        return cid, out

    def rows() -> int:
        return int(store.db.execute("SELECT count(*) FROM seat_answers").fetchone()[0])

    host, _ = session(CreateRoom(seq=1, name="Ann", settings=Settings(private=True)))
    code = hub.conns[host].room.code  # type: ignore[union-attr]
    for _round in range(5):
        for n in range(4):
            cid, _ = session(JoinRoom(seq=1, code=code, name=f"Spy {n}", spectate=True))
            for seq in range(2, 20):
                hub.handle(cid, ListRooms(seq=seq) if seq % 2 else Ready(seq=seq), now)
            hub.handle(cid, Leave(seq=20), now)
            hub.disconnect(cid, now)
    bob, _ = session(JoinRoom(seq=1, code=code, name="Bob"))
    bob_id = hub.conns[bob].member.id  # type: ignore[union-attr]
    for seq in range(2, 6):
        out = hub.handle(bob, Ready(seq=seq, ready=seq % 2 == 0), now)
        assert [type(e).__name__ for e in out.replies] == ["Ack"]  # done, not refused
    bobs = "SELECT count(*) FROM seat_answers WHERE member = ?"
    assert store.db.execute(bobs, (bob_id,)).fetchone()[0] == 5  # kept, as a restart needs
    hub.handle(host, Kick(seq=2, id=bob_id), now)
    members = {m for (m,) in store.db.execute("SELECT DISTINCT member FROM seat_answers")}
    assert members == {hub.conns[host].member.id}  # type: ignore[union-attr]
    assert rows() <= 16
    store.close()
