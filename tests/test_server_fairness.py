"""RULES.md section 6 on the wire: every frame a player or a spectator receives is scanned for a
card they may not see, the deal number and the salt; the commitment verifies after the race."""

from __future__ import annotations

import pytest

from client.net import ServerError
from protocol import cards
from protocol.config import GameConfig
from protocol.fairness import commitment, verify
from protocol.messages import (
    Countdown,
    GetRace,
    Joined,
    JoinRoom,
    Moved,
    ProgressUpdate,
    RaceOver,
    RaceStart,
    Ready,
    RoomUpdate,
    Settings,
    Snapshot,
    UpdateSettings,
)

from .server_helpers import (
    Recorder,
    cards_in,
    close_all,
    hidden_names,
    host_and_join,
    http_get,
    mentions,
    move,
    play,
    room_of,
    running_server,
    seat_state,
    start_race,
    wait_until,
    witness_of,
)


def illegal_tableau(state) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """A tableau move between two non-empty piles that the rules refuse (its message names cards)."""
    n = len(state.piles)
    for s in range(n):
        for d in range(n):
            if s != d and state.piles[s] and state.piles[d]:
                from protocol.moves import tableau

                if state.check(tableau(s, d)) is not None:
                    return s, d
    raise AssertionError("every tableau move is legal")


def before_over(rec: Recorder) -> tuple[list[bytes], bytes]:
    """The frames received before ``race_over``, and the ``race_over`` frame."""
    for i, event in enumerate(rec.decoded()):
        if isinstance(event, RaceOver):
            return rec.frames[:i], rec.frames[i]
    raise AssertionError("no race_over received")


def seen_by(start: RaceStart | Snapshot, answers: list[Moved]) -> set[str]:
    """Every card name a player was legitimately shown of their own board."""
    assert start.board is not None
    names = {c for p in start.board.tableau for c in p.cards}
    names |= {c for f in start.board.foundations for c in f}
    for m in answers:
        names |= {s.card for s in m.shown}
    return names


async def recorder(url: str) -> Recorder:
    rec = Recorder(url)
    await rec.open()
    return rec


@pytest.mark.parametrize("game", ["spider", "louis"])
async def test_no_frame_shows_a_hidden_card_the_number_or_the_salt(game: str) -> None:
    async with running_server() as server:
        # a deal where Ann's first moves turn cards up (fixed so that the test always can),
        # and past 2**64: the reveal carries it as a decimal string
        settings = Settings(game=game, deal_number=2**64 + 1)
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], settings, conn_cls=Recorder
        )
        ann, bob = conns
        ann_id, bob_id = joined[0].you, joined[1].you
        watcher = await recorder(server.url)
        assert isinstance(
            await watcher.request(JoinRoom(seq=0, code=code, name="Cy", spectate=True)), Joined
        )
        await ann.request(Ready(seq=0))
        await bob.request(Ready(seq=0))
        ann_start = await ann.wait_for(RaceStart)
        bob_start = await bob.wait_for(RaceStart)
        race = room_of(server, code).race
        assert race is not None
        number, salt = race.number, race.salt

        # Ann turns up cards that are still face down on Bob's board (the same deal)
        # (Louis: never the stock's deal, which would show every card)
        ann_moves = await play(ann, server, code, ann_id, 6, deals=False)
        if game == "spider":
            ann_moves.append(await move(ann, "deal"))
            ann_moves += await play(ann, server, code, ann_id, 2, deals=False)
        bob_moves = await play(bob, server, code, bob_id, 1, deals=False)
        assert sum(len(m.shown) for m in ann_moves) > sum(len(m.shown) for m in bob_moves)
        # refusals name cards too: only cards the player can see
        s, d = illegal_tableau(seat_state(server, code, ann_id))
        with pytest.raises(ServerError) as refused:
            await move(ann, "tableau", s, d)
        assert refused.value.code == "illegal_move"
        # nothing of the race's record before it ends, by command or by HTTP
        with pytest.raises(ServerError) as early:
            await bob.request(GetRace(seq=0, race_id=race.race_id))
        assert early.value.code == "race_not_found"
        assert (await http_get(server, f"/races/{race.race_id}"))[0] == 404
        # a spectator arriving now gets a snapshot: scanned too
        late = await recorder(server.url)
        await late.request(JoinRoom(seq=0, code=code, name="Dee"))
        snap = await late.wait_for(Snapshot)
        assert sum(p.moves for p in snap.progress) == len(ann_moves) + len(bob_moves)

        # what stays hidden to the end was hidden all along
        hidden = {
            ann_id: hidden_names(seat_state(server, code, ann_id)),
            bob_id: hidden_names(seat_state(server, code, bob_id)),
        }
        assert hidden[ann_id] and hidden[bob_id]
        # some of Ann's cards are hidden on Bob's board: a leak of her board would show
        assert seen_by(ann_start, ann_moves) & hidden[bob_id]
        await move(ann, "resign")
        await move(bob, "resign")
        for c in (ann, bob, watcher, late):
            await c.wait_for(RaceOver)
        await close_all([ann, bob, watcher, late])

    for rec, me, start, answers in (
        (ann, ann_id, ann_start, ann_moves),
        (bob, bob_id, bob_start, bob_moves),
    ):
        frames, over = before_over(rec)
        assert len(frames) > 10
        shown = set().union(*(cards_in(f) for f in frames))
        assert shown, "the scan finds the cards a player is shown"
        assert not shown & hidden[me], f"hidden cards sent: {sorted(shown & hidden[me])}"
        assert shown <= seen_by(start, answers), sorted(shown - seen_by(start, answers))
        assert not [f for f in frames if mentions(f, number, salt)]
        assert mentions(over, number, salt)  # the reveal, at the end
    for rec in (watcher, late):
        frames, over = before_over(rec)
        assert len(frames) >= (6 if rec is watcher else 2)
        assert not set().union(*(cards_in(f) for f in rec.frames)), "a spectator sees no card"
        assert not [f for f in frames if mentions(f, number, salt)]
        assert mentions(over, number, salt)


