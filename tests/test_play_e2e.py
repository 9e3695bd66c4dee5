"""End to end: ``patience-race play --bots 1`` reaches the game screen, in the app and as a command."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from client.app import RaceApp
from client.args import Plan
from client.cli import main as cli_main
from client.cli import main as client_main
from client.net import Connection, Disconnected
from client.saved_races import races_dir, record_url, save_race, saved_races
from protocol.messages import (
    JoinRoom,
    Kicked,
    RaceRecord,
    Settings,
    Standing,
)

from .server_helpers import one_suit_record
from .test_client_app import text_of, wait_until

ROOT = Path(__file__).resolve().parents[1]


def one_bot_play() -> Plan:
    """``play --suits 1 --bots 1``, its bot quick, its race started at once."""
    return Plan(
        action="play",
        name="Ann",
        settings=Settings(game="spider", options={"suits": 1}),
        bots=1,
        bot_think=0.05,
        auto_ready=True,
    )


async def test_play_with_one_bot_reaches_the_game_screen() -> None:
    app = RaceApp(one_bot_play())
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.model.phase == "racing", timeout=20)
        board = text_of(app, "#board")
        assert "Stock 50" in board and "▒5" in board
        # the bot races: its progress shows up on the side
        await wait_until(
            pilot,
            lambda: any(p.name == "Bot 1" and p.moves > 0 for p in app.model.progress),
            timeout=20,
        )
        assert "Bot 1" in text_of(app, "#side")
        # 80 columns: the header keeps auto-home (the room's code makes way)
        assert "auto-home on" in text_of(app, "#top")
        # the connection lost: the clock stops where it was until it is back
        session = app.session
        assert session is not None
        session.connected = False
        app.refresh_view()
        frozen = text_of(app, "#top")
        await pilot.pause(1.2)
        app.refresh_view()
        assert text_of(app, "#top") == frozen and "reconnecting" in text_of(app, "#status")
        session.connected = True
        app.refresh_view()
        assert text_of(app, "#top") != frozen
        # quitting ends the race with the server inside the program: no seat is promised
        await pilot.press("q")
        status = text_of(app, "#status")
        assert "the server inside this program stops" in status and "seat" not in status
        await pilot.press("q")


async def test_plays_races_are_kept_on_disk_and_the_results_say_where() -> None:
    """The results said "every board and move is public (GET /races/ID)" of a race on the
    server inside ``play``: gone when it quits (from a trial).  Its record is now kept."""
    app = RaceApp(one_bot_play())
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_until(pilot, lambda: app.model.phase == "racing", timeout=20)
        await pilot.press("x", "x")
        await wait_until(
            pilot, lambda: app.model.last is not None and app.model.last.record_saved, timeout=30
        )
        assert app.model.last is not None and app.model.last.race_id is not None
        saved = races_dir() / f"{app.model.last.race_id}.json"
        assert app.model.last.record_at == str(saved)
        board = " ".join(text_of(app, "#board").split())
        assert f"saved in {saved}" in board and "patience-race replay checks it" in board
        await pilot.press("q")
    assert RaceRecord.model_validate_json(saved.read_text()).race_id == app.model.last.race_id
    assert client_main(["replay", str(saved)]) == 0


async def test_quitting_play_mid_race_keeps_the_race_and_says_where() -> None:
    """``patience-race races`` had nothing of a race ``play`` quit mid-race: its server went
    with the program, the record with it (a records trial).  It is kept, and the farewell says
    where."""
    app = RaceApp(one_bot_play())
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_until(pilot, lambda: app.model.phase == "racing", timeout=20)
        race_id = app.model.race_id
        await pilot.press("q", "q")
        await wait_until(pilot, lambda: app.server is None, timeout=20)
    saved = races_dir() / f"{race_id}.json"
    assert saved.exists() and RaceRecord.model_validate_json(saved.read_text()).race_id == race_id
    assert app.farewell is not None and f"kept in {saved}" in app.farewell


async def test_quitting_play_closes_its_room_for_a_friend_who_joined() -> None:
    """A friend joined the room of ``play`` from another terminal: when its player quits, the
    friend is told the room closed and why, not left reconnecting to a server that is gone."""
    app = RaceApp(Plan(action="play", name="Ann", settings=Settings()))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.model.phase == "lobby")
        assert app.server is not None and app.model.room is not None
        bob = Connection(app.server.url)
        await bob.open()
        await bob.request(JoinRoom(seq=0, code=app.model.room.code, name="Bob"))
        await wait_until(pilot, lambda: app.guests() == ["Bob"])
        # one q is not enough with a guest in the room: it says whom quitting leaves
        await pilot.press("q")
        await pilot.pause(0.2)
        assert app.server is not None
        assert "the room closes for Bob" in text_of(app, "#status")
        await pilot.press("q")
        await wait_until(pilot, lambda: app.server is None)
        events = []
        with contextlib.suppress(Disconnected):
            while True:
                events.append(await bob.next_event(timeout=5))
        kicked = [e for e in events if isinstance(e, Kicked)]
        assert kicked and "closed: Ann quit patience-race play" in kicked[0].message
        await bob.close()


def _read_screen(fd: int, until: float, pattern: bytes) -> bytes:
    seen = b""
    while time.monotonic() < until:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if re.search(pattern, seen):
                return seen
    return seen


def test_the_play_command_in_a_terminal(tmp_path: Path) -> None:
    """The installed command, in a pseudo-terminal of 80x24, as a newcomer runs it."""
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": "80",
        "LINES": "24",
        "XDG_STATE_HOME": str(tmp_path),
    }
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real command
        os.execve(
            sys.executable,
            [sys.executable, "-m", "client.cli", "play", "--bots", "1", "--think", "0.1"],
            env,
        )
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        screen = _read_screen(fd, time.monotonic() + 30, rb"Stock\s+50")
        assert re.search(rb"Stock\s+50", screen), screen[-2000:]
        assert b"Bot 1" in screen or b"Race" in screen
        os.write(fd, b"qq")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                return
            _read_screen(fd, time.monotonic() + 0.2, rb"$^")
        raise AssertionError("the client did not quit on q q")
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
        subprocess.run(["stty", "sane"], check=False, stdin=subprocess.DEVNULL, capture_output=True)


class Screen:
    """The real command in a pseudo-terminal, read through a terminal emulator (pyte)."""

    def __init__(self, argv: list[str], env: dict[str, str], cols: int = 100, rows: int = 30):
        import fcntl
        import struct
        import termios

        import pyte

        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the real command
            os.execve(sys.executable, [sys.executable, "-m", "client.cli", *argv], env)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def read(self, seconds: float) -> str:
        """What the terminal shows after reading for ``seconds``."""
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.1))
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.stream.feed(chunk)
        return "\n".join(self.screen.display)

    def wait_for(self, text: str, timeout: float) -> str:
        end = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < end:
            shown = self.read(0.2)
            if text in shown:
                return shown
        raise AssertionError(f"{text!r} never showed; the screen:\n{shown}")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)
        subprocess.run(["stty", "sane"], check=False, stdin=subprocess.DEVNULL, capture_output=True)


def test_the_results_stay_up_after_a_resign(tmp_path: Path) -> None:
    """Issue 10's first problem, as a newcomer meets it: ``play``, resign, and the results (and
    the deal check) stay on screen for as long as you look at them; the bots do not take the
    room back to the lobby."""
    env = {**os.environ, "TERM": "xterm-256color", "XDG_STATE_HOME": str(tmp_path)}
    argv = ["play", "--suits", "1", "--mode", "score", "--time", "5s", "--think", "0.2"]
    term = Screen(argv, env)
    try:
        term.wait_for("Stock 50", 30)
        os.write(term.fd, b"xx")  # resign
        term.wait_for("resigned", 10)
        shown = term.wait_for("Results", 20)  # the time is up: the results
        assert "deal verified" in shown
        for _ in range(15):  # every second for 15 s: still the results
            shown = term.read(1.0)
            assert "Results" in shown and "deal verified" in shown, shown
            assert "Stock 50" not in shown and "Starting in" not in shown, shown
        assert "n: rematch" in shown
    finally:
        term.close()


def test_the_practice_command_gives_hints_and_saves_its_record(tmp_path: Path) -> None:
    """``patience-race practice`` as a newcomer runs it: no server, h shows a hint (its pile
    picked, the key to press named), u undoes, x x resigns and the record of the game is saved and replays."""
    env = {**os.environ, "TERM": "xterm-256color", "XDG_STATE_HOME": str(tmp_path)}
    term = Screen(["practice", "spider", "--suits", "1", "--deal", "1"], env)
    try:
        shown = term.wait_for("Stock 50", 30)
        assert "Practice" in shown and "Spider (1 suit) #1" in shown
        os.write(term.fd, b"h")
        shown = term.wait_for("Hint: ", 20)
        assert " is picked, press " in shown and "1 hint" in shown  # its pile picked already
        os.write(term.fd, b"\x1b")  # drop it (escape)
        os.write(term.fd, b"d")  # a deal, then undo past it: practice allows that
        term.wait_for("Stock 40", 10)
        os.write(term.fd, b"u")
        term.wait_for("Stock 50", 10)
        os.write(term.fd, b"xx")
        shown = term.wait_for("You resigned", 10)
        assert "Hints were used" in shown
        os.write(term.fd, b"q")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _ = os.waitpid(term.pid, os.WNOHANG)
            if done:
                break
            term.read(0.2)
        saved = list((tmp_path / "patience-race" / "practice").glob("spider-1-*.json"))
        assert len(saved) == 1
        check = subprocess.run(
            [sys.executable, "-m", "client.cli", "replay", str(saved[0])],
            capture_output=True,
            text=True,
            check=False,
        )
        assert check.returncode == 0, check.stderr
        assert "practice game: undo without limit, 1 hint used" in check.stdout
    finally:
        term.close()


def test_quitting_a_race_prints_the_way_back_on_lines_of_its_own(tmp_path: Path) -> None:
    """``host``, a race, ``q q``: the terminal is left with the command that takes the seat
    back, on a line of its own (it printed ``...take it back:\\x0a  patience-race join``: the
    line break was escaped with the rest; new-user trial)."""
    import json

    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "server.cli", "--port", "0", "--db", ":memory:"),
            *("--log-format", "json", "--countdown-ms", "100"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    term = None
    try:
        assert server.stderr is not None
        url = ""
        while not url:
            line = server.stderr.readline()
            assert line, "the server stopped before listening"
            url = json.loads(line).get("url", "")
        env = {**os.environ, "TERM": "xterm-256color", "XDG_STATE_HOME": str(tmp_path)}
        argv = ["host", "spider", "--suits", "1", "--name", "Ann", "--server", url]
        term = Screen([*argv, "--bots", "1", "--think", "0.5"], env)
        term.wait_for("Bot 1", 30)
        os.write(term.fd, b"s")  # ready and start
        term.wait_for("Stock 50", 30)
        os.write(term.fd, b"qq")
        raw = b""  # what is printed once the app has left the screen, as the terminal gets it
        end = time.monotonic() + 15
        # (the prompt names the join command too: the farewell's line is waited for)
        while not re.search(rb"take it back:\r?\n  patience-race join", raw):
            if time.monotonic() > end:
                break
            ready, _, _ = select.select([term.fd], [], [], 0.2)
            if ready:
                try:
                    raw += os.read(term.fd, 65536)
                except OSError:
                    break
        farewell = raw[raw.rfind(b"Your seat is kept") :]
        assert re.match(
            rb"Your seat is kept 60 s \(your bots left the race: they run in this program\)\. "
            rb"To take it back:\r?\n  patience-race join ",
            farewell,
        ), farewell
        assert b"\\x0a" not in farewell
    finally:
        if term is not None:
            term.close()
        server.kill()
        server.wait()
        if server.stderr is not None:
            server.stderr.close()


def test_a_races_record_is_where_its_server_publishes_it() -> None:
    assert record_url("ws://127.0.0.1:8765", "abc") == "http://127.0.0.1:8765/races/abc"
    assert record_url("wss://race.example.org/", "abc") == "https://race.example.org/races/abc"
    # under its path, and never the URL's credentials on screen (a review)
    assert record_url("wss://u:p@race.example.org/play/", "abc") == (
        "https://race.example.org/play/races/abc"
    )
    assert record_url("ws://[::1]:8765", "abc") == "http://[::1]:8765/races/abc"


def test_the_kept_races_are_listed_the_latest_first(tmp_path: Path) -> None:
    """`races` shows the latest races kept (the list is cut to a count): the latest first."""
    base = one_suit_record()
    for i, ended in enumerate((3000.0, 1000.0, 2000.0)):
        save_race(
            base.model_copy(update={"race_id": f"{i:012d}", "ended_at": base.started_at + ended}),
            tmp_path,
        )
    assert [r.race_id for _, r in saved_races(tmp_path)] == [
        "000000000000",
        "000000000002",
        "000000000001",
    ]


def test_races_lists_as_many_races_as_asked_the_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`races 2` lists the two latest races kept, `races 1` the latest: no fewer."""
    base = one_suit_record()
    for i, ended in enumerate((3000.0, 1000.0, 2000.0)):
        save_race(
            base.model_copy(update={"race_id": f"{i:012d}", "ended_at": base.started_at + ended}),
            tmp_path,
        )
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path.parent / "state-count"))
    monkeypatch.setattr("client.saved_races.races_dir", lambda: tmp_path)
    for count, listed in (("2", ["000000000000", "000000000002"]), ("1", ["000000000000"])):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli_main(["races", count]) == 0
        assert re.findall(r"replay \S*?(\d{12})\.json", out.getvalue()) == listed


