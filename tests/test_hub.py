"""The hub alone, without sockets: commands in, events out, time passed by hand."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from protocol.codec import encode
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    Command,
    Countdown,
    CreateRoom,
    Error,
    Event,
    Hello,
    Joined,
    JoinRoom,
    Kick,
    Kicked,
    Leave,
    ListRooms,
    MoveCmd,
    Moved,
    Notice,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Ready,
    Rematch,
    Resume,
    Reveal,
    RoomList,
    RoomUpdate,
    Settings,
    Snapshot,
    Start,
    UpdateSettings,
    Welcome,
    WireMove,
)
from server.hub import Hub, check_name, display_code, normalize_code
from server.limits import Limits, TokenBucket

from .rules_helpers import one_move_from_stuck
from .server_helpers import Lines, decode, pick_move


class Harness:
    """A hub, a fake clock, and every event each connection received."""

    def __init__(self, **limits: Any) -> None:
        base: dict[str, Any] = {"countdown_ms": 100, "grace_s": 1.0, "progress_interval_s": 0.1}
        base.update(limits)
        self.hub = Hub(Limits(**base), wall=lambda: 1_700_000_000.0)
        self.now = 1000.0
        self.inbox: dict[int, list[Event]] = defaultdict(list)
        self.closed: dict[int, int] = {}
        self.seqs: dict[int, Any] = defaultdict(itertools.count)

    def take(self, out: Any) -> None:
        for cid, event in out.sends:
            if isinstance(event, bytes):  # an answer sent again, as it was encoded the first time
                event = decode(event)
            encode(event)  # everything the hub sends can go on the wire
            self.inbox[cid].append(event)
        for close in out.closes:
            self.closed.setdefault(close.conn, close.code)

    def connect(self, hello: bool = True) -> int:
        cid = self.hub.connect(self.now)
        assert cid is not None
        if hello:
            assert isinstance(self.cmd(cid, Hello(seq=0, version=PROTOCOL_VERSION)), Welcome)
        return cid

    def send(self, cid: int, command: Command) -> list[Event]:
        """The direct answers to a command (``seq`` numbered per connection)."""
        if "seq" in type(command).model_fields and command.seq == 0:
            command = command.model_copy(update={"seq": next(self.seqs[cid])})
        out = self.hub.handle(cid, command, self.now)
        self.take(out)
        sent = [(c, decode(e) if isinstance(e, bytes) else e) for c, e in out.sends]
        return [e for c, e in sent if c == cid and getattr(e, "seq", None) == command.seq]

    def cmd(self, cid: int, command: Command) -> Event:
        answers = self.send(cid, command)
        assert answers, f"no answer to {command}"
        return answers[0]

    def tick(self, dt: float) -> None:
        self.now += dt
        self.take(self.hub.tick(self.now))

    def got(self, cid: int, kind: type[Any]) -> list[Any]:
        return [e for e in self.inbox[cid] if isinstance(e, kind)]

    def clear(self) -> None:
        self.inbox.clear()

    def room(
        self, settings: Settings | None = None, *names: str
    ) -> tuple[str, list[int], list[Joined]]:
        """A room with players ``names`` (the first is the host)."""
        conns, joined = [], []
        host = self.connect()
        j = self.cmd(host, CreateRoom(seq=0, name=names[0], settings=settings or Settings()))
        assert isinstance(j, Joined)
        conns.append(host)
        joined.append(j)
        for name in names[1:]:
            c = self.connect()
            jj = self.cmd(c, JoinRoom(seq=0, code=j.room.code, name=name))
            assert isinstance(jj, Joined)
            conns.append(c)
            joined.append(jj)
        return j.room.code, conns, joined

    def race(
        self, settings: Settings | None = None, *names: str
    ) -> tuple[str, list[int], list[Joined]]:
        code, conns, joined = self.room(settings, *names)
        for c in conns:
            assert isinstance(self.cmd(c, Ready(seq=0)), Ack)
        self.tick(self.hub.limits.countdown_ms / 1000)
        assert self.hub.rooms[code].state == "racing"
        return code, conns, joined

    def move(self, cid: int, **kw: Any) -> Event:
        return self.cmd(cid, MoveCmd(seq=0, move=WireMove(**kw)))


def test_a_deal_or_resign_echoes_no_pile_it_was_sent_with() -> None:
    """``resign`` with ``src`` 3 was accepted and echoed back as applied so (a docs-only client
    trial): the move as applied has no pile or count where its kind takes none."""
    h = Harness()
    _code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    dealt = h.move(ann, kind="deal", src=3, dst=4, count=2)
    assert isinstance(dealt, Moved) and dealt.move == WireMove(kind="deal")
    resigned = h.move(bob, kind="resign", src=3)
    assert isinstance(resigned, Moved) and resigned.move == WireMove(kind="resign")


# -- the countdown ---------------------------------------------------------------------------------


def test_countdown_starts_the_race_at_its_time_and_not_before() -> None:
    h = Harness(countdown_ms=300)
    code, conns, _ = h.room(None, "Ann", "Bob")
    watcher = h.connect()
    h.cmd(watcher, JoinRoom(seq=0, code=code, name="Cy", spectate=True))
    h.cmd(conns[0], Ready(seq=0))
    assert h.hub.rooms[code].state == "lobby"  # one ready player of two
    assert not h.got(conns[0], Countdown)
    h.cmd(conns[1], Ready(seq=0))
    countdowns = [h.got(c, Countdown) for c in (*conns, watcher)]
    assert all(len(c) == 1 for c in countdowns)
    assert countdowns[0][0].ms == 300 and countdowns[0][0] == countdowns[2][0]
    assert h.hub.rooms[code].state == "countdown"
    # a move during the countdown is refused
    refused = h.move(conns[0], kind="deal")
    assert isinstance(refused, Error) and refused.code == "race_not_running"
    h.tick(0.299)
    assert not h.got(conns[0], RaceStart) and h.hub.rooms[code].state == "countdown"
    h.tick(0.001)
    starts = [h.got(c, RaceStart) for c in (*conns, watcher)]
    assert [len(s) for s in starts] == [1, 1, 1]
    assert starts[0][0].board is not None and starts[0][0].board == starts[1][0].board
    assert starts[2][0].board is None
    assert starts[0][0].commitment == countdowns[0][0].commitment
    race = h.hub.rooms[code].race
    assert race is not None and race.started_at == pytest.approx(h.now)
    # progress goes out with the start
    assert h.got(watcher, ProgressUpdate)[-1].elapsed_ms == 0
    assert isinstance(h.move(conns[0], kind="deal"), Moved)


def test_start_readies_the_host_for_everyone_to_see_and_the_last_ready_starts() -> None:
    """The host's start while Bob is not ready: refused, naming Bob, but the host is ready and
    everyone is told so; Bob's ready then starts the countdown."""
    h = Harness()
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    h.clear()
    refused = h.cmd(ann, Start(seq=0))
    assert isinstance(refused, Error) and refused.code == "not_ready"
    assert "you are ready" in refused.message and "Bob" in refused.message
    for cid in (ann, bob):
        members = {m.name: m.ready for m in h.got(cid, RoomUpdate)[-1].room.members}
        assert members == {"Ann": True, "Bob": False}
    h.cmd(bob, Ready(seq=0))
    assert h.hub.rooms[code].state == "countdown"


def test_close_all_ends_every_room_telling_everyone_why_and_opens_none() -> None:
    h = Harness()
    lobby, (ann, bob), _ = h.room(None, "Ann", "Bob")
    racing, (cy, dee), _ = h.race(Settings(game="spider"), "Cy", "Dee")
    h.clear()
    h.take(h.hub.close_all(h.now, "Ann quit patience-race play, whose server this was"))
    assert not h.hub.rooms
    for cid in (ann, bob, cy, dee):
        (kicked,) = h.got(cid, Kicked)
        assert kicked.message.endswith("closed: Ann quit patience-race play, whose server this was")
    assert [len(h.got(c, RaceOver)) for c in (cy, dee)] == [1, 1]  # the race ended as it stood
    assert h.got(cy, RaceOver)[0].reason == "aborted"  # stopped: not "everyone has finished"
    assert h.hub.connect(h.now) is None  # nobody new comes in
    assert lobby != racing


# -- the grace -------------------------------------------------------------------------------------


def test_a_racer_away_past_the_grace_is_out_with_their_score() -> None:
    h = Harness(grace_s=1.0)
    code, (ann, bob), joined = h.race(Settings(game="spider"), "Ann", "Bob")
    h.move(ann, kind="deal")
    h.tick(0.5)
    h.take(h.hub.disconnect(ann, h.now))
    race = h.hub.rooms[code].race
    assert race is not None
    seat = race.seats[joined[0].you]
    assert seat.status == "playing" and not seat.connected
    h.tick(0.999)
    assert seat.status == "playing"
    h.clear()
    h.tick(0.001)
    assert seat.status == "disconnected" and seat.finish_ms == 500  # when the player went
    h.tick(0.1)
    last = h.got(bob, ProgressUpdate)[-1]
    assert {p.name: p.status for p in last.players} == {"Ann": "disconnected", "Bob": "playing"}
    # the member stays (the seat can be resumed to watch the end); the race goes on for Bob
    assert joined[0].you in h.hub.rooms[code].members
    assert h.hub.rooms[code].state == "racing"
    h.move(bob, kind="resign")
    assert h.got(bob, RaceOver)[-1].reason == "all_done"
    # in the results, the member away past the grace is removed at the next tick
    h.tick(0.05)
    assert joined[0].you not in h.hub.rooms[code].members


def test_a_racer_back_within_the_grace_plays_on() -> None:
    h = Harness(grace_s=1.0)
    code, (ann, _bob), joined = h.race(Settings(game="spider"), "Ann", "Bob")
    h.take(h.hub.disconnect(ann, h.now))
    h.tick(0.9)
    again = h.connect()
    snap = h.cmd(again, Resume(seq=0, code=code, token=joined[0].token))
    assert isinstance(snap, Snapshot) and snap.board is not None
    h.tick(0.5)
    race = h.hub.rooms[code].race
    assert race is not None
    seat = race.seats[joined[0].you]
    assert seat.status == "playing" and seat.connected
    h.seqs[again] = itertools.count(100)
    assert isinstance(h.move(again, kind="deal"), Moved)


def test_in_the_lobby_the_grace_removes_the_member_and_an_empty_room() -> None:
    h = Harness(grace_s=1.0)
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    h.take(h.hub.disconnect(bob, h.now))
    h.tick(0.99)
    assert len(h.hub.rooms[code].members) == 2
    h.tick(0.01)
    assert [m.name for m in h.hub.rooms[code].members.values()] == ["Ann"]
    assert [m.name for m in h.got(ann, RoomUpdate)[-1].room.members] == ["Ann"]
    h.take(h.hub.disconnect(ann, h.now))
    h.tick(1.0)
    assert code not in h.hub.rooms


# -- progress ------------------------------------------------------------------------------------