@pytest.mark.parametrize("number", [123_456_789_012_345, 98_765_432_109_876_543_210])
async def test_fixed_deal_is_secret_until_the_end_and_the_commitment_verifies(
    number: int,
) -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url,
            ["Ann", "Bob"],
            Settings(game="spider", deal_number=number + 1),
            conn_cls=Recorder,
        )
        ann, bob = conns
        assert joined[0].room.settings.fixed_deal
        # the host changes the fixed number in the lobby: still never shown
        await ann.request(
            UpdateSettings(seq=0, settings=Settings(game="spider", deal_number=number))
        )
        update = await wait_until(bob, RoomUpdate, lambda u: not u.room.members[1].ready)
        assert update.room.settings.fixed_deal
        watcher = await recorder(server.url)
        await watcher.request(JoinRoom(seq=0, code=code, name="Cy", spectate=True))
        await ann.request(Ready(seq=0))
        await bob.request(Ready(seq=0))
        countdown = await watcher.wait_for(Countdown)
        start = await ann.wait_for(RaceStart)
        race = room_of(server, code).race
        assert race is not None and race.number == number
        answers = await play(ann, server, code, joined[0].you, 5)
        answers.append(await move(ann, "deal"))
        await play(bob, server, code, joined[1].you, 3)
        await move(ann, "resign")
        await move(bob, "resign")
        over = await watcher.wait_for(RaceOver)
        await ann.wait_for(RaceOver)
        await bob.wait_for(RaceOver)
        await close_all([ann, bob, watcher])

    for rec in (ann, bob, watcher):
        frames, last = before_over(rec)
        assert frames
        assert not [f for f in frames if mentions(f, number, race.salt)]
        assert not [f for f in frames if mentions(f, number + 1)]  # nor the first one
        assert mentions(last, number, race.salt)
    reveal = over.reveal
    assert reveal.number == number and reveal.commitment == countdown.commitment
    assert start.commitment == countdown.commitment
    assert (
        commitment(reveal.game, reveal.options, reveal.numbering, reveal.number, reveal.salt)
        == countdown.commitment
    )
    config = GameConfig(reveal.game, reveal.options, reveal.numbering)
    witness = witness_of(start, answers)
    assert verify(config, number, reveal.salt, countdown.commitment, witness) == []
    # and the check can fail: another number, or another salt, does not verify
    assert verify(config, number + 1, reveal.salt, countdown.commitment, witness)
    assert verify(config, number, reveal.salt + "0", countdown.commitment, witness)


