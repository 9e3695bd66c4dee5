"""Saved seats: found by server, room and name; owner-only, atomic, shared by several processes."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from client.cli import NoName, choose_name
from client.seats import (
    ROOMS_PER_SERVER,
    SeatsError,
    forget_gone,
    forget_seat,
    hold_seat,
    save_seat,
    saved_seat,
    saved_seats,
    seat_in_use,
    seats_path,
)

ROOT = Path(__file__).resolve().parents[1]
URL = "ws://127.0.0.1:8765"


def test_two_people_on_one_account_keep_their_own_seats() -> None:
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    save_seat(URL, "K7QMX2PF", "tok-bob", "Bob")
    assert saved_seat(URL, "k7qm-x2pf", "Ann") == {"token": "tok-ann", "name": "Ann"}
    assert saved_seat(URL, "K7QM-X2PF", "bob") == {"token": "tok-bob", "name": "Bob"}
    assert saved_seat(URL, "K7QM-X2PF", "Cy") is None
    assert saved_seat("ws://elsewhere:8765", "K7QM-X2PF", "Ann") is None
    assert sorted(s["name"] for s in saved_seats(URL, "K7QM-X2PF")) == ["Ann", "Bob"]
    forget_seat(URL, "K7QM-X2PF", "Bob")
    assert [s["name"] for s in saved_seats(URL, "K7QM-X2PF")] == ["Ann"]
    assert seats_path().stat().st_mode & 0o777 == 0o600
    assert not [p for p in seats_path().parent.iterdir() if p.suffix == ".tmp"]


def test_the_old_layout_is_read_as_one_named_seat() -> None:
    path = seats_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({URL: {"K7QMX2PF": {"token": "tok-ann", "name": "Ann"}}}))
    assert saved_seat(URL, "K7QM-X2PF", "Ann") == {"token": "tok-ann", "name": "Ann"}
    save_seat(URL, "K7QM-X2PF", "tok-bob", "Bob")
    assert {s["name"] for s in saved_seats(URL, "K7QM-X2PF")} == {"Ann", "Bob"}


def test_the_file_stays_small() -> None:
    for i in range(60):
        save_seat(URL, f"ROOM{i:04d}", f"tok{i}", "Ann", member=1)
    data = json.loads(seats_path().read_text())
    assert len(data[URL]) == 20
    assert saved_seat(URL, "ROOM0059", "Ann") is not None
    assert saved_seat(URL, "ROOM0000", "Ann") is None


WRITER = """
import sys
from client.seats import save_seat
who = sys.argv[1]
for i in range(int(sys.argv[2])):
    save_seat("ws://127.0.0.1:8765", "K7QMX2PF", f"tok-{who}-{i}", f"{who}{i}")
