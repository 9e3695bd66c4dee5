"""SQLite storage: races, their settings, commitment and reveal, every move as it happens, results.

Moves are appended one row per move and committed before the move is acknowledged, so every
acknowledged move survives a crash or a restart.  The server commits in groups
(``group_commit``): the moves read off the sockets in one turn of the event loop share one
transaction, and their acknowledgements go out once it is committed.  Checkpoints (copying the
write-ahead log into the database file, with an fsync) run in a background thread
(``checkpoint_s``), so that no player waits for the disk.  The deal number and salt are written only when
the race ends.  Finished races are kept as their public record (``RaceRecord`` JSON).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.messages import PublicSettings, RaceRecord

if TYPE_CHECKING:
    from .race import Race

SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS races (
    id TEXT PRIMARY KEY,
    room TEXT NOT NULL,
    settings TEXT NOT NULL,
    commitment TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    number TEXT,
    salt TEXT,
    record TEXT
);
CREATE TABLE IF NOT EXISTS race_players (
    race_id TEXT NOT NULL REFERENCES races(id),
    player_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (race_id, player_id)
);
CREATE TABLE IF NOT EXISTS moves (
    race_id TEXT NOT NULL REFERENCES races(id),
    player_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    move TEXT NOT NULL,
    t_ms INTEGER NOT NULL,
    PRIMARY KEY (race_id, player_id, idx)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

MIGRATIONS: tuple[str, ...] = (
    SCHEMA_V1,
    # 2: live rooms (server/durable.py), and finished races found by age for the retention
    """
    CREATE TABLE IF NOT EXISTS live_rooms (code TEXT PRIMARY KEY, doc TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS seat_answers (
        room TEXT NOT NULL,
        member INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        frames BLOB,
        PRIMARY KEY (room, member, slot)
    );
    CREATE INDEX IF NOT EXISTS races_by_age ON races(started_at);
    """,
    # 3: with each seat's answer, the type and digest of the command it answered, so that after
    # a restart another command sent with a number already used is still refused
    """
    ALTER TABLE seat_answers ADD COLUMN kind TEXT;
    ALTER TABLE seat_answers ADD COLUMN digest BLOB;
    """,
)
"""Migration ``i`` takes a database from version ``i`` to ``i + 1`` (``PRAGMA user_version``):
the schema is only ever extended, and each step runs in one transaction."""
SCHEMA_VERSION = len(MIGRATIONS)

V1_COLUMNS = {
    "races": {
        "id", "room", "settings", "commitment", "started_at", "ended_at", "end_reason",
        "number", "salt", "record",
    },
    "race_players": {"race_id", "player_id", "name"},
    "moves": {"race_id", "player_id", "idx", "move", "t_ms"},
    "meta": {"key", "value"},
}  # fmt: skip
"""The tables of version 1 and their columns: a database with these (and no version number)
is one this server wrote before versions were kept."""


class StoreError(Exception):
    """A database this server cannot use: corrupt, another program's, or from a newer version.
    The message names the file and says what to do, in one line."""


log = logging.getLogger("patience_race.store")

WAL_RESET_PAGES = 4096
"""With background checkpoints, the write-ahead log is started again once it is this long
(16 MiB of 4 KiB pages), and cut back to that size."""


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/patience-race/races.sqlite3`` (``~/.local/share/...`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "patience-race" / "races.sqlite3"


def lock_database(path: str | Path) -> int:
    """Take the serving lock of the database at ``path``: an exclusive ``flock`` on the database
    file itself (created if missing, mode 600), held until the process exits (or the returned
    descriptor is closed).  A lock on the file's inode holds whatever name it is opened by: a
    symlink or a hard link to a served database is refused too.  Two servers on one file would
    each restore and end the other's live races; the second is refused, with a
    :class:`StoreError` naming who holds the lock (from ``PATH.lock``, beside the file's real
    path, where the holder writes its pid and host).

    ``flock`` and SQLite's own (POSIX) locks do not meet on Linux; but closing any descriptor
    of the file drops the process's POSIX locks on it, so the descriptor is kept open for the
    server's life."""
    real = Path(os.path.realpath(path))
    info_path = Path(f"{real}.lock")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(real, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StoreError(
            f"cannot open {path} ({(exc.strerror or str(exc)).lower()}): the server's user must "
            f"be able to write {real.parent}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        try:
            holder = info_path.read_text(errors="replace").strip() or "a process"
        except OSError:
            holder = "a process"
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StoreError(
                f"{path} is in use by another server ({holder}, which holds it locked): "
                "stop it first, or use another --db"
            ) from None
        raise StoreError(
            f"cannot lock {path} ({(exc.strerror or str(exc)).lower()}): keep the "
            "database on a local file system"
        ) from None
    try:
        info = os.open(info_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(info, "w") as f:
            f.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    except OSError:
        pass  # only what the message says of the holder: the lock itself is taken
    return fd


def _unwritable(path: str) -> str:
    """What keeps the server's user from writing the database at ``path`` and its -wal and -shm
    files, and the command that mends it (a file of its own with mode 444 was told to change
    its owner, and the -shm file the failed start left read-only kept it failing after a
    chmod: an operator trial)."""
    parent = Path(path).parent
    files = [Path(path), Path(f"{path}-wal"), Path(f"{path}-shm")]
    others = [f for f in files if f.exists() and f.stat().st_uid != os.geteuid()]
    if others:
        return (
            f"{', '.join(map(str, others))} belong(s) to another user: the server's user must "
            f"own them (a file restored as root takes its owner from the directory with "
            f"`chown --reference={parent} {path}*`)"
        )
    locked = [f for f in files if f.exists() and not os.access(f, os.W_OK)]
    if locked:
        return f"the mode of {', '.join(map(str, locked))} lets nobody write: `chmod 600 {path}*`"
    return (
        f"the server's user must own it and its -wal and -shm files, and be able to write "
        f"{parent}, where they go (`chown --reference={parent} {path}*`)"
    )


class Store:
    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        group_commit: bool = False,
        checkpoint_s: float | None = None,
        readonly: bool = False,
    ) -> None:
        """``group_commit``: writes open a transaction that stays open until :meth:`commit`
        (the caller commits before acknowledging anything written).  ``checkpoint_s``: checkpoint
        from a background thread this often instead of in the writing thread (files only).
        ``readonly``: for the offline commands (``--list-races``, ``--export``): the file must
        exist; nothing is created, migrated or written, and a running server may hold it."""
        self.path = str(path)
        self.readonly = readonly
        self.empty = False
        """A read-only store on a file with no tables yet: it holds no races."""
        if readonly:
            if Path(self.path).is_dir():
                raise StoreError(f"{self.path} is a directory: --db takes the database file")
            if self.path == ":memory:" or not Path(self.path).is_file():
                raise StoreError(f"no such database: {self.path}")
        elif self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # a new file is its owner's only: it holds live races' deals and open private rooms'
            # codes (SQLite gives its -wal and -shm files the same mode)
            with contextlib.suppress(OSError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.group_commit = group_commit
        self.closed = False
        if readonly:
            uri = Path(self.path).resolve().as_uri() + "?mode=ro"
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if "readonly" in str(exc) or "read-only" in str(exc):
                why = _unwritable(self.path)
                raise StoreError(f"{self.path} cannot be written ({exc}): {why}") from None
            raise StoreError(
                f"{self.path} is not a database this server can read ({exc}): it may be "
                "damaged or truncated; restore a backup, or move it aside to start a new one"
            ) from None
        except StoreError:
            self.db.close()
            raise
        self.checkpointer: Checkpointer | None = None
        self.wal_resets = 0
        if checkpoint_s is not None and self.path != ":memory:":
            self.db.execute("PRAGMA wal_autocheckpoint=0")
            # when the log starts again from the beginning, its file is cut back to this size
            self.db.execute(f"PRAGMA journal_size_limit={WAL_RESET_PAGES * 4096}")
            self.checkpointer = Checkpointer(self.path, checkpoint_s)
            self.checkpointer.start()

    def _open(self) -> None:
        db = self.db
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            r[0]: {c[1] for c in db.execute(f"PRAGMA table_info({r[0]})")}
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        }
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer version of patience-race-server "
                f"(schema {version}, this one knows up to {SCHEMA_VERSION}): upgrade this server, "
                "or use another --db"
            )
        if version == 0 and tables:
            if any(not cols <= tables.get(t, set()) for t, cols in V1_COLUMNS.items()):
                raise StoreError(
                    f"{self.path} is not a patience-race database (its tables are "
                    f"{', '.join(sorted(tables))}): use another --db, or move it aside"
                )
            version = 1  # written before versions were kept: version 1's schema
        if version >= 1:
            missing = [t for t in V1_COLUMNS if t not in tables]
            if missing:
                raise StoreError(
                    f"{self.path} is missing its tables {', '.join(missing)}: it is damaged; "
                    "restore a backup, or move it aside to start a new one"
                )
            if self.path != ":memory:":
                bad = db.execute("PRAGMA quick_check(1)").fetchone()[0]
                if bad != "ok":
                    # on one line, as every other refusal (SQLite's answer has a line for the
                    # database and one for the page: a mutation trial)
                    said = " ".join(str(bad).replace("*** in database main ***", "").split())
                    raise StoreError(
                        f"{self.path} is damaged ({said[:200]}): restore a backup, or move it aside"
                    )
        if self.readonly:
            self.empty = version == 0 and not tables
            self.schema_version = version
            self.vacuum_left = 0
            return
        if version == 0:
            # a new database: pages freed by the retention go back to the file system
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        for step in range(version, SCHEMA_VERSION):
            db.execute("BEGIN")
            try:
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version={step + 1}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        if self.path != ":memory:":
            # a file this process cannot write opens all the same (SQLite falls back to
            # reading): find out now, not at the first move of the first race
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            finally:
                db.execute("ROLLBACK")
        self.schema_version = SCHEMA_VERSION
        self.vacuum_left = 0
        """Free pages still to give back after the last :meth:`prune`."""

    def close(self) -> None:
        if self.closed:
            return
        try:
            self.commit()
        except sqlite3.Error:
            log.exception("commit failed at close", extra={"fields": {"event": "storage_error"}})
        if self.checkpointer is not None:
            self.checkpointer.stop()
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.close()
        self.closed = True

    # -- writes ---------------------------------------------------------------------------

    @property
    def pending(self) -> bool:
        """Writes not yet committed (only with ``group_commit``)."""
        return not self.closed and self.db.in_transaction

    def commit(self) -> None:
        if self.pending:
            self.db.execute("COMMIT")
            if self.checkpointer is not None and self.checkpointer.reset_wanted.is_set():
                self._finish_checkpoint()

    def rollback(self) -> None:
        if self.pending:
            self.db.execute("ROLLBACK")

    def _finish_checkpoint(self) -> None:
        """Let the log start again from the beginning.

        The background thread copies the log into the database but, with this connection
        writing all the time, the log is never wholly copied when a write begins, and SQLite
        only starts it again from the beginning then: it would grow for ever.  So when it has
        grown past :data:`WAL_RESET_PAGES`, this connection copies the little the thread has not
        (what was committed since its last run), between two of its own transactions, and the
        next write starts the log again."""
        assert self.checkpointer is not None
        busy, frames, copied = self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if not busy and frames == copied:
            self.checkpointer.reset_wanted.clear()
            self.wal_resets += 1

    def _begin_group(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN")

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One write of several statements: all of them or none.  Inside the open group
        transaction (as a savepoint), or in its own transaction."""
        if self.group_commit:
            self._begin_group()
            self.db.execute("SAVEPOINT write")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK TO write")
                self.db.execute("RELEASE write")
                raise
            self.db.execute("RELEASE write")
            return
        with self.db:
            self.db.execute("BEGIN")
            yield

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """For other tables' writes (``server.durable``): inside the open group, all or none."""
        return self._writing()

    def secret(self, name: str) -> bytes:
        """A random key kept in the database (``meta``), made the first time it is asked for:
        the same after a restart.  (The key that names private rooms in the logs.)"""
        key = f"secret:{name}"
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is None:
            value = secrets.token_hex(16)
            with self._writing():
                self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (key, value))
            self.commit()
            return bytes.fromhex(value)
        return bytes.fromhex(row[0])

    def start_race(self, race: Race, room: str, settings: PublicSettings, wall: float) -> None:
        with self._writing():
            self.db.execute(
                "INSERT INTO races(id, room, settings, commitment, started_at) VALUES (?, ?, ?, ?, ?)",
                (race.race_id, room, settings.model_dump_json(), race.commitment, wall),
            )
            self.db.executemany(
                "INSERT INTO race_players(race_id, player_id, name) VALUES (?, ?, ?)",
                [(race.race_id, s.id, s.name) for s in race.seats.values()],
            )

    def add_move(self, race_id: str, player_id: int, idx: int, move: str, t_ms: int) -> None:
        if self.group_commit:  # one statement: no savepoint needed
            self._begin_group()
        self.db.execute(
            "INSERT INTO moves(race_id, player_id, idx, move, t_ms) VALUES (?, ?, ?, ?, ?)",
            (race_id, player_id, idx, move, t_ms),
        )

    def finish_race(self, record: RaceRecord, reason: str) -> None:
        with self._writing():
            self.db.execute(
                "UPDATE races SET ended_at = ?, end_reason = ?, number = ?, salt = ?, record = ? WHERE id = ?",
                (
                    record.ended_at,
                    reason,
                    str(record.reveal.number),
                    record.reveal.salt,
                    record.model_dump_json(),
                    record.race_id,
                ),
            )

    def prune(self, cutoff: float, keep: set[str], batch: int = 200) -> int:
        """Delete up to ``batch`` races started before ``cutoff`` (Unix time), finished or not,
        but those in ``keep`` (live rooms'), with their players and moves, and give the space
        back; how many.  Small batches: the caller comes back for more."""
        with self._writing():
            rows = self.db.execute(
                "SELECT id FROM races WHERE started_at < ? ORDER BY started_at LIMIT ?",
                (cutoff, batch + len(keep)),
            ).fetchall()
            ids = [(r[0],) for r in rows if r[0] not in keep][:batch]
            if ids:
                self.db.executemany("DELETE FROM moves WHERE race_id = ?", ids)
                self.db.executemany("DELETE FROM race_players WHERE race_id = ?", ids)
                self.db.executemany("DELETE FROM races WHERE id = ?", ids)
            self.vacuum_left = self._give_back(128)
        return len(ids)

    def data_bytes(self) -> int:
        """Bytes of data in the file: its pages less the free ones (the write-ahead log apart,
        which checkpoints keep small)."""
        db = self.db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        return int((pages - free) * db.execute("PRAGMA page_size").fetchone()[0])

    def _give_back(self, pages: int) -> int:
        """Give up to ``pages`` free pages back to the file system (a database made with
        incremental auto-vacuum; one page a step, about 0.1 ms each); how many are left."""
        db = self.db
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        if db.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
            return 0  # an older file: VACUUM it offline to give space back (operations.md)
        for _ in range(min(free, pages)):
            db.execute("PRAGMA incremental_vacuum(1)")
        return max(0, free - pages)

    def end_unfinished(self, keep: set[str], wall: float) -> int:
        """Mark every race that never ended, but those in ``keep``, as ended ``lost`` (their
        server stopped before it kept live races); how many."""
        with self._writing():
            rows = self.db.execute("SELECT id FROM races WHERE ended_at IS NULL").fetchall()
            lost = [(wall, r[0]) for r in rows if r[0] not in keep]
            self.db.executemany(
                "UPDATE races SET ended_at = ?, end_reason = 'lost' WHERE id = ?", lost
            )
        return len(lost)

    # -- reads ----------------------------------------------------------------------------

    def race_record(self, race_id: str) -> RaceRecord | None:
        if self.empty:
            return None
        row = self.db.execute(
            "SELECT record FROM races WHERE id = ? AND record IS NOT NULL", (race_id,)
        ).fetchone()
        return RaceRecord.model_validate_json(row[0]) if row else None

    def moves(self, race_id: str) -> dict[int, list[tuple[int, str, int]]]:
        out: dict[int, list[tuple[int, str, int]]] = {}
        for pid, idx, move, t in self.db.execute(
            "SELECT player_id, idx, move, t_ms FROM moves WHERE race_id = ? ORDER BY player_id, idx",
            (race_id,),
        ):
            out.setdefault(pid, []).append((idx, move, t))
        return out

    def finished_since(self, since: float, limit: int = 100_000) -> list[tuple[str, float]]:
        """The races finished (with a record) at or after ``since`` (wall clock), newest first:
        (id, when it ended), at most ``limit``."""
        if self.empty:
            return []
        rows = self.db.execute(
            "SELECT id, ended_at FROM races WHERE record IS NOT NULL AND ended_at >= ? "
            "ORDER BY ended_at DESC LIMIT ?",
            (since, limit),
        ).fetchall()
        return [(str(r[0]), float(r[1])) for r in rows]

    def races(self, limit: int = 50) -> list[dict[str, object]]:
        """The latest ``limit`` races, newest first: id, room, times, how it ended, the game's
        title, the players' names, and who placed first (None for a race not finished)."""
        if self.empty:
            return []
        rows = self.db.execute(
            "SELECT id, room, started_at, ended_at, end_reason, settings, record FROM races "
            "ORDER BY started_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        listed: list[dict[str, object]] = []
        for r in rows:
            names = self.db.execute(
                "SELECT name FROM race_players WHERE race_id = ? ORDER BY player_id", (r[0],)
            ).fetchall()
            listed.append(
                {
                    "id": r[0],
                    "room": r[1],
                    "started_at": r[2],
                    "ended_at": r[3],
                    "end_reason": r[4],
                    "title": json.loads(r[5]).get("title"),
                    "players": [n[0] for n in names],
                    "first": _first(r[6]),
                }
            )
        return listed


def _first(record: str | None) -> str | None:
    """The name of whoever placed first, in a stored record (JSON)."""
    if not record:
        return None
    try:
        standings = json.loads(record).get("standings") or []
    except (ValueError, AttributeError, RecursionError):
        return None
    first = next((s for s in standings if isinstance(s, dict) and s.get("rank") == 1), None)
    return str(first["name"]) if first and "name" in first else None


class Checkpointer(threading.Thread):
    """Copies the write-ahead log into the database file every ``every`` seconds, on its own
    connection and thread: the fsync a checkpoint needs then never blocks the event loop.  A
    passive checkpoint waits for nobody: the server keeps writing while it runs."""

    def __init__(self, path: str, every: float) -> None:
        super().__init__(name="sqlite-checkpoint", daemon=True)
        self.path = path
        self.every = every
        self.runs = 0
        self.reset_wanted = threading.Event()
        """Set when the log has grown past :data:`WAL_RESET_PAGES` (see ``Store.commit``)."""
        self._stop_event = threading.Event()

    def run(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            while not self._stop_event.wait(self.every):
                try:
                    self.checkpoint(db)
                except sqlite3.Error:
                    log.exception(
                        "checkpoint failed", extra={"fields": {"event": "checkpoint_failed"}}
                    )
        finally:
            db.close()

    def checkpoint(self, db: sqlite3.Connection) -> None:
        """One passive checkpoint on ``db`` (this thread's own connection)."""
        _busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.runs += 1
        if frames >= WAL_RESET_PAGES:
            # catch up with what was written meanwhile, so that what is left for the writer to
            # copy (Store._finish_checkpoint) is a few pages
            for _ in range(5):
                if frames - copied < 64:
                    break
                _busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.reset_wanted.set()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)