def test_card_scan_finds_cards_as_values_and_in_messages() -> None:
    # the scanner itself: it must find what a leak would look like
    import msgpack

    frame = msgpack.packb({"a": ["TS", {"b": "9H"}], "message": "no, QC goes on KD: TRY"})
    assert cards_in(frame) == {"TS", "9H", "QC", "KD"}
    assert mentions(msgpack.packb({"x": [12345678901234567]}), 12345678901234567, "zz")
    assert mentions(msgpack.packb({"x": "12345678901234567"}), 12345678901234567, "zz")
    assert mentions(msgpack.packb({"x": "salt=zz"}), 1, "zz")
    assert not mentions(msgpack.packb({"x": 5, "y": "AS"}), 12345678901234567, "zz")
    assert cards.name(0) == "AC"


async def test_undo_never_goes_back_past_a_card_shown_and_everyone_sees_it_counted() -> None:
    async with running_server() as server:
        # deal 2**64 + 1: Ann's first moves turn cards up (see above)
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="spider", deal_number=2**64 + 1)
        )
        ann, bob = conns
        await start_race(conns)
        state = seat_state(server, code, joined[0].you)
        with pytest.raises(ServerError) as nothing:
            await move(ann, "undo")
        assert nothing.value.code == "illegal_move"
        shown = await play(ann, server, code, joined[0].you, 1)
        assert shown[0].shown and not shown[0].can_undo  # a card turned: that move is final
        with pytest.raises(ServerError) as final:
            await move(ann, "undo")
        assert final.value.code == "illegal_move"
        dealt = await move(ann, "deal")
        assert len(dealt.shown) == 10 and not dealt.can_undo
        quiet = await play(ann, server, code, joined[0].you, 1, prefer="quiet")
        assert not quiet[0].shown and quiet[0].can_undo
        before = state.board()
        undone = await move(ann, "undo")
        assert undone.move.kind == "undo" and undone.undone == quiet[0].move
        assert undone.shown == [] and not undone.can_undo
        assert state.board() != before and state.undos == 1
        progress = await wait_until(
            bob, ProgressUpdate, lambda p: any(x.undos == 1 for x in p.players)
        )
        assert next(x for x in progress.players if x.name == "Ann").undos == 1
        await close_all(conns)


# -- the proof itself, with no server ---------------------------------------------------------------


def test_the_commitment_is_the_documented_hash_of_every_field_that_picks_the_deal() -> None:
    """docs/protocol.md, Fair play: sha256 of the canonical JSON of game, every option,
    numbering, number and salt (and a certified deal's solution).  A field left out of the hash
    would let the reveal change it: Spider's deal 7 of xpat2 is not PySolFC's."""
    import hashlib
    import json

    def documented(
        g: str, opts: dict[str, object], n: str, number: int, salt: str, sol: list[str] | None
    ) -> str:
        text = json.dumps(
            {"game": g, "options": opts, "numbering": n, "number": int(number), "salt": salt}
            | ({"solution": sol} if sol is not None else {}),
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(text.encode()).hexdigest()

    opts: dict[str, object] = {"suits": 4, "relaxed": 0}
    for numbering in ("pysolfc", "xpat2"):
        for sol in (None, ["1>2", "d"]):
            args = ("spider", opts, numbering, 7, "ab" * 16, sol)
            assert commitment(*args) == documented(*args)
    sealed = {
        commitment("spider", opts, "pysolfc", 7, "ab" * 16),
        commitment("spider", opts, "xpat2", 7, "ab" * 16),
        commitment("spider", {"suits": 2, "relaxed": 0}, "pysolfc", 7, "ab" * 16),
        commitment("louis", {"build": "suit"}, "pysolfc", 7, "ab" * 16),
        commitment("spider", opts, "pysolfc", 8, "ab" * 16),
        commitment("spider", opts, "pysolfc", 7, "ab" * 15 + "ac"),
        commitment("spider", opts, "pysolfc", 7, "ab" * 16, ["d"]),
    }
    assert len(sealed) == 7, "each field that picks the deal changes the commitment"


def test_a_starting_board_other_than_the_revealed_deals_is_found_out() -> None:
    """A player shown the start of one deal, and a reveal of another that verifies against its
    own commitment, before any card was turned: the starting board alone gives it away."""
    from protocol.fairness import Witness
    from protocol.game import new_game

    config = GameConfig("spider", {"suits": 1})
    shown = Witness(start=new_game(config, 1).view())
    assert (
        verify(config, 1, "ab", commitment("spider", config.options, "pysolfc", 1, "ab"), shown)
        == []
    )
    sealed = commitment("spider", config.options, "pysolfc", 2, "ab")
    problems = verify(config, 2, "ab", sealed, shown)
    assert any("starting board" in p for p in problems), problems
