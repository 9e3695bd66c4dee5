"""The README's walkthrough, as two people on one user account run it: real ``patience-race``
commands in pseudo-terminals sharing one ``XDG_STATE_HOME``, against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from client.seats import saved_seat, seats_path
from server.app import RaceServer

from .server_helpers import room_of, running_server

ROOT = Path(__file__).resolve().parents[1]


class Terminal:
    """A real command in a pseudo-terminal of 100x30; everything it writes is kept."""

    def __init__(self, *argv: str) -> None:
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the real command
            os.execve(sys.executable, [sys.executable, "-m", "client.cli", *argv], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.output = b""
        self.exit_code: int | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def done(self) -> bool:
        if self.exit_code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exit_code = os.waitstatus_to_exitcode(status)
        return self.exit_code is not None

    def close(self) -> None:
        if not self.done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self._reader.join(5)


@contextlib.asynccontextmanager
async def terminals() -> AsyncIterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def open_one(*argv: str) -> Terminal:
        t = Terminal(*argv)
        opened.append(t)
        return t

    try:
        yield open_one
    finally:
        for t in opened:
            t.close()
        subprocess.run(["stty", "sane"], check=False, stdin=subprocess.DEVNULL, capture_output=True)


async def until(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        assert loop.time() < end, f"never happened: {what}"
        await asyncio.sleep(0.05)


def saved_codes(url: str) -> list[str]:
    try:
        return list(json.loads(seats_path().read_text()).get(url, {}))
    except (OSError, ValueError):
        return []


def members(server: RaceServer, code: str) -> dict[str, tuple[int, str, bool]]:
    """Name: (id, role, connected) of the room's members."""
    room = room_of(server, code)
    return {m.name: (m.id, m.role, m.connected) for m in room.info().members}


async def test_two_people_on_one_account_each_keep_their_seat() -> None:
    async with running_server() as server, terminals() as term:
        url = server.url
        ann = term("host", "spider", "--suits", "1", "--name", "Ann", "--server", url)
        await until(lambda: len(saved_codes(url)) == 1, "Ann's room saved")
        code = saved_codes(url)[0]
        ann_seat = saved_seat(url, code, "Ann")
        assert ann_seat is not None

        bob = term("join", code, "--name", "Bob", "--server", url)
        await until(lambda: "Bob" in members(server, code), "Bob joined")
        await until(lambda: saved_seat(url, code, "Bob") is not None, "Bob's seat saved")
        assert saved_seat(url, code, "Ann") == ann_seat  # Ann's seat is still Ann's
        watcher = term("watch", code, "--server", url)
        await until(
            lambda: any(role == "spectator" for _i, role, _c in members(server, code).values()),
            "the watcher came in",
        )
        room = members(server, code)
        ann_id, bob_id = room["Ann"][0], room["Bob"][0]
        assert room["Ann"] == (ann_id, "player", True)  # nobody took Ann's seat
        assert room["Bob"] == (bob_id, "player", True)
        assert not ann.done() and not bob.done() and not watcher.done()

        # both ready: the race starts; Bob quits in the race (his seat is kept a while)
        ann.type("r")
        bob.type("r")
        await until(lambda: room_of(server, code).state == "racing", "the race started")
        bob.type("q")
        await asyncio.sleep(0.3)
        bob.type("q")
        await until(bob.done, "Bob's client quit")
        await until(lambda: not members(server, code)["Bob"][2], "Bob away")
        assert saved_seat(url, code, "Bob") is not None

        # Bob comes back: his own seat, not Ann's
        bob2 = term("join", code, "--name", "Bob", "--server", url)
        await until(lambda: members(server, code)["Bob"][2], "Bob back")
        room = members(server, code)
        assert room["Bob"] == (bob_id, "player", True)
        assert room["Ann"] == (ann_id, "player", True)
        assert sum(1 for _i, role, _c in room.values() if role == "player") == 2
        assert not ann.done() and not bob2.done()
        await until(lambda: b"Welcome back" in bob2.output, "Bob welcomed back", timeout=10)
        assert b"resumed on another connection" not in ann.output