def test_progress_is_sent_at_most_every_interval_however_fast_the_moves() -> None:
    h = Harness(progress_interval_s=0.1, rate=10_000.0, burst=10_000)
    # a fixed deal with a move that can be undone at the start (about 1 random St. Helena deal in
    # 80 offers none: only the redeal, which cannot be)
    code, (ann, bob), joined = h.race(Settings(game="st-helena", deal_number=1), "Ann", "Bob")
    race = h.hub.rooms[code].race
    assert race is not None
    state = race.seats[joined[0].you].state
    there = pick_move(state, prefer="quiet")
    assert there is not None
    h.clear()
    sent_at = []
    for i in range(400):  # a move every millisecond for 0.4 s, a tick every 5 ms
        wire = there if i % 2 == 0 else WireMove(kind="undo")
        assert isinstance(h.cmd(ann, MoveCmd(seq=0, move=wire)), Moved)
        h.now += 0.001
        if i % 5 == 4:
            before = len(h.got(bob, ProgressUpdate))
            h.take(h.hub.tick(h.now))
            if len(h.got(bob, ProgressUpdate)) > before:
                sent_at.append(h.now)
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert 3 <= len(sent_at) <= 5
    assert all(g >= 0.1 - 1e-9 for g in gaps), gaps
    # and nothing is lost: once the moves stop, the last state goes out
    h.tick(0.1)
    last = h.got(bob, ProgressUpdate)[-1]
    ann_p = next(p for p in last.players if p.name == "Ann")
    assert (ann_p.moves, ann_p.undos) == (state.moves, state.undos) == (200, 200)
    # and no progress at all without a change
    count = len(h.got(bob, ProgressUpdate))
    h.tick(0.5)
    assert len(h.got(bob, ProgressUpdate)) == count


# -- the end -------------------------------------------------------------------------------------


def test_score_mode_ends_at_the_time_limit() -> None:
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(mode="score", time_limit=2), "Ann", "Bob")
    h.move(ann, kind="deal")
    h.tick(1.999)
    assert h.hub.rooms[code].state == "racing"
    h.move(bob, kind="resign")
    assert h.hub.rooms[code].state == "racing"  # Ann still plays
    h.tick(0.051)
    over = h.got(ann, RaceOver)
    assert len(over) == 1 and over[0].reason == "time_up"
    race = h.hub.rooms[code].race
    assert race is not None and race.elapsed_ms(h.now + 100) == 2000
    assert [s.name for s in over[0].standings] == ["Ann", "Bob"]
    refused = h.move(ann, kind="deal")
    assert isinstance(refused, Error) and refused.code == "race_not_running"
    assert h.hub.finished[race.race_id].reveal == over[0].reveal


def test_first_mode_has_no_time_limit_and_waits_for_everyone() -> None:
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.move(ann, kind="resign")
    for _ in range(5):  # 45 minutes, Bob thinking nine minutes a move (five deals)
        h.tick(540)
        assert isinstance(h.move(bob, kind="deal"), Moved)
    assert h.hub.rooms[code].state == "racing"
    h.move(bob, kind="resign")
    assert h.got(bob, RaceOver)[-1].reason == "all_done"


def test_a_player_who_makes_no_move_for_ten_minutes_is_out_and_the_race_ends() -> None:
    """A seat nobody plays (a connection that stays, sending nothing or anything but moves)
    would hold the race, its results and the next race back for ever."""
    h = Harness()
    code, (ann, bob, cy), _ = h.race(Settings(), "Ann", "Bob", "Cy")
    h.move(ann, kind="resign")
    h.tick(500)
    assert isinstance(h.move(cy, kind="deal"), Moved)
    h.tick(99.9)
    assert h.hub.rooms[code].state == "racing" and not h.got(bob, Error)
    h.tick(0.2)  # Bob: 600 s without a move
    told = [e for e in h.got(bob, Error) if e.seq is None]
    assert len(told) == 1 and "no move for 10 minutes" in told[0].message
    assert h.hub.rooms[code].race.seats[2].status == "left"
    refused = h.move(bob, kind="deal")
    assert isinstance(refused, Error) and refused.code == "player_done"
    h.tick(500)
    over = h.got(ann, RaceOver)
    assert len(over) == 1 and over[0].reason == "all_done"
    assert {s.name: s.status for s in over[0].standings} == {
        "Ann": "resigned",
        "Bob": "left",  # at 600 s
        "Cy": "left",  # 600 s after the deal
    }


def test_the_idle_limit_can_be_switched_off() -> None:
    h = Harness(race_idle_s=0)
    code, (ann, _bob), _ = h.race(Settings(), "Ann", "Bob")
    h.move(ann, kind="resign")
    h.tick(7200)
    assert h.hub.rooms[code].state == "racing"


# -- departures ------------------------------------------------------------------------------------


def test_the_last_player_who_had_not_asked_leaving_lets_the_rematch_start() -> None:
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.move(ann, kind="resign")
    h.move(bob, kind="resign")
    assert isinstance(h.cmd(ann, Rematch(seq=0)), Ack)
    assert h.hub.rooms[code].state == "results"
    assert isinstance(h.cmd(bob, Leave(seq=0)), Ack)
    # everyone left has asked: Ann's rematch starts (alone, as a host alone starts with s)
    assert h.hub.rooms[code].state == "countdown"
    assert h.got(ann, RoomUpdate)[-1].room.state == "countdown"


def test_a_player_who_drops_on_the_results_does_not_hold_the_rematch_back() -> None:
    h = Harness()
    code, (ann, bob, cy), _ = h.race(Settings(), "Ann", "Bob", "Cy")
    for c in (ann, bob, cy):
        h.move(c, kind="resign")
    for c in (ann, bob):
        assert isinstance(h.cmd(c, Rematch(seq=0)), Ack)
    h.take(h.hub.disconnect(cy, h.now))
    room = h.hub.rooms[code]
    # the next race starts for those still here, at once: Cy, away, sits it out
    assert room.state == "countdown"
    assert sorted(room.race.seats) == [1, 2]
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert room.state == "racing"


def test_a_host_alone_who_asks_for_a_rematch_races_again() -> None:
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.move(ann, kind="resign")
    assert isinstance(h.cmd(bob, Leave(seq=0)), Ack)
    assert h.hub.rooms[code].state == "results"
    assert isinstance(h.cmd(ann, Rematch(seq=0)), Ack)
    assert h.hub.rooms[code].state == "countdown"


def test_who_joined_during_the_race_is_seated_and_ready_for_the_next() -> None:
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    cy = h.connect()
    joined = h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy"))
    assert isinstance(joined, Joined) and joined.role == "spectator"
    # everyone sees Cy came to race, not to watch (they were told "Cy joined to watch": a trial)
    assert [m.to_race for m in joined.room.members] == [False, False, True]
    for c in (ann, bob):
        h.move(c, kind="resign")
    for c in (ann, bob):
        assert isinstance(h.cmd(c, Rematch(seq=0)), Ack)
    room = h.hub.rooms[code]
    assert room.state == "countdown" and sorted(room.race.seats) == [1, 2, 3]


def test_the_countdown_starts_when_the_last_player_not_ready_leaves_the_lobby() -> None:
    h = Harness()
    code, (dan, eve, carl), _ = h.room(Settings(), "Dan", "Eve", "Carl")
    for c in (dan, eve):
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    assert h.hub.rooms[code].state == "lobby"
    assert isinstance(h.cmd(carl, Leave(seq=0)), Ack)
    assert h.hub.rooms[code].state == "countdown"


def test_not_ready_in_the_countdown_stops_it_and_the_host_can_change_the_game() -> None:
    h = Harness()
    code, (ann, bob), _ = h.room(Settings(), "Ann", "Bob")
    for c in (ann, bob):
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    assert h.hub.rooms[code].state == "countdown"
    assert isinstance(h.cmd(bob, Ready(seq=0, ready=False)), Ack)
    room = h.hub.rooms[code]
    assert room.state == "lobby" and room.race is None
    assert [m.ready for m in room.members.values()] == [True, False]
    h.tick(1)
    assert not h.got(ann, RaceStart)
    for c in (ann, bob):
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    assert room.state == "countdown"
    settings = Settings(game="louis")
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=settings)), Ack)
    assert room.state == "lobby" and room.config.game == "louis"
    assert not any(m.ready for m in room.members.values())
    h.tick(1)
    assert not h.got(bob, RaceStart)


def test_keep_deal_keeps_the_fixed_deal_no_client_can_send_back() -> None:
    """The room shows ``fixed_deal``, never the number: a host who changed a setting (after a
    resume, or any client but the one that fixed it) dropped the deal for a random one (a
    docs-only client trial). ``keep_deal`` keeps it."""
    h = Harness()
    code, (ann, _bob), _ = h.room(Settings(deal_number=77), "Ann", "Bob")
    room = h.hub.rooms[code]
    kept = UpdateSettings(seq=0, settings=Settings(seats=4), keep_deal=True)
    assert isinstance(h.cmd(ann, kept), Ack)
    assert (room.settings.seats, room.settings.deal_number) == (4, 77)
    both = UpdateSettings(seq=0, settings=Settings(deal_number=5), keep_deal=True)
    refused = h.cmd(ann, both)
    assert isinstance(refused, Error) and refused.code == "bad_settings"
    certified = UpdateSettings(seq=0, settings=Settings(winnable=True), keep_deal=True)
    refused = h.cmd(ann, certified)
    assert isinstance(refused, Error) and refused.code == "bad_settings"
    assert room.settings.deal_number == 77
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=Settings(seats=5))), Ack)
    assert room.settings.deal_number is None  # without it: a random deal, as documented


def test_a_host_who_took_over_learns_nothing_by_sending_the_secret_deal_number_back() -> None:
    """A fixed deal's number is never shown: a player who became host and sent settings with a
    number as its deal was answered the same for the secret number as for any other (a change
    that makes everyone ready again), or the room would say whether they guessed it."""
    seen = []
    for number in (77, 78):
        h = Harness()
        code, (ann, bob, cy), joined = h.room(Settings(deal_number=77), "Ann", "Bob", "Cy")
        room = h.hub.rooms[code]
        assert isinstance(h.cmd(cy, Ready(seq=0)), Ack)
        assert isinstance(h.cmd(ann, Leave(seq=0)), Ack)
        assert room.host == joined[1].you
        h.clear()
        answer = h.cmd(bob, UpdateSettings(seq=0, settings=Settings(deal_number=number)))
        cy_ready = room.members[joined[2].you].ready
        seen.append((type(answer), cy_ready, [type(e) for e in h.inbox[cy]]))
    assert seen[0] == seen[1]
    assert seen[0][0] is Ack and seen[0][1] is False and RoomUpdate in seen[0][2]


@pytest.mark.parametrize(
    ("fixed", "numbering"),
    [(48210375582910447, "xpat2"), (0, "pysolfc"), (5, "pysolfc"), (5, "xpat2")],
    ids=["big", "zero", "small", "small-pysolfc"],
)
def test_a_kept_deal_that_does_not_fit_is_refused_without_its_number(
    fixed: int, numbering: str
) -> None:
    """A player who became host sent ``keep_deal`` with another numbering, and the refusal
    quoted the secret number ("xpat2 deal numbers go from 0 to 999999999, not 4821..."): every
    hidden card before the start (a fairness trial); and a refusal that hung on the number at
    all (xpat2's 0 has no PySolFC twin, 5 has) told it too (a review): any change of numbering
    is refused."""
    h = Harness()
    first = "xpat2" if numbering == "pysolfc" else "pysolfc"
    code, (ann, bob), _ = h.room(Settings(deal_number=fixed, numbering=first), "Ann", "Bob")
    room = h.hub.rooms[code]
    assert isinstance(h.cmd(ann, Leave(seq=0)), Ack)
    assert room.host != 0 and room.settings.deal_number == fixed
    other = UpdateSettings(seq=0, settings=Settings(numbering=numbering), keep_deal=True)
    refused = h.cmd(bob, other)
    assert isinstance(refused, Error) and refused.code == "bad_settings"
    assert str(fixed) not in refused.message
    assert refused.message == (
        "keep_deal keeps the deal and its numbering: another numbering takes another deal"
    )
    assert room.settings.deal_number == fixed and room.settings.numbering == first
    # a number the host sends is its own, and the refusal may say what is wrong with it
    too_big = Settings(numbering="xpat2", deal_number=10**10)
    sent = h.cmd(bob, UpdateSettings(seq=0, settings=too_big))
    assert isinstance(sent, Error) and str(10**10) in sent.message


