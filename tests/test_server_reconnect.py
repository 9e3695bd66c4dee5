"""Dropped connections: resume within and after the grace, the old connection replaced, and
sequence numbers that are answered again, never applied twice (also across a resume)."""

from __future__ import annotations

import asyncio

import pytest

from client.model import RaceModel
from client.net import Connection, ServerError
from client.seats import saved_seat, seats_path
from client.session import RELEASED, RESTARTING, Session
from protocol.messages import (
    Ack,
    Countdown,
    CreateRoom,
    Joined,
    JoinRoom,
    Kick,
    ListRooms,
    MoveCmd,
    Moved,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Ready,
    Resume,
    RoomList,
    RoomUpdate,
    Settings,
    Snapshot,
    Start,
    WireMove,
    from_wire,
)
from server.outbox import Outbox

from .server_helpers import (
    StallProxy,
    close_all,
    closed_code,
    continue_seq,
    eventually,
    fast_limits,
    host_and_join,
    move,
    pick_move,
    play,
    room_of,
    running_server,
    seat_state,
    start_race,
    wait_until,
)


def progress_of(name: str, status: str | None = None, connected: bool | None = None):  # type: ignore[no-untyped-def]
    def check(p: ProgressUpdate) -> bool:
        me = next(x for x in p.players if x.name == name)
        return (status is None or me.status == status) and (
            connected is None or me.connected == connected
        )

    return check


async def resume(url: str, code: str, token: str, old: Connection) -> tuple[Connection, Snapshot]:
    """A new connection taking back the seat ``old`` had; its numbers go on after old's."""
    conn = Connection(url)
    await conn.open()
    snap = await conn.request(Resume(seq=0, code=code, token=token))
    assert isinstance(snap, Snapshot)
    continue_seq(conn, old.next_seq())
    return conn, snap


async def test_resume_within_the_grace_takes_the_seat_back() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await start_race(conns)
        answers = await play(ann, server, code, joined[0].you, 3)
        await ann.close()
        update = await wait_until(bob, RoomUpdate, lambda u: not u.room.members[0].connected)
        assert update.room.state == "racing"
        await wait_until(bob, ProgressUpdate, progress_of("Ann", "playing", connected=False))

        ann2, snap = await resume(server.url, code, joined[0].token, ann)
        assert snap.you == joined[0].you and snap.role == "player"
        assert snap.room.state == "racing" and snap.room.code == code
        assert snap.board == seat_state(server, code, joined[0].you).view()
        assert snap.board.moves == 3 and snap.board.score == answers[-1].score
        assert snap.elapsed_ms is not None and snap.countdown_ms is None
        assert {p.name for p in snap.progress} == {"Ann", "Bob"}
        assert snap.standings is None and snap.reveal is None
        await wait_until(bob, ProgressUpdate, progress_of("Ann", "playing", connected=True))
        # and Ann plays on from where she was
        more = await play(ann2, server, code, joined[0].you, 2)
        assert more[0].seq > answers[-1].seq
        assert seat_state(server, code, joined[0].you).moves == 5
        await move(ann2, "resign")
        await move(bob, "resign")
        over = await ann2.wait_for(RaceOver)
        assert {s.name: s.status for s in over.standings} == {"Ann": "resigned", "Bob": "resigned"}
        await close_all([ann2, bob])