def test_kept_records_are_written_whole_and_the_oldest_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("client.saved_races.KEEP", 3)
    base = one_suit_record()
    settings = base.settings
    paths = []
    for i in range(5):
        record = base.model_copy(update={"race_id": f"{i:012d}"})
        paths.append(save_race(record, tmp_path))
        os.utime(paths[-1], (1000 + i, 1000 + i))
    assert sorted(tmp_path.iterdir()) == paths[2:]
    assert RaceRecord.model_validate_json(paths[-1].read_text()).race_id == "000000000004"
    # a server's record is kept only under the id asked for, a plain one: "../seats" replaced
    # the seats file with a record (a review)
    for hostile, asked in (("./../seats", "./../seats"), ("../x", "000000000009"), ("a/b", None)):
        with pytest.raises(ValueError):
            save_race(base.model_copy(update={"race_id": hostile}), tmp_path, asked)
    with pytest.raises(ValueError):  # another race than the one asked for
        save_race(base.model_copy(update={"race_id": "000000000008"}), tmp_path, "000000000009")
    assert sorted(tmp_path.iterdir()) == paths[2:]
    # the list of kept races: a room's code is written safe, and a record whose time is out of
    # range is left out rather than stopping the list (a review)
    odd = base.model_copy(update={"race_id": "000000000010", "room": "AB\x1b]0;pwned\x07CD"})
    save_race(odd, tmp_path)
    bad = base.model_copy(update={"race_id": "000000000011", "started_at": 1e20, "ended_at": None})
    save_race(bad, tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path.parent / "state-races"))
    monkeypatch.setattr("client.saved_races.races_dir", lambda: tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["races"]) == 0
    listed = out.getvalue()
    assert "\x1b" not in listed and "\\x1b" in listed and "000000000011" not in listed
    # a player still playing when a timed race ended: "time up", as the results said (it said
    # "unfinished": a new-user trial); in a race with no time limit, or one stopped early:
    # stopped, as the results say it (a re-trial)
    zed = Standing(
        rank=1, id=1, name="Zed", status="playing", score=3, score2=None, finish_ms=None,
        score_ms=0, moves=1, undos=0,
    )  # fmt: skip
    timed = settings.model_copy(update={"time_limit": 90, "mode": "score"})
    over = {"ended_at": base.started_at + 90}
    for race_id, kept, end in (
        ("000000000012", timed, over),
        ("000000000013", settings, over),
        ("000000000014", timed, {"ended_at": base.started_at + 2}),  # stopped: its room closed
    ):
        record = base.model_copy(
            update={"race_id": race_id, "settings": kept, "standings": [zed], **end}
        )
        save_race(record, tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["races"]) == 0
    said = [line for line in out.getvalue().splitlines() if "Zed" in line]
    assert sorted(said) == [
        "   1. Zed: stopped, score 3",
        "   1. Zed: stopped, score 3",
        "   1. Zed: time up, score 3",
    ]
    # practice games, kept apart, are said (they were nowhere: a records trial)
    practice = tmp_path.parent / "state-races" / "patience-race" / "practice"
    practice.mkdir(parents=True)
    (practice / "spider-1-20261127-101010.json").write_text("{}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["races"]) == 0
    assert f"Practice games: 1 kept in {practice}" in out.getvalue()