# -- sequence numbers, rate, bad input, time-outs, drain ------------------------------------------


def test_a_repeated_seq_is_answered_again_and_not_applied() -> None:
    h = Harness()
    code, (ann, _bob), joined = h.race(Settings(), "Ann", "Bob")
    command = MoveCmd(seq=50, move=WireMove(kind="deal"))
    first = h.send(ann, command)
    again = h.send(ann, command)
    assert again == first and isinstance(first[0], Moved)
    race = h.hub.rooms[code].race
    assert race is not None and race.seats[joined[0].you].state.moves == 1
    old = h.send(ann, MoveCmd(seq=49, move=WireMove(kind="deal")))
    assert isinstance(old[0], Error) and old[0].code == "bad_message"
    # (it said "49 was already used" of a number never sent: a docs-only client trial)
    assert old[0].message.startswith("sequence number 49 is not above ")
    assert race.seats[joined[0].you].state.moves == 1


def test_another_command_with_a_number_used_is_refused_not_answered_as_the_first() -> None:
    """A client that reuses a number for another command got the first one's answer and its
    command was silently not done (a leave answered as the kick before it)."""
    h = Harness()
    code, (ann, _bob), _ = h.room(None, "Ann", "Bob")
    kicked = h.cmd(ann, Kick(seq=101, id=99))
    assert isinstance(kicked, Error) and kicked.code == "not_in_room"
    reused = h.cmd(ann, Leave(seq=101))
    assert isinstance(reused, Error) and reused.code == "bad_message"
    assert reused.message.startswith("sequence number 101 was already used for kick")
    assert 1 in h.hub.rooms[code].members  # not left
    again = h.cmd(ann, Kick(seq=101, id=99))  # the same command again: the same answer
    assert again == kicked
    listed = h.cmd(ann, ListRooms(seq=102))  # read-only: answered afresh, yet its own number
    assert isinstance(listed, RoomList)
    other = h.cmd(ann, Leave(seq=102))
    assert isinstance(other, Error) and other.code == "bad_message"
    assert isinstance(h.cmd(ann, Leave(seq=103)), Ack)


def test_the_same_kind_of_command_with_a_number_used_is_refused_too() -> None:
    """A bot that never counts up: a resign sent with its deal's number got the deal's answer
    back, and the resign was silently not done."""
    h = Harness()
    code, (ann, _bob), joined = h.race(None, "Ann", "Bob")
    dealt = h.cmd(ann, MoveCmd(seq=500, move=WireMove(kind="deal")))
    assert isinstance(dealt, Moved)
    resign = h.cmd(ann, MoveCmd(seq=500, move=WireMove(kind="resign")))
    assert isinstance(resign, Error) and resign.code == "bad_message"
    assert "already used for another move" in resign.message
    race = h.hub.rooms[code].race
    assert race is not None and race.seats[joined[0].you].status == "playing"
    assert h.cmd(ann, MoveCmd(seq=500, move=WireMove(kind="deal"))) == dealt  # a true repeat


def test_a_spectators_move_is_not_a_player_in_the_lobby_too() -> None:
    """Watching is the reason, whatever the room's state (the lobby said race_not_running)."""
    h = Harness()
    code, (ann,), _ = h.room(None, "Ann")
    cy = h.connect()
    h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy", spectate=True))
    refused = h.cmd(cy, MoveCmd(seq=0, move=WireMove(kind="deal")))
    assert isinstance(refused, Error) and refused.code == "not_a_player"
    early = h.cmd(ann, MoveCmd(seq=0, move=WireMove(kind="deal")))
    assert isinstance(early, Error) and early.code == "race_not_running"


def test_a_watcher_in_the_lobby_takes_a_free_seat_with_ready() -> None:
    """A watcher who decided to race had no way but to leave and join again (a race-night
    trial): their ready in the lobby takes a free seat; with none free it is room_full, and
    outside the lobby a watcher is still not a player."""
    h = Harness()
    code, (ann, bob), _ = h.room(Settings(seats=3), "Ann", "Bob")
    room = h.hub.rooms[code]
    watchers = []
    for name in ("Cy", "Dee"):
        c = h.connect()
        j = h.cmd(c, JoinRoom(seq=0, code=code, name=name, spectate=True))
        assert isinstance(j, Joined) and j.role == "spectator"
        watchers.append((c, j.you))
    (cy, cy_id), (dee, _dee_id) = watchers
    assert isinstance(h.cmd(cy, Ready(seq=0)), Ack)
    assert room.members[cy_id].role == "player" and room.members[cy_id].ready
    full = h.cmd(dee, Ready(seq=0))
    assert isinstance(full, Error) and full.code == "room_full"
    for c in (ann, bob):
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    assert room.state == "countdown" and sorted(room.race.seats) == [1, 2, cy_id]  # type: ignore[union-attr]
    refused = h.cmd(dee, Ready(seq=0))
    assert isinstance(refused, Error) and refused.code == "not_a_player"


def test_a_second_hello_is_refused() -> None:
    h = Harness()
    c = h.connect()
    again = h.cmd(c, Hello(seq=0, version=PROTOCOL_VERSION))
    assert isinstance(again, Error) and again.code == "bad_message"
    assert "once" in again.message
    assert isinstance(h.cmd(c, ListRooms(seq=0)), RoomList)  # the connection goes on


@pytest.mark.parametrize(("away_for", "seated"), [(2.0, True), (50.0, False)])
def test_a_ready_player_long_gone_sits_the_race_out(away_for: float, seated: bool) -> None:
    """Bob got ready and his laptop slept; a minute later Ann started: Bob was seated, and put
    out as disconnected half a minute into the race.  Only a drop of a moment (a blip as the
    race starts) keeps a ready player in it."""
    h = Harness(grace_s=120.0)
    code, (ann, bob), joined = h.room(None, "Ann", "Bob")
    assert isinstance(h.cmd(bob, Ready(seq=0)), Ack)
    h.hub.disconnect(bob, h.now)
    h.tick(away_for)
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    race = h.hub.rooms[code].race
    assert race is not None
    assert (joined[1].you in race.seats) is seated
    assert joined[1].you in h.hub.rooms[code].members  # the seat stays, for the next race


def test_a_seat_dropped_after_the_grace_and_a_countdown_are_logged_as_they_are(
    lines: Lines,
) -> None:
    """A lobby seat let go after the grace was a second `disconnected` line (read as a second
    drop); a countdown said `players=2` for a race of one (it counted the seats, not racers)."""
    h = Harness(grace_s=30.0)
    code, (ann, bob), joined = h.room(None, "Ann", "Bob")
    h.hub.disconnect(bob, h.now)
    h.tick(31.0)
    assert [f["player"] for f in lines.events("disconnected")] == [f"{joined[1].you}:Bob"]
    assert [f["player"] for f in lines.events("seat_released")] == [f"{joined[1].you}:Bob"]
    cy = h.connect()
    h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy"))
    h.hub.disconnect(cy, h.now)
    h.tick(20.0)  # Cy, away and not ready, sits the race out
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    assert [f["players"] for f in lines.events("countdown")] == [1]


def test_a_race_with_no_move_still_tells_its_clock_now_and_then() -> None:
    """A client that got the start late (a stalled link) ran its clock behind until somebody
    moved: the progress, with the race's elapsed time, now goes out every 5 s regardless."""
    h = Harness(grace_s=60.0)
    _code, (ann, _bob), _ = h.race(None, "Ann", "Bob")
    h.tick(1.0)
    h.clear()
    for _ in range(12):
        h.tick(0.5)
    sent = h.got(ann, ProgressUpdate)
    assert len(sent) == 1 and 5_000 <= sent[0].elapsed_ms <= 7_100


def test_rate_limit_refuses_then_closes_and_refills_with_time() -> None:
    h = Harness(rate=1.0, burst=3, max_limited=3)
    c = h.connect()  # hello took one
    assert isinstance(h.cmd(c, ListRooms(seq=0)), RoomList)
    assert isinstance(h.cmd(c, ListRooms(seq=0)), RoomList)
    refused = h.cmd(c, ListRooms(seq=0))
    assert isinstance(refused, Error) and refused.code == "rate_limited"
    assert refused.message == (
        "too many messages: this one was not done; wait 1000 ms "
        "(at most 1 a second, 3 at once); 2 more refused and this connection is closed"
    )
    h.now += 1.0  # one more token
    assert isinstance(h.cmd(c, ListRooms(seq=0)), RoomList)
    h.cmd(c, ListRooms(seq=0))
    assert c not in h.closed
    h.cmd(c, ListRooms(seq=0))
    assert h.closed[c] == 4429


def test_bucket() -> None:
    b = TokenBucket(rate=2.0, burst=2, now=0.0)
    assert [b.take(0.0), b.take(0.0), b.take(0.0)] == [True, True, False]
    assert b.take(0.5) and not b.take(0.5)
    assert b.take(100.0) and b.take(100.0) and not b.take(100.0)  # never more than the burst


def test_a_bad_message_now_and_then_is_forgiven() -> None:
    """The count of bad messages lasted a connection's life: a client trying, now and then, a
    command only a newer server knows was cut after ten of them over hours (a docs-only client
    trial). Each is forgiven after ``bad_forget_s``; ten in a row still close."""
    h = Harness(max_bad=3, bad_forget_s=60.0)
    c = h.connect()
    for _ in range(10):
        h.take(h.hub.bad_input(c, "unknown_type", "x", 5, h.now))
        h.tick(61.0)
    assert c not in h.closed
    for _ in range(3):
        h.take(h.hub.bad_input(c, "unknown_type", "x", 5, h.now))
    assert h.closed[c] == 4400
    # one forgiven a minute, as docs/protocol.md says: two at once, then two a minute later
    # (one of the first two forgiven by then) close it
    d = h.connect()
    for _ in range(2):
        h.take(h.hub.bad_input(d, "unknown_type", "x", 5, h.now))
    h.tick(61.0)
    h.take(h.hub.bad_input(d, "unknown_type", "x", 5, h.now))
    assert d not in h.closed
    h.take(h.hub.bad_input(d, "unknown_type", "x", 5, h.now))
    assert h.closed[d] == 4400


def test_bad_input_closes_after_max_bad_and_hello_first_counts() -> None:
    h = Harness(max_bad=3)
    c = h.connect(hello=False)
    answer = h.cmd(c, ListRooms(seq=1))  # answered with its seq, as every command is
    assert isinstance(answer, Error) and answer.code == "hello_first"
    h.take(h.hub.bad_input(c, "bad_frame", "x", None, h.now))
    assert c not in h.closed
    h.take(h.hub.bad_input(c, "bad_frame", "x", None, h.now))
    assert h.closed[c] == 4400
    # a server event sent as a command
    d = h.connect()
    h.take(
        h.hub.handle(
            d, Welcome(seq=1, version="1.0", server="x", max_frame=1, rate=1.0, burst=1), h.now
        )
    )
    # as docs/protocol.md says: bad_message, answered with its seq (it was unknown_type, no seq)
    refused = h.inbox[d][-1]
    assert isinstance(refused, Error) and (refused.code, refused.seq) == ("bad_message", 1)