async def test_resume_after_the_grace_keeps_the_score_but_ends_your_race() -> None:
    async with running_server(fast_limits(grace_s=0.3)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await start_race(conns)
        answers = await play(ann, server, code, joined[0].you, 2)
        await ann.close()
        progress = await wait_until(bob, ProgressUpdate, progress_of("Ann", "disconnected"))
        gone = next(p for p in progress.players if p.name == "Ann")
        assert gone.score == answers[-1].score and gone.finish_ms is not None
        assert room_of(server, code).state == "racing"  # Bob races on
        ann2, snap = await resume(server.url, code, joined[0].token, ann)
        assert snap.board is not None and snap.board.moves == 2
        with pytest.raises(ServerError) as done:
            await move(ann2, "deal")
        assert done.value.code == "player_done"
        await move(bob, "resign")
        over = await ann2.wait_for(RaceOver)
        assert {s.name: s.status for s in over.standings} == {
            "Ann": "disconnected",
            "Bob": "resigned",
        }
        await close_all([ann2, bob])


async def test_after_the_grace_in_the_lobby_the_seat_is_gone() -> None:
    async with running_server(fast_limits(grace_s=0.3)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob", "Cy"], Settings())
        ann, bob, cy = conns
        await bob.close()
        update = await wait_until(
            ann, RoomUpdate, lambda u: "Bob" not in [m.name for m in u.room.members]
        )
        assert [m.name for m in update.room.members] == ["Ann", "Cy"]
        async with Connection(server.url) as late:
            with pytest.raises(ServerError) as refused:
                await late.request(Resume(seq=0, code=code, token=joined[1].token))
            assert refused.value.code == "bad_token"
        # the host drops: the next player becomes the host
        await ann.close()
        update = await wait_until(cy, RoomUpdate, lambda u: len(u.room.members) == 1)
        assert update.room.members[0].name == "Cy" and update.room.members[0].host
        await close_all([ann, bob, cy])


async def test_resume_during_the_countdown_and_after_the_results() -> None:
    async with running_server(fast_limits(countdown_ms=400)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await ann.request(Ready(seq=0))
        await bob.request(Ready(seq=0))
        countdown = await ann.wait_for(Countdown)
        await ann.close()
        ann2, snap = await resume(server.url, code, joined[0].token, ann)
        assert snap.room.state == "countdown" and snap.board is None
        assert snap.countdown_ms is not None and 0 < snap.countdown_ms <= 400
        assert snap.room.commitment == countdown.commitment
        start = await ann2.wait_for(RaceStart)
        assert start.board is not None
        await move(ann2, "resign")
        await move(bob, "resign")
        over = await bob.wait_for(RaceOver)
        await ann2.close()
        ann3, after = await resume(server.url, code, joined[0].token, ann2)
        assert after.room.state == "results"
        assert after.standings == over.standings and after.reveal == over.reveal
        assert after.board is not None and after.board.resigned
        await close_all([ann3, bob])


async def test_a_second_connection_on_a_seat_replaces_the_first_4409() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await start_race(conns)
        ann2, _snap = await resume(server.url, code, joined[0].token, ann)
        assert await closed_code(ann) == 4409
        # the seat answers on the new connection only
        answer = await play(ann2, server, code, joined[0].you, 1)
        assert seat_state(server, code, joined[0].you).moves == 1 and answer[0].won is False
        member = room_of(server, code).members[joined[0].you]
        assert member.conn is not None and member.conn in server.hub.conns
        await close_all([ann2, bob])


async def test_a_repeated_sequence_number_is_answered_again_never_applied_twice() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann, bob = conns
        await start_race(conns)
        state = seat_state(server, code, joined[0].you)
        wire = pick_move(state)
        assert wire is not None
        command = MoveCmd(seq=ann.next_seq(), move=wire)
        first = await ann.resend(command)
        moves_after = state.moves
        again = await ann.resend(command)
        assert isinstance(first, Moved) and again == first
        assert state.moves == moves_after == 1
        # a refusal is repeated the same way
        refused = MoveCmd(seq=ann.next_seq(), move=WireMove(kind="tableau", src=0, dst=0))
        for _ in range(2):
            with pytest.raises(ServerError) as err:
                await ann.resend(refused)
            assert err.value.code == "illegal_move"
        assert server.hub.metrics.get("commands_repeated") == 2

        # across a resume: the answer lost with the connection comes again on the next one
        deal_cmd = MoveCmd(seq=ann.next_seq(), move=WireMove(kind="deal"))
        dealt = await ann.resend(deal_cmd)
        assert isinstance(dealt, Moved) and len(dealt.shown) == 10
        await ann.close()
        ann2, _snap = await resume(server.url, code, joined[0].token, ann)
        stock = len(state.stock)
        replayed = await ann2.resend(deal_cmd)
        assert replayed == dealt
        assert len(state.stock) == stock  # dealt once only
        assert seat_state(server, code, joined[0].you).moves == 2
        # and the seat's numbers go on
        await move(ann2, "resign")
        await close_all([ann2, bob])


async def test_a_repeated_create_or_join_is_answered_again() -> None:
    async with running_server() as server, Connection(server.url) as ann:
        create = CreateRoom(seq=ann.next_seq(), name="Ann", settings=Settings())
        made = await ann.resend(create)
        again = await ann.resend(create)
        assert isinstance(made, Joined) and again == made
        assert len(server.hub.rooms) == 1
        async with Connection(server.url) as bob:
            join = JoinRoom(seq=bob.next_seq(), code=made.room.code, name="Bob")
            first = await bob.resend(join)
            second = await bob.resend(join)
            assert isinstance(first, Joined) and second == first
            assert len(server.hub.rooms[made.room.code].members) == 2
            # a number used before the join is still used after it
            with pytest.raises(ServerError) as reused:
                await bob.resend(Ready(seq=0))
            assert reused.value.code == "bad_message"
            assert not server.hub.rooms[made.room.code].members[first.you].ready


async def test_a_number_too_old_to_remember_is_refused_not_replayed() -> None:
    async with running_server(fast_limits(rate=1000.0, burst=1000)) as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        ann = conns[0]
        await start_race(conns)
        wire = pick_move(seat_state(server, code, joined[0].you))
        assert wire is not None
        old = MoveCmd(seq=ann.next_seq(), move=wire)
        await ann.resend(old)
        for _ in range(64):
            await ann.request(ListRooms(seq=0))
        with pytest.raises(ServerError) as forgotten:
            await ann.resend(old)
        assert forgotten.value.code == "bad_message"
        assert seat_state(server, code, joined[0].you).moves == 1
        await close_all(conns)


# -- the client's session: what a resume tells the player ---------------------------------------


async def _session_as(url: str, name: str, code: str) -> Session:
    session = Session(url, RaceModel(name=name))
    await session.connect()
    await session.join(code, name)
    return session


async def test_a_session_back_after_a_race_started_without_it_says_so() -> None:
    """Cy's terminal closes in the lobby; Ann and Bob race without her; Cy comes back: she is
    told the race started without her, not "your seat was kept" (new-user trial)."""
    from client.session import SAT_OUT

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        cy = await _session_as(server.url, "Cy", code)
        await cy.close()  # away, her membership saved on disk
        await start_race(conns)
        back = await _session_as(server.url, "Cy", code)
        try:
            assert back.model.phase == "racing" and back.model.my_progress() is None
            assert back.model.status == SAT_OUT
        finally:
            await back.close()
            await close_all(conns)


async def test_a_seated_player_back_in_the_countdown_is_not_told_they_sit_it_out() -> None:
    """No progress comes before the race starts: a player of the race coming back during its
    countdown was told the race started without them (review)."""
    from client.session import SAT_OUT

    async with running_server(fast_limits(countdown_ms=5000)) as server:
        conns, code, _ = await host_and_join(server.url, ["Ann", "Bob"], Settings())
        cy = await _session_as(server.url, "Cy", code)
        await cy.close()
        back = await _session_as(server.url, "Cy", code)
        try:
            await back.conn.request(Ready(seq=0))  # type: ignore[union-attr]
            for c in conns:
                await c.request(Ready(seq=0))
            race = server.hub.rooms[code].race
            assert race is not None and back.model.you in race.seats
            await back.close()
            again = await _session_as(server.url, "Cy", code)
            try:
                assert again.model.phase == "countdown" and again.model.status != SAT_OUT
            finally:
                await again.close()
        finally:
            await close_all(conns)


async def test_a_session_resuming_a_released_seat_says_so_and_rejoins_after_the_results() -> None:
    async with running_server(fast_limits(grace_s=0.3)) as server:
        host = Session(server.url, RaceModel(name="Ann"))
        await host.connect()
        await host.create("Ann", Settings())
        code = host.code
        assert code is not None
        bob = Connection(server.url)
        await bob.open()
        await bob.request(JoinRoom(seq=0, code=code, name="Bob"))
        await host.conn.request(Ready(seq=0))  # type: ignore[union-attr]
        await bob.request(Ready(seq=0))
        await bob.wait_for(RaceStart)
        await host.close()  # Ann's terminal closes mid-race; her seat is saved on disk
        await wait_until(bob, ProgressUpdate, progress_of("Ann", "disconnected"))

        ann = await _session_as(server.url, "Ann", code)
        assert ann.model.status == RELEASED  # not "welcome back"
        assert ann.model.my_progress().status == "disconnected"  # type: ignore[union-attr]
        # back again in the same terminal (a server restart): said once, not again as news
        token = ann.model.token
        assert token is not None
        again = Connection(server.url)
        await again.open()
        snap = await again.request(Resume(seq=0, code=code, token=token))
        assert isinstance(snap, Snapshot)
        ann._resumed(snap, "Reconnected: your seat is back.")
        assert ann.model.status.startswith("Reconnected: you watch this race out.")
        # a release said in the race before is not this one's (a review)
        ann.model.race_id = "an-earlier-race"
        ann._resumed(snap, "Reconnected: your seat is back.")
        assert ann.model.status == RELEASED
        await again.close()
        await ann.close()

        await move(bob, "resign")
        await bob.wait_for(RaceOver)
        await eventually(
            lambda: "Ann" not in {m.name for m in room_of(server, code).info().members}
        )
        ann = await _session_as(server.url, "Ann", code)  # her old token: bad_token
        assert ann.model.status.startswith("Your old seat was released: you joined again")
        seat = saved_seat(server.url, code, "Ann")
        assert seat is not None and seat["token"] == ann.model.token  # the new seat is saved
        await ann.close()
        await bob.close()


async def test_a_server_restart_shows_as_restarting_and_the_session_keeps_trying() -> None:
    async with running_server() as server:
        model = RaceModel(name="Ann")
        session = Session(server.url, model)
        await session.connect()
        await session.create("Ann", Settings())
        session.start_events()
        await server.drain(retry_ms=100)
        loop = asyncio.get_running_loop()
        end = loop.time() + 5
        while not (session.restarting and not session.connected):
            assert loop.time() < end, model.status
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.6)  # a reconnection or two fail: still "restarting"
        assert model.status == RESTARTING
        assert model.phase not in ("gone", "kicked") and not session.stopped
        await session.close()


async def test_a_session_refused_for_a_busy_address_keeps_trying_and_gets_its_seat() -> None:
    """A club behind one address, all back at once, can be over the address's resume budget:
    the refusal says "later", and the session tries again rather than give the seat up for
    good ("Could not take your seat back")."""
    async with running_server(fast_limits(resume_rate=0.5, resume_burst=2)) as server:
        model = RaceModel(name="Ann")
        session = Session(server.url, model)
        await session.connect()
        await session.create("Ann", Settings())
        session.start_events()
        code = session.code
        assert code is not None
        bob = Connection(server.url)
        await bob.open()
        jb = await bob.request(JoinRoom(seq=0, code=code, name="Bob"))
        await bob.close()
        # the address's resumes spent by the others of the club (Bob, back twice)
        for _ in range(2):
            again = Connection(server.url)
            await again.open()
            await again.request(Resume(seq=0, code=code, token=jb.token))  # type: ignore[union-attr]
            await again.close()
        # Ann's line drops: her session reconnects, is refused for the budget, and goes on
        ann = next(
            c for c, conn in server.hub.conns.items() if conn.member and conn.member.name == "Ann"
        )
        await server.sockets[ann].close(1011, "test drop")
        loop = asyncio.get_running_loop()
        end = loop.time() + 15
        said = set()
        while not model.status.startswith("Reconnected"):
            assert loop.time() < end, model.status
            assert model.phase != "gone", model.status
            said.add(model.status)
            await asyncio.sleep(0.02)
        assert any("too fast" in s for s in said), said
        await session.close()


@pytest.mark.parametrize("lost", [False, True])
async def test_a_move_left_without_an_answer_is_never_made_twice(lost: bool) -> None:
    """A link that stalls: the deal's answer does not come.  The client said "Not connected" and
    let the next key through, and when the link came back both deals were made.  Now it drops
    the connection at once (no key is sent meanwhile), takes the seat back, and says whether
    the move was made: the stalled deal arrives late (made), or was lost on the way (not made,
    to make again)."""
    from protocol.moves import DEAL

    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model = RaceModel(name="Ann")
        ann = Session(proxy.url, model)
        ann.remember = False
        ann.answer_timeout = 0.5
        await ann.connect()
        await ann.create("Ann", Settings(options={"suits": 1}))
        ann.start_events()
        await ann.start()
        await eventually(lambda: model.phase == "racing" and model.state is not None)
        assert model.state is not None and len(model.state.stock) == 50
        proxy.stall(drop=lost)
        assert await ann.move(DEAL) is None
        assert not ann.connected and model.status.startswith("No answer from the server")
        await asyncio.sleep(0.2)  # the reconnection under way says so too (it said "lost")
        assert model.status.startswith("No answer from the server")
        proxy.go()
        await eventually(lambda: ann.connected and "Your last move" in model.status, 10)
        state = model.state
        assert state is not None
        if lost:
            assert model.status.endswith("did not reach the server: make it again.")
            assert len(state.stock) == 50
        else:
            assert model.status.endswith("Your last move was made.")
            assert len(state.stock) == 40
        # kept on the line with others coming back at that moment (it was lost then)
        assert model.back_status.endswith(model.status.rsplit(". ", 1)[-1])
        seat = next(iter(room_of(server, ann.code or "").race.seats.values()))  # type: ignore[union-attr]
        assert len(seat.state.stock) == len(state.stock)  # one deal at most, as the board says
        await ann.close()


async def ann_stalling_bob_not(url: str, proxy_url: str) -> tuple[RaceModel, Session, Connection]:
    """Ann's session through a proxy that can stall (her commands wait 0.5 s for an answer),
    in a room of her own with Bob, connected straight to the server."""
    model = RaceModel(name="Ann")
    ann = Session(proxy_url, model)
    ann.remember = False
    ann.answer_timeout = 0.5
    await ann.connect()
    await ann.create("Ann", Settings(options={"suits": 1}))
    ann.start_events()
    bob = Connection(url)
    await bob.open()
    await bob.request(JoinRoom(seq=0, code=ann.code or "", name="Bob"))
    return model, ann, bob


@pytest.mark.parametrize("lost", [False, True])
async def test_a_resignation_left_without_an_answer_is_said_made_or_not(lost: bool) -> None:
    """A resignation changes no count of moves or undos: one that reached the server was said
    to have been lost ("make it again") beside standings saying "resigned" (a bad-network
    trial).  The seat's status says whether it was made."""
    from protocol.moves import Kind, Move

    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model, ann, bob = await ann_stalling_bob_not(server.url, proxy.url)
        await bob.request(Ready(seq=0))
        await ann.start()
        await eventually(lambda: model.phase == "racing" and model.state is not None)
        proxy.stall(drop=lost)
        assert await ann.move(Move(Kind.RESIGN)) is None
        proxy.go()
        await eventually(lambda: ann.connected and "resign" in model.status, 10)
        if lost:
            assert model.status.endswith("did not reach the server: x x again to resign.")
        else:
            assert model.status.endswith("You have resigned, as you asked.")
        await ann.close()
        await bob.close()


async def test_a_resignation_made_as_the_race_ended_meanwhile_is_confirmed() -> None:
    """Ann's resignation reaches the server over a stalled link, and Bob's ends the race
    before she is back: her results said nothing of it (a bad-network trial)."""
    from protocol.moves import Kind, Move

    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model, ann, bob = await ann_stalling_bob_not(server.url, proxy.url)
        await bob.request(Ready(seq=0))
        await ann.start()
        await eventually(lambda: model.phase == "racing" and model.state is not None)
        proxy.stall(to_client_only=True)  # her resignation gets there; the answer does not
        assert await ann.move(Move(Kind.RESIGN)) is None
        await bob.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
        assert room_of(server, ann.code or "").state == "results"
        proxy.go()
        await eventually(lambda: ann.connected and "resign" in model.status, 10)
        assert model.status.endswith("You have resigned, as you asked."), model.status
        await ann.close()
        await bob.close()


@pytest.mark.parametrize("lost", [False, True])
async def test_a_ready_left_without_an_answer_is_said_done_or_not(lost: bool) -> None:
    """r pressed as the link stalled: back, nothing was said, and the screen went on saying
    what r was meant to do (a bad-network trial)."""
    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model, ann, bob = await ann_stalling_bob_not(server.url, proxy.url)
        await eventually(lambda: model.room is not None and len(model.room.members) == 2)
        proxy.stall(drop=lost)
        await ann.ready(True)
        proxy.go()
        await eventually(lambda: ann.connected and model.status.startswith("Reconnected"), 10)
        if lost:
            assert model.status.endswith("Your r did not reach the server: press r again.")
        else:
            assert model.status.endswith("You are ready.")
        await ann.close()
        await bob.close()


@pytest.mark.parametrize("lost", [False, True])
@pytest.mark.parametrize("key", ["start", "rematch"])
async def test_a_start_or_rematch_left_without_an_answer_is_said_done_or_not(
    key: str, lost: bool
) -> None:
    """The host's start with Bob not ready (the host is ready, the room stays in the lobby) was
    said lost when it was made; a rematch asked on the results is said asked or not (a
    review)."""
    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model, ann, bob = await ann_stalling_bob_not(server.url, proxy.url)
        await eventually(lambda: model.room is not None and len(model.room.members) == 2)
        if key == "rematch":
            await bob.request(Ready(seq=0))
            await ann.start()
            await eventually(lambda: model.phase == "racing" and model.state is not None)
            await bob.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
            await ann.move(from_wire(WireMove(kind="resign")))
            await eventually(lambda: model.phase == "results")
        proxy.stall(drop=lost)
        await (ann.start() if key == "start" else ann.rematch())
        proxy.go()
        await eventually(lambda: ann.connected and model.status.startswith("Reconnected"), 10)
        said = {
            ("start", False): "You are ready: the race starts when the others are.",
            ("start", True): "Your s did not reach the server: press s again.",
            ("rematch", False): "You asked for a rematch.",
            ("rematch", True): "Your rematch did not reach the server: press n again.",
        }[key, lost]
        assert model.status.endswith(said), model.status
        await ann.close()
        await bob.close()


async def test_a_rematch_lost_while_the_room_went_to_the_lobby_is_said_not_ready() -> None:
    """Ann's n on the results lost on a frozen link while Bob, the host, took the room to the
    lobby: back, she was told "You asked for a rematch" and sat there not ready (a
    flaky-network trial).  The lobby shows whether it reached the server: those who asked
    are ready."""
    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        bob = Connection(server.url)
        await bob.open()
        made = await bob.request(
            CreateRoom(seq=0, name="Bob", settings=Settings(options={"suits": 1}))
        )
        assert isinstance(made, Joined)
        code = made.room.code
        model = RaceModel(name="Ann")
        ann = Session(proxy.url, model)
        ann.remember = False
        ann.answer_timeout = 0.5
        await ann.connect()
        await ann.join(code, "Ann")
        ann.start_events()
        await ann.ready(True)
        await bob.request(Start(seq=0))
        await eventually(lambda: model.phase == "racing" and model.state is not None)
        await bob.request(MoveCmd(seq=0, move=WireMove(kind="resign")))
        await ann.move(from_wire(WireMove(kind="resign")))
        await eventually(lambda: model.phase == "results")
        proxy.stall(drop=True)
        await ann.rematch()
        assert isinstance(await bob.request(Start(seq=0)), Ack)  # the host: to the lobby
        assert server.hub.rooms[code].state == "lobby"
        proxy.go()
        await eventually(lambda: ann.connected and model.status.startswith("Reconnected"), 10)
        assert model.status.endswith("You are not ready in the lobby: press r."), model.status
        await ann.close()
        await bob.close()


async def test_a_silent_stall_is_noticed_by_the_client_in_ping_and_close_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing typed, the link silent: the client's own pings give it up (here scaled down from
    5 + 8 s); websockets' default 10 s wait for the close made it 20 to 22 s."""
    import client.net

    monkeypatch.setattr(client.net, "PING_S", 0.2)
    monkeypatch.setattr(client.net, "PING_TIMEOUT_S", 0.3)
    monkeypatch.setattr(client.net, "CLOSE_TIMEOUT_S", 0.2)
    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model = RaceModel(name="Ann")
        ann = Session(proxy.url, model)
        ann.remember = False
        await ann.connect()
        await ann.create("Ann", Settings(options={"suits": 1}))
        ann.start_events()
        proxy.stall()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await eventually(lambda: not ann.connected, 5)
        assert loop.time() - t0 < 2.0
        proxy.go()
        await eventually(lambda: ann.connected, 10)
        await ann.close()


async def test_a_late_pong_is_waited_for_while_other_frames_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slow link carrying the race: its pong comes late, behind what the link still carries,
    and the client gave it up every 15 s (a flaky-network trial).  Any frame is a sign of life:
    a late pong is waited for while frames come (up to ``PONG_LATE_S``), and a silent link is
    still given up in ping time.  (A scripted socket: the keepalive alone.)"""
    import client.net
    from client.net import Connection

    monkeypatch.setattr(client.net, "PING_S", 0.05)
    monkeypatch.setattr(client.net, "PING_TIMEOUT_S", 0.2)
    monkeypatch.setattr(client.net, "PONG_LATE_S", 1.0)
    loop = asyncio.get_running_loop()

    class Link:
        def __init__(self) -> None:
            self.aborted_at: float | None = None
            self.pongs: list[asyncio.Future[float]] = []
            self.transport = self

        def abort(self) -> None:
            self.aborted_at = loop.time()

        async def ping(self) -> asyncio.Future[float]:
            self.pongs.append(loop.create_future())
            return self.pongs[-1]

    async def frames_for(conn: Connection, seconds: float) -> None:
        end = loop.time() + seconds
        while loop.time() < end:
            conn.heard = loop.time()
            await asyncio.sleep(0.02)

    conn = Connection("ws://127.0.0.1:1")
    link = Link()
    conn.heard = loop.time()
    keepalive = asyncio.create_task(conn._keep_alive(link))  # type: ignore[arg-type]
    try:
        await frames_for(conn, 0.6)  # three times the ping's timeout, the pong not come
        assert link.aborted_at is None and len(link.pongs) == 1
        link.pongs[0].set_result(0.55)  # it comes at last: the pings go on
        await frames_for(conn, 0.15)
        assert link.aborted_at is None and len(link.pongs) == 2
        link.pongs[1].set_result(0.01)
        silent = loop.time()  # then nothing at all: given up in ping time
        await asyncio.wait_for(keepalive, 2)
        assert link.aborted_at is not None and link.aborted_at - silent < 0.05 + 0.2 + 0.1
        # frames coming but never a pong: given up after PONG_LATE_S
        link2 = Link()
        conn.heard = loop.time()
        keepalive = asyncio.create_task(conn._keep_alive(link2))  # type: ignore[arg-type]
        feeding = asyncio.create_task(frames_for(conn, 3))
        start = loop.time()
        await asyncio.wait_for(keepalive, 3)
        feeding.cancel()
        assert link2.aborted_at is not None and 1.0 <= link2.aborted_at - start < 1.15
        # a frame just after the ping, then silence: given up the timeout after that frame
        # (not a whole timeout later again: a review found 16 s where 13 were said)
        link3 = Link()
        conn.heard = loop.time()
        keepalive = asyncio.create_task(conn._keep_alive(link3))  # type: ignore[arg-type]
        await asyncio.sleep(0.1)  # the ping is out
        assert len(link3.pongs) == 1
        conn.heard = last = loop.time()
        await asyncio.wait_for(keepalive, 2)
        assert link3.aborted_at is not None and 0.2 <= link3.aborted_at - last < 0.3
    finally:
        keepalive.cancel()


async def test_a_watcher_back_after_the_grace_watches_again() -> None:
    """A watcher whose link was down past the grace came back seated on a free seat ("your old
    seat was released: you joined again as a new player"), to race unasked (a spectators
    trial).  A watcher comes back to watch."""
    async with running_server(fast_limits(grace_s=1.0)) as server:
        ann = Connection(server.url)
        await ann.open()
        made = await ann.request(CreateRoom(seq=0, name="Ann", settings=Settings(seats=4)))
        assert isinstance(made, Joined)
        code = made.room.code
        model = RaceModel(name="Kim")
        kim = Session(server.url, model)
        kim.remember = False
        await kim.connect()
        await kim.join(code, "Kim", spectate=True)
        kim.start_events()
        assert model.role == "spectator"
        # the link goes down, and stays down past the grace (no server at the address meanwhile)
        kim.url = "ws://127.0.0.1:1"
        assert kim.conn is not None and kim.conn.ws is not None
        kim.conn.ws.transport.abort()
        room = server.hub.rooms[code]
        await eventually(lambda: "Kim" not in {m.name for m in room.members.values()}, 10)
        kim.url = server.url
        await eventually(lambda: kim.connected and "joined again" in model.status, 15)
        assert model.status == "You were away too long, and joined again: you watch."
        kim_now = next(m for m in room.members.values() if m.name == "Kim")
        assert kim_now.role == "spectator" and model.role == "spectator"
        await kim.close()
        await ann.close()


async def test_two_bare_joins_at_once_resume_the_seat_once() -> None:
    """Two terminals of one account typing ``join CODE`` at the same moment: both found the
    seat free, both resumed it, and the first was cut off ("resumed on another connection")."""
    from client.session import SeatInUse

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        cy = await _session_as(server.url, "Cy", code)
        await cy.close()  # away, her seat saved on disk
        one, two = (
            Session(server.url, RaceModel(name="Cy")),
            Session(server.url, RaceModel(name="Cy")),
        )
        try:
            await asyncio.gather(one.connect(), two.connect())
            got = await asyncio.gather(
                one.join(code, "Cy"), two.join(code, "Cy"), return_exceptions=True
            )
            assert sum(isinstance(g, SeatInUse) for g in got) == 1, got
            back = one if isinstance(got[1], SeatInUse) else two
            assert isinstance(await back.conn.request(ListRooms(seq=0)), RoomList)  # type: ignore[union-attr]
            cy_member = next(m for m in server.hub.rooms[code].members.values() if m.name == "Cy")
            assert cy_member.conn is not None
        finally:
            await asyncio.gather(one.close(), two.close())
            await close_all(conns)


async def test_a_seat_that_cannot_be_saved_is_said_and_the_file_is_not_written_over() -> None:
    """A seats file that could not be read was taken as empty and written over (the seats
    in it lost for good), and the screen said the seat was kept when it was not saved."""
    path = seats_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    damaged = b'{"ws://elsewhere": {"K7QMX2PF": {"ann": {"token": "t", "name": "Ann"}}},}'
    path.write_bytes(damaged)  # a hand edit gone wrong: a comma too many
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        cy = await _session_as(server.url, "Cy", code)
        try:
            assert cy.seat_problem is not None and str(path) in cy.seat_problem
            assert "could not be saved" in cy.model.status and "not JSON" in cy.model.status
            assert path.read_bytes() == damaged
        finally:
            await cy.close()
            await close_all(conns)


async def test_joining_a_room_that_closed_since_says_so_not_check_the_code() -> None:
    """A seat saved for a room that has closed since: "no room 'U9D9-2AX6': check the code",
    when the code was right (from a trial)."""
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        cy = await _session_as(server.url, "Cy", code)
        await cy.close()
        await close_all(conns)
        server.hub._close_room(server.hub.rooms[code], 0.0, Outbox())
        back = Session(server.url, RaceModel(name="Cy"))
        try:
            await back.connect()
            with pytest.raises(ServerError) as gone:
                await back.join(code, "Cy")
            assert gone.value.code == "room_not_found"
            assert (
                gone.value.message == f"room {code[:4]}-{code[4:]} has closed since you were in it"
            )
            assert saved_seat(server.url, code, "Cy") is None  # forgotten
            with pytest.raises(ServerError) as never:  # no seat saved: the code may be wrong
                await back.join(code, "Cy")
            assert "check the code" in never.value.message
        finally:
            await back.close()


async def test_a_player_removed_while_away_is_told_so_on_return() -> None:
    """Gus was removed while his terminal was gone; back with a bare join he was told only
    "your old seat was released" (club-night trial)."""
    from protocol.messages import Kick

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        gus = await _session_as(server.url, "Gus", code)
        gus_id = gus.model.you
        await gus.close()  # away, his seat saved on disk
        await conns[0].request(Kick(seq=0, id=gus_id))  # type: ignore[arg-type]
        back = Session(server.url, RaceModel(name="Gus"))
        try:
            await back.connect()
            with pytest.raises(ServerError) as removed:
                await back.join(code, "Gus")
            # told, and not joined again behind the host's back (a review)
            assert removed.value.code == "bad_token"
            assert removed.value.message == f"the host removed you from room {code[:4]}-{code[4:]}"
            assert gus_id not in server.hub.rooms[code].members
            assert len(server.hub.rooms[code].members) == 1
            assert saved_seat(server.url, code, "Gus") is None
        finally:
            await back.close()
            await close_all(conns)


async def test_a_watcher_back_after_a_drop_is_not_told_their_seat_is_back() -> None:
    """A watcher has no seat: "Reconnected: your seat is back." (club-night trial)."""
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        wes = Session(server.url, RaceModel(name="Wes"))
        wes.remember = False
        try:
            await wes.connect()
            await wes.join(code, "Wes", spectate=True)
            wes.start_events()
            cid = next(
                c
                for c, conn in server.hub.conns.items()
                if conn.member and conn.member.name == "Wes"
            )
            await server.sockets[cid].close(1011, "test drop")
            await eventually(lambda: wes.model.status.startswith("Reconnected"), timeout=10)
            assert wes.model.status.startswith("Reconnected: you are watching again.")
        finally:
            await wes.close()
            await close_all(conns)


async def test_events_nobody_reads_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's queue of events had no bound (a code review): a server that floods, or a
    reader stuck, grew it for ever. Past ``MAX_EVENTS`` a progress is dropped (the next says it
    all again) and any other event ends the connection, to be taken back with a snapshot."""
    import client.net

    monkeypatch.setattr(client.net, "MAX_EVENTS", 3)
    async with running_server() as server:
        ann = Connection(server.url)
        await ann.open()
        try:
            joined = await ann.request(CreateRoom(seq=0, name="Ann", settings=Settings()))
            assert isinstance(joined, Joined)
            for i in range(6):  # each comes and goes: room events Ann does not read
                async with Connection(server.url) as guest:
                    await guest.request(JoinRoom(seq=0, code=joined.room.code, name=f"G{i}"))
            await eventually(lambda: ann.closed is not None)
            assert ann.events.qsize() <= 3 + 1  # (and the end of the connection)
        finally:
            await ann.close()


def test_a_restart_during_a_race_is_tried_every_second_however_long() -> None:
    """After a restart of more than two minutes the client tried every 5 s: the race's clock
    went on the moment the server was back, and the players lost seconds to a bot that knocked
    first (a race-night trial). During a race it is tried every second however long."""
    from client.session import RESTART_QUICK_S, RETRY_MAX_S, retry_wait

    late = RESTART_QUICK_S + 60
    assert retry_wait(RETRY_MAX_S, restarting=True, racing=True, down_s=late) == 1.0
    assert retry_wait(RETRY_MAX_S, restarting=True, racing=False, down_s=late) == RETRY_MAX_S
    assert retry_wait(RETRY_MAX_S, restarting=True, racing=False, down_s=10) == 1.0
    assert retry_wait(RETRY_MAX_S, restarting=False, racing=True, down_s=10) == RETRY_MAX_S
    assert retry_wait(0.5, restarting=True, racing=True, down_s=10) == 0.5
    assert retry_wait(RETRY_MAX_S, restarting=True, racing=True, down_s=1000) == RETRY_MAX_S


async def test_a_member_removed_forgets_the_saved_seat() -> None:
    """Removed by the host, the seat stayed saved on disk for a bare ``join`` to find (a
    verification trial)."""
    from client.seats import saved_seat

    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        bob = await _session_as(server.url, "Bob", code)
        try:
            assert saved_seat(server.url, code, "Bob") is not None
            bob.start_events()
            await conns[0].request(Kick(seq=conns[0].next_seq(), id=bob.model.you or -1))
            await eventually(lambda: bob.model.phase == "kicked")
            assert saved_seat(server.url, code, "Bob") is None
        finally:
            await bob.close()
            await close_all(conns)


async def test_a_move_whose_connection_dropped_before_its_answer_is_said_made_or_not() -> None:
    """The line drops (not a stall given up) while a deal waits for its answer: back, the
    welcome says whether the deal was made, as after a stall (else a deal pressed again
    would be a second one)."""
    from protocol.moves import DEAL

    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model = RaceModel(name="Ann")
        ann = Session(proxy.url, model)
        ann.remember = False
        ann.answer_timeout = 5  # the drop comes first
        await ann.connect()
        await ann.create("Ann", Settings(options={"suits": 1}))
        ann.start_events()
        await ann.start()
        await eventually(lambda: model.phase == "racing" and model.state is not None)
        proxy.stall(to_client_only=True)  # the deal gets there; its answer does not
        moving = asyncio.create_task(ann.move(DEAL))
        seat = next(iter(room_of(server, ann.code or "").race.seats.values()))  # type: ignore[union-attr]
        await eventually(lambda: len(seat.state.stock) == 40)
        assert ann.conn is not None and ann.conn.ws is not None
        ann.conn.ws.transport.abort()  # the line drops
        assert await moving is None
        proxy.go()
        await eventually(lambda: ann.connected and "Your last move" in model.status, 10)
        assert model.status.endswith("Your last move was made."), model.status
        assert model.state is not None and len(model.state.stock) == 40
        await ann.close()


async def test_a_player_removed_while_the_line_was_down_is_not_joined_again() -> None:
    """Gus's line drops and the host removes him meanwhile: his client, reconnecting, is told
    so and stops; it does not join the room again as a new member behind the host's back."""
    async with running_server() as server:
        conns, code, _ = await host_and_join(server.url, ["Ann"], Settings())
        gus = Session(server.url, RaceModel(name="Gus"))
        gus.remember = False
        try:
            await gus.connect()
            await gus.join(code, "Gus")
            gus.start_events()
            gus_id = gus.model.you
            cid = next(
                c
                for c, conn in server.hub.conns.items()
                if conn.member and conn.member.name == "Gus"
            )
            await server.sockets[cid].close(1011, "test drop")
            await eventually(lambda: not room_of(server, code).members[gus_id].conn)  # type: ignore[index]
            await conns[0].request(Kick(seq=0, id=gus_id))  # type: ignore[arg-type]
            await eventually(lambda: gus.model.phase == "kicked", timeout=10)
            assert "removed you" in gus.model.status
            await asyncio.sleep(1.5)  # (time for a join again, if it were tried)
            names = [m.name for m in room_of(server, code).members.values()]
            assert names == ["Ann"], names
        finally:
            await gus.close()
            await close_all(conns)


async def test_a_session_replaced_on_its_seat_does_not_take_it_back() -> None:
    """Another connection took Ann's seat (her other terminal): the old session is closed
    with 4409 and stops; reconnecting it would take the seat back and cut the other off, back
    and forth."""
    async with running_server(fast_limits()) as server:
        model = RaceModel(name="Ann")
        ann = Session(server.url, model)
        ann.remember = False
        await ann.connect()
        joined = await ann.create("Ann", Settings(options={"suits": 1}))
        ann.start_events()
        other = Connection(server.url)
        await other.open()
        try:
            snap = await other.request(Resume(seq=0, code=joined.room.code, token=joined.token))
            assert isinstance(snap, Snapshot)
            await eventually(lambda: model.phase == "gone", timeout=5)
            await asyncio.sleep(1.5)  # (time for a reconnection, if it were tried)
            assert other.closed is None  # the seat stays with the other terminal
            assert not ann.connected
        finally:
            await ann.close()
            await other.close()


async def test_commands_after_a_resume_are_numbered_from_the_seats_next_seq() -> None:
    """A client whose numbers are behind the seat's (another terminal, its clock ahead, used
    the seat) takes them from the snapshot's next_seq: a move numbered below would be taken
    for a repeat, answered again and never made."""
    import itertools

    async with running_server(fast_limits()) as server:
        first = Session(server.url, RaceModel(name="Ann"))
        await first.connect()
        joined = await first.create("Ann", Settings(options={"suits": 1}))
        code = joined.room.code
        first.start_events()
        await first.start()
        await eventually(lambda: first.model.phase == "racing" and first.model.state is not None)
        state = seat_state(server, code, joined.you)
        assert isinstance(await first.move(from_wire(pick_move(state))), Moved)  # type: ignore[arg-type]
        await first.close()  # the terminal is gone; the seat kept and saved
        second = Session(server.url, RaceModel(name="Ann"))
        second.seqs = itertools.count(1)  # its clock far behind
        try:
            await second.connect()
            await second.join(code, "Ann")
            assert second.model.phase == "racing"
            state = seat_state(server, code, joined.you)
            answer = await second.move(from_wire(pick_move(state)))  # type: ignore[arg-type]
            assert isinstance(answer, Moved)
            assert seat_state(server, code, joined.you).moves == 2
        finally:
            await second.close()


@pytest.mark.parametrize("lost", [False, True])
async def test_a_not_ready_left_without_an_answer_is_said_done_or_not(lost: bool) -> None:
    """r pressed to be not ready as the link stalled: back, the welcome says which Ann is (told
    "not ready" while still ready, the race would start under her)."""
    async with running_server(fast_limits()) as server, StallProxy(server.port) as proxy:
        model, ann, bob = await ann_stalling_bob_not(server.url, proxy.url)
        await eventually(lambda: model.room is not None and len(model.room.members) == 2)
        await ann.ready(True)
        await eventually(lambda: model.me_member() is not None and model.me_member().ready)  # type: ignore[union-attr]
        proxy.stall(drop=lost)
        await ann.ready(False)
        proxy.go()
        await eventually(lambda: ann.connected and model.status.startswith("Reconnected"), 10)
        if lost:
            assert model.status.endswith("Your r did not reach the server: press r again.")
        else:
            assert model.status.endswith("You are not ready.")
        await ann.close()
        await bob.close()