"""


def test_processes_writing_at_once_lose_no_seat() -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, who, "25"], cwd=ROOT, env=os.environ)
        for who in ("ann", "bob", "cy", "dee")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    names = {s["name"] for s in saved_seats(URL, "K7QM-X2PF")}
    assert names == {f"{who}{i}" for who in ("ann", "bob", "cy", "dee") for i in range(25)}
    assert seats_path().stat().st_mode & 0o777 == 0o600


def test_join_with_several_seats_and_no_terminal_asks_for_a_name() -> None:
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    save_seat(URL, "K7QM-X2PF", "tok-bob", "Bob")
    done = subprocess.run(
        [sys.executable, "-m", "client.cli", "join", "K7QM-X2PF", "--server", URL],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "--name" in done.stderr and "Ann" in done.stderr and "Bob" in done.stderr
    assert "tok-" not in done.stderr + done.stdout  # tokens are secrets


HOLDER = """
import sys, time
from client.seats import hold_seat
held = hold_seat("ws://127.0.0.1:8765", "K7QMX2PF", "Ann")
print(held.held, flush=True)
time.sleep(60)
"""


def test_a_seat_held_by_a_running_client_is_in_use_until_it_ends() -> None:
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    assert not seat_in_use(URL, "K7QM-X2PF", "Ann")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER], cwd=ROOT, env=os.environ, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "True"
        assert seat_in_use(URL, "k7qm-x2pf", "ann")  # the same seat, however it is written
        assert not seat_in_use(URL, "K7QM-X2PF", "Bob")
        assert not seat_in_use("ws://elsewhere:8765", "K7QM-X2PF", "Ann")
        assert not hold_seat(URL, "K7QM-X2PF", "Ann").held  # never taken from its holder
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not seat_in_use(URL, "K7QM-X2PF", "Ann")  # the process ended: the mark is gone
    mine = hold_seat(URL, "K7QM-X2PF", "Ann")
    assert mine.held
    mine.release()
    assert not seat_in_use(URL, "K7QM-X2PF", "Ann")
    held_dir = seats_path().parent / "held"
    assert len(list(held_dir.iterdir())) == 1  # one small lock file for the seat
    mine = hold_seat(URL, "K7QM-X2PF", "Ann")
    mine.release(forget=True)  # left the room: its lock file goes too
    assert not list(held_dir.iterdir())


def test_seats_dropped_by_the_caps_or_forgotten_take_their_lock_files_along() -> None:
    # every room joined left a lock file under held/ for good (a trial): they go with the seat
    held_dir = seats_path().parent / "held"
    for i in range(ROOMS_PER_SERVER):
        save_seat(URL, f"ROOM{i:04d}", f"tok{i}", "Ann", member=1)
        hold_seat(URL, f"ROOM{i:04d}", "Ann").release()
    kept = hold_seat(URL, "ROOM0001", "Ann")  # still sitting in it, in another terminal
    assert len(list(held_dir.iterdir())) == ROOMS_PER_SERVER
    save_seat(URL, "ROOMNEW1", "tok-a", "Ann")  # ROOM0000 is dropped: its lock file goes
    save_seat(URL, "ROOMNEW2", "tok-b", "Ann")  # ROOM0001 is dropped, but held: kept
    assert len(saved_seats(URL, "ROOM0000")) == 0
    files = {p.name for p in held_dir.iterdir()}
    assert len(files) == ROOMS_PER_SERVER - 1
    kept.release()  # no longer saved: its lock file goes as it is let go (it stayed for good)
    assert len(list(held_dir.iterdir())) == ROOMS_PER_SERVER - 2
    save_seat(URL, "ROOM0005", "tok5", "Bob", member=2)
    forget_gone(URL, "ROOM0005", set())  # Ann's and Bob's seats are gone from the room
    assert len(list(held_dir.iterdir())) == ROOMS_PER_SERVER - 3


def test_join_with_no_name_skips_a_seat_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATIENCE_RACE_NAME", "Cy")
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    ann = hold_seat(URL, "K7QM-X2PF", "Ann")  # Ann's client, in another terminal
    try:
        notes: list[str] = []
        assert choose_name(URL, "K7QM-X2PF", None, notes) == "Cy"  # a seat of one's own
        # and why: Ann's seat is in use (it joined as Cy, silently: a bad-network trial)
        assert notes[0] == (
            "Ann's seat is in use in another terminal: you joined as Cy (to take it back, quit "
            "it there, then join --name Ann)."
        )
        save_seat(URL, "K7QM-X2PF", "tok-bob", "Bob")
        assert choose_name(URL, "K7QM-X2PF", None) == "Bob"  # the only seat not in use
        with pytest.raises(NoName, match="another terminal"):
            choose_name(URL, "K7QM-X2PF", "Ann")
        monkeypatch.setenv("PATIENCE_RACE_NAME", "Ann")
        forget_seat(URL, "K7QM-X2PF", "Bob")
        with pytest.raises(NoName, match="--name"):
            choose_name(URL, "K7QM-X2PF", None)  # the default name is Ann's, in use
    finally:
        ann.release()
    assert choose_name(URL, "K7QM-X2PF", None) == "Ann"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"ws://h": {}},', "not JSON"),  # a hand edit gone wrong
        (b"[" * 100_000, "nested too deeply"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b" " * (2 << 20), "larger than 1 MiB"),
    ],
)
def test_a_seats_file_that_cannot_be_read_is_said_and_never_written_over(
    content: bytes, why: str
) -> None:
    path = seats_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(SeatsError) as unread:
        saved_seats(URL, "K7QM-X2PF")
    assert why in str(unread.value) and str(path) in str(unread.value)
    assert str(unread.value).startswith(f"fix or move aside {path}, which cannot be used")
    with pytest.raises(SeatsError):
        save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    forget_seat(URL, "K7QM-X2PF", "Ann")  # nothing to forget there: no error, no write
    assert path.read_bytes() == content


def test_a_seats_file_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    path = seats_path()
    path.with_name(path.name + ".lock").unlink()
    path.with_name(path.name + ".lock").mkdir()  # (root reads a chmod 000 file: a directory)
    with pytest.raises(SeatsError) as unsaved:
        save_seat(URL, "K7QM-X2PF", "tok-bob", "Bob")
    assert str(path) in str(unsaved.value)
    assert [s["name"] for s in saved_seats(URL, "K7QM-X2PF")] == ["Ann"]


def test_an_empty_or_missing_seats_file_holds_no_seat() -> None:
    assert saved_seats(URL, "K7QM-X2PF") == []
    seats_path().parent.mkdir(parents=True)
    seats_path().write_bytes(b"")
    assert saved_seats(URL, "K7QM-X2PF") == []
    save_seat(URL, "K7QM-X2PF", "tok-ann", "Ann")
    assert saved_seat(URL, "K7QM-X2PF", "Ann") == {"token": "tok-ann", "name": "Ann"}


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("ws://127.0.0.1:8765/", "ws://127.0.0.1:8765"),
        ("WS://Race.Example.ORG:443/", "ws://race.example.org:443"),
        ("wss://race.example.org:443/", "wss://race.example.org"),
        ("race.example.org", "ws://race.example.org"),
        ("wss://race.example.org/play/", "wss://race.example.org/play/"),
        ("ws://[::1]:8765/", "ws://[::1]:8765"),
    ],
)
def test_one_server_is_written_one_way(given: str, url: str) -> None:
    """Seats are saved by the server's URL: ``--server ws://h:8765/`` found none saved under
    ``ws://h:8765`` and joined as a watcher."""
    from client.args import normal_url, server_url

    class Args:
        server = given

    assert server_url(Args()) == url  # type: ignore[arg-type]
    assert normal_url(url) == url