def test_version_mismatch_is_refused_and_closed() -> None:
    h = Harness()
    c = h.connect(hello=False)
    answer = h.cmd(c, Hello(seq=0, version="2.0"))
    assert isinstance(answer, Error) and answer.code == "version_mismatch"
    assert h.closed[c] == 4426
    assert not h.hub.conns[c].hello


def test_no_hello_and_idle_connections_are_closed_but_not_racers() -> None:
    h = Harness(hello_timeout_s=10.0, idle_timeout_s=900.0, race_idle_s=0)
    silent = h.connect(hello=False)
    h.tick(9.9)
    assert silent not in h.closed
    h.tick(0.1)
    assert h.closed[silent] == 4408
    _code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    lurker = h.connect()
    h.tick(899.5)
    assert lurker not in h.closed
    h.tick(1.0)
    assert h.closed.get(lurker) == 4408
    assert ann not in h.closed and bob not in h.closed  # racing: thinking is allowed


def test_silent_racers_are_closed_as_idle_soon_after_their_race_ends() -> None:
    h = Harness(idle_timeout_s=30.0)
    code, (ann, bob), _ = h.race(Settings(mode="score", time_limit=60), "Ann", "Bob")
    for _ in range(50):  # 50 s of silence: past the idle timeout, but racing
        h.tick(1.0)
    assert ann not in h.closed and bob not in h.closed
    for _ in range(10):
        h.tick(1.0)
    assert h.hub.rooms[code].state == "results"
    h.tick(1.0)
    h.tick(1.0)
    assert h.closed.get(ann) == 4408 and h.closed.get(bob) == 4408


def test_resume_elsewhere_closes_the_old_connection_4409() -> None:
    h = Harness()
    code, (ann, _bob), joined = h.room(None, "Ann", "Bob")
    other = h.connect()
    snap = h.cmd(other, Resume(seq=0, code=code, token=joined[0].token))
    assert isinstance(snap, Snapshot) and snap.you == joined[0].you
    assert h.closed[ann] == 4409
    assert h.hub.rooms[code].members[joined[0].you].conn == other
    # the old connection is out of the room: its commands no longer count for the seat
    refused = h.cmd(ann, Ready(seq=0))
    assert isinstance(refused, Error) and refused.code == "not_in_room"


def test_drain_tells_everyone_and_takes_nobody_new() -> None:
    h = Harness()
    _code, conns, _ = h.room(None, "Ann", "Bob")
    lone = h.connect()
    h.take(h.hub.drain(retry_ms=777))
    for c in (*conns, lone):
        notice = h.got(c, Notice)
        assert len(notice) == 1 and notice[0].retry_ms == 777
        assert h.closed[c] == 1012
    assert h.hub.connect(h.now) is None
    refused = h.cmd(lone, CreateRoom(seq=0, name="Cy", settings=Settings()))
    assert isinstance(refused, Error) and refused.code == "shutting_down"


# -- small pure pieces ---------------------------------------------------------------------------


def test_codes_and_names() -> None:
    assert normalize_code("k7qm-x2pf ") == "K7QMX2PF"
    assert check_name("  Ann \t Lee ") == "Ann Lee"
    assert check_name("x" * 24) == "x" * 24
    for bad in ("", "  ", "x" * 25, "a\x00b", "a\u200db", "\ue000"):
        with pytest.raises(Exception) as refused:
            check_name(bad)
        assert getattr(refused.value, "code", None) == "bad_name"


def test_names_that_speak_for_the_viewer_or_split_a_list_are_refused() -> None:
    """A text trial: a player named ``you`` read as the viewer on everyone's screen ("Won by
    you", "waiting for you"); ``Cat, 1 Troll`` read as two people in the host's list to remove
    one from (its ``1`` removed Amy); ``Bob left; you won`` forged a message; a Thai tone mark,
    a Cyrillic titlo or a CJK tone mark on ``Ann`` passed for her; trigrams, which terminals draw
    one cell wide and the screens measured as two, pushed the race panel's scores aside."""
    from protocol.names import BadName, clashes, normalize

    for spoken in ("you", "You", "YOU", " you "):
        with pytest.raises(BadName, match="speak of their viewer"):
            normalize(spoken)
    for listed in (
        "Cat, 1 Troll",
        "Bob left; you won",
        "Server: you won",
        "Ann，B",
        "ꓚꓮꓔꓹ 1ꓽ ꓔꓣꓳꓡꓡ",  # Lisu tone letters: a comma and a colon to look at (a review)
        "Amy 1ː Troll",
        "Amy、1 Troll",
        "Amyˏ Bob",
        "Amyˌ Bob",
    ):
        with pytest.raises(BadName, match=", : ;"):
            normalize(listed)
    for foreign in ("Ann\u0e47", "Ann\u0483", "Ann\u05bf", "Ann\u17c9", "Bob\u0488"):
        with pytest.raises(BadName, match="one alphabet"):
            normalize(foreign)
    for speck in ("Ann\u302a", "Ann\u0951"):
        assert clashes(normalize(speck), ["Bob", "Ann"]) == "Ann", speck
    with pytest.raises(BadName, match="trigram"):
        normalize("A\u2630\u2630")
    for fine in ("Youssef", "you 2", "Yuki", "राम", "ราม้", "Nguyễn Văn", "ダン", "दुःख", "અતઃ"):
        assert normalize(fine), fine


def test_names_that_pass_for_another_clash_and_emoji_are_names() -> None:
    """Beside an Ann: her name with an accent, a mark, a dot or an apostrophe, or with a letter
    of another alphabet that looks like hers, could pass for her (fairness trial); emoji that
    a player would pick (a joker, a football, a cup) are taken, stars and asterisks are not
    (they could pass for the screens' marks; new-user trial)."""
    from protocol.names import BadName, clashes, normalize

    for alike in ("Ann\u0345", "Ann·", "Ann.", "Ann'", "Ann\u02bc", "Ánn", "A\u0301nn"):
        assert clashes(normalize(alike), ["Bob", "Ann"]) == "Ann", alike
    for mixed in ("A\u1952n", "An\u043f", "\u0410nn b"):  # Tai Le NA, Cyrillic pe, A
        with pytest.raises(BadName, match="one alphabet"):
            normalize(mixed)
    for fine in ("Anna", "Ann 2", "Zoë", "Владимир", "山田たろう", "김민준", "O'Neil"):
        assert clashes(normalize(fine), ["Ann", "Bot"]) is None, fine
    for emoji in ("山田🃏太郎", "Ann ⚽", "Ann ☕", "Ann ❤", "Ann ♠", "Ann 🂡", "Ann 🇫🇷", "Ann 🎉"):
        assert normalize(emoji) == emoji
    for star in ("Ann ⭐", "Ann ★", "Ann ✱", "Ann ✳", "Ann ❄", "Ann ✨", "Ann ⚹", "Ann 🌟"):
        with pytest.raises(BadName, match="stars"):
            normalize(star)
    # (review) brackets' look-alikes among the pictures; an emoji picker's U+FE0F after a
    # picture is taken and kept, nowhere else; the letters' own marks tell names apart
    for bracket in ("Ann ☾host☽", "Bob ⛤"):
        with pytest.raises(BadName, match="brackets"):
            normalize(bracket)
    assert normalize("Ann ❤\ufe0f") == "Ann ❤\ufe0f" and normalize("✈\ufe0f Pilot")
    for sequence in ("Ann 👍🏽", "👨\u200d👩\u200d👧 Ann", "Ann 🏳\ufe0f\u200d🌈"):  # (review)
        assert normalize(sequence) == sequence
    for loose in ("Ann\u200dB", "Ann 👍\u200d", "A🏽nn"):
        with pytest.raises(BadName):
            normalize(loose)
    assert clashes(normalize("Ann ❤\ufe0f"), ["Ann ❤"]) == "Ann ❤"
    with pytest.raises(BadName, match="invisible"):
        normalize("A\ufe0fnn")
    # a name's accents are not capped in all, only on a letter (a cap of 8 refused a real
    # Vietnamese name and eleven é's: a protocol trial); towers of marks still are
    for accented in ("Phạm Nhật Vượng Trường", "é" * 11, "É" * 12, "रामचन्द्रकृष्णमूर्ति"):
        assert normalize(accented) == accented
    with pytest.raises(BadName, match="on one letter"):
        normalize("Ann" + "́̂̃")
    # white space of any kind is one space, as the protocol says (it said "runs of spaces")
    for spaced in ("Ann\tBob", "Ann\nBob", "Ann \r\n Bob", "\tAnn Bob\u2028"):
        assert normalize(spaced) == "Ann Bob", spaced
    for a, b in (("राम", "रमा"), ("अमित", "अमीत"), ("ปู", "ปี"), ("โจ", "โจ้"), ("ダン", "タン")):
        assert clashes(normalize(a), [b]) is None, (a, b)
    # the refusal quotes both names (a name ending in a full stop read "as Ann..")
    h = Harness()
    code, _, _ = h.room(None, "Ann")
    refused = h.cmd(h.connect(), JoinRoom(seq=0, code=code, name="Ann."))
    assert isinstance(refused, Error) and refused.code == "name_taken"
    assert (
        refused.message
        == "someone in this room is already called “Ann”, which looks the same as “Ann.”"
    )


@pytest.mark.parametrize("number", [1, 2**63, 2**64 - 1, 2**64, 10**20 - 1, 10**20])
def test_deal_numbers_of_every_size_cross_the_wire(number: int) -> None:
    reveal = Reveal(
        game="spider", options={}, numbering="pysolfc", number=number, salt="s", commitment="c"
    )
    over = RaceOver(race_id="r", reason="all_done", standings=[], reveal=reveal)
    back = decode(encode(over))
    assert isinstance(back, RaceOver) and back.reveal.number == number
    create = CreateRoom(seq=1, name="Ann", settings=Settings(deal_number=number))
    again = decode(encode(create))
    assert isinstance(again, CreateRoom) and again.settings.deal_number == number


def test_a_room_takes_32_spectators_then_is_full() -> None:
    h = Harness(rate=1000.0, burst=1000)
    code, _conns, _ = h.room(Settings(seats=2), "Ann", "Bob")
    for i in range(32):
        c = h.connect()
        j = h.cmd(c, JoinRoom(seq=0, code=code, name=f"W{i}"))
        assert isinstance(j, Joined) and j.role == "spectator"
    late = h.connect()
    refused = h.cmd(late, JoinRoom(seq=0, code=code, name="Late"))
    assert isinstance(refused, Error) and refused.code == "room_full"
    assert len(h.hub.rooms[code].members) == 34


def test_a_countdown_every_player_left_closes_the_room_for_its_spectators() -> None:
    """With every player gone in the countdown, the room of watchers closes (it went on to an
    empty race and its results; and the hub fuzz found a watcher made host, racing nobody):
    the deal committed to is never revealed, no card having been sent."""
    h = Harness()
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    cy = h.connect()
    h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy", spectate=True))
    for c in (ann, bob):
        h.cmd(c, Ready(seq=0))
    assert h.hub.rooms[code].state == "countdown"
    for c in (ann, bob):
        h.cmd(c, Leave(seq=0))
    assert code not in h.hub.rooms
    assert [k.message for k in h.got(cy, Kicked)] == [
        f"room {display_code(code)} closed: no player was left in the room"
    ]
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert not h.got(cy, RaceStart) and not h.got(cy, RaceOver)


