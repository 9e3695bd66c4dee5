"""The server's log lines: room codes as players see them, the winner as ``id:name``, and one
``refused`` line (rate-limited) for each address a server closes or refuses for abuse."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from protocol.messages import RaceOver, Settings
from server.logs import OWED_LINES, RefusalLog
from server.rooms import log_label

from .rules_helpers import spider, suit_run
from .server_helpers import (
    Lines,
    close_all,
    fast_limits,
    host_and_join,
    move,
    running_server,
    start_race,
)


async def test_rooms_are_logged_as_players_see_them_and_the_winner_as_id_and_name(
    lines: Lines,
) -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="spider")
        )
        await start_race(conns)
        race = server.hub.rooms[code].race
        assert race is not None
        # Ann's board is one move from a win
        race.seats[joined[0].you].state = spider(
            suit_run("S", 2), "AS", foundations=["C", "C", "H", "H", "D", "D", "S"]
        )
        assert (await move(conns[0], "tableau", 1, 0)).won
        await move(conns[1], "resign")
        await conns[0].wait_for(RaceOver)
        await close_all(conns)
    shown = f"{code[:4]}-{code[4:]}"
    created = lines.events("room_created")
    assert created and created[0]["room"] == shown
    # who came from where, for a host to deal with abuse (an operator trial: only refusals
    # named an address)
    assert created[0]["address"] == "127.0.0.1"
    assert [f["address"] for f in lines.events("joined")] == ["127.0.0.1"]
    assert {f["room"] for f in lines.fields if "room" in f} == {shown}
    over = lines.events("race_over")
    assert over and over[0]["winner"] == f"{joined[0].you}:Ann"


async def test_abuse_is_logged_once_a_minute_per_address(lines: Lines) -> None:
    limits = fast_limits(max_per_address=2)
    async with running_server(limits) as server:
        for _ in range(2):  # garbage until the server closes the connection (4400), twice
            async with ws_connect(server.url) as ws:
                with pytest.raises(ConnectionClosed) as closed:
                    for _ in range(100):
                        await ws.send(b"\xc1garbage")
                    while True:
                        await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
        refused = lines.events("refused")
        assert refused == [
            {
                "event": "refused",
                "address": "127.0.0.1",
                "reason": "bad_input",
                "code": 4400,
                "count": 1,
            }
        ]
        # the same address refused for another reason within the minute: a line of its own
        # (it was only counted, under the first reason, and fail2ban never saw it)
        async with ws_connect(server.url), ws_connect(server.url):
            with pytest.raises(ConnectionClosed) as full:
                async with ws_connect(server.url) as third:
                    await third.recv()
            assert full.value.rcvd is not None and full.value.rcvd.code == 1013
        refused = lines.events("refused")
        assert [(f["reason"], f.get("code"), f["count"]) for f in refused] == [
            ("bad_input", 4400, 1),
            ("too_many_connections", 1013, 1),
        ]
        assert server.refusals.seen[("127.0.0.1", "bad_input")][1] == 1  # the second 4400
    assert not any("token" in str(f) for f in lines.fields)


@pytest.fixture
def own_logger(request: pytest.FixtureRequest) -> Iterator[tuple[logging.Logger, Lines]]:
    """A logger of the test's own, its lines kept in a handler and going nowhere else."""
    logger = logging.getLogger(f"patience_race.test.{request.node.name}")
    handler = Lines()
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield logger, handler
    finally:
        logger.removeHandler(handler)


