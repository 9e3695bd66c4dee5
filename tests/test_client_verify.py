"""The client's check of the revealed deal against a server that lies: every card seen up to a
reconnection is still checked, and the game revealed must be the room's (options that do not
change the deal included).  The hub plays a real race; what Ann's client received is fed to her
model, honest and tampered."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from client.model import RaceModel
from protocol.fairness import commitment
from protocol.messages import (
    Joined,
    MoveCmd,
    Moved,
    RaceOver,
    Ready,
    Rematch,
    Resume,
    RoomUpdate,
    Settings,
    Snapshot,
    WireMove,
)

from .server_helpers import pick_move
from .test_hub import Harness


def resign(h: Harness, cid: int) -> None:
    h.cmd(cid, MoveCmd(seq=0, move=WireMove(kind="resign")))


def fed(events: list[Any]) -> RaceModel:
    model = RaceModel(name="Ann")
    for e in events:
        model.apply(e)
    return model


def tampered(events: list[Any]) -> list[Any]:
    """The first move that showed a card showed another one."""
    out, done = [], False
    for e in events:
        if not done and isinstance(e, Moved) and e.shown:
            first = e.shown[0]
            other = "KC" if first.card != "KC" else "QC"
            e = e.model_copy(
                update={"shown": [first.model_copy(update={"card": other}), *e.shown[1:]]}
            )
            done = True
        out.append(e)
    assert done
    return out


def answer_lost_then_resumed(
    h: Harness, code: str, cid: int, joined: Any
) -> tuple[list[Any], int, Snapshot]:
    """A move whose answer is lost with the connection, then the seat resumed on another: what
    the player had received before the drop, the new connection, and its snapshot."""
    lost = pick_move(h.hub.rooms[code].race.seats[joined.you].state, deals=True)  # type: ignore[union-attr]
    assert lost is not None
    h.cmd(cid, MoveCmd(seq=0, move=lost))
    before_drop = [joined, *h.inbox[cid][:-1]]  # (the lost answer not received)
    h.take(h.hub.disconnect(cid, h.now))
    again = h.connect()
    snap = h.cmd(again, Resume(seq=0, code=code, token=joined.token))
    assert isinstance(snap, Snapshot)
    h.seqs[again] = itertools.count(snap.next_seq)  # the seat's commands go on from there
    h.clear()
    return before_drop, again, snap


def test_cards_seen_before_a_reconnection_are_still_checked() -> None:
    h = Harness()
    settings = Settings(game="spider", options={"suits": 1}, deal_number=1)
    code, (ann, bob), joined = h.race(settings, "Ann", "Bob")
    # a move that shows a card, answered
    wire = pick_move_showing(h, code, joined[0].you)
    answer = h.cmd(ann, MoveCmd(seq=0, move=wire))
    assert isinstance(answer, Moved) and answer.shown, answer
    # another move, whose answer is lost with the connection
    before_drop, ann2, snap = answer_lost_then_resumed(h, code, ann, joined[0])
    resign(h, ann2)
    resign(h, bob)
    over = h.got(ann2, RaceOver)
    assert over
    honest = [*before_drop, snap, *over]

    model = fed(honest)
    assert model.verified is True and "(up to your reconnection)" in model.verdict
    liar = fed(tampered(honest))
    assert liar.verified is False, liar.verdict
    assert "WARNING" in liar.verdict and "move 1 showed" in liar.verdict


def test_moves_after_a_reconnection_that_changed_the_board_are_not_added_to_the_check() -> None:
    """The board after the reconnection differs from Ann's (a move's answer was lost): the
    witness stops at the drop.  A card shown after it, added to the moves before the gap,
    would be checked against a game missing the lost move: a false "does not match"."""
    h = Harness()
    code, (ann, bob), joined = h.race(Settings(game="spider", options={"suits": 1}), "Ann", "Bob")
    wire = pick_move_showing(h, code, joined[0].you)
    assert isinstance(h.cmd(ann, MoveCmd(seq=0, move=wire)), Moved)
    before_drop, ann2, snap = answer_lost_then_resumed(h, code, ann, joined[0])
    after: list[Any] = []
    for _ in range(60):  # moves after the gap, up to one that shows cards (a deal at the latest)
        wire = pick_move(h.hub.rooms[code].race.seats[joined[0].you].state, deals=True)  # type: ignore[union-attr]
        assert wire is not None
        moved = h.cmd(ann2, MoveCmd(seq=0, move=wire))
        assert isinstance(moved, Moved)
        after.append(moved)
        if moved.shown:
            break
    assert any(m.shown for m in after)  # (six moves showed none on one deal of a random few)
    resign(h, ann2)
    resign(h, bob)
    over = h.got(ann2, RaceOver)
    assert over
    model = fed([*before_drop, snap, *after, *over])
    assert model.verified is True, model.verdict
    assert "(up to your reconnection)" in (model.verdict or "")


def test_back_after_a_race_run_without_you_its_deal_is_not_checked_against_yours() -> None:
    """Ann away on her results; the others' rematch races without her; back, she is shown that
    race's results: her client checked her own race's witness against the new race's reveal
    and cried "the revealed deal does not match" (a bad-network trial), and drew her old board
    as if she still raced it."""
    h = Harness()
    code, (ann, bob, cy), joined = h.race(
        Settings(game="spider", options={"suits": 1}), "Ann", "Bob", "Cy"
    )
    wire = pick_move(h.hub.rooms[code].race.seats[joined[0].you].state, deals=False)  # type: ignore[union-attr]
    assert wire is not None
    assert isinstance(h.cmd(ann, MoveCmd(seq=0, move=wire)), Moved)
    for c in (ann, bob, cy):
        resign(h, c)
    first = h.got(ann, RaceOver)
    assert first
    mine = [joined[0], *h.inbox[ann]]
    h.take(h.hub.disconnect(ann, h.now))
    for c in (bob, cy):
        h.cmd(c, Rematch(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    room = h.hub.rooms[code]
    assert room.state == "racing" and room.race is not None
    assert room.race.race_id != first[0].race_id and joined[0].you not in room.race.seats
    for c in (bob, cy):
        resign(h, c)
    assert room.state == "results"
    ann2 = h.connect()
    snap = h.cmd(ann2, Resume(seq=0, code=code, token=joined[0].token))
    assert isinstance(snap, Snapshot) and snap.board is None and snap.reveal is not None
    model = fed([*mine, snap])
    assert model.verified is True and "WARNING" not in (model.verdict or ""), model.verdict
    assert model.state is None  # no board of hers in that race: none drawn


def test_a_race_whose_end_never_came_is_checked_from_its_record() -> None:
    """Ann's link stalls as her race ends: no race over, and the room goes on to the next race.
    Back, that race's results and its check were lost with it: now its record is fetched and
    checked against every card she was shown (a review)."""
    h = Harness()
    code, (ann, bob, cy), joined = h.race(
        Settings(game="spider", options={"suits": 1}), "Ann", "Bob", "Cy"
    )
    wire = pick_move_showing(h, code, joined[0].you)
    assert isinstance(h.cmd(ann, MoveCmd(seq=0, move=wire)), Moved)
    resign(h, ann)
    seen = [joined[0], *h.inbox[ann]]  # (before the race was over: its end never came)
    h.take(h.hub.disconnect(ann, h.now))
    first_id = h.hub.rooms[code].race.race_id  # type: ignore[union-attr]
    for c in (bob, cy):
        resign(h, c)
    for c in (bob, cy):
        h.cmd(c, Rematch(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    assert h.hub.rooms[code].state == "racing"
    ann2 = h.connect()
    snap = h.cmd(ann2, Resume(seq=0, code=code, token=joined[0].token))
    assert isinstance(snap, Snapshot) and snap.room.race_id != first_id
    model = fed([*seen, snap])
    assert model.missed is not None and model.missed.race_id == first_id
    record = h.hub.finished[first_id]
    said = model.missed_result(record)
    assert said.startswith("Your last race ended while you were away: you placed ")
    assert "deal verified" in said and "every card you were shown" in said, said
    assert model.missed is None
    # a server that deals another deal than the one it showed her is caught
    model = fed([*seen, snap])
    forged = record.model_copy(
        update={"reveal": record.reveal.model_copy(update={"salt": "00" * 16})}
    )
    assert "WARNING: the revealed deal does not match" in model.missed_result(forged)


def pick_move_showing(h: Harness, code: str, you: int) -> WireMove:
    """A tableau move of deal 1 that turns a card up."""
    from protocol.messages import to_wire
    from protocol.moves import Kind

    state = h.hub.rooms[code].race.seats[you].state  # type: ignore[union-attr]
    for m in state.legal_moves():
        if m.kind == Kind.TABLEAU and state.copy().apply(m).shown:
            return to_wire(m)
    raise AssertionError("deal 1 has a move that shows a card")


def test_a_reveal_of_other_rules_than_the_rooms_is_a_warning() -> None:
    """St. Helena build suit played, build any committed to and revealed (the same deal): the
    commitment and the reveal agree, the room does not."""
    h = Harness()
    _, (ann, bob), joined = h.race(Settings(game="st-helena"), "Ann", "Bob")
    resign(h, ann)
    resign(h, bob)
    events = [joined[0], *h.inbox[ann]]
    over = next(e for e in events if isinstance(e, RaceOver))
    assert over.reveal is not None
    assert fed(events).verified is True

    rv = over.reveal
    options = {"build": "any", "spaces": "any"}
    forged = commitment(rv.game, options, rv.numbering, int(rv.number), rv.salt)
    lies = []
    for e in events:
        room = getattr(e, "room", None)
        if room is not None and getattr(room, "commitment", None):
            e = e.model_copy(update={"room": room.model_copy(update={"commitment": forged})})
        if getattr(e, "commitment", None):  # the countdown's and the race start's
            e = e.model_copy(update={"commitment": forged})
        if isinstance(e, RaceOver):
            e = e.model_copy(
                update={"reveal": rv.model_copy(update={"options": options, "commitment": forged})}
            )
        lies.append(e)
    model = fed(lies)
    assert model.verified is False
    assert "commitment" not in model.verdict  # they agree: only the room's rules tell
    assert "the room played St. Helena, the reveal says St. Helena (build any, spaces any)" in (
        model.verdict
    )
    assert isinstance(events[0], Joined)


def test_a_role_changed_just_before_the_end_does_not_skip_the_cards() -> None:
    """One unasked room update making Ann a spectator right before the race's end: her cards are
    still checked (the check looked at her role then, and dropped every card problem)."""
    h = Harness()
    settings = Settings(game="spider", options={"suits": 1}, deal_number=1)
    code, (ann, bob), joined = h.race(settings, "Ann", "Bob")
    h.cmd(ann, MoveCmd(seq=0, move=pick_move_showing(h, code, joined[0].you)))
    resign(h, ann)
    resign(h, bob)
    events = tampered([joined[0], *h.inbox[ann]])
    at = next(i for i, e in enumerate(events) if isinstance(e, RaceOver))
    room = h.hub.rooms[code].info()
    members = [
        m.model_copy(update={"role": "spectator"}) if m.id == joined[0].you else m
        for m in room.members
    ]
    flip = RoomUpdate(room=room.model_copy(update={"members": members, "state": "racing"}))
    model = fed([*events[:at], flip, *events[at:]])
    assert model.verified is False and "move 1 showed" in (model.verdict or "")


def test_a_spectator_is_told_it_is_shown_no_card_not_that_it_came_late() -> None:
    """Dan watched from the lobby to the end and was told his terminal "did not see the race
    from its start" (a timed-race trial): a spectator is shown no card, whenever it came."""
    from protocol.messages import JoinRoom

    h = Harness()
    code, (ann, bob), _ = h.room(None, "Ann", "Bob")
    dan = h.connect()
    watching = h.cmd(dan, JoinRoom(seq=0, code=code, name="Dan", spectate=True))
    assert isinstance(watching, Joined)
    for c in (ann, bob):
        h.cmd(c, Ready(seq=0))
    h.tick(h.hub.limits.countdown_ms / 1000)
    resign(h, ann)
    resign(h, bob)
    model = RaceModel(name="Dan")
    for e in [watching, *h.inbox[dan]]:
        model.apply(e)
    assert model.verified is True
    assert model.verdict.endswith(
        "matches the commitment (a spectator is shown no card, so none is checked)"
    ), model.verdict