def test_a_connection_silent_from_the_start_closes_at_the_sooner_timeout() -> None:
    h = Harness(hello_timeout_s=10.0, idle_timeout_s=4.0)
    silent = h.connect(hello=False)
    h.tick(3.9)
    assert silent not in h.closed
    h.tick(0.2)
    assert h.closed[silent] == 4408


def test_the_hosts_start_on_the_results_goes_to_the_lobby_without_starting() -> None:
    """The host's s on the results: the lobby at once, the host not ready (to set the next race
    up: with bots, who get ready at once, it used to start a countdown straight away)."""
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.move(ann, kind="resign")
    h.move(bob, kind="resign")
    assert isinstance(h.cmd(bob, Rematch(seq=0)), Ack)
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    room = h.hub.rooms[code]
    assert room.state == "lobby"
    assert {m.name: m.ready for m in room.members.values()} == {"Ann": False, "Bob": True}
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=Settings(game="louis"))), Ack)
    assert isinstance(h.cmd(bob, Ready(seq=0)), Ack)
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    assert room.state == "countdown" and room.config.game == "louis"


def test_who_came_to_play_takes_a_seat_freed_in_the_lobby() -> None:
    """Joined a full race to play: when the host adds seats in the lobby (or someone leaves),
    they take one (they stayed watching, with a free seat in front of them)."""
    h = Harness()
    code, (ann, bob), _ = h.race(Settings(seats=2), "Ann", "Bob")
    cy = h.connect()
    joined = h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy"))
    assert isinstance(joined, Joined) and joined.role == "spectator"
    for c in (ann, bob):
        h.move(c, kind="resign")
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)  # the lobby: still two seats, both taken
    room = h.hub.rooms[code]
    assert room.state == "lobby" and room.members[3].role == "spectator"
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=Settings(seats=3))), Ack)
    assert room.members[3].role == "player" and not room.members[3].ready


def test_a_racer_away_is_left_to_the_grace_period_not_timed_out_for_idling() -> None:
    h = Harness(race_idle_s=45, grace_s=60)
    code, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.take(h.hub.disconnect(bob, h.now))
    h.tick(40)
    assert isinstance(h.move(ann, kind="deal"), Moved)  # Ann plays on
    h.tick(10)  # Bob: 50 s away without a move, past the idle limit
    seat = h.hub.rooms[code].race.seats[2]
    assert seat.status == "playing"  # away: the grace period decides, not the idle limit
    h.tick(11)
    assert seat.status == "disconnected"


def test_a_racer_back_from_a_drop_who_never_moves_is_still_timed_out() -> None:
    """Away, the idle limit passes them by; back, it counts again (it was not looked at again
    once nobody connected was left playing: the race waited for ever)."""
    h = Harness(race_idle_s=45, grace_s=60)
    code, (ann, bob), joined = h.race(Settings(), "Ann", "Bob")
    h.take(h.hub.disconnect(bob, h.now))
    h.move(ann, kind="resign")
    h.tick(50)
    bob2 = h.connect()
    back = h.cmd(bob2, Resume(seq=0, code=code, token=joined[1].token))
    assert isinstance(back, Snapshot)
    seat = h.hub.rooms[code].race.seats[2]
    h.tick(0.1)
    assert seat.status == "left"  # 50 s without a move, here again: out
    assert h.got(ann, RaceOver)


def test_a_time_limit_does_not_run_out_during_a_drain() -> None:
    """The race clock stops when a drain begins: the time limit's last seconds are played after
    the restart, not run out while nobody can move."""
    h = Harness()
    code, _, _ = h.race(Settings(mode="score", time_limit=2), "Ann", "Bob")
    h.tick(1.0)
    h.take(h.hub.drain())
    h.tick(5.0)
    assert h.hub.rooms[code].state == "racing"


def test_a_countdown_does_not_start_a_race_during_a_drain() -> None:
    """A countdown that ran out while the drain waited for connections to close started a race
    nobody was sent, its clock running after the restart with everyone away (a review): it stays
    a countdown, held after the restart until everyone is back."""
    h = Harness(countdown_ms=3000)
    code, conns, _ = h.room(Settings(), "Ann", "Bob")
    for c in conns:
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    assert h.hub.rooms[code].state == "countdown"
    h.take(h.hub.drain())
    h.tick(5.0)
    assert h.hub.rooms[code].state == "countdown"
    assert not any(h.got(c, RaceStart) for c in conns)


def test_someone_removed_by_the_host_cannot_rejoin_at_once() -> None:
    """A stranger who rejoins as fast as the host removes them held a public room's start for
    good: their address is kept out of that room for a while (not the host's own machine's)."""
    h = Harness(kicked_out_s=60.0)

    def connect(peer: str) -> int:
        cid = h.hub.connect(h.now, peer)
        assert cid is not None
        assert isinstance(h.cmd(cid, Hello(seq=0, version=PROTOCOL_VERSION)), Welcome)
        return cid

    ann = connect("203.0.113.1")
    joined = h.cmd(ann, CreateRoom(seq=0, name="Ann", settings=Settings()))
    assert isinstance(joined, Joined)
    code = joined.room.code
    mal = connect("198.51.100.7")
    j = h.cmd(mal, JoinRoom(seq=0, code=code, name="Mal"))
    assert isinstance(j, Joined)
    assert isinstance(h.cmd(ann, Kick(seq=0, id=j.you)), Ack)
    told = h.got(mal, Kicked)  # how long, said (it was not: a race-night trial)
    assert told[-1].message.endswith(": you may join it again in 1 min"), told
    again = h.cmd(mal, JoinRoom(seq=0, code=code, name="Mal 2"))
    assert isinstance(again, Error) and again.code == "rate_limited"
    assert "removed you" in again.message
    # a friend at the host's own computer, removed, may come back (a bot replaced, say)
    friend = connect("203.0.113.1")
    jf = h.cmd(friend, JoinRoom(seq=0, code=code, name="Bob"))
    assert isinstance(jf, Joined)
    assert isinstance(h.cmd(ann, Kick(seq=0, id=jf.you)), Ack)
    assert (
        h.got(friend, Kicked)[-1].message == f"the host removed you from room {code[:4]}-{code[4:]}"
    )
    assert isinstance(h.cmd(friend, JoinRoom(seq=0, code=code, name="Bob")), Joined)
    # and the stranger after the while
    h.tick(61.0)
    mal_j = h.cmd(mal, JoinRoom(seq=0, code=code, name="Mal"))
    assert isinstance(mal_j, Joined)
    # removed while away: kept out all the same, and its seat's token says why (it was let
    # straight back in: a review)
    h.hub.disconnect(mal, h.now)
    assert isinstance(h.cmd(ann, Kick(seq=0, id=mal_j.you)), Ack)
    back = connect("198.51.100.7")
    refused = h.cmd(back, Resume(seq=0, code=code, token=mal_j.token))
    assert isinstance(refused, Error) and refused.code == "bad_token"
    assert refused.message.startswith("the host removed you from room")
    assert refused.message.endswith(": you may join it again in 1 min")  # how long, said
    again = h.cmd(back, JoinRoom(seq=0, code=code, name="Mal"))
    assert isinstance(again, Error) and again.code == "rate_limited"


def test_the_host_cannot_remove_a_player_during_the_countdown() -> None:
    """docs/protocol.md: ``kick`` is for the host "not during a countdown or race": the race
    about to start has its seats, and one removed in its countdown was in its results as having
    left a race they never had a chance to play."""
    h = Harness()
    code, (ann, bob, cy), joined = h.room(None, "Ann", "Bob", "Cy")
    for c in (ann, bob, cy):
        assert isinstance(h.cmd(c, Ready(seq=0)), Ack)
    room = h.hub.rooms[code]
    assert room.state == "countdown"
    refused = h.cmd(ann, Kick(seq=0, id=joined[2].you))
    assert isinstance(refused, Error) and refused.code == "wrong_state"
    assert joined[2].you in room.members and not h.got(cy, Kicked)
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert room.state == "racing" and room.race is not None
    assert room.race.seats[joined[2].you].status == "playing"


def test_joining_rooms_has_a_budget_per_address() -> None:
    """A join and a leave, over and over, from one address: two log lines and a database write
    each, as fast as the command rate allowed; past the budget, rate_limited."""
    h = Harness(join_rate=0.5, join_burst=5)
    host = h.hub.connect(h.now, "203.0.113.1")
    assert host is not None
    h.cmd(host, Hello(seq=0, version=PROTOCOL_VERSION))
    joined = h.cmd(host, CreateRoom(seq=0, name="Ann", settings=Settings()))
    assert isinstance(joined, Joined)
    mal = h.hub.connect(h.now, "198.51.100.7")
    assert mal is not None
    h.cmd(mal, Hello(seq=0, version=PROTOCOL_VERSION))
    answers = []
    for _ in range(8):
        answers.append(h.cmd(mal, JoinRoom(seq=0, code=joined.room.code, name="Mal")))
        h.send(mal, Leave(seq=0))
    assert [type(a).__name__ for a in answers[:5]] == ["Joined"] * 5
    assert all(isinstance(a, Error) and a.code == "rate_limited" for a in answers[5:])
    assert answers[5].message == "your address is joining rooms too fast: try again in 2 s"  # type: ignore[union-attr]
    h.tick(2.0)  # one more a two seconds
    assert isinstance(h.cmd(mal, JoinRoom(seq=0, code=joined.room.code, name="Mal")), Joined)


def _peer(h: Harness, address: str) -> int:
    cid = h.hub.connect(h.now, address)
    assert cid is not None
    h.cmd(cid, Hello(seq=0, version=PROTOCOL_VERSION))
    return cid


def _room_from_two_addresses(h: Harness) -> tuple[str, int, int]:
    """Ann's room (from 203.0.113.1, its owner) with Bob in it (from 198.51.100.7)."""
    ann = _peer(h, "203.0.113.1")
    joined = h.cmd(ann, CreateRoom(seq=0, name="Ann", settings=Settings()))
    assert isinstance(joined, Joined)
    bob = _peer(h, "198.51.100.7")
    h.cmd(bob, JoinRoom(seq=0, code=joined.room.code, name="Bob"))
    return joined.room.code, ann, bob


def test_a_wrong_code_costs_a_join_and_a_wrong_resume_too() -> None:
    """Misses were free: one address guessed private codes 550 times a second.  Now every join
    is charged before the code is looked up, and a resume that misses (no such room, a token
    that holds no seat) is charged as a join; once out of joins, its misses say nothing.  A
    resume that finds its seat is never refused for joins (a club behind one address had just
    spent them all joining, and its first dropped player lost the seat for good)."""
    h = Harness(join_rate=0.5, join_burst=4)
    code, (_ann,), (joined,) = h.room(Settings(private=True), "Ann")
    mal = _peer(h, "198.51.100.7")
    answers = [h.cmd(mal, JoinRoom(seq=0, code="ZZZZZZZZ", name="Mal")) for _ in range(2)]
    answers += [h.cmd(mal, Resume(seq=0, code="ZZZZZZZZ", token="x" * 43)) for _ in range(2)]
    assert [a.code for a in answers] == ["room_not_found"] * 4  # type: ignore[union-attr]
    late = h.cmd(mal, JoinRoom(seq=0, code=code, name="Mal"))  # the right code, too late
    assert isinstance(late, Error) and late.code == "rate_limited"
    again = h.cmd(mal, Resume(seq=0, code=code, token="x" * 43))
    assert isinstance(again, Error) and again.code == "rate_limited"
    assert again.message == "your address is guessing at seats too fast: try again in 2 s"
    # the same address, out of joins, takes a seat that is its own back
    ann_again = _peer(h, "198.51.100.7")
    assert isinstance(h.cmd(ann_again, Resume(seq=0, code=code, token=joined.token)), Snapshot)
    h.tick(2.0)  # one join back
    assert isinstance(h.cmd(mal, JoinRoom(seq=0, code=code, name="Mal")), Joined)
    # a resume that finds its seat costs no join
    h2 = Harness(join_rate=0.5, join_burst=1)
    code2, (_bob,), (jb,) = h2.room(None, "Bob")
    for _ in range(3):
        again_bob = _peer(h2, "203.0.113.9")
        assert isinstance(h2.cmd(again_bob, Resume(seq=0, code=code2, token=jb.token)), Snapshot)


