"""The ``patience-race`` command line: deal and replay."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.args import parse_time
from client.cli import main
from client.terminal import terminal_problem
from protocol.config import GameConfig
from protocol.record import Recorder

from .test_deals import VECTORS


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_deal_json_is_the_vector(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "spider", "40000", "--json")
    assert code == 0
    assert out == (VECTORS / "spider-40000.json").read_text().rstrip("\n") + "\n"


def test_deal_json_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "spider", "7", "--suits", "2", "--json")
    assert code == 0
    assert json.loads(out) == json.loads((VECTORS / "spider-2suits-7.json").read_text())
    code, out, _ = run(capsys, "deal", "spider", "1", "--numbering", "xpat2", "--json")
    assert json.loads(out) == json.loads((VECTORS / "spider-xpat2-1.json").read_text())


def test_deal_layout_hides_face_down_cards(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "spider", "1")
    assert code == 0
    vector = json.loads((VECTORS / "spider-1.json").read_text())
    assert out.count("##") == 44
    lines = [line for line in out.splitlines() if line[:3].strip().isdigit()]
    assert len(lines) == 10
    for line, pile, down in zip(lines, vector["tableau"], vector["face_down"], strict=True):
        shown = line.split(":", 1)[1].split()
        assert shown == ["##"] * down + pile[down:]
    for hidden in {c for p in vector["tableau"] for c in p[:-1]} - {
        p[-1] for p in vector["tableau"]
    }:
        assert hidden not in out
    assert "Stock: 50 cards" in out


def test_deal_layout_st_helena(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "st-helena", "1")
    assert code == 0
    assert "##" not in out
    assert "  1: 3D TC AD 2S QC 9D 9H KD" in out
    assert "f1:KC" in out and "f8:AD" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["deal", "spider", "0"], "from 1"),
        (["deal", "spider", "-4"], "from 1"),
        (["deal", "spider", "abc"], "not a whole number"),
        (["deal", "louis", "1", "--numbering", "xpat2"], "numbering"),
        (["deal", "st-helena", "1", "--suits", "2"], "no option 'suits'"),
    ],
)
def test_deal_errors(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert words in err


def test_unknown_game_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["deal", "klondike", "1"])
    assert exc.value.code == 2
    assert "klondike" in capsys.readouterr().err


def _record(tmp_path: Path) -> tuple[Path, Recorder]:
    rec = Recorder(GameConfig("spider", {"suits": 1}), 12345)
    # play the first legal moves, a deal and an undo
    for _ in range(6):
        moves = [m for m in rec.state.legal_moves() if m.kind == 0]
        rec.play(moves[0] if moves else rec.state.legal_moves()[0])
    rec.play("d")
    rec.play(next(m for m in rec.state.legal_moves() if m.kind == 0))
    rec.play("u")
    path = tmp_path / "game.json"
    path.write_text(rec.record().dumps())
    return path, rec


def test_replay_accepts_an_engine_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, rec = _record(tmp_path)
    code, out, err = run(capsys, "replay", str(path))
    assert code == 0, err
    assert f"score: {rec.state.score()}  aisleriot score: {rec.state.score2()}" in out
    assert "won: no  stuck: no" in out
    assert "result: matches the record" in out
    # the undo is in the record's list, but is not a move
    assert f"#12345 after {rec.state.moves} moves, 1 undo" in out
    assert rec.state.moves == len(json.loads(path.read_text())["moves"]) - 1


def test_replay_rejects_a_tampered_move(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path, _rec = _record(tmp_path)
    data = json.loads(path.read_text())
    data["moves"][2] = "1>1"
    path.write_text(json.dumps(data))
    code, _out, err = run(capsys, "replay", str(path))
    assert code == 1
    assert "move 3 ('1>1') is illegal: pile 1 cannot move onto itself" in err


def test_replay_rejects_a_tampered_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, rec = _record(tmp_path)
    data = json.loads(path.read_text())
    data["result"]["score"] += 100
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2
    assert f"score is {rec.state.score()}, the record says {rec.state.score() + 100}" in err


def test_replay_rejects_garbage(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "junk.json"
    path.write_text("{not json")
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "not JSON" in err
    path.write_text(json.dumps({"game": "spider", "number": 1, "moves": "3>7"}))
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "moves" in err
    code, _, err = run(capsys, "replay", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err
    # (from a trial: a JSON string was read as JSON again, "not JSON: Expecting value"; a deep
    # nesting raised RecursionError with a traceback)
    path.write_text('"x"')
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "is not a record: a record is a JSON object" in err and str(path) in err
    path.write_text("[" * 100_000)
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "nested too deeply" in err
    # a file of something else, and a deal: said as what they are (it was "not a game record:
    # game: Field required", "tableau: Extra inputs are not permitted": a records trial)
    path.write_text("{}")
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "not a record of a race or a game" in err and "Field required" not in err
    code, deal, _ = run(capsys, "deal", "louis", "1", "--json")
    path.write_text(deal)
    code, _, err = run(capsys, "replay", str(path))
    assert code == 2 and "is a deal (deal --json)" in err and "Extra inputs" not in err


def test_console_script_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "client.cli", "deal", "louis", "1", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == json.loads((VECTORS / "louis-1.json").read_text())


# -- other people's text, and servers that cannot be reached ------------------------------------

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"


async def test_replay_escapes_names_from_the_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from .server_helpers import http_get, running_server
    from .test_server_ops import finished_race

    async with running_server() as server:
        over, _moves = await finished_race(server)
        status, _headers, body = await http_get(server, f"/races/{over.race_id}")
    assert status == 200
    data = json.loads(body)
    for player in data["players"]:
        player["name"] = HOSTILE + player["name"]
    for standing in data["standings"]:
        standing["name"] = HOSTILE + standing["name"]
    path = tmp_path / "race.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "replay", str(path))
    assert code == 0, err
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07\\x1b[2JAnn" in out
    assert out.count(": ok") == 2
    # Ann played four moves and resigned: the resignation is recorded, but is not a move
    assert "Ann: 4 moves, score" in out


def test_clean_escapes_controls_and_invisible_characters() -> None:
    from client.safe import clean

    assert clean(HOSTILE + "Ann") == "\\x1b]0;pwned\\x07\\x1b[2JAnn"
    assert clean("Ann\u202eolleh\u200b\x9b") == "Ann\\u202eolleh\\u200b\\x9b"
    assert clean("Zoë 🃏 李") == "Zoë 🃏 李"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nothing listens on, held (bound, never listening: a connection is refused) for
    the test, so that no server of a test running beside it gets it meanwhile."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


@pytest.mark.parametrize(
    "argv",
    [
        ["join", "K7QM-X2PF"],
        ["join", "K7QM-X2PF", "--name", "Bob"],
        ["host", "spider", "--name", "Ann"],
        ["watch", "K7QM-X2PF"],
        ["rooms"],
        ["bot", "K7QM-X2PF"],
    ],
)
def test_no_server_running_says_what_to_do(argv: list[str], closed_port: int) -> None:
    url = f"ws://127.0.0.1:{closed_port}"
    done = subprocess.run(
        [sys.executable, "-m", "client.cli", *argv, "--server", url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert url in err
    assert "patience-race-server" in err and "patience-race play" in err
    # the port asked for: the server it names listens on 8765 by itself (a new-user trial)
    assert f"patience-race-server --port {url.rsplit(':', 1)[1]}`" in err
    assert "Traceback" not in err and "Errno" not in err
    assert 1 <= len(err.strip().splitlines()) <= 2


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["host", "spider", "--name", "A" * 40], "at most 24 characters"),
        (["play", "--name", " "], "at least one visible character"),
        (["join", "K7QM-X2PF", "--name", ""], "at least one visible character"),
        (["join", "K7QM-X2PF", "--name", "Bo\x1b[31mb"], "only visible characters"),
        (["watch", "K7QM-X2PF", "--name", "x" * 30], "at most 24 characters"),
        (["bot", "K7QM-X2PF", "--name", "..."], "one letter or digit"),
        (["join", "AB"], "not a room code"),
        (["join", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"], "not a room code"),
        (["watch", "K7QM/X2PF"], "not a room code"),
        (["bot", "K7QM_X2PF"], "not a room code"),
        (["play", "--time", "-5"], "between 0 (none) and 24 hours"),
        (["host", "spider", "--time", "100000"], "between 0 (none) and 24 hours"),
        (["play", "--port", "99999"], "is not a port (0 to 65535)"),
        (["play", "--think", "-1"], "is not a pause (0 to 60 seconds)"),
        (["bot", "K7QM-X2PF", "--think", "-2"], "is not a pause (0 to 60 seconds)"),
    ],
)
def test_names_and_codes_that_cannot_be_are_refused_before_connecting(
    capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    """A name or code the server would refuse is refused on the command line: one line saying
    why, exit 2, no traceback and no connection tried (the server named does not exist)."""
    with pytest.raises(SystemExit) as done:
        main([*argv, "--server", "ws://127.0.0.1:1"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and "cannot reach" not in err
    assert "\x1b" not in err


def test_a_name_refused_is_quoted_escaped_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A name with escape sequences is shown as typed, each escape written once (it was the
    repr of the escaped text: '\\\\x1b]0;title\\\\x07')."""
    with pytest.raises(SystemExit):
        main(["join", "K7QM-X2PF", "--name", "\x1b]0;title\x07", "--server", "ws://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert "'\\x1b]0;title\\x07': a name may hold only visible characters" in err, err
    assert "\\\\" not in err and "\x1b" not in err


def test_rooms_columns_stay_apart_whatever_the_title() -> None:
    """``patience-race rooms``: a long title (Spider with every option) no longer runs into the
    mode ("...xpat2 numbering)score"): each column is as wide as its widest cell."""
    from client.cli import rooms_table
    from protocol.messages import RoomSummary

    rooms = [
        RoomSummary(code="RHDR7JM8", state="lobby", title="Spider (4 suits, relaxed 2, xpat2 "
                    "numbering)", mode="score", players=2, seats=2, spectators=0,
                    time_limit=300),
        RoomSummary(code="K7QMX2PF", state="racing", title="Louis", mode="first", players=1,
                    seats=16, spectators=3),
        RoomSummary(code="QQQQ2222", state="lobby", title="Louis", mode="first", players=1,
                    seats=16, spectators=3, time_limit=90),
    ]  # fmt: skip
    lines = rooms_table(rooms).splitlines()
    assert lines[0].split() == ["code", "game", "race", "players", "watching", "state"]
    assert lines[2].split()[-2:] == ["3", "racing"]  # Louis's three watchers
    # the race as people say it, with its time limit (it said "score", and no time)
    assert "numbering)  best score, 5 min   2/2" in lines[1], lines
    assert "Louis" in lines[2] and "first to win  " in lines[2] and "min" not in lines[2]
    assert "first to win, 90 s" in lines[3]
    for word in ("race", "players", "watching", "state"):  # every column starts at its heading
        at = lines[0].index(word)
        assert all(line[at - 2 : at] == "  " and line[at] != " " for line in lines), word


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"USER": "maximilian.weber.from.accounting"}, "maximilian.weber.from.ac"),
        ({"USER": "ann", "PATIENCE_RACE_NAME": "  Ann  Lee "}, "Ann Lee"),
        ({"USER": "\u200b", "PATIENCE_RACE_NAME": "\x1b[2J"}, "Player"),
        ({"USER": "Ｚoë"}, "Zoë"),
        ({"USER": "ann (work)"}, "Player"),  # parentheses are the screens' marks
        ({"USER": "", "LOGNAME": "bea"}, "bea"),  # an empty USER: the login name still
    ],
)
def test_the_default_name_is_always_one_the_server_takes(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], name: str
) -> None:
    from client.args import default_name
    from protocol.names import normalize

    for k in ("PATIENCE_RACE_NAME", "LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert default_name() == name == normalize(name)


def test_a_bad_patience_race_name_is_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from client.args import default_name

    monkeypatch.setenv("USER", "ann")
    monkeypatch.setenv("PATIENCE_RACE_NAME", "Ann (work)")
    assert default_name() == "ann"
    err = capsys.readouterr().err
    assert "PATIENCE_RACE_NAME is not a name" in err and "--name" in err
    # said once by a command that takes a name, never by one that takes none (every command
    # said it twice, "rooms" too: a terminals trial)
    from client.cli import main

    for argv, times in ((["rooms"], 0), (["join", "K7QM-X2PF"], 1), (["host"], 1)):
        main([*argv, "--server", "ws://127.0.0.1:1"])
        err = capsys.readouterr().err
        assert err.count("PATIENCE_RACE_NAME is not a name") == times, (argv, err)


async def test_a_server_certificate_not_trusted_says_how_to_trust_it(tmp_path: Path) -> None:
    """A wss:// server with a self-signed certificate: the client names the problem and
    SSL_CERT_FILE (and does not suggest running a server); with it, the TLS handshake passes."""
    import asyncio
    import shutil
    import ssl

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def handshake_only(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.close()

    server = await asyncio.start_server(handshake_only, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    url = f"wss://127.0.0.1:{port}"
    # the same certificate on another address of this machine, a name it was not made for
    try:  # (Linux answers on all of 127.0.0.0/8; macOS and the BSDs only on 127.0.0.1)
        elsewhere = await asyncio.start_server(handshake_only, "127.0.0.2", 0, ssl=context)
    except OSError:
        server.close()
        await server.wait_closed()
        pytest.skip("no 127.0.0.2 on this machine's loopback")
    elsewhere_port = elsewhere.sockets[0].getsockname()[1]

    async def client(
        *env: tuple[str, str], at: str = url, args: tuple[str, ...] = ("rooms", "--server")
    ) -> subprocess.CompletedProcess[str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", *args, at,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **dict(env)},
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        return subprocess.CompletedProcess([], proc.returncode or 0, out.decode(), err.decode())

    try:
        untrusted = await client()
        trusted = await client(("SSL_CERT_FILE", str(cert)))
        # trusted, by a name it was not made for: SSL_CERT_FILE is no advice (an operator trial)
        other_name = await client(
            ("SSL_CERT_FILE", str(cert)), at=f"wss://127.0.0.2:{elsewhere_port}"
        )
        # a race record at an https URL of that server: why, not "is not JSON" (a trial)
        record = await client(at=f"https://127.0.0.1:{port}/races/0123456789ab", args=("replay",))
        # a client already in a room whose server's certificate changes meanwhile: its
        # reconnection says why it cannot get back (it said "Still reconnecting..." for ever)
        from client.model import RaceModel
        from client.session import Session

        session = Session(url, RaceModel(name="Ann"))
        session.remember = False
        session.code, session.model.token = "ABCD2345", "t" * 32
        assert await session._reconnect() is False
        assert "certificate is not trusted" in session.model.status
        assert "SSL_CERT_FILE" in session.model.status
    finally:
        for s in (server, elsewhere):
            s.close()
            await s.wait_closed()
    assert untrusted.returncode == 1
    assert "does not trust" in untrusted.stderr and "SSL_CERT_FILE" in untrusted.stderr
    assert "patience-race-server" not in untrusted.stderr and "Traceback" not in untrusted.stderr
    # trusted: past TLS, the (fake) server hangs up: another message, not the certificate's
    assert "does not trust" not in trusted.stderr and url in trusted.stderr
    assert other_name.returncode == 1 and "made for another name" in other_name.stderr
    assert "SSL_CERT_FILE" not in other_name.stderr
    assert record.returncode == 2 and "is not JSON" not in record.stderr
    assert "does not trust" in record.stderr and "SSL_CERT_FILE" in record.stderr


def test_deal_names_its_numbering_once(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "deal", "spider", "0", "--numbering", "xpat2")
    assert code == 0
    title = out.splitlines()[0]
    assert title.count("xpat2") == 1 and title.endswith("#0"), title


def test_a_server_address_without_its_scheme_is_ws(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--server 127.0.0.1:8941`` was "not a ws:// or wss:// address", with the advice to run
    a server that was running."""
    import argparse

    from client.args import server_url

    monkeypatch.delenv("PATIENCE_RACE_SERVER", raising=False)
    for given, url in (
        ("127.0.0.1:8941", "ws://127.0.0.1:8941"),
        ("race.example.org", "ws://race.example.org"),
        ("wss://race.example.org", "wss://race.example.org"),
        (None, "ws://127.0.0.1:8765"),
        # a web address pasted: its WebSocket (it was "sends its visitors to https": a trial)
        ("https://race.example.org/", "wss://race.example.org"),
        ("HTTP://race.example.org:8765", "ws://race.example.org:8765"),
    ):
        assert server_url(argparse.Namespace(server=given)) == url


async def test_a_full_server_is_said_to_be_full_not_missing() -> None:
    """A server that turns the connection away (1013, full): the client says so and to try again
    (it advised running a server, and asyncio printed 'Future exception was never retrieved')."""
    import asyncio

    from client.net import Connection

    from .server_helpers import fast_limits, running_server

    async with running_server(fast_limits(max_connections=1)) as server, Connection(server.url):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", "rooms", "--server", server.url,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    text = err.decode()
    assert proc.returncode == 1
    assert "turned the connection away" in text and "Try again" in text
    assert "patience-race-server" not in text and "Future exception" not in text


async def test_no_rooms_says_to_host_one_on_that_server() -> None:
    """``rooms --server X`` with none: "Host one: patience-race host", which went to the default
    server (a records trial): the server asked is in the command."""
    import asyncio

    from .server_helpers import running_server

    async with running_server() as server:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", "rooms", "--server", server.url,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    assert out.decode().strip().endswith(f" host --server {server.url}")


async def test_a_site_that_sends_http_to_https_is_told_to_use_wss() -> None:
    """``--server host`` (ws:// assumed) against an nginx site that redirects to https: the
    client says to use wss:// (it said 'that is not a ws:// or wss:// address')."""
    import asyncio

    async def redirect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://race.example:8443/\r\n"
            b"Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(redirect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "client.cli", "rooms", "--server", f"127.0.0.1:{port}",
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        server.close()
        await server.wait_closed()
    assert proc.returncode == 1
    assert "Use --server wss://race.example:8443" in err.decode()


def test_output_cut_short_by_its_reader_is_no_traceback() -> None:
    """``patience-race deal spider 1 | head -1``: the reader goes; no BrokenPipeError traceback."""
    r, w = os.pipe()
    os.close(r)  # the reader is gone before a line is written
    proc = subprocess.run(
        [sys.executable, "-m", "client.cli", "deal", "spider", "1"],
        stdout=w, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
    )  # fmt: skip
    os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10", 600), ("10m", 600), ("90s", 90), ("1h", 3600), ("1.5h", 5400), ("0", 0), (" 2M ", 120)],
)
def test_time_limits_in_seconds_minutes_or_hours(text: str, seconds: int) -> None:
    """rules.md's `--time 1h` was refused: only seconds and minutes were known."""
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["1d", "h", "nan", "inf", "ten"])
def test_what_is_no_time(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not a time"):
        parse_time(text)


def test_a_time_under_a_second_is_not_taken_for_no_limit() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="a second at least"):
        parse_time("0.4s")


def test_play_seats_every_bot_and_reads_a_server_written_without_its_scheme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`play --bots 10` raced 7 (8 seats); `play --server 127.0.0.1:PORT` was refused as no
    ws:// address, and $PATIENCE_RACE_SERVER is not `play`'s (it runs its own server)."""
    plans: list[Any] = []
    monkeypatch.setattr("client.cli.run_app", lambda plan: plans.append(plan) or 0)
    monkeypatch.setenv("PATIENCE_RACE_SERVER", "ws://127.0.0.1:1")
    assert main(["play", "--bots", "10"]) == 0
    assert main(["play", "--bots", "1", "--server", "127.0.0.1:9"]) == 0
    assert plans[0].bots == 10 and plans[0].settings.seats == 11 and plans[0].url is None
    assert plans[1].settings.seats == 8 and plans[1].url == "ws://127.0.0.1:9"


def test_host_seats_every_bot_or_says_there_is_no_room(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`host --bots 3 --seats 3` opened a room of three seats and said "Bot 3 left"; with no
    --seats, ten bots get a room with a seat for each and for the host."""
    plans: list[Any] = []
    monkeypatch.setattr("client.cli.run_app", lambda plan: plans.append(plan) or 0)
    assert main(["host", "--bots", "3", "--seats", "3"]) == 2
    assert "at most --bots 2" in capsys.readouterr().err and not plans
    assert main(["host", "--bots", "10"]) == 0
    assert main(["host", "--bots", "2", "--seats", "3"]) == 0
    assert main(["host"]) == 0
    assert [p.settings.seats for p in plans] == [11, 3, 8]
    assert [p.bots for p in plans] == [10, 2, 0]


def test_play_gives_every_bot_a_seat_and_you_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """`play --bots 8`: eight bots and you need nine seats, one more than a room's default
    (the last bot would find the room full)."""
    plans: list[Any] = []
    monkeypatch.setattr("client.cli.run_app", lambda plan: plans.append(plan) or 0)
    for bots in ("8", "15", "2"):
        assert main(["play", "--bots", bots]) == 0
    assert [p.settings.seats for p in plans] == [9, 16, 8]
    assert [p.bots for p in plans] == [8, 15, 2]


def test_a_race_for_the_best_score_without_a_time_lasts_ten_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`host --mode score` with no --time: ten minutes, as its help says (the server refuses a
    race for the best score with no time limit)."""
    plans: list[Any] = []
    monkeypatch.setattr("client.cli.run_app", lambda plan: plans.append(plan) or 0)
    assert main(["host", "--mode", "score"]) == 0
    assert main(["play", "--mode", "score"]) == 0
    assert main(["host", "--mode", "score", "--time", "5"]) == 0
    assert main(["host"]) == 0
    assert [(p.settings.mode, p.settings.time_limit) for p in plans] == [
        ("score", 600),
        ("score", 600),
        ("score", 300),
        ("first", 0),
    ]


def test_watch_without_a_name_takes_a_number_when_the_room_has_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`watch CODE` with no --name watches under the user name, made ``Ann 2`` if a player
    has it (else the server's "name taken" turned the watcher away); a --name given is kept
    as given."""
    plans: list[Any] = []
    monkeypatch.setattr("client.cli.run_app", lambda plan: plans.append(plan) or 0)
    monkeypatch.setenv("PATIENCE_RACE_NAME", "Ann")
    assert main(["watch", "K7QM-X2PF"]) == 0
    assert main(["watch", "K7QM-X2PF", "--name", "Bob"]) == 0
    assert [(p.action, p.name, p.any_name) for p in plans] == [
        ("watch", "Ann", True),
        ("watch", "Bob", False),
    ]


class _Stream(io.StringIO):
    def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self.tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self.tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def test_what_cannot_draw_the_game_is_said_before_it_starts() -> None:
    """Piped, it wrote half a megabyte of escape codes and never read a key; on TERM=dumb it
    drew escape codes as text; in a Latin-1 locale every card back and border was a \\u2592."""
    tty, env = _Stream(True), {"TERM": "xterm-256color"}
    assert terminal_problem(tty, tty, env) is None
    assert "needs a terminal" in (terminal_problem(_Stream(False), tty, env) or "")
    assert "needs a terminal" in (terminal_problem(tty, _Stream(False), env) or "")
    assert "needs a terminal" in (terminal_problem(None, tty, env) or "")
    assert "TERM=dumb" in (terminal_problem(tty, tty, {"TERM": "dumb"}) or "")
    latin = _Stream(True, "latin-1")
    assert "encoding (latin-1)" in (terminal_problem(tty, latin, env) or "")
    assert "LANG=C.UTF-8" in (terminal_problem(tty, _Stream(True, "ascii"), env) or "")


def test_play_and_practice_without_a_terminal_say_so_and_stop() -> None:
    for argv in (["play", "--port", "0"], ["practice", "spider", "--suits", "1"]):
        done = subprocess.run(
            [sys.executable, "-m", "client.cli", *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("patience-race: this draws a full screen")
        assert len(done.stderr.splitlines()) == 1 and done.stdout == ""


def test_a_name_the_locale_cannot_write_is_escaped_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a Latin-1 locale, the seat chooser and replay printing 李 raised UnicodeEncodeError."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="latin-1")
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["deal", "spider", "1", "--suits", "1"]) == 0
    print("Seats saved under: 李")
    out.flush()
    assert raw.getvalue().endswith(b"Seats saved under: \\u674e\n")


def test_commands_the_screens_print_run_as_this_program_was_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started as the README does (.venv/bin/patience-race, no venv activated), the join
    command the game printed, `patience-race join ...`, was "command not found"."""
    from client.terminal import program

    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("patience-race", "patience-race-server"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    started = str(bin_dir / "patience-race")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert program(argv0=started) == started
    assert program("patience-race-server", argv0=started) == str(bin_dir / "patience-race-server")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin")  # the venv activated: the bare name works
    assert program(argv0=started) == "patience-race"
    assert program(argv0="/src/client/cli.py") == "patience-race"  # python -m client.cli


def test_a_plain_connection_to_a_tls_port_suggests_wss() -> None:
    """``--server host:443``-like addresses are ws://; nginx's TLS port answers a plain
    connection 400: the advice was to run a server (an operator trial)."""
    from websockets.datastructures import Headers
    from websockets.exceptions import InvalidStatus
    from websockets.http11 import Response

    from client.reach import unreachable

    refused = InvalidStatus(Response(400, "Bad Request", Headers()))
    said = unreachable("ws://race.example.org:8443", refused)
    assert "use --server wss://race.example.org:8443" in said
    assert "patience-race-server" not in said


def test_a_secure_connection_to_a_plain_server_and_a_host_elsewhere_are_not_told_to_run_one() -> (
    None
):
    """``wss://`` to a plain server (it hangs up on the TLS handshake) and a host name mistyped
    were both told to run a server (a records trial): the first to use ws://, the second to
    check the address; only this machine's address is told to start one."""
    import socket
    import ssl

    from client.reach import unreachable

    reset = unreachable("wss://127.0.0.1:31556", ConnectionResetError(104, "Connection reset"))
    assert "use --server ws://127.0.0.1:31556" in reset and "patience-race-server" not in reset
    wrong = unreachable("wss://x.example", ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER]"))
    assert "use --server ws://x.example" in wrong
    gone = unreachable(
        "ws://no-such.invalid:8765", socket.gaierror(-2, "Name or service not known")
    )
    assert "name or service not known" in gone and "Check the address" in gone
    assert "patience-race-server" not in gone
    here = unreachable("ws://127.0.0.1:8765", ConnectionRefusedError(111, "Connection refused"))
    assert "Run one with" in here and "patience-race-server" in here


def test_a_server_that_refuses_the_client_is_not_said_to_be_down() -> None:
    """A server with ``--origins`` answered 403, said "cannot reach the race server ... Run one
    with patience-race-server" (an operator trial)."""
    from websockets.datastructures import Headers
    from websockets.exceptions import InvalidStatus
    from websockets.http11 import Response

    from client.reach import unreachable

    said = unreachable("ws://127.0.0.1:16810", InvalidStatus(Response(403, "Forbidden", Headers())))
    assert "refused the connection (HTTP 403 Forbidden)" in said and "turned this client" in said
    assert "patience-race-server" not in said and "cannot reach" not in said
    # a proxy's limit, and a path routed nowhere, are said as what they are (a review)
    busy = unreachable("wss://x.example", InvalidStatus(Response(429, "Too Many", Headers())))
    assert "try again in a minute" in busy
    lost = unreachable("wss://x.example/n/gone/", InvalidStatus(Response(404, "", Headers())))
    assert "(HTTP 404)" in lost and "check the URL" in lost