async def test_join_with_no_name_never_takes_a_seat_in_use_in_another_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ann hosts as Ann; Bob, on the same account, runs ``join CODE`` with no name: Ann's saved
    seat is the only one, but her client is sitting in it, so Bob gets a seat of his own (his
    default name) and Ann is not cut off.  Once Ann's client is gone (killed: the system drops
    its mark), a bare ``join`` takes her seat back."""
    monkeypatch.setenv("PATIENCE_RACE_NAME", "Bob")
    async with running_server() as server, terminals() as term:
        url = server.url
        ann = term("host", "spider", "--suits", "1", "--name", "Ann", "--server", url)
        await until(lambda: len(saved_codes(url)) == 1, "Ann's room saved")
        code = saved_codes(url)[0]
        await until(lambda: "Ann" in members(server, code), "Ann in her room")
        ann_id = members(server, code)["Ann"][0]

        bob = term("join", code, "--server", url)
        await until(lambda: "Bob" in members(server, code), "Bob joined as Bob")
        room = members(server, code)
        assert room["Ann"] == (ann_id, "player", True)
        assert room["Bob"][1:] == ("player", True)
        await asyncio.sleep(0.5)
        assert not ann.done() and b"resumed on another connection" not in ann.output

        # asking for Ann's seat by name while she sits in it: refused, saying why
        done = subprocess.run(
            [sys.executable, "-m", "client.cli", "join", code, "--name", "Ann", "--server", url],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2
        assert "another terminal" in done.stderr and "--name" in done.stderr
        assert members(server, code)["Ann"] == (ann_id, "player", True)

        # Ann's client dies: her seat is free to take back, and the only one not in use
        os.kill(ann.pid, signal.SIGKILL)
        await until(ann.done, "Ann's client gone")
        await until(lambda: not members(server, code)["Ann"][2], "Ann away")
        ann2 = term("join", code, "--server", url)
        await until(lambda: members(server, code)["Ann"][2], "Ann back")
        assert members(server, code)["Ann"][0] == ann_id
        await until(lambda: b"Welcome back" in ann2.output, "Ann welcomed back", timeout=10)
        assert not bob.done()


async def test_join_asks_which_seat_on_a_terminal() -> None:
    """Two seats saved for a room and no --name: a prompt lists the names before the UI."""
    async with running_server() as server, terminals() as term:
        url = server.url
        from client.seats import save_seat

        save_seat(url, "K7QM-X2PF", "tok-ann-0123456789abcdef", "Ann")
        save_seat(url, "K7QM-X2PF", "tok-bob-0123456789abcdef", "Bob")
        t = term("join", "K7QM-X2PF", "--server", url)
        await until(lambda: b"Which is yours?" in t.output, "the prompt")
        assert b"1: Ann" in t.output and b"2: Bob" in t.output
        t.type("2\n")
        # Bob's token holds no seat (there is no such room): the join is refused in the UI
        await until(lambda: b"Could not" in t.output, "the refusal")
        t.type("q")
        await until(t.done, "the client quit")
        assert t.exit_code == 1
        assert b"tok-" not in t.output and b"Traceback" not in t.output


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_play_shows_a_join_command_that_works_from_another_terminal() -> None:
    from client.app import RaceApp
    from client.args import Plan
    from client.net import Connection
    from protocol.messages import Joined, JoinRoom, Settings

    port = _free_port()
    app = RaceApp(Plan(action="play", name="Ann", settings=Settings(), port=port))
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.join_hint is not None, "the join hint")
        hint = app.join_hint
        assert hint is not None
        words = hint.split()
        assert words[:2] == ["patience-race", "join"] and words[3] == "--server"
        assert words[4] == f"ws://127.0.0.1:{port}"
        # what another terminal would do with it
        async with Connection(words[4]) as bob:
            joined = await bob.request(JoinRoom(seq=0, code=words[2], name="Bob"))
            assert isinstance(joined, Joined) and joined.room.code == words[2].replace("-", "")
        await pilot.press("q")


async def test_a_join_that_watches_until_the_next_race_holds_its_seat() -> None:
    """Cy joins a room that is racing (``join CODE --name Cy``): she watches, and is seated at
    the next race.  Her terminal sits in that membership all along, so a bare ``join`` in
    another terminal never offers it (it did: the mark was made only for a join that was
    seated at once, and Ann, choosing Cy's seat from the list, cut Cy off; new-user trial)."""
    from client.model import RaceModel
    from client.seats import seat_in_use
    from client.session import Session
    from protocol.messages import Settings

    from .server_helpers import close_all, host_and_join, start_race

    async with running_server() as server:
        conns, code, _ = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="spider", options={"suits": 1})
        )
        await start_race(conns)
        cy = Session(server.url, RaceModel(name="Cy"))
        try:
            await cy.connect()
            joined = await cy.join(code, "Cy")
            assert getattr(joined, "role", None) == "spectator"
            assert saved_seat(server.url, code, "Cy") is not None
            assert seat_in_use(server.url, code, "Cy")
        finally:
            await cy.close()
            await close_all(conns)
        assert not seat_in_use(server.url, code, "Cy")  # her client left: the mark went