def test_opening_connections_has_a_budget_per_address() -> None:
    """One address opened and closed a thousand connections a second, each a handshake, a
    resume or a guess, and a log line."""
    h = Harness(connect_rate=1.0, connect_burst=3)
    for _ in range(3):
        cid = h.hub.connect(h.now, "198.51.100.7")
        assert cid is not None
        h.hub.disconnect(cid, h.now)
    assert h.hub.connect(h.now, "198.51.100.7") is None
    assert h.hub.refused_why == "connecting_too_fast"
    assert h.hub.connect(h.now, "203.0.113.1") is not None  # another address is not affected
    h.tick(1.0)
    assert h.hub.connect(h.now, "198.51.100.7") is not None


def test_taking_seats_back_has_a_budget_per_address() -> None:
    """Each resume tells the whole room: 300 a second from one address got the others cut for
    not reading fast enough."""
    h = Harness(resume_rate=1.0, resume_burst=3)
    code, (_ann, _bob), (_ja, jb) = h.room(None, "Ann", "Bob")
    answers = []
    for _ in range(5):
        again = _peer(h, "198.51.100.7")
        answers.append(h.cmd(again, Resume(seq=0, code=code, token=jb.token)))
    assert [type(a).__name__ for a in answers] == ["Snapshot"] * 3 + ["Error"] * 2
    assert answers[-1].code == "rate_limited"  # type: ignore[union-attr]
    assert h.hub.metrics["resumes_refused_rate"] == 2
    h.tick(1.0)
    assert isinstance(
        h.cmd(_peer(h, "198.51.100.7"), Resume(seq=0, code=code, token=jb.token)), Snapshot
    )


def test_the_public_list_is_made_once_a_second_but_opens_and_closes_at_once() -> None:
    """Made for each call from every room, the list let one address saturate a core."""
    h = Harness()
    code, (_ann,), _ = h.room(None, "Ann")
    eve = _peer(h, "198.51.100.7")
    first = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(first, RoomList) and [r.players for r in first.rooms] == [1]
    bob = _peer(h, "203.0.113.2")
    h.cmd(bob, JoinRoom(seq=0, code=code, name="Bob"))
    same = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(same, RoomList) and [r.players for r in same.rooms] == [1]  # a second old
    code2, (cy,), _ = h.room(None, "Cy")  # a new room is there at once
    opened = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(opened, RoomList) and {r.code for r in opened.rooms} == {code, code2}
    h.cmd(cy, UpdateSettings(seq=0, settings=Settings(private=True)))  # and gone private at once
    hidden = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(hidden, RoomList) and [r.code for r in hidden.rooms] == [code]
    h.tick(1.0)
    fresh = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(fresh, RoomList) and [r.players for r in fresh.rooms] == [2]


def test_a_few_addresses_cannot_fill_the_public_list() -> None:
    """Rooms were listed in the order they opened, the first 100: ten addresses holding ten rooms
    each kept every room opened after theirs off the list (a hostile trial).  Now at most five
    rooms of one address, the joinable first and the newest first."""
    h = Harness()
    squats = []
    for k in range(8):
        squatter = _peer(h, "198.51.100.7")
        joined = h.cmd(squatter, CreateRoom(seq=0, name=f"Squat{k}", settings=Settings()))
        assert isinstance(joined, Joined)
        squats.append(joined.room.code)
        h.tick(1.0)
    racing, _, _ = h.race(None, "Ann", "Bob")  # from another address: a race under way
    ann = _peer(h, "203.0.113.2")
    mine = h.cmd(ann, CreateRoom(seq=0, name="Cy", settings=Settings()))
    assert isinstance(mine, Joined)
    eve = _peer(h, "192.0.2.9")
    listed = h.cmd(eve, ListRooms(seq=0))
    assert isinstance(listed, RoomList)
    codes = [r.code for r in listed.rooms]
    assert codes[0] == mine.room.code  # the newest lobby with a free seat
    assert codes[1:6] == squats[::-1][:5]  # five of the squatter's, its newest
    assert codes[6:] == [racing]  # a race after the lobbies


def test_read_only_answers_are_not_kept_and_their_repeat_is_answered_afresh() -> None:
    """A list of rooms or a whole race record kept 16 times per connection (and written to the
    database for a seat) was memory outside every bound."""
    h = Harness()
    code, (ann,), _ = h.room(None, "Ann")
    first = h.cmd(ann, ListRooms(seq=50))
    assert isinstance(first, RoomList)
    member = h.hub.rooms[code].members[1]
    assert member.seqs.answers[50] == ()
    again = h.cmd(ann, ListRooms(seq=50))  # the same number again: run again, not refused
    assert isinstance(again, RoomList)
    older = h.cmd(ann, ListRooms(seq=49))  # numbers still go up
    assert isinstance(older, Error) and older.code == "bad_message"


