"""Live races survive a crash, a restart and an upgrade: a real server process killed (-9) or
stopped (SIGTERM) mid-race and started again on the same database, with real clients (the
project's own session code) that reconnect and resume on their own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from client.model import RaceModel
from client.net import Connection, ServerError
from client.session import Session
from protocol.codec import encode
from protocol.messages import (
    PROTOCOL_VERSION,
    Command,
    CreateRoom,
    Hello,
    JoinRoom,
    ListRooms,
    MoveCmd,
    Moved,
    Notice,
    RaceOver,
    Ready,
    Rematch,
    Resume,
    Settings,
    Snapshot,
    Start,
    WireMove,
    from_wire,
)
from server.hub import Hub
from server.limits import Limits
from server.store import Store

from .server_helpers import (
    close_all,
    eventually,
    fast_limits,
    host_and_join,
    move,
    pick_move,
    running_server,
    start_race,
)

ROOT = Path(__file__).resolve().parents[1]


class ServerProcess:
    """``patience-race-server`` as a subprocess on a database file."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.port = 0
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self, nohup: bool = False) -> str:
        """Start it (``nohup``: with SIGHUP ignored, as ``nohup`` starts a program; else with
        SIGHUP as a terminal leaves it, whatever the tests were started with: under ``nohup``
        the server inherited it ignored, and the test of SIGHUP failed: a mutation trial)."""
        args = ["--port", str(self.port), "--db", str(self.db), "--countdown-ms", "50"]
        args += ["--log-format", "json", "--grace", "30"]

        def hup() -> None:
            signal.signal(signal.SIGHUP, signal.SIG_IGN if nohup else signal.SIG_DFL)

        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server.cli",
            *args,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=hup,
        )
        assert self.proc.stderr is not None
        while True:
            line = await asyncio.wait_for(self.proc.stderr.readline(), 15)
            assert line, "the server stopped before listening"
            event = json.loads(line)
            if event.get("event") == "listening":
                self.url = event["url"]
                self.port = int(self.url.rsplit(":", 1)[1])
                self._drain = asyncio.create_task(self._read_rest())
                return self.url

    async def _read_rest(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while await self.proc.stderr.readline():
            pass

    async def kill(self, sig: int = signal.SIGKILL) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        code = await asyncio.wait_for(self.proc.wait(), 30)
        self._drain.cancel()
        return code

    async def close(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


@asynccontextmanager
async def server_process(db: Path) -> AsyncIterator[ServerProcess]:
    server = ServerProcess(db)
    try:
        yield server
    finally:
        await server.close()


def server_on(db: Path, limits: Limits | None = None):  # type: ignore[no-untyped-def]
    """An in-process server on the database file ``db``, stopped at the end without a drain."""
    return running_server(limits, store=Store(db))


async def play_some(session: Session, moves: int) -> int:
    """Up to ``moves`` legal moves from what the player sees; how many were made."""
    made = 0
    for _ in range(moves):
        state = session.model.state
        assert state is not None
        wire = pick_move(state, deals=False)
        if wire is None:
            break
        answer = await session.move(from_wire(wire))
        assert isinstance(answer, Moved), answer
        made += 1
    return made


async def racing_sessions(url: str) -> tuple[Session, Session, Session]:
    ann = Session(url, RaceModel(name="Ann"))
    bob = Session(url, RaceModel(name="Bob"))
    eve = Session(url, RaceModel(name="Eve"))
    for s in (ann, bob, eve):
        s.remember = False
        await s.connect()
    # a fixed deal, so that Ann always has moves that are not a deal (about 1 random deal in 300
    # has none)
    settings = Settings(game="spider", options={"suits": 1}, deal_number=1)
    joined = await ann.create("Ann", settings)
    code = joined.room.code
    await bob.join(code, "Bob")
    await eve.join(code, "Eve", spectate=True)
    for s in (ann, bob, eve):
        s.start_events()
    await bob.ready(True)
    await ann.start()
    await eventually(lambda: all(s.model.phase == "racing" for s in (ann, bob, eve)), 10)
    return ann, bob, eve


async def crash_and_come_back(tmp_path: Path, sig: int) -> None:
    async with server_process(tmp_path / "races.sqlite3") as server:
        url = await server.start()
        ann, bob, eve = await racing_sessions(url)
        try:
            made = {"Ann": await play_some(ann, 4), "Bob": await play_some(bob, 2)}
            assert made["Ann"] > 0
            before = ann.model.state.view() if ann.model.state else None
            await asyncio.sleep(1.2)  # some race time passes
            loop = asyncio.get_running_loop()
            elapsed_before, seen_at = ann.model.elapsed_ms(), loop.time()

            await server.kill(sig)
            await eventually(lambda: not ann.connected and not bob.connected, 10)
            for s in (ann, bob, eve):
                s.model.progress = []  # filled again by what the restarted server says
            await asyncio.sleep(1.5)  # the server is down: this time is charged to nobody
            assert await server.start() == url  # the same port
            up_at = loop.time()
            # everyone comes back on their own, to the same race
            await eventually(
                lambda: all(
                    s.connected and s.model.phase == "racing" and s.model.progress
                    for s in (ann, bob, eve)
                ),
                30,
            )
            assert ann.model.state is not None and ann.model.state.view() == before
            # nobody lost a move: everyone's progress counts every move made before the crash
            await eventually(lambda: {p.name: p.moves for p in ann.model.progress} == made, 5)
            # the clock went on from where it was: the time it ran is counted, not the downtime
            # (a crash loses at most the last second since the server last noted it was alive)
            ran_ms = (loop.time() - up_at) * 1000
            gap_ms = ann.model.elapsed_ms() - elapsed_before
            down_ms = (up_at - seen_at) * 1000
            assert down_ms > 1500
            assert ran_ms - 1500 < gap_ms < ran_ms + 500, (gap_ms, ran_ms, down_ms)

            # the race goes on, and ends, and the deal checks out against the first commitment
            await play_some(ann, 3)
            await play_some(bob, 3)
            for s in (ann, bob):
                await s.move(from_wire(WireMove(kind="resign")))
            await eventually(lambda: all(s.model.phase == "results" for s in (ann, bob, eve)), 10)
            for s in (ann, bob, eve):
                assert s.model.verified is True, s.model.verdict
        finally:
            for s in (ann, bob, eve):
                await s.close()


async def test_kill_9_mid_race_everyone_comes_back(tmp_path: Path) -> None:
    await crash_and_come_back(tmp_path, signal.SIGKILL)


async def test_sigterm_mid_race_everyone_comes_back(tmp_path: Path) -> None:
    await crash_and_come_back(tmp_path, signal.SIGTERM)


async def test_a_closed_terminal_sighup_drains_as_sigterm_does(tmp_path: Path) -> None:
    """The README starts the server in a terminal; closing it sends SIGHUP, which killed the
    server at once, no drain, its clients told nothing (an operator trial)."""
    async with server_process(tmp_path / "races.sqlite3") as server:
        url = await server.start()
        async with Connection(url) as conn:
            await conn.request(CreateRoom(seq=0, name="Ann", settings=Settings()))
            assert await server.kill(signal.SIGHUP) == 0  # drained; a kill is -1
            notice = await conn.wait_for(Notice)
            assert notice.code == "shutdown"
    # started with nohup (SIGHUP ignored) to outlive its terminal: it does (a review)
    async with server_process(tmp_path / "races.sqlite3") as server:
        url = await server.start(nohup=True)
        assert server.proc is not None
        server.proc.send_signal(signal.SIGHUP)  # (right after "listening": handled by then)
        await asyncio.sleep(1.0)
        assert server.proc.returncode is None
        async with Connection(url) as conn:
            await conn.request(ListRooms(seq=0))
    # a SIGTERM right after "listening" drains too (the handlers came after it: a kill)
    async with server_process(tmp_path / "races.sqlite3") as server:
        await server.start()
        assert await server.kill(signal.SIGTERM) == 0


async def test_after_a_restart_everyone_is_back_within_seconds(tmp_path: Path) -> None:
    """A server that said it was restarting is tried every second: down for 8 s, everyone is
    back within a couple of seconds of it (backing off to 10 s, they came 5 to 8 s late, on
    their race clock)."""
    async with server_process(tmp_path / "races.sqlite3") as server:
        url = await server.start()
        ann, bob, eve = await racing_sessions(url)
        try:
            await server.kill(signal.SIGTERM)
            await eventually(lambda: not ann.connected and not bob.connected, 10)
            await asyncio.sleep(8)
            assert await server.start() == url
            loop = asyncio.get_running_loop()
            up_at = loop.time()
            await eventually(
                lambda: all(s.connected and s.model.phase == "racing" for s in (ann, bob, eve)),
                30,
            )
            assert loop.time() - up_at < 4.0
        finally:
            for s in (ann, bob, eve):
                await s.close()


async def test_a_move_whose_answer_was_lost_is_applied_once(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    async with server_process(db) as server:
        url = await server.start()
        conns, code, joined = await host_and_join(url, ["Ann", "Bob"], Settings(game="louis"))
        ann = conns[0]
        try:
            starts = await start_race(conns)
            # a move sent, and the server killed before its answer is read
            seq = ann.next_seq()
            wire = WireMove(kind="resign")
            assert ann.ws is not None
            await ann.ws.send(encode(MoveCmd(seq=seq, move=wire)))
            await asyncio.sleep(0.3)
            await server.kill()
        finally:
            await close_all(conns)
        await server.start()
        async with Connection(url) as again:
            snap = await again.request(Resume(seq=0, code=code, token=joined[0].token))
            assert isinstance(snap, Snapshot)
            # sent again with its own number: answered (again, or for the first time), once
            answer = await again.resend(MoveCmd(seq=seq, move=wire))
            assert isinstance(answer, Moved) and answer.move.kind == "resign"
            answer_again = await again.resend(MoveCmd(seq=seq, move=wire))
            assert answer_again == answer
    store = Store(db)
    try:
        rows = store.db.execute(
            "SELECT move FROM moves WHERE race_id = ? AND player_id = ?",
            (starts[0].race_id, joined[0].you),
        ).fetchall()
        assert [r[0] for r in rows] == ["resign"]
    finally:
        store.close()


async def test_restore_in_process_keeps_the_race_and_the_seats_numbers(tmp_path: Path) -> None:
    """The hub's side without a subprocess: a server stopped without a drain and a new one on
    the same file bring back the room, its race, its clock and the seats' numbers."""
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        starts = await start_race(conns)
        await move(conns[0], "deal")
        await conns[0].request(ListRooms(seq=0))  # read-only: its number kept, no answer
        highest = server.hub.rooms[code].members[joined[0].you].seqs.highest
        await close_all(conns)

    async with server_on(db) as again:
        room = again.hub.rooms[code]
        assert room.state == "racing" and room.race is not None
        assert room.race.commitment == starts[0].commitment
        ann = room.members[joined[0].you]
        assert ann.seqs.highest == highest
        assert ann.seqs.get(highest) == ()  # so sent again, it is answered afresh, not refused
        assert room.race.seats[ann.id].moves == ["d"]
        assert not any(s.connected for s in room.race.seats.values())


async def test_another_command_with_a_used_number_is_refused_after_a_restart(
    tmp_path: Path,
) -> None:
    """After a restart, a number already used came back without its command: a resign sent
    with the deal's number got the deal's answer, and the resign was silently not done."""
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        dealt = await move(conns[0], "deal")
        seq = server.hub.rooms[code].members[joined[0].you].seqs.highest
        await close_all(conns)

    async with server_on(db) as again, Connection(again.url) as ann:
        snap = await ann.request(Resume(seq=0, code=code, token=joined[0].token))
        assert isinstance(snap, Snapshot)
        with pytest.raises(ServerError) as refused:
            await ann.resend(MoveCmd(seq=seq, move=WireMove(kind="resign")))
        assert refused.value.code == "bad_message"
        assert "already used for another move" in refused.value.message
        race = again.hub.rooms[code].race
        assert race is not None and race.seats[joined[0].you].status == "playing"
        repeat = await ann.resend(MoveCmd(seq=seq, move=WireMove(kind="deal")))
        assert repeat == dealt  # the deal sent again: its answer, not done twice
        assert race.seats[joined[0].you].moves == ["d"]


async def test_a_player_out_as_stuck_is_still_out_after_a_restart(tmp_path: Path) -> None:
    """Out as stuck (no move but an undo, for a minute), then the server restarts: the replay
    of the moves leaves an undo, and the seat came back playing, its race going on (fairness
    trial: the stuck status was not kept, only left and disconnected were)."""
    import time as _time

    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        await move(conns[0], "deal")
        room = server.hub.rooms[code]
        assert room.race is not None
        ann = joined[0].you
        room.race.drop(ann, "stuck", _time.monotonic())  # as the idle check puts one out
        server.hub._save(room)
        finish = room.race.seats[ann].finish_ms
        await close_all(conns)

    async with server_on(db) as again:
        race = again.hub.rooms[code].race
        assert race is not None
        assert race.seats[ann].status == "stuck" and race.seats[ann].finish_ms == finish
        assert race.seats[joined[1].you].status == "playing"


@pytest.mark.parametrize("damage", ["salt", "gap"])
async def test_a_live_race_whose_deal_or_moves_do_not_check_out_is_not_brought_back(
    tmp_path: Path, damage: str
) -> None:
    """A kept race is dealt again only if its number and salt make its commitment (else the
    players would race on a deal other than the one they were promised), and its moves are
    replayed only if none is missing (a gap would give a seat a board it never had)."""
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, _joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        starts = await start_race(conns)
        for _ in range(3):
            await move(conns[0], "deal")
        await close_all(conns)
    fix = sqlite3.connect(db)
    if damage == "salt":
        doc = json.loads(
            fix.execute("SELECT doc FROM live_rooms WHERE code = ?", (code,)).fetchone()[0]
        )
        doc["race"]["salt"] = doc["race"]["salt"][::-1]
        fix.execute("UPDATE live_rooms SET doc = ? WHERE code = ?", (json.dumps(doc), code))
    else:
        fix.execute("DELETE FROM moves WHERE race_id = ? AND idx = 1", (starts[0].race_id,))
    fix.commit()
    fix.close()
    async with server_on(db) as again:
        assert code not in again.hub.rooms
        assert again.hub.metrics["rooms_lost"] == 1


async def test_a_race_that_cannot_go_on_is_closed_with_its_reveal(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        starts = await start_race(conns)
        await move(conns[0], "deal")
        await close_all(conns)
    race_id = starts[0].race_id
    damage = sqlite3.connect(db)
    # a move that does not apply (a damaged file, a bug fixed since): the race cannot go on
    damage.execute(
        "INSERT INTO moves(race_id, player_id, idx, move, t_ms) VALUES (?, ?, 1, '9>f', 5)",
        (race_id, joined[0].you),
    )
    # and a race left unfinished by a server from before live rooms were kept
    damage.execute(
        "INSERT INTO races(id, room, settings, commitment, started_at) VALUES "
        "('old0race0000', 'ABCDEFGH', '{}', 'x', 1.0)"
    )
    damage.commit()
    damage.close()

    async with server_on(db) as again:
        assert code not in again.hub.rooms
        assert again.hub.metrics["rooms_lost"] == 1
        # the operator's scraper sees both (docs/operations.md)
        text = again.metrics_text()
        assert 'patience_race_restore_lost_total{what="rooms"} 1' in text
        assert 'patience_race_restore_lost_total{what="races"} 1' in text
        record = again.hub.finished[race_id]
        assert record.reveal.commitment == starts[0].commitment  # it can still be checked
        ann = next(p for p in record.players if p.id == joined[0].you)
        assert ann.moves == ["d"]  # what could be replayed stands
        assert again.store is not None
        ended = dict(
            again.store.db.execute(
                "SELECT id, end_reason FROM races WHERE id IN (?, 'old0race0000')", (race_id,)
            ).fetchall()
        )
        assert ended == {race_id: "aborted", "old0race0000": "lost"}


async def test_a_room_waiting_to_start_by_itself_starts_after_a_restart(tmp_path: Path) -> None:
    """Everyone ready, the race budget spent: "the countdown starts by itself", they are told.
    The server restarts meanwhile: once they are back, it does (the room came back in its
    lobby with everyone ready, and waited for someone to press ready again)."""
    db = tmp_path / "races.sqlite3"
    async with running_server(fast_limits(race_rate=0.001, race_burst=1), Store(db)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        await conns[1].request(Rematch(seq=0))
        await conns[0].request(Start(seq=0))  # to the lobby, Bob ready
        await conns[0].request(Start(seq=0))  # Ann ready too: over the budget, it waits
        assert server.hub.rooms[code].state == "lobby" and code in server.hub.awaiting_start
        await close_all(conns)

    async with server_on(db) as again:
        assert code in again.hub.awaiting_start
        back = [Connection(again.url) for _ in joined]
        for conn in back:
            await conn.open()
        await back[0].request(Resume(seq=0, code=code, token=joined[0].token))
        await asyncio.sleep(0.3)
        # Ann back alone: Bob, ready but still reconnecting, is waited for (the first back
        # started the race, Bob seated while away: a review)
        assert again.hub.rooms[code].state == "lobby"
        await back[1].request(Resume(seq=0, code=code, token=joined[1].token))
        await eventually(lambda: again.hub.rooms[code].state in ("countdown", "racing"))
        await close_all(back)


async def test_a_lobby_waiting_on_a_player_still_waits_after_a_restart(tmp_path: Path) -> None:
    """Ann (the host) not ready, Bob and Cy ready: the room waits for her.  After a restart
    the countdown started the moment a ready player was back, and Ann watched a race in her
    own room that she never agreed to (club-night trial)."""
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        for c in conns[1:]:
            await c.request(Ready(seq=0))
        assert server.hub.rooms[code].state == "lobby"
        await close_all(conns)

    async with server_on(db) as again:
        assert code not in again.hub.awaiting_start
        back = [Connection(again.url) for _ in joined]
        try:
            for conn in back:
                await conn.open()
            for conn, j in [*zip(back, joined, strict=True)][1:]:  # the ready ones first
                await conn.request(Resume(seq=0, code=code, token=j.token))
            await asyncio.sleep(0.3)
            assert again.hub.rooms[code].state == "lobby"
            await back[0].request(Resume(seq=0, code=code, token=joined[0].token))
            await asyncio.sleep(0.3)
            assert again.hub.rooms[code].state == "lobby"  # as before: waiting for Ann
            await back[0].request(Ready(seq=0))
            await eventually(lambda: again.hub.rooms[code].state in ("countdown", "racing"))
        finally:
            await close_all(back)


SHORT_HOLD = fast_limits(restart_hold_s=0.5)
"""The hold after a restart (players away still hold a start) half a second, not 15."""


async def test_a_lobby_to_start_by_itself_starts_after_a_restart_without_one_away(
    tmp_path: Path,
) -> None:
    """Ann and Bob ready, Cy away and not ready (she holds nobody back), the race budget
    spent: "the countdown starts by itself".  After a restart it did not any more (a review
    of the fix above): it starts once the restart's hold is over."""
    db = tmp_path / "races.sqlite3"
    async with running_server(fast_limits(race_rate=0.001, race_burst=1), Store(db)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        await conns[2].close()  # Cy goes
        await conns[1].request(Rematch(seq=0))
        await conns[0].request(Start(seq=0))  # to the lobby, Bob ready
        await conns[0].request(Start(seq=0))  # Ann ready too: over the budget, it waits
        assert server.hub.rooms[code].state == "lobby" and code in server.hub.awaiting_start
        await close_all(conns[:2])

    async with server_on(db, SHORT_HOLD) as again:
        assert code in again.hub.awaiting_start
        back = [Connection(again.url) for _ in joined[:2]]
        try:
            for conn, j in zip(back, joined[:2], strict=True):
                await conn.open()
                await conn.request(Resume(seq=0, code=code, token=j.token))
            await eventually(lambda: again.hub.rooms[code].state in ("countdown", "racing"))
        finally:
            await close_all(back)


async def test_a_rematch_agreed_just_after_a_restart_starts_without_one_not_back(
    tmp_path: Path,
) -> None:
    """On the results when the server restarts, Ann and Cy back and asking for the rematch, Bob
    not back: the restart's hold kept the lobby from starting, and nothing looked again once it
    was over, everyone there ready, no countdown, no word why (a bad-network trial)."""
    db = tmp_path / "races.sqlite3"
    async with running_server(fast_limits(), Store(db)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        await start_race(conns)
        for c in conns:
            await move(c, "resign")
        await conns[0].wait_for(RaceOver)
        await close_all(conns)

    # (Bob's seat waits a minute: its release would start the race, and hide the hold)
    async with running_server(fast_limits(grace_s=60.0, restart_hold_s=0.5), Store(db)) as again:
        back = [Connection(again.url) for _ in range(2)]
        try:
            for conn, j in zip(back, (joined[0], joined[2]), strict=True):
                await conn.open()
                await conn.request(Resume(seq=0, code=code, token=j.token))
                await conn.request(Rematch(seq=0))
            room = again.hub.rooms[code]
            assert room.state == "lobby"  # held: Bob may be on his way back
            await eventually(lambda: room.state in ("countdown", "racing"), 3)
            assert room.race is not None and joined[1].you not in room.race.seats
        finally:
            await close_all(back)


async def test_a_seat_the_host_removed_is_still_removed_after_a_restart(tmp_path: Path) -> None:
    """Gus, away, removed by the host; the server restarts: his client was told "that token
    holds no seat" and joined again as a new member (a review)."""
    from protocol.messages import Kick

    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Gus"], Settings())
        await conns[1].close()
        await conns[0].request(Kick(seq=0, id=joined[1].you))
        await close_all(conns[:1])

    async with server_on(db) as again, Connection(again.url) as gus:
        with pytest.raises(ServerError) as refused:
            await gus.request(Resume(seq=0, code=code, token=joined[1].token))
        assert refused.value.code == "bad_token"
        assert refused.value.message.startswith("the host removed you from room")


async def test_lobby_and_results_come_back_too(tmp_path: Path) -> None:
    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        lobby_conns, lobby_code, lobby_joined = await host_and_join(
            server.url, ["Cy", "Dee"], Settings(game="louis", private=True)
        )
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        for c in conns:
            await move(c, "resign")
        over = await conns[0].wait_for(RaceOver)
        await conns[0].request(Rematch(seq=0))  # Ann asked for a rematch; Bob has not yet
        await close_all(conns + lobby_conns)

    async with server_on(db) as again:
        assert again.hub.rooms[lobby_code].state == "lobby"
        assert again.hub.rooms[lobby_code].settings.private
        async with Connection(again.url) as bob:
            snap = await bob.request(Resume(seq=0, code=code, token=joined[1].token))
            assert isinstance(snap, Snapshot) and snap.room.state == "results"
            assert snap.reveal == over.reveal and snap.standings == over.standings
            assert {m.name: m.rematch for m in snap.room.members} == {"Ann": True, "Bob": False}
        async with Connection(again.url) as dee:
            snap = await dee.request(Resume(seq=0, code=lobby_code, token=lobby_joined[1].token))
            assert isinstance(snap, Snapshot) and snap.you == lobby_joined[1].you


async def test_a_countdown_cut_by_a_restart_waits_for_its_players(tmp_path: Path) -> None:
    """A restart during the countdown: it starts again, for everyone at once, when the players
    are back (it ran out with nobody connected: the race began with everyone seconds behind,
    the first back ahead of the second)."""
    from protocol.messages import Countdown, Leave, RaceStart

    from .server_helpers import fast_limits

    db = tmp_path / "races.sqlite3"
    limits = fast_limits(countdown_ms=800, grace_s=30.0)
    async with running_server(limits, store=Store(db)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        for c in conns:
            await c.request(Ready(seq=0))
        await conns[0].wait_for(Countdown)
        await close_all(conns)
    async with running_server(limits, store=Store(db)) as again:
        room = again.hub.rooms[code]
        await asyncio.sleep(1.2)  # longer than the countdown: it is held, nobody is back
        assert room.state == "countdown" and room.countdown_end is None
        async with Connection(again.url) as cy:  # back, and gone: not waited for
            await cy.request(Resume(seq=0, code=code, token=joined[2].token))
            await cy.request(Leave(seq=0))
        async with Connection(again.url) as ann, Connection(again.url) as bob:
            snap = await ann.request(Resume(seq=0, code=code, token=joined[0].token))
            assert isinstance(snap, Snapshot) and snap.countdown_ms is None
            await asyncio.sleep(0.3)
            assert room.state == "countdown" and room.countdown_end is None  # Bob is not back
            await bob.request(Resume(seq=0, code=code, token=joined[1].token))
            counted = [await c.wait_for(Countdown) for c in (ann, bob)]
            assert all(c.ms == 800 and c.commitment == snap.room.commitment for c in counted)
            starts = [await c.wait_for(RaceStart) for c in (ann, bob)]
            assert starts[0].race_id == starts[1].race_id == counted[0].race_id


async def test_a_held_countdown_does_not_wait_long_for_who_is_not_back(tmp_path: Path) -> None:
    """A player who does not come back (a bot that died with the server) holds a countdown cut
    by a restart a few seconds, not the whole grace period (a big 1 frozen for a minute)."""
    from protocol.messages import Countdown, RaceStart

    from .server_helpers import fast_limits

    db = tmp_path / "races.sqlite3"
    limits = fast_limits(countdown_ms=300, grace_s=60.0, restart_hold_s=1.0)
    async with running_server(limits, store=Store(db)) as server_a:
        conns, code, joined = await host_and_join(server_a.url, ["Ann", "Bob"], Settings())
        for c in conns:
            await c.request(Ready(seq=0))
        await conns[0].wait_for(Countdown)
        await close_all(conns)
    async with (
        running_server(limits, store=Store(db)) as again,
        Connection(again.url) as ann,  # Bob never comes back
    ):
        await ann.request(Resume(seq=0, code=code, token=joined[0].token))
        await ann.wait_for(Countdown, timeout=5)
        await ann.wait_for(RaceStart, timeout=5)


async def test_a_bot_comes_back_after_a_restart_and_plays_on(tmp_path: Path) -> None:
    """A bot (``patience-race bot`` or ``host --bots``) takes its seat back after the server
    restarts, as a person's client does: it used to stop there, its seat away, holding the room."""
    from client.bot import run_bot

    async with server_process(tmp_path / "races.sqlite3") as server:
        url = await server.start()
        ann = Session(url, RaceModel(name="Ann"))
        ann.remember = False
        await ann.connect()
        joined = await ann.create("Ann", Settings(game="spider", options={"suits": 1}))
        code = joined.room.code
        ann.start_events()
        bot = asyncio.create_task(run_bot(url, code, name="Robo", level="easy", think=0.3))
        try:
            await eventually(lambda: any(m.name == "Robo" for m in ann.model.room.members), 10)
            await ann.start()
            await eventually(lambda: ann.model.phase == "racing", 10)

            def robo_moves() -> int:
                return next((p.moves for p in ann.model.progress if p.name == "Robo"), 0)

            await eventually(lambda: robo_moves() >= 2, 20)
            for _ in range(2):  # twice in one race: the second used to kill it
                await server.kill(signal.SIGTERM)  # a restart: the server says so, then goes
                await eventually(lambda: not ann.connected, 10)
                assert not bot.done(), bot.exception() or "the bot stopped"  # it waits
                assert await server.start() == url
                await eventually(lambda: ann.connected and ann.model.phase == "racing", 30)
                before = robo_moves()
                await eventually(lambda b=before: robo_moves() > b, 30)  # and it plays on
                robo = next(m for m in ann.model.room.members if m.name == "Robo")
                assert robo.connected
        finally:
            bot.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(bot, 20)
            await asyncio.wait_for(ann.close(), 20)


async def test_a_slow_drain_is_downtime_not_race_time(tmp_path: Path) -> None:
    """SIGTERM's drain waits (up to --grace) for clients' closing handshakes; the race clock
    stops when the drain starts, so a client slow to close costs nobody race time."""
    import base64
    import os
    import time

    from server.app import RaceServer

    from .server_helpers import fast_limits

    db = tmp_path / "races.sqlite3"
    server = RaceServer("127.0.0.1", 0, limits=fast_limits(grace_s=2.0), store=Store(db))
    await server.start()
    reader = writer = None
    try:
        conns, code, _joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        # a client that opens a WebSocket, then never answers the server's close
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        assert b" 101 " in await reader.readuntil(b"\r\n\r\n")
        await eventually(lambda: len(server.sockets) == 3, 5)
        race = server.hub.rooms[code].race
        assert race is not None
        ran_before = race.elapsed_ms(time.monotonic())
        began = time.monotonic()
        await server.drain()
        drained_s = time.monotonic() - began
        assert drained_s >= 1.5, "the slow client held the drain"
        await close_all(conns)
    finally:
        if server.store is not None and not server.store.closed:
            await server.stop()
            server.store.close()
        if writer is not None:
            writer.close()

    async with server_on(db) as again:
        race = again.hub.rooms[code].race
        assert race is not None
        ran_after = race.elapsed_ms(time.monotonic())
        # the drain's two seconds are not in the race's time
        assert ran_after - ran_before < 700, (ran_before, ran_after, drained_s)


async def test_a_seat_released_after_a_restart_is_out_from_when_its_player_went(
    tmp_path: Path,
) -> None:
    """Bob dropped 0.3 s into the race, the server restarted, Bob never came back: his seat
    was out from the restart, not from when he went (a review: the time he went away lived
    only in the process that saw it go)."""
    from protocol.messages import RaceOver

    from .server_helpers import fast_limits, start_race

    db = tmp_path / "races.sqlite3"
    limits = fast_limits(grace_s=0.6)
    async with running_server(limits, store=Store(db)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        await start_race(conns)
        await asyncio.sleep(0.3)
        await conns[1].close()
        race = server.hub.rooms[code].race
        assert race is not None
        await eventually(lambda: race.seats[joined[1].you].away_ms is not None)
        went = race.seats[joined[1].you].away_ms
        await asyncio.sleep(0.3)  # a while later, within the grace: the server stops
        await conns[0].close()
    async with running_server(limits, store=Store(db)) as again, Connection(again.url) as ann:
        await ann.request(Resume(seq=0, code=code, token=joined[0].token))
        room = again.hub.rooms[code]
        assert room.race is not None
        bob = room.race.seats[joined[1].you]
        await eventually(lambda: bob.status == "disconnected", 5)
        assert bob.finish_ms == went  # when he went, not the restart nor the grace after
        await ann.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
        await ann.wait_for(RaceOver)


async def test_forget_rooms_ends_the_races_a_restored_backup_would_bring_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A backup made during a race, restored after that race ended (its deal revealed), brought
    the race back under way, its cards known to everyone (an operator trial).
    ``--forget-rooms`` ends what the file keeps live: the next server starts with no room, and
    the race is ended ``lost``; it is refused while a server holds the file."""
    from server.cli import main
    from server.store import lock_database

    db = tmp_path / "races.sqlite3"
    async with server_on(db) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        starts = await start_race(conns)
        await move(conns[0], "deal")
        await close_all(conns)
        held = lock_database(db)  # as patience-race-server holds it
        try:
            assert main(["--db", str(db), "--forget-rooms"]) == 2  # in use: refused
        finally:
            os.close(held)
        assert "in use by another server" in capsys.readouterr().err
    assert main(["--db", str(db), "--forget-rooms"]) == 0
    said = capsys.readouterr().out
    assert "1 live room(s) forgotten, 1 unfinished race(s) ended as lost" in said
    async with server_on(db) as again:
        assert code not in again.hub.rooms and not again.hub.rooms
    store = Store(db)
    try:
        row = store.db.execute(
            "SELECT end_reason FROM races WHERE id = ?", (starts[0].race_id,)
        ).fetchone()
        assert row == ("lost",)
    finally:
        store.close()
    assert main(["--db", str(db), "--forget-rooms", "--list-races"]) == 2  # one at a time
    assert "goes alone" in capsys.readouterr().err
    assert main(["--db", str(tmp_path / "typo.sqlite3"), "--forget-rooms"]) == 2
    assert not (tmp_path / "typo.sqlite3").exists()


def hub_session(hub: Hub, now: float, first: Command) -> int:
    """A connection to ``hub`` (no socket: the state machine alone), its hello, then ``first``."""
    cid = hub.connect(now)
    assert cid is not None
    hub.handle(cid, Hello(seq=0, version=PROTOCOL_VERSION), now)
    hub.handle(cid, first, now)
    return cid


def both_ready(hub: Hub, now: float, settings: Settings) -> tuple[int, int, str]:
    """Ann's room and Bob in it, both ready (its countdown started): their connections and the
    room's code."""
    ann = hub_session(hub, now, CreateRoom(seq=1, name="Ann", settings=settings))
    code = hub.conns[ann].room.code  # type: ignore[union-attr]
    bob = hub_session(hub, now, JoinRoom(seq=1, code=code, name="Bob"))
    for cid in (ann, bob):
        hub.handle(cid, Ready(seq=2), now)
    return ann, bob, code


@pytest.mark.parametrize("drain", [False, True])
@pytest.mark.parametrize("step_s", [3600.0, -600.0])
def test_a_step_of_the_wall_clock_is_charged_to_no_race_after_a_restart(
    tmp_path: Path, step_s: float, drain: bool
) -> None:
    """The wall clock stepped an hour forward (NTP, an operator), then a crash: the restored race
    counted its time from the wall clock and ended as time up at once (a backward step gave the
    racers back their time; a cluster trial).  The races follow a step while the server runs."""

    store = Store(str(tmp_path / "races.sqlite3"))
    wall = [1_700_000_000.0]
    limits = Limits(countdown_ms=100, grace_s=60.0)
    hub = Hub(limits, store=store, wall=lambda: wall[0])
    now = 1000.0

    def at(seconds: float) -> None:
        nonlocal now
        now += seconds
        wall[0] += seconds

    *_, code = both_ready(hub, now, Settings(mode="score", time_limit=600))
    for _ in range(30):  # the countdown, then 30 s of the race, a tick each second
        at(1.0)
        hub.tick(now)
    race = hub.rooms[code].race
    assert race is not None and hub.rooms[code].state == "racing"
    ran = race.elapsed_ms(now)
    if drain:  # the server stopping: its clock is frozen, the step comes during the drain
        assert hub.live is not None
        hub.live.stop_clock(wall[0])
    wall[0] += step_s  # the step
    for _ in range(3):
        at(1.0)
        hub.tick(now)
    if not drain:
        ran += 3000
    store.commit()
    # a crash, and the server back 5 s later
    at(5.0)
    again = Hub(limits, store=store, wall=lambda: wall[0])
    now += 1000.0  # another process: another monotonic clock
    again.restore(now)
    back = again.rooms[code]
    assert back.state == "racing" and back.race is not None
    # the time it was down is charged to nobody; the step neither
    assert abs(back.race.elapsed_ms(now) - ran) <= 2000, (back.race.elapsed_ms(now), ran)
    store.close()


def test_a_lobby_brought_back_waits_the_grace_for_its_players_not_only_abandoned_s(
    tmp_path: Path,
) -> None:
    """After a restart nobody is connected yet: a lobby waits the grace period for its players
    to come back (their clients try again every few seconds), not only ``abandoned_s``, the
    while a lobby everyone left gets on a server that ran on (with the defaults, 60 s and
    30 s: a lobby brought back closed half-way through its players' grace)."""

    store = Store(str(tmp_path / "races.sqlite3"))
    limits = Limits(grace_s=60.0, abandoned_s=30.0)
    now = 1000.0
    hub = Hub(limits, store=store, wall=lambda: 1_700_000_000.0 + now)

    ann = hub_session(hub, now, CreateRoom(seq=1, name="Ann", settings=Settings()))
    code = hub.conns[ann].room.code  # type: ignore[union-attr]
    hub_session(hub, now, JoinRoom(seq=1, code=code, name="Bob"))
    store.commit()
    try:
        # a crash, and the server back a moment later (another process: another clock)
        now = 5000.0
        again = Hub(limits, store=store, wall=lambda: 1_700_000_000.0 + now)
        assert again.restore(now) == 1
        for _ in range(45):  # past abandoned_s, within the grace
            now += 1.0
            again.tick(now)
        assert code in again.rooms, "the lobby closed before its players' grace was over"
        for _ in range(20):  # and past the grace, nobody back: it goes
            now += 1.0
            again.tick(now)
        assert code not in again.rooms
    finally:
        store.close()


def test_the_times_of_the_moves_come_back_after_a_restart(tmp_path: Path) -> None:
    """Each move is stored with its race time: after a restart the seats' times are those of
    their moves (what score mode breaks ties by, the record shows, and the idle limit counts
    from), not the start's."""

    from .server_helpers import pick_move

    store = Store(str(tmp_path / "races.sqlite3"))
    limits = Limits(countdown_ms=100, grace_s=60.0)
    now = 1000.0
    hub = Hub(limits, store=store, wall=lambda: 1_700_000_000.0 + now)
    seqs = iter(range(10, 100))

    ann, bob, code = both_ready(hub, now, Settings(mode="score", time_limit=600))
    now += 0.2
    hub.tick(now)
    race = hub.rooms[code].race
    assert race is not None and hub.rooms[code].state == "racing"
    for cid in (ann, bob, ann):
        now += 3.0
        hub.tick(now)
        seat = race.seats[hub.conns[cid].member.id]  # type: ignore[union-attr]
        wire = pick_move(seat.state)
        assert wire is not None
        hub.handle(cid, MoveCmd(seq=next(seqs), move=wire), now)
    before = {s.id: (list(s.times_ms), s.score, s.score_ms) for s in race.seats.values()}
    assert all(times and min(times) >= 3000 for times, _, _ in before.values())
    store.commit()
    try:
        now = 9000.0  # a crash, and the server back (another process: another clock)
        again = Hub(limits, store=store, wall=lambda: 1_700_000_000.0 + now)
        assert again.restore(now) == 1
        back = again.rooms[code].race
        assert back is not None
        after = {s.id: (list(s.times_ms), s.score, s.score_ms) for s in back.seats.values()}
        assert after == before
    finally:
        store.close()