async def test_an_unasked_snapshot_is_ignored() -> None:
    """A snapshot only ever answers our own resume or join: one sent unasked would replace the
    board and stop the check of every card shown after it."""
    import asyncio

    from client.session import Session
    from server.outbox import Outbox

    from .server_helpers import running_server

    async with running_server() as server:
        ann = Session(server.url, RaceModel(name="Ann"))
        ann.remember = False
        await ann.connect()
        joined = await ann.create("Ann", Settings(game="spider", options={"suits": 1}))
        ann.start_events()
        try:
            room = server.hub.rooms[joined.room.code]
            member = room.members[joined.you]
            forged = server.hub._snapshot(room, member, 0, 0.0).model_copy(
                update={"seq": 10_000, "role": "spectator"}
            )
            out = Outbox()
            out.send(member.conn, forged)  # type: ignore[arg-type]
            server._deliver(out)
            await asyncio.sleep(0.3)
            assert ann.model.role == "player"
        finally:
            await ann.close()


async def test_joining_a_room_in_a_race_takes_its_snapshot() -> None:
    """A room racing answers a join twice, joined then its snapshot with the same seq: that one
    is taken (ignoring every snapshot not asked for left a late watcher in 'connecting')."""
    from client.session import Session

    from .server_helpers import host_and_join, running_server, start_race

    async with running_server() as server:
        conns, code, _ = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="spider", options={"suits": 1})
        )
        await start_race(conns)
        cy = Session(server.url, RaceModel(name="Cy"))
        cy.remember = False
        await cy.connect()
        try:
            await cy.join(code, "Cy", spectate=True)
            cy.start_events()
            for _ in range(100):
                if cy.model.phase == "racing":
                    break
                await asyncio.sleep(0.05)
            assert cy.model.phase == "racing" and cy.model.progress
        finally:
            await cy.close()
            for c in conns:
                await c.close()