def test_players_gone_while_their_start_waits_make_no_race_of_nobody() -> None:
    """Ann and Bob ready, the start waiting on the room's race budget, both gone: once the
    budget let it, a race of nobody started and ended at once, its deal published in a record
    of no players (after a restart with nobody back, every time)."""
    h = Harness(race_rate=0.05, race_burst=1, grace_s=120.0)
    code, ann, bob = _room_from_two_addresses(h)
    tokens = [j.token for j in h.got(ann, Joined) + h.got(bob, Joined)]
    h.cmd(bob, Ready(seq=0))
    h.cmd(ann, Start(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    room = h.hub.rooms[code]
    for c in (ann, bob):
        h.move(c, kind="resign")
    h.cmd(bob, Rematch(seq=0))
    h.cmd(ann, Rematch(seq=0))  # both asked: the lobby, both ready, the budget spent
    assert room.state == "lobby" and code in h.hub.awaiting_start
    finished = len(h.hub.finished)
    for c in (ann, bob):
        h.take(h.hub.disconnect(c, h.now))
    for _ in range(30):
        h.tick(1.0)
    assert room.state == "lobby" and room.race is None
    assert len(h.hub.finished) == finished  # no record of nobody
    # both back, both ready: the race they were waiting for starts (it waited for ever)
    assert all(m.ready for m in room.members.values())
    for address, token in zip(("203.0.113.1", "198.51.100.7"), tokens, strict=True):
        back = _peer(h, address)
        assert isinstance(h.cmd(back, Resume(seq=0, code=code, token=token)), Snapshot)
    assert room.state == "countdown" and len(room.race.seats) == 2  # type: ignore[union-attr]


def test_a_room_of_watchers_closes_after_its_results() -> None:
    """Both players left after their race: Cy, watching, became host, and her start sent the
    room back to a listed lobby nobody in it could start; then (refused) the room stayed on
    its results, listed, promising a seat in a next race no one there could start to whoever
    joined (a spectators trial).  With no player left it closes; Cy's results stay on her
    screen (the client keeps them)."""
    h = Harness(grace_s=120.0)
    code, (ann, bob), _ = h.race(None, "Ann", "Bob")
    cy = h.connect()
    h.cmd(cy, JoinRoom(seq=0, code=code, name="Cy", spectate=True))
    for c in (ann, bob):
        h.move(c, kind="resign")
    h.cmd(ann, Leave(seq=0))
    assert h.hub.rooms[code].state == "results"  # Bob is still there
    h.cmd(bob, Leave(seq=0))
    assert code not in h.hub.rooms
    assert [k.message for k in h.got(cy, Kicked)] == [
        f"room {display_code(code)} closed: no player was left in the room"
    ]
    listed = h.cmd(h.connect(), ListRooms(seq=0))
    assert isinstance(listed, RoomList) and code not in [r.code for r in listed.rooms]


def test_a_newcomer_left_host_on_the_results_starts_the_next_race() -> None:
    """Dee joined during the race to play; both players left after it: her start, as host,
    takes the room to the lobby and seats her (refused, she was stuck on the results)."""
    h = Harness(grace_s=120.0)
    code, (ann, bob), _ = h.race(None, "Ann", "Bob")
    dee = h.connect()
    h.cmd(dee, JoinRoom(seq=0, code=code, name="Dee"))  # a race on: she waits for a seat
    for c in (ann, bob):
        h.move(c, kind="resign")
    for c in (ann, bob):
        h.cmd(c, Leave(seq=0))
    room = h.hub.rooms[code]
    assert room.state == "results"
    assert isinstance(h.cmd(dee, Start(seq=0)), Ack)
    # seated, ready (she came to play): her race starts, alone until others join
    assert [m.role for m in room.members.values()] == ["player"]
    assert room.state == "countdown" and room.race is not None and len(room.race.seats) == 1


def test_starting_races_has_a_budget_per_address() -> None:
    """A start, a resign and a rematch, over and over: each race is a record kept for a month.
    Past the budget of the address that opened the room, everyone is told how long to wait,
    and the countdown starts by itself then, without anyone pressing anything again.  A
    countdown stopped is no race: it costs nothing (a guest pressing ready and not ready spent
    the budget of every room the owner's address had opened)."""
    h = Harness(race_rate=0.1, race_burst=2)
    code, ann, bob = _room_from_two_addresses(h)
    room = h.hub.rooms[code]
    assert isinstance(h.cmd(bob, Ready(seq=0)), Ack)
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    for _ in range(5):  # countdowns stopped and started again by the guest: free
        assert room.state == "countdown"
        assert isinstance(h.cmd(bob, Ready(seq=0, ready=False)), Ack)
        assert room.state == "lobby"
        assert isinstance(h.cmd(bob, Ready(seq=0)), Ack)
    assert room.state == "countdown" and "races_refused_rate" not in h.hub.metrics
    for _ in range(2):  # two races: the burst
        if room.state == "lobby":
            h.cmd(ann, Start(seq=0))
        h.tick(h.hub.limits.countdown_ms / 1000)
        assert room.state == "racing"
        h.move(ann, kind="resign")
        h.move(bob, kind="resign")
        assert room.state == "results"
        h.cmd(bob, Rematch(seq=0))
        h.cmd(ann, Start(seq=0))  # back to the lobby, Bob ready
        assert room.state == "lobby"
    h.clear()
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)
    assert room.state == "lobby"
    told = [e for e in h.got(bob, Error) if e.code == "not_ready"]
    assert told and "starts by itself in" in told[-1].message
    assert h.got(ann, Error)[-1] == told[-1]
    assert isinstance(h.cmd(ann, Start(seq=0)), Ack)  # pressing start again changes nothing
    assert room.state == "lobby"
    told = [e for e in h.got(bob, Error) if e.code == "not_ready"]
    h.tick(1.0)
    assert room.state == "lobby"  # not yet, and nobody is told again
    assert len([e for e in h.got(bob, Error) if e.code == "not_ready"]) == len(told)
    h.tick(10.0)
    assert room.state == "countdown"
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert room.state == "racing"


def test_the_host_role_goes_to_a_person_who_plays_never_a_bot() -> None:
    """The host leaves: a person playing becomes host, not the bot who joined before them nor
    a watcher (a bot host left nobody able to start, change or remove anything)."""
    h = Harness()
    code, (ann,), _ = h.room(None, "Ann")
    robo = h.connect()
    h.cmd(robo, JoinRoom(seq=0, code=code, name="Robo", bot=True))
    eve = h.connect()
    h.cmd(eve, JoinRoom(seq=0, code=code, name="Eve", spectate=True))
    bob = h.connect()
    jb = h.cmd(bob, JoinRoom(seq=0, code=code, name="Bob"))
    assert isinstance(jb, Joined)
    h.cmd(ann, Leave(seq=0))
    assert h.hub.rooms[code].host == jb.you


def test_a_lobby_with_nobody_left_to_play_closes() -> None:
    """Bots and a watcher left in a lobby: nobody can start a race there; it closes, saying why
    (it stayed listed, and whoever joined it watched for ever)."""
    h = Harness()
    code, (ann,), _ = h.room(None, "Ann")
    robo = h.connect()
    h.cmd(robo, JoinRoom(seq=0, code=code, name="Robo", bot=True))
    eve = h.connect()
    h.cmd(eve, JoinRoom(seq=0, code=code, name="Eve", spectate=True))
    h.cmd(ann, Leave(seq=0))
    assert code not in h.hub.rooms
    kicked = h.got(eve, Kicked)
    assert kicked and "no player was left" in kicked[-1].message


def test_a_player_stuck_with_only_an_undo_is_out_as_stuck_after_a_minute() -> None:
    h = Harness(stuck_undo_s=60.0, race_idle_s=600.0)
    code, (ann, _bob), _ = h.race(Settings(game="st-helena"), "Ann", "Bob")
    race = h.hub.rooms[code].race
    assert race is not None
    race.seats[1].state = one_move_from_stuck()
    assert isinstance(h.move(ann, kind="tableau", src=0, dst=1), Moved)  # no move left, an undo
    h.clear()
    h.tick(30.0)
    assert race.seats[1].status == "playing"
    h.tick(31.0)
    assert race.seats[1].status == "stuck"
    told = [e for e in h.got(ann, Error) if e.code == "player_done"]
    assert told and told[-1].message == (
        "no move left and no undo for 1 minute: you are stuck (your score stands)"
    )
    assert race.seats[2].status == "playing"  # Bob plays on


def test_a_player_alone_waiting_for_the_race_budget_starts_by_itself() -> None:
    """A room of one held back by its address's race budget: told "starts by itself", and it
    never did (the tick asked for two players ready)."""
    h = Harness(race_rate=0.5, race_burst=1)
    ann = _peer(h, "203.0.113.1")
    joined = h.cmd(ann, CreateRoom(seq=0, name="Ann", settings=Settings()))
    assert isinstance(joined, Joined)
    room = h.hub.rooms[joined.room.code]
    h.cmd(ann, Start(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert room.state == "racing"
    h.move(ann, kind="resign")
    assert room.state == "results"
    h.cmd(ann, Start(seq=0))  # to the lobby
    h.cmd(ann, Start(seq=0))  # and start: the budget is spent
    assert room.state == "lobby" and room.code in h.hub.awaiting_start
    h.tick(2.1)
    assert room.state == "countdown"


def test_a_join_refused_for_its_name_costs_no_join() -> None:
    """A bot tries Bot, Bot 2, Bot 3...: each try was a join charged, and the bots of the next
    room were refused for joining too fast.  A code that opens a room, refused for a name taken
    (or a full room), gives its join back."""
    h = Harness(join_rate=0.001, join_burst=2)
    code, _, _ = h.room(None, "Bot")
    bots = _peer(h, "198.51.100.7")
    for _ in range(5):
        taken = h.cmd(bots, JoinRoom(seq=0, code=code, name="Bot"))
        assert isinstance(taken, Error) and taken.code == "name_taken"
    assert isinstance(h.cmd(bots, JoinRoom(seq=0, code=code, name="Bot 2")), Joined)
    other = _peer(h, "198.51.100.7")
    code2, _, _ = h.room(None, "Cy")
    assert isinstance(h.cmd(other, JoinRoom(seq=0, code=code2, name="Bot")), Joined)
    third = _peer(h, "198.51.100.7")
    late = h.cmd(third, JoinRoom(seq=0, code=code2, name="Bot 2"))
    assert isinstance(late, Error) and late.code == "rate_limited"  # the two joins are spent


def test_room_updates_have_a_budget_of_the_room_and_the_rest_goes_out_together() -> None:
    """Sixteen players toggling ready sent every member of the room a room update each time, 200
    KiB a second to a watcher on a slow link, who was cut for not reading (a red team).  No
    command is refused for it (a refusal let a watcher freeze a room, and left bots not ready
    after a settings change: a review): past the budget, the changes go out together."""
    h = Harness(room_update_rate=1.0, room_update_burst=4)
    code, (ann, bob, cat), _ = h.room(Settings(seats=3), "Ann", "Bob", "Cat")
    watcher = h.connect()
    assert isinstance(h.cmd(watcher, JoinRoom(seq=0, code=code, name="Dan", spectate=True)), Joined)
    h.clear()
    answers = [h.cmd(bob, Ready(seq=0, ready=n % 2 == 0)) for n in range(9)]
    assert all(isinstance(a, Ack) for a in answers)  # every one done
    updates = h.got(watcher, RoomUpdate)
    assert len(updates) < 9
    room = h.hub.rooms[code]
    assert room.update_pending and [m.ready for m in room.players()] == [False, True, False]
    h.tick(1.0)  # the budget allows one more: the latest state, sent once
    last = h.got(watcher, RoomUpdate)[-1].room
    assert [m.ready for m in last.members if m.role == "player"] == [False, True, False]
    assert not room.update_pending
    h.tick(5.0)
    assert len(h.got(watcher, RoomUpdate)) == len(updates) + 1  # nothing more to send
    # a countdown starts within the budget too (by itself once it allows), and its room update
    # goes out before its countdown event
    for _ in range(6):
        h.cmd(cat, Ready(seq=0, ready=False))
    h.clear()
    h.cmd(ann, Ready(seq=0))
    h.cmd(cat, Ready(seq=0))
    for _ in range(80):  # (a token for the update held, then one for the start)
        if room.state == "countdown":
            break
        h.tick(0.05)
    assert room.state == "countdown"
    kinds = [type(e).__name__ for e in h.inbox[watcher] if isinstance(e, RoomUpdate | Countdown)]
    assert kinds[-2:] == ["RoomUpdate", "Countdown"]
    assert h.got(watcher, RoomUpdate)[-1].room.state == "countdown"
    # another room has its own budget
    _other, (eve, _fay), _ = h.room(None, "Eve", "Fay")
    h.clear()
    assert isinstance(h.cmd(eve, Ready(seq=0)), Ack)
    assert h.got(_fay, RoomUpdate)


def test_the_same_settings_sent_again_change_nothing() -> None:
    """Settings sent again as they are made everyone press ready again, and were logged and
    sent to every member each time."""
    h = Harness()
    settings = Settings(game="spider", options={"suits": 2}, seats=4)
    code, (ann, bob), _ = h.room(settings, "Ann", "Bob")
    assert isinstance(h.cmd(bob, Ready(seq=0)), Ack)
    h.clear()
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=settings)), Ack)
    assert h.got(bob, RoomUpdate) == []
    room = h.hub.rooms[code]
    assert [m.ready for m in room.players()] == [False, True]
    # the same options written otherwise (the defaults written out, as the room shows them,
    # another order) are the same settings: they made Bob ready again (a protocol trial)
    shown = h.hub.rooms[code].public_settings().options
    assert shown == {"suits": 2, "relaxed": 0}
    for options in (shown, {"relaxed": 0, "suits": 2}):
        again = settings.model_copy(update={"options": options})
        assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=again)), Ack)
        assert h.got(bob, RoomUpdate) == []
        assert [m.ready for m in room.players()] == [False, True]
    # a room restored winnable on a server that no longer certifies deals: its own settings
    # sent back change nothing, and are not refused (they were: a review)
    room.settings = room.settings.model_copy(update={"winnable": True})
    echo = settings.model_copy(update={"winnable": True})
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=echo)), Ack)
    assert h.got(bob, RoomUpdate) == [] and [m.ready for m in room.players()] == [False, True]
    room.settings = room.settings.model_copy(update={"winnable": False})
    changed = settings.model_copy(update={"seats": 5})
    assert isinstance(h.cmd(ann, UpdateSettings(seq=0, settings=changed)), Ack)
    assert len(h.got(bob, RoomUpdate)) == 1
    assert [m.ready for m in room.players()] == [False, False]


def test_finished_races_kept_in_memory_are_bounded_by_their_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """256 records were kept whatever their size: sixteen players at 5,000 moves each made one of
    6 MB, and 256 of them 1.6 GB (a red team).  The store keeps every record."""
    import server.lifecycle

    monkeypatch.setattr(server.lifecycle, "FINISHED_MOVES", 5)
    h = Harness()
    ids = []
    for n in range(3):
        _code, (ann, bob), _ = h.race(None, f"Ann {n}", f"Bob {n}")
        for c in (ann, bob):
            h.move(c, kind="deal")
            h.move(c, kind="resign")
        ids.append(h.hub.rooms[_code].race.race_id)  # type: ignore[union-attr]
    # two moves each, four a race: over five, only the last race's record stays
    assert list(h.hub.finished) == ids[-1:]
    assert h.hub.finished_moves == 4


def test_an_ipv6_network_holds_a_few_times_what_one_64_may() -> None:
    """Budgets are kept per IPv6 /64, and one subscriber's /56 is 256 of them: from one /56 a red
    team opened the server's thousand rooms in 12 s, and no one else could open one."""
    from server.limits import NETWORK_SHARE, budget_key, network_key

    h = Harness(max_rooms_per_address=2, room_create_burst=100)
    opened = []
    for n in range(12):  # twelve /64s of one /48
        cid = _peer(h, budget_key(f"2001:db8:0:{n:x}::1"))
        opened.append(h.cmd(cid, CreateRoom(seq=0, name="Spam", settings=Settings())))
    kinds = [type(a).__name__ for a in opened]
    assert kinds == ["Joined"] * (2 * NETWORK_SHARE) + ["Error"] * (12 - 2 * NETWORK_SHARE)
    refused = opened[-1]
    assert isinstance(refused, Error) and refused.code == "too_many_rooms"
    assert "your network (its IPv6 /48) already holds 8 open rooms" in refused.message
    # another /48, and IPv4, are not held back
    for address in ("2001:db8:1::1", "203.0.113.1"):
        other = _peer(h, budget_key(address))
        assert isinstance(h.cmd(other, CreateRoom(seq=0, name="Ann", settings=Settings())), Joined)
    # its rooms closed, the network may open them again
    for room in list(h.hub.rooms.values()):
        if network_key(room.owner) == "2001:db8::/48":
            for m in list(room.members.values()):
                h.take(h.hub.disconnect(m.conn, h.now))  # type: ignore[arg-type]
    h.tick(h.hub.limits.grace_s + 1)
    assert not [k for k in h.hub.rooms_per_address if k.startswith("2001:db8::")]
    assert not [k for k in h.hub.rooms_per_address if network_key(k) == "2001:db8::/48"]
    again = _peer(h, budget_key("2001:db8:0:77::1"))
    assert isinstance(h.cmd(again, CreateRoom(seq=0, name="Ann", settings=Settings())), Joined)

    # connections: a /48 holds four times what a /64 may
    h = Harness(max_per_address=3)
    held = [h.hub.connect(h.now, budget_key(f"2001:db8:0:{n:x}::1")) for n in range(13)]
    assert [c is not None for c in held] == [True] * (3 * NETWORK_SHARE) + [False]
    assert h.hub.refused_why == "network_full"  # the /48's, not this /64's (a review)
    assert h.hub.connect(h.now, budget_key("2001:db8:1::1")) is not None
    h.take(h.hub.disconnect(held[0], h.now))  # type: ignore[arg-type]
    assert h.hub.connect(h.now, budget_key("2001:db8:0:99::1")) is not None