async def test_a_seat_released_is_forgotten_by_every_terminal_of_the_account() -> None:
    """Eve's terminal was killed mid-race and her seat released after the grace; half an hour
    later a bare `join` in Cat's terminal (same account) still asked "Cat or Eve?" (a timed-race
    trial).  Cat's client, in the room, saw Eve go: the seat saved for Eve is forgotten."""
    from client.model import RaceModel
    from client.session import Session
    from protocol.messages import Settings
    from server.hub import normalize_code as normalize

    from .server_helpers import eventually, fast_limits, running_server

    async with running_server(fast_limits(grace_s=0.5)) as server:
        cat = Session(server.url, RaceModel(name="Cat"))
        await cat.connect()
        joined = await cat.create("Cat", Settings(game="spider", options={"suits": 1}))
        cat.start_events()
        code = joined.room.code
        eve = Session(server.url, RaceModel(name="Eve"))
        await eve.connect()
        await eve.join(code, "Eve")
        names = sorted(s["name"] for s in saved_seats(server.url, code))
        assert names == ["Cat", "Eve"]
        assert all(s["id"].isdigit() for s in saved_seats(server.url, code))
        try:
            assert eve.conn is not None
            eve.stopped = True  # no reconnection: the terminal is gone
            await eve.conn.close(timeout=0.1)  # the link drops; the seat waits out its grace
            await eventually(lambda: len(server.hub.rooms[normalize(code)].members) == 1, 10)
            await eventually(
                lambda: [s["name"] for s in saved_seats(server.url, code)] == ["Cat"], 5
            )
        finally:
            await cat.close()
            await eve.close()


async def test_watch_never_takes_the_seat_saved_for_its_name() -> None:
    """Eve's terminal closed with her seat saved; `watch` under her name in the same account
    watches (or is refused the name): it never resumes her seat, which stays hers to take
    back with `join`."""
    from client.model import RaceModel
    from client.net import ServerError
    from client.session import Session
    from protocol.messages import Settings

    from .server_helpers import close_all, host_and_join, room_of, running_server

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        eve = Session(server.url, RaceModel(name="Eve"))
        await eve.connect()
        await eve.join(code, "Eve")
        eve_id = eve.model.you
        await eve.close()  # away, her seat saved on disk
        assert saved_seat(server.url, code, "Eve") is not None
        watcher = Session(server.url, RaceModel(name="Eve"))
        try:
            await watcher.connect()
            with contextlib.suppress(ServerError):  # (the name taken: refused, as good)
                await watcher.join(code, "Eve", spectate=True)
            watching = watcher.model.you != eve_id and watcher.model.role == "spectator"
            assert watcher.model.you is None or watching  # refused, or watching
            assert room_of(server, code).members[eve_id].conn is None  # still away
            assert saved_seat(server.url, code, "Eve") is not None
        finally:
            await watcher.close()
            await close_all(conns)


async def test_leaving_a_room_forgets_the_seat_saved_for_it() -> None:
    """q leaves the room for good: the seat saved for it goes (kept, a bare join offered a
    seat the room no longer has)."""
    from client.model import RaceModel
    from client.session import Session
    from protocol.messages import Settings

    from .server_helpers import close_all, host_and_join, running_server

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        eve = Session(server.url, RaceModel(name="Eve"))
        try:
            await eve.connect()
            await eve.join(code, "Eve")
            assert saved_seat(server.url, code, "Eve") is not None
            await eve.leave()
            assert saved_seat(server.url, code, "Eve") is None
        finally:
            await eve.close()
            await close_all(conns)
