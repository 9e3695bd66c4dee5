"""The storage's group commit and background checkpoints, and the latency histograms."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from server.metrics import Histogram
from server.store import Store


def count_moves(db: Path) -> int:
    other = sqlite3.connect(db)
    try:
        return int(other.execute("SELECT count(*) FROM moves").fetchone()[0])
    finally:
        other.close()


def new_store(db: Path, **kw: object) -> Store:
    """A store holding race ``r1`` (moves refer to a race)."""
    store = Store(db, **kw)  # type: ignore[arg-type]
    store.db.execute(
        "INSERT INTO races(id, room, settings, commitment, started_at) VALUES ('r1', 'ROOM', '{}', 'c', 0)"
    )
    return store


def test_group_commit_holds_writes_until_commit(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    store = new_store(db, group_commit=True)
    try:
        assert not store.pending
        for i in range(3):
            store.add_move("r1", 1, i, "1>2", 10 * i)
        assert store.pending
        assert count_moves(db) == 0  # nobody else sees them yet
        store.commit()
        assert not store.pending
        assert count_moves(db) == 3
        assert store.moves("r1") == {1: [(0, "1>2", 0), (1, "1>2", 10), (2, "1>2", 20)]}
        store.add_move("r1", 1, 3, "d", 40)
    finally:
        store.close()  # commits what is left
    assert count_moves(db) == 4
    assert store.closed and not store.pending
    store.close()  # twice is harmless


def test_without_group_commit_every_write_is_committed_at_once(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    store = new_store(db)
    try:
        store.add_move("r1", 1, 0, "1>2", 0)
        assert not store.pending
        assert count_moves(db) == 1
    finally:
        store.close()


def test_checkpoints_run_in_the_background_and_stop_with_the_store(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    store = new_store(db, group_commit=True, checkpoint_s=0.02)
    checkpointer = store.checkpointer
    assert checkpointer is not None and checkpointer.is_alive()
    assert store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for i in range(200):
        store.add_move("r1", 1, i, "1>2", i)
        store.commit()
    deadline = time.monotonic() + 5
    while checkpointer.runs < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert checkpointer.runs >= 2
    store.close()
    assert not checkpointer.is_alive()
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # all of it is in the database file
    assert count_moves(db) == 200


def test_an_in_memory_store_has_no_checkpointer() -> None:
    store = Store(":memory:", checkpoint_s=0.01)
    assert store.checkpointer is None
    store.close()


def test_histogram_counts_buckets() -> None:
    h = Histogram("x_seconds", "test", bounds=(0.001, 0.01, 0.1))
    assert h.lines()[2:] == [
        'x_seconds_bucket{le="0.001"} 0',
        'x_seconds_bucket{le="0.01"} 0',
        'x_seconds_bucket{le="0.1"} 0',
        'x_seconds_bucket{le="+Inf"} 0',
        "x_seconds_sum 0.000000",
        "x_seconds_count 0",
    ]
    for seconds in (0.0005, 0.0005, 0.002, 0.05, 3.0):
        h.observe(seconds)
    assert h.counts == [2, 1, 1, 1]
    assert h.count == 5 and h.sum == pytest.approx(3.053)
    assert h.lines() == [
        "# HELP x_seconds test",
        "# TYPE x_seconds histogram",
        'x_seconds_bucket{le="0.001"} 2',
        'x_seconds_bucket{le="0.01"} 3',
        'x_seconds_bucket{le="0.1"} 4',
        'x_seconds_bucket{le="+Inf"} 5',
        "x_seconds_sum 3.053000",
        "x_seconds_count 5",
    ]


def test_a_value_on_a_bound_falls_in_that_bucket() -> None:
    h = Histogram("x_seconds", "test", bounds=(0.001, 0.01))
    h.observe(0.001)
    assert h.counts == [1, 0, 0]


def test_gc_pauses_are_timed_while_attached() -> None:
    import gc

    from server.metrics import GcPauses

    pauses = GcPauses()
    pauses.attach()
    pauses.attach()  # once only
    try:
        assert gc.callbacks.count(pauses._callback) == 1
        gc.collect()
        assert pauses.histogram.count == 1
    finally:
        pauses.detach()
    assert pauses._callback not in gc.callbacks
    gc.collect()
    assert pauses.histogram.count == 1


def test_a_write_that_fails_halfway_leaves_nothing_in_the_group(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    store = new_store(db, group_commit=True)
    try:
        store.add_move("r1", 1, 0, "1>2", 0)
        with pytest.raises(sqlite3.IntegrityError), store._writing():
            store.db.execute("INSERT INTO race_players VALUES ('r1', 1, 'Ann')")
            store.db.execute("INSERT INTO race_players VALUES ('r1', 1, 'Ann')")  # twice: refused
        store.commit()
        assert store.db.execute("SELECT count(*) FROM race_players").fetchone()[0] == 0
        assert count_moves(db) == 1  # what came before the failed write stands
    finally:
        store.close()


def test_the_log_starts_again_under_constant_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import server.store

    monkeypatch.setattr(server.store, "WAL_RESET_PAGES", 64)
    db = tmp_path / "races.sqlite3"
    store = new_store(db, group_commit=True, checkpoint_s=3600)  # this test checkpoints itself
    checkpointer = store.checkpointer
    assert checkpointer is not None
    own = sqlite3.connect(db, isolation_level=None)  # as the thread's own connection
    wal = db.with_name(db.name + "-wal")
    i, sizes = 0, []

    def commits(n: int) -> None:
        nonlocal i
        for _ in range(n):
            store.add_move("r1", 1, i, "1>2", i)
            i += 1
            store.commit()

    try:
        for cycle in range(6):
            commits(100)  # 100 commits: over 64 pages of log each time
            checkpointer.checkpoint(own)
            assert checkpointer.reset_wanted.is_set()
            commits(1)  # the writer copies what is left, and the log can start again
            assert store.wal_resets == cycle + 1
            assert not checkpointer.reset_wanted.is_set()
            sizes.append(wal.stat().st_size)
        # the log is reused from its start: it does not grow with every cycle
        assert max(sizes[1:]) <= 1.5 * sizes[0], sizes
    finally:
        own.close()
        store.close()
    assert count_moves(db) == i