def test_the_refusal_log_is_bounded(own_logger: tuple[logging.Logger, Lines]) -> None:
    logger, handler = own_logger
    log = RefusalLog(logger, every_s=60, addresses=100, per_second=5)
    # one address flooding: one line a minute, the next one with the count
    for i in range(1000):
        log.note("203.0.113.9", "flooding", 10.0 + i * 0.01, 4429)
    assert len(handler.fields) == 1
    assert log.note("203.0.113.9", "flooding", 71.0, 4429)
    assert handler.fields[-1]["count"] == 1000
    # refusals counted within the minute get their line once it is over, even if the
    # address stops there (the server's clock tick flushes)
    handler.fields.clear()
    for i in range(7):
        log.note("203.0.113.9", "flooding", 72.0 + i, 4429)
    log.note("203.0.113.9", "bad_input", 80.0, 4400)  # another reason: a line of its own
    assert [(f["reason"], f["count"]) for f in handler.fields] == [("bad_input", 1)]
    log.flush(120.0)  # not a minute since the flooding line yet
    assert len(handler.fields) == 1
    log.flush(131.5)
    assert handler.fields[-1] == {
        "event": "refused",
        "address": "203.0.113.9",
        "reason": "flooding",
        "code": 4429,
        "count": 7,
    }
    log.flush(200.0)
    assert len(handler.fields) == 2  # written once
    # a pair just written by flush() is the newest, forgotten last (it went first: its next
    # refusal within the minute had a line again; review)
    small = RefusalLog(logger, every_s=60, addresses=3, per_second=5)
    handler.fields.clear()
    small.note("A", "flooding", 0.0)
    small.note("A", "flooding", 1.0)  # held back
    small.note("B", "flooding", 2.0)
    small.note("C", "flooding", 3.0)
    small.flush(61.0)  # A's held-back refusal
    small.note("D", "flooding", 62.0)  # one pair too many: B goes, not A
    assert not small.note("A", "flooding", 63.0)
    assert [f["address"] for f in handler.fields] == ["A", "B", "C", "A", "D"]
    # many addresses at once: at most per_second lines a second
    handler.fields.clear()
    for i in range(1000):
        log.note(f"2001:db8:{i:x}::/64", "too_many_connections", 100.0 + i / 10_000)
    assert len(handler.fields) <= 5 + OWED_LINES
    # decoys using up every second's lines first cannot keep an abuser out of the log
    handler.fields.clear()
    for second in range(30):
        t = 300.0 + second
        for d in range(5):
            log.note(f"2001:db8:{100 + second * 5 + d:x}::/64", "bad_input", t, 4400)
        for k in range(100):
            log.note("203.0.113.7", "flooding", t + 0.5 + k / 1000, 4429)
    abuser = [f for f in handler.fields if f["address"] == "203.0.113.7"]
    assert abuser and abuser[0]["reason"] == "flooding"
    # and the table of addresses stays bounded
    for i in range(1000):
        log.note(f"198.51.{i // 256}.{i % 256}", "bad_input", 200.0 + i, 4400)
    assert len(log.seen) <= 100


def test_the_lines_owed_go_to_the_addresses_refused_most(
    own_logger: tuple[logging.Logger, Lines],
) -> None:
    """A flush writes at most OWED_LINES lines: those of the addresses refused most since their
    last line, so that the worst abuser is never the one left out of fail2ban's view."""
    logger, handler = own_logger
    log = RefusalLog(logger, every_s=60, addresses=100, per_second=5)
    addresses = [f"198.51.100.{i}" for i in range(OWED_LINES + 2)]
    for i, address in enumerate(addresses):
        assert log.note(address, "flooding", float(i), 4429)  # its line
        for k in range(i + 1):  # then i + 1 more within the minute: counted
            assert not log.note(address, "flooding", 10.0 + k / 100, 4429)
    handler.fields.clear()
    log.flush(100.0)
    written = {f["address"]: f["count"] for f in handler.fields}
    assert len(written) == OWED_LINES
    assert written == {a: i + 1 for i, a in enumerate(addresses)
                       if i >= len(addresses) - OWED_LINES}  # fmt: skip


async def test_a_record_fetch_over_the_budget_is_logged(lines: Lines) -> None:
    from .server_helpers import http_get
    from .test_server_ops import finished_race

    async with running_server(fast_limits(record_rate=1, record_burst=1)) as server:
        over, _ = await finished_race(server)
        statuses = [(await http_get(server, f"/races/{over.race_id}"))[0] for _ in range(3)]
        assert 429 in statuses
    refused = lines.events("refused")
    assert [(f["address"], f["reason"], f["code"]) for f in refused] == [
        ("127.0.0.1", "record_rate", 429)
    ]