def test_a_countdown_started_and_stopped_over_and_over_pays_from_the_room_budget() -> None:
    """A change of state goes out at once, whatever the room's budget of updates: a player
    toggling ready where the others are ready started and stopped a countdown at each toggle,
    200 updates and 100 countdowns to every member in 10 s (a review).  A countdown starts
    within the budget, by itself when it allows."""
    h = Harness(countdown_ms=3000)
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    watcher = h.connect()
    assert isinstance(h.cmd(watcher, JoinRoom(seq=0, code=code, name="Dan", spectate=True)), Joined)
    h.cmd(ann, Ready(seq=0))
    h.clear()
    for n in range(200):  # 20 a second for 10 s
        assert isinstance(h.cmd(bob, Ready(seq=0, ready=n % 2 == 0)), Ack)
        h.tick(0.05)
    updates, countdowns = len(h.got(watcher, RoomUpdate)), len(h.got(watcher, Countdown))
    budget = h.hub.limits.room_update_burst + 10 * h.hub.limits.room_update_rate  # 60
    assert countdowns <= budget and updates <= 2 * budget + 2, (updates, countdowns)
    # Bob ready at last: the countdown starts, by itself if need be, within a second
    h.cmd(bob, Ready(seq=0))
    for _ in range(20):
        h.tick(0.05)
    assert h.hub.rooms[code].state == "countdown"


def test_a_room_waiting_for_its_start_says_why_once() -> None:
    """The address's race budget spent, the room waits to start by itself: each ready toggled
    sent every member the same "not_ready" error again (100 in 10 s: a review)."""
    h = Harness(race_rate=0.01, race_burst=1)
    code, ann, bob = _room_from_two_addresses(h)
    h.cmd(bob, Ready(seq=0))
    h.cmd(ann, Ready(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert h.hub.rooms[code].state == "racing"
    for c in (ann, bob):
        h.move(c, kind="resign")
    h.cmd(bob, Rematch(seq=0))
    h.cmd(ann, Rematch(seq=0))  # the lobby, both ready: the budget is spent, it waits
    assert code in h.hub.awaiting_start
    for n in range(20):
        h.cmd(bob, Ready(seq=0, ready=n % 2 == 1))
        h.tick(0.05)
    said = [e for e in h.inbox[ann] if isinstance(e, Error) and e.code == "not_ready"]
    assert len(said) == 1, said


def test_an_idle_server_writes_nothing_every_second() -> None:
    """The time the server was last alive (what a restart measures a race's clock by) was
    written and synced every second with no room open: 26 KB a second on an idle server (an
    operator's soak).  It is written only while a clock runs: a countdown or a race."""
    from server.store import Store

    store = Store(":memory:")
    h = Harness()
    h.hub = Hub(h.hub.limits, store, wall=lambda: 1_700_000_000.0 + h.now)
    live = h.hub.live
    assert live is not None
    for _ in range(5):
        h.tick(1.0)
    assert live.alive_at() is None  # nothing open: nothing written
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    h.tick(2.0)
    assert live.alive_at() is None  # a lobby: no clock runs
    for c in (ann, bob):
        h.cmd(c, Ready(seq=0))
    h.tick(1.1)
    assert live.alive_at() is not None  # the countdown, then the race
    h.tick(1.1)
    racing = live.alive_at()
    assert racing == 1_700_000_000.0 + h.now and h.hub.rooms[code].state == "racing"
    for c in (ann, bob):
        h.move(c, kind="resign")
    h.tick(1.1)
    assert h.hub.rooms[code].state == "results"
    ended = live.alive_at()
    h.tick(3.0)
    assert live.alive_at() == ended  # the results: nothing more
    store.close()


def test_a_watcher_back_under_the_same_name_takes_the_place_of_the_one_gone() -> None:
    """A watcher's terminal closed, and `watch CODE` again from the same machine: "hal 2", or
    refused with --name ("someone is already called Hal") for the grace, the old one holding
    the name and a watcher's place (a spectators trial).  The one gone makes way; from
    another address the name stays taken, and a player's seat is never taken so."""
    h = Harness(grace_s=120.0, max_per_address=100)
    code, (_ann, bob), _ = h.room(None, "Ann", "Bob")
    hal = h.connect()
    h.cmd(hal, JoinRoom(seq=0, code=code, name="Hal", spectate=True))
    h.take(h.hub.disconnect(hal, h.now))
    room = h.hub.rooms[code]
    again = h.connect()
    joined = h.cmd(again, JoinRoom(seq=0, code=code, name="Hal", spectate=True))
    assert isinstance(joined, Joined) and joined.role == "spectator"
    assert [m.name for m in room.members.values()] == ["Ann", "Bob", "Hal"]
    # a player away keeps the name (and the seat) for the grace
    h.take(h.hub.disconnect(bob, h.now))
    refused = h.cmd(h.connect(), JoinRoom(seq=0, code=code, name="Bob", spectate=True))
    assert isinstance(refused, Error) and refused.code == "name_taken"
    # from another address the watcher's name stays taken
    h.take(h.hub.disconnect(again, h.now))
    other = h.hub.connect(h.now, "203.0.113.9")
    assert other is not None
    assert isinstance(h.cmd(other, Hello(seq=0, version=PROTOCOL_VERSION)), Welcome)
    refused = h.cmd(other, JoinRoom(seq=0, code=code, name="Hal", spectate=True))
    assert isinstance(refused, Error) and refused.code == "name_taken"


def test_the_33rd_watcher_is_told_a_seat_is_free() -> None:
    """ "This room is full" to a 33rd watcher of a lobby with a free seat (a spectators trial)."""
    h = Harness(rate=1000.0, burst=1000, max_per_address=100)
    code, _conns, _ = h.room(Settings(seats=4), "Ann", "Bob")
    for i in range(32):
        h.cmd(h.connect(), JoinRoom(seq=0, code=code, name=f"W{i}", spectate=True))
    refused = h.cmd(h.connect(), JoinRoom(seq=0, code=code, name="Fay", spectate=True))
    assert isinstance(refused, Error) and refused.code == "room_full"
    assert "a seat is free" in refused.message


def test_one_change_reaches_each_member_as_one_room_event() -> None:
    """A removal sent the host and the others the room twice, and a settings change during the
    countdown sent a room with the countdown stopped and the host not ready, then the room as
    changed (a trial of a client written from the docs): one command, one room event each."""
    h = Harness()
    code, (ann, bob, cy), joined = h.room(None, "Ann", "Bob", "Cy")
    h.clear()
    assert isinstance(h.cmd(ann, Kick(seq=5, id=joined[1].you)), Ack)
    assert [type(e) for e in h.inbox[ann]] == [Ack, RoomUpdate]
    assert [type(e).__name__ for e in h.inbox[cy]] == ["MemberRemoved", "RoomUpdate"]
    assert [type(e) for e in h.inbox[bob]] == [Kicked]
    for c in (ann, cy):
        assert isinstance(h.cmd(c, Ready(seq=6)), Ack)
    assert h.hub.rooms[code].state == "countdown"
    h.clear()
    changed = Settings(undo="off")
    assert isinstance(h.cmd(ann, UpdateSettings(seq=7, settings=changed)), Ack)
    for c in (ann, cy):
        rooms = h.got(c, RoomUpdate)
        assert len(rooms) == 1 and type(h.inbox[c][-1]) is RoomUpdate
        assert rooms[0].room.state == "lobby" and rooms[0].room.settings.undo == "off"
        assert not any(m.ready for m in rooms[0].room.members)


def test_one_command_spends_one_room_update_of_the_budget() -> None:
    """The removal's two room updates went out as one event but spent two of the room's
    budget of updates (a review): a host removing people was held back twice as soon."""
    h = Harness(room_update_rate=0.0001)
    code, (ann, _bob, _cy), joined = h.room(None, "Ann", "Bob", "Cy")
    updates = h.hub.rooms[code].updates
    assert updates is not None
    before = updates.tokens
    h.clear()
    assert isinstance(h.cmd(ann, Kick(seq=5, id=joined[1].you)), Ack)
    assert len(h.got(ann, RoomUpdate)) == 1
    assert updates.tokens == pytest.approx(before - 1, abs=0.01)


def test_a_room_event_replaces_only_the_one_just_before_it() -> None:
    """Two room events to one connection with something else between them both go: the first
    may explain what comes between (a countdown's room before its start)."""
    from server.outbox import Outbox

    h = Harness()
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    room = h.hub.rooms[code]
    first, second, third = (RoomUpdate(room=room.info()) for _ in range(3))
    out = Outbox()
    out.send(ann, first)
    out.send(bob, first)
    out.send(ann, second)  # replaces ann's first, not bob's
    countdown = Countdown(race_id="r", ms=100, commitment="c" * 64)
    out.send(ann, countdown)
    out.send(ann, third)
    assert [e for c, e in out.sends if c == ann] == [second, countdown, third]
    assert [e for c, e in out.sends if c == bob] == [first]


def test_with_undo_off_a_move_never_says_it_can_be_undone() -> None:
    """``moved`` says ``can_undo`` when an undo could take the move back; in a room with undo
    off none can (it is refused ``undo_off``), and a stuck player told ``can_undo`` thought
    their race went on (docs/protocol.md)."""
    h = Harness()
    code, (ann, _bob), joined = h.race(Settings(undo="off", deal_number=1), "Ann", "Bob")
    race = h.hub.rooms[code].race
    assert race is not None
    state = race.seats[joined[0].you].state
    quiet = 0
    for _ in range(40):  # until a move that shows no card, which the rules let an undo take back
        wire = pick_move(state, prefer="quiet")
        assert wire is not None
        moved = h.cmd(ann, MoveCmd(seq=0, move=wire))
        assert isinstance(moved, Moved)
        assert moved.can_undo is False
        if state.can_undo:
            quiet += 1
            break
    assert quiet, "no move the rules alone could undo: the test shows nothing"
    refused = h.move(ann, kind="undo")
    assert isinstance(refused, Error) and refused.code == "undo_off"


def test_the_results_show_nobody_ready_for_the_next_race() -> None:
    """The race over, every ready flag is cleared: the results' ``room`` showed everyone still
    ready from the lobby before, and back in the lobby those who had not asked for the rematch
    read as having stepped back."""
    h = Harness()
    code, (ann, bob), _ = h.race(None, "Ann", "Bob")
    for c in (ann, bob):
        h.move(c, kind="resign")
    assert h.got(ann, RaceOver)
    room = h.hub.rooms[code]
    assert room.state == "results"
    assert not any(m.ready for m in room.members.values())
    last = h.got(ann, RoomUpdate)[-1]
    assert last.room.state == "results" and not any(m.ready for m in last.room.members)
