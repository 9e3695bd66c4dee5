"""One server per database file: a second one on the same file is refused (it would restore the
first one's live rooms and end their races); the read-only commands need no lock and create
nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from server.cli import main as server_main
from server.store import Store, StoreError, lock_database

from .test_restart import ROOT, server_process


async def test_a_second_server_on_the_same_database_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "races.sqlite3"
    async with server_process(db) as first:
        await first.start()
        assert first.proc is not None
        # a room written down by the first server, as a live race would be
        probe = sqlite3.connect(db)
        probe.execute("INSERT INTO live_rooms(code, doc) VALUES ('ABCD1234', '{}')")
        probe.commit()
        second = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server.cli",
            "--port",
            "0",
            "--db",
            str(db),
            cwd=ROOT,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            _, stderr = await asyncio.wait_for(second.communicate(), 20)
        finally:
            if second.returncode is None:
                second.kill()
                await second.wait()
        assert second.returncode == 2
        err = stderr.decode().strip().splitlines()
        assert len(err) == 1, err
        assert "in use by another server" in err[0] and f"pid {first.proc.pid}" in err[0]
        assert str(db) in err[0]
        # the second one touched nothing of the first one's
        assert probe.execute("SELECT code FROM live_rooms").fetchall() == [("ABCD1234",)]
        probe.close()
        # the read-only commands need no lock
        assert server_main(["--list-races", "--db", str(db)]) == 0
        assert server_main(["--export", "nosuchrace", "--db", str(db)]) == 1
        assert await first.kill(signal.SIGTERM) == 0
    # once the first one stopped, the lock is free again
    fd = lock_database(db)
    os.close(fd)


def test_the_lock_is_per_open_and_says_who_holds_it(tmp_path: Path) -> None:
    db = tmp_path / "sub" / "races.sqlite3"
    fd = lock_database(db)
    try:
        assert (
            (tmp_path / "sub" / "races.sqlite3.lock")
            .read_text()
            .startswith(f"pid {os.getpid()} on ")
        )
        with pytest.raises(StoreError, match=f"in use by another server \\(pid {os.getpid()}"):
            lock_database(db)
    finally:
        os.close(fd)
    os.close(lock_database(db))


@pytest.mark.parametrize("command", [["--list-races"], ["--export", "0123456789ab"]])
def test_read_only_commands_on_a_missing_database_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    db = tmp_path / "nonexist" / "x.sqlite3"
    assert server_main([*command, "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"patience-race-server: no such database: {db}"
    assert not (tmp_path / "nonexist").exists()
    plain = tmp_path / "x.sqlite3"
    assert server_main([*command, "--db", str(plain)]) == 2
    assert not plain.exists()
    capsys.readouterr()
    assert server_main([*command, "--db", str(tmp_path)]) == 2  # a directory: said so
    assert capsys.readouterr().err.strip() == (
        f"patience-race-server: {tmp_path} is a directory: --db takes the database file"
    )


def test_read_only_commands_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "races.sqlite3"
    Store(db).close()
    before = db.read_bytes()
    os.chmod(db, 0o400)  # a file the reader cannot write is read all the same
    try:
        assert server_main(["--list-races", "--db", str(db)]) == 0
    finally:
        os.chmod(db, 0o600)
    listed = capsys.readouterr()
    assert listed.out == "" and listed.err.strip() == (
        f"patience-race-server: no races in {db} yet"
    )
    assert db.read_bytes() == before
    assert not Path(f"{db}.lock").exists()
    # an empty file (made by sqlite3 or an older version of these commands) holds no races
    empty = tmp_path / "empty.sqlite3"
    empty.touch()
    assert server_main(["--list-races", "--db", str(empty)]) == 0
    assert server_main(["--export", "0123456789ab", "--db", str(empty)]) == 1
    assert empty.read_bytes() == b""


def test_a_new_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """It holds the deals of races in progress and the codes of open private rooms."""
    import stat

    db = tmp_path / "races.sqlite3"
    old = os.umask(0o022)
    try:
        store = Store(db)
        store.db.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        store.close()
    finally:
        os.umask(old)


def test_a_symlink_or_a_hard_link_to_a_served_database_is_refused(tmp_path: Path) -> None:
    """The lock is on the file, whatever name it is opened by (the lock file named by the path as
    spelled let a second server in through a symlink or a hard link)."""
    db = tmp_path / "races.sqlite3"
    Store(db).close()
    (tmp_path / "alias.sqlite3").symlink_to(db)
    os.link(db, tmp_path / "hard.sqlite3")
    fd = lock_database(db)
    try:
        for other in ("alias.sqlite3", "hard.sqlite3"):
            with pytest.raises(StoreError, match="in use by another server"):
                lock_database(tmp_path / other)
    finally:
        os.close(fd)