async def test_a_private_room_is_logged_by_a_label_that_does_not_give_its_code(
    lines: Lines, tmp_path: Path
) -> None:
    """A private room's code is what lets a stranger in: the logs (journald, log shippers) name
    it by a keyed hash, the same in every line and after a restart (the key is in the
    database); a public room, listed for all to see, by its code (operator trial)."""
    from server.store import Store

    db = tmp_path / "races.sqlite3"
    codes: list[str] = []
    runs: list[list[tuple[object, object]]] = []
    for _ in range(2):  # then a second server on the same database: the room is restored
        async with running_server(store=Store(db)) as server:
            conns, code, _ = await host_and_join(
                server.url, ["Ann", "Bob"], Settings(game="spider", private=True)
            )
            await start_race(conns)
            await close_all(conns)
        codes.append(code)
        runs.append([(f["event"], f["room"]) for f in lines.fields if "room" in f])
        shown = f"{code[:4]}-{code[4:]}"
        assert not any(code in str(f) or shown in str(f) for f in lines.fields)
        lines.fields.clear()
    key = Store(db).secret("log-labels")
    first, second = (log_label(c, True, key) for c in codes)
    assert first.startswith("private-") and first != second
    assert {room for _, room in runs[0]} == {first}
    assert ("room_restored", first) in runs[1]  # the same label after the restart
    assert ("room_created", second) in runs[1]
    assert {room for _, room in runs[1]} == {first, second}
    assert log_label("K7QMX2PF", False, key) == "K7QM-X2PF"  # a public room: its code


async def test_no_line_carries_a_seats_token(lines: Lines) -> None:
    """A seat's token is what takes the seat back: players join, one resumes on a new
    connection, a race starts and they go; no field of any line holds a token."""
    from client.net import Connection
    from protocol.messages import Resume

    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await conns[1].close()
        async with Connection(server.url) as again:
            await again.request(Resume(seq=0, code=code, token=joined[1].token))
            await start_race([conns[0], again])
        await close_all(conns)
    assert lines.events("resumed") and lines.events("race_started")
    logged = repr(lines.fields)
    tokens = [j.token for j in joined]
    assert all(t and t not in logged for t in tokens)


async def test_a_settings_change_says_what_changed_and_a_removal_who_removed(
    lines: Lines,
) -> None:
    """Eight identical settings_changed lines as a host pressed t (what changed was not said),
    and kicked did not say by whom (a race-night trial). A fixed deal's number is never logged."""
    from protocol.messages import Kick, UpdateSettings

    async with running_server() as server:
        conns, _code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        new = Settings(mode="score", time_limit=600, options={"suits": 2}, deal_number=4242)
        await conns[0].request(UpdateSettings(seq=0, settings=new))
        await conns[0].request(Kick(seq=0, id=joined[1].you))
        await conns[0].request(UpdateSettings(seq=0, settings=Settings(game="louis")))
        await close_all(conns)
    changed = lines.events("settings_changed")
    assert changed[0]["changed"] == "options=suits:2 mode=score time_limit=600 deal=fixed"
    # another game with its options left to their defaults: said so ("options=" was empty)
    assert (
        changed[1]["changed"] == "game=louis options=defaults mode=first time_limit=0 deal=random"
    )
    assert "4242" not in repr(lines.fields)
    kicked = lines.events("kicked")
    assert kicked[0]["player"] == f"{joined[1].you}:Bob"
    assert kicked[0]["by"] == f"{joined[0].you}:Ann"


def test_a_text_log_field_is_one_token_as_written_and_nothing_that_does_not_print() -> None:
    """Names were quoted with ``\\u2615`` escapes only when they held a space (an operator's grep
    for ``Ann ☕`` found nothing), and a value without a space was written raw, escapes and all."""
    import logging

    from server.logs import TextFormatter

    def line(**fields: object) -> str:
        record = logging.LogRecord("patience_race", logging.INFO, "", 0, "ev", None, None)
        record.fields = {"event": "ev", **fields}
        return TextFormatter().format(record)

    assert line(player="8:Ann ☕").endswith('player="8:Ann ☕"')
    assert line(player="2:中文").endswith("player=2:中文")
    assert line(reason="a\x1b[2Jb").endswith('reason="a\\u001b[2Jb"')
    assert line(reason="x=y\u2028").endswith('reason="x=y\\u2028"')
    assert "\x1b" not in line(reason="\x1b]52;c;Zm9v\x07")
    # past U+FFFF as JSON writes it, its two halves ("\\ue0001" read as U+E000 and "1")
    import json

    tagged = line(reason="a\U000e0001b").split("reason=", 1)[1]
    assert json.loads(tagged) == "a\U000e0001b"
