"""One race without a hub: moves, times, the end, standings and progress, with a fake clock."""

from __future__ import annotations

import pytest

from protocol.config import ConfigError, GameConfig
from protocol.fairness import commitment
from protocol.messages import WireMove, to_wire
from protocol.moves import Kind
from server.race import Race, RaceError, random_number

from .rules_helpers import one_move_from_stuck, spider, suit_run

T0 = 500.0


def race(game: str = "spider", n: int = 2, **kw: object) -> Race:
    r = Race("r1", GameConfig(game), [(i + 1, name) for i, name in enumerate("ABCDE"[:n])], **kw)  # type: ignore[arg-type]
    return r


def wire(kind: str, src: int = -1, dst: int = -1, count: int = 0) -> WireMove:
    return WireMove(kind=kind, src=src, dst=dst, count=count)  # type: ignore[arg-type]


def set_seat(
    r: Race, sid: int, status: str, score: int, score_ms: int, finish_ms: int | None = None
) -> None:
    seat = r.seats[sid]
    seat.status = status  # type: ignore[assignment]
    seat.score = score
    seat.score_ms = score_ms
    seat.finish_ms = finish_ms


# -- standings ----------------------------------------------------------------------------------


def test_first_mode_ranks_winners_by_time_then_the_rest_by_score_then_time() -> None:
    r = race(n=5, mode="first")
    set_seat(r, 1, "won", 1000, 9000, finish_ms=9000)  # won later, with the higher score
    set_seat(r, 2, "won", 990, 4000, finish_ms=4000)
    set_seat(r, 3, "playing", 300, 8000)
    set_seat(r, 4, "resigned", 300, 2000, finish_ms=2500)
    set_seat(r, 5, "stuck", 450, 7000, finish_ms=7000)
    standings = r.standings()
    assert [s.id for s in standings] == [2, 1, 5, 4, 3]
    assert [s.rank for s in standings] == [1, 2, 3, 4, 5]
    assert standings[0].status == "won" and standings[0].finish_ms == 4000


def test_score_mode_ranks_by_score_then_by_when_it_was_reached() -> None:
    r = race(n=5, mode="score", time_limit_s=60)
    set_seat(r, 1, "won", 1000, 9000, finish_ms=9000)
    set_seat(r, 2, "won", 990, 4000, finish_ms=4000)
    set_seat(r, 3, "playing", 300, 8000)
    set_seat(r, 4, "resigned", 300, 2000, finish_ms=2500)
    set_seat(r, 5, "stuck", 450, 7000, finish_ms=7000)
    assert [s.id for s in r.standings()] == [1, 2, 5, 4, 3]


def test_full_ties_keep_the_seat_order() -> None:
    r = race(n=3)
    for sid in (3, 1, 2):
        set_seat(r, sid, "playing", 10, 100)
    assert [s.id for s in r.standings()] == [1, 2, 3]


# -- moves and times ------------------------------------------------------------------------------


def test_moves_before_the_start_after_the_end_and_after_resigning_are_refused() -> None:
    r = race()
    with pytest.raises(RaceError) as early:
        r.move(1, wire("deal"), T0)
    assert early.value.code == "race_not_running"
    with pytest.raises(RaceError) as stranger:
        r.move(9, wire("deal"), T0)
    assert stranger.value.code == "not_a_player"
    r.start(T0)
    r.move(1, wire("resign"), T0 + 1)
    with pytest.raises(RaceError) as done:
        r.move(1, wire("deal"), T0 + 2)
    assert done.value.code == "player_done"
    with pytest.raises(RaceError) as illegal:
        r.move(2, wire("tableau", 0, 0), T0 + 2)
    assert illegal.value.code == "illegal_move" and illegal.value.message
    r.end(T0 + 3, "all_done")
    with pytest.raises(RaceError) as late:
        r.move(2, wire("deal"), T0 + 4)
    assert late.value.code == "race_not_running"


def test_undo_off_is_refused_before_the_rules_are_asked() -> None:
    r = race(undo="off")
    r.start(T0)
    with pytest.raises(RaceError) as off:
        r.move(1, wire("undo"), T0 + 1)
    assert off.value.code == "undo_off"


def test_times_scores_and_the_move_list() -> None:
    r = race("spider")
    r.start(T0)
    seat = r.seats[1]
    result = r.move(1, wire("deal"), T0 + 1.25)
    assert result.t_ms == 1250 and result.index == 0 and result.notation == "d"
    assert len(result.shown) == 10 and result.undone is None
    assert seat.moves == ["d"] and seat.times_ms == [1250]
    assert seat.score == seat.state.score()
    # the score's time moves only when the score changes
    first_ms = seat.score_ms
    r.move(1, wire("resign"), T0 + 3)
    assert seat.score_ms == first_ms and seat.status == "resigned" and seat.finish_ms == 3000
    assert seat.moves == ["d", "resign"]


def test_a_win_is_a_finish() -> None:
    r = race("spider")
    r.start(T0)
    r.seats[1].state = spider(suit_run("S", 2), "AS", foundations=list("CCHHDDS"))
    result = r.move(1, wire("tableau", 1, 0), T0 + 7)
    seat = r.seats[1]
    assert seat.status == "won" and seat.finish_ms == 7000 and seat.score_ms == 7000
    assert result.move.count == 1 and seat.score == seat.state.score() > 0
    assert r.check_end(T0 + 7) is None  # B still plays


# -- the end --------------------------------------------------------------------------------------


def test_time_up_ends_at_the_deadline_and_freezes_the_clock() -> None:
    r = race(mode="score", time_limit_s=30)
    assert r.check_end(T0) is None  # not started
    r.start(T0)
    assert r.deadline == T0 + 30
    assert r.check_end(T0 + 29.999) is None
    assert r.check_end(T0 + 30) == "time_up"
    r.end(T0 + 30.4, "time_up")  # the tick came a little late
    assert r.ended_at == T0 + 30 and r.end_reason == "time_up"
    assert r.elapsed_ms(T0 + 99) == 30_000
    assert not r.running and r.check_end(T0 + 99) is None


def test_a_move_at_or_after_the_deadline_is_refused_before_the_tick_ends_the_race() -> None:
    r = race(mode="score", time_limit_s=3)
    r.start(T0)
    r.move(1, wire("deal"), T0 + 2.999)
    for late in (T0 + 3, T0 + 3.046):
        with pytest.raises(RaceError) as err:
            r.move(2, wire("deal"), late)
        assert err.value.code == "race_not_running" and "time is up" in err.value.message
    assert r.seats[2].moves == [] and r.seats[1].times_ms == [2999]


def test_all_done_when_nobody_plays_any_more() -> None:
    r = race(n=3)
    r.start(T0)
    r.move(1, wire("resign"), T0 + 1)
    r.drop(2, "left", T0 + 2)
    assert r.check_end(T0 + 2) is None
    r.drop(3, "disconnected", T0 + 3)
    assert r.check_end(T0 + 3) == "all_done"
    assert (r.seats[2].status, r.seats[2].finish_ms) == ("left", 2000)
    r.drop(1, "left", T0 + 4)  # a finished seat keeps its status
    assert (r.seats[1].status, r.seats[1].finish_ms) == ("resigned", 1000)


# -- the deal and the proof -----------------------------------------------------------------------


def test_the_commitment_hides_the_number_until_the_end() -> None:
    r = race("louis", number=123456, salt="ab" * 16)
    assert r.commitment == commitment("louis", {"build": "suit"}, "pysolfc", 123456, "ab" * 16)
    with pytest.raises(RuntimeError):
        r.reveal()
    r.start(T0)
    with pytest.raises(RuntimeError):
        r.reveal()
    r.end(T0 + 1, "all_done")
    reveal = r.reveal()
    assert (reveal.number, reveal.salt, reveal.commitment) == (123456, "ab" * 16, r.commitment)
    assert reveal.options == {"build": "suit"}


def test_random_numbers_fill_pysolfcs_range_and_differ() -> None:
    numbers = {random_number(GameConfig("spider")) for _ in range(50)}
    assert len(numbers) == 50
    assert all(10**16 <= n < 10**20 for n in numbers)
    assert any(n >= 2**64 for n in numbers)  # most of the range is past 64 bits
    xp = {random_number(GameConfig("spider", numbering="xpat2")) for _ in range(50)}
    assert all(0 <= n <= 999_999_999 for n in xp)
    r1, r2 = race(), race()
    assert r1.number != r2.number and r1.salt != r2.salt and r1.commitment != r2.commitment
    with pytest.raises(ConfigError):
        race(number=0)


def test_every_seat_gets_the_same_deal() -> None:
    r = race("st-helena", n=3, number=777)
    boards = [s.state.board() for s in r.seats.values()]
    assert boards[0] == boards[1] == boards[2]
    r.start(T0)
    r.move(1, wire("resign"), T0 + 1)
    assert r.seats[2].state.board() == boards[0]


# -- progress ---------------------------------------------------------------------------------


def test_progress_counts_turned_cards_suits_and_foundation_cards() -> None:
    r = race("spider", number=5)
    r.start(T0)
    p = r.progress()[0]
    assert (p.turned, p.suits, p.foundation_cards, p.moves, p.status) == (0, 0, 0, 0, "playing")
    # a hand-set board: two suits home, one complete in the tableau, a card turned
    r.seats[1].state = spider(suit_run("H"), "5D 9C | 8H", foundations=["S", "C"])
    p = r.progress()[0]
    assert (p.suits, p.foundation_cards) == (3, 26)
    assert p.turned == 44 - 2
    louis = race("louis", number=5)
    louis.start(T0)
    q = louis.progress()[0]
    assert (q.turned, q.suits, q.foundation_cards, q.score2) == (0, 0, 0, None)
    louis.move(1, wire("deal"), T0 + 1)
    q = louis.progress()[0]
    assert q.turned == 84 and q.moves == 1
    helena = race("st-helena", number=5)
    assert helena.progress()[1].turned == 0 and helena.progress()[1].name == "B"


def test_a_players_race_is_bounded_in_moves_and_resigning_still_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A move and its undo, over and over, made a record without end: a player's race holds at
    most MAX_ACTIONS moves and undos; resigning is still taken."""
    import server.race as race_module

    monkeypatch.setattr(race_module, "MAX_ACTIONS", 6)
    race = race_module.Race("r1", GameConfig("st-helena", {}), [(1, "Ann"), (2, "Bob")], number=1)
    race.start(0.0)
    state = race.seats[1].state
    done = 0
    while done < 6:
        move = next(m for m in state.legal_moves() if m.kind != Kind.REDEAL)
        race.move(1, to_wire(move), 1.0)
        race.move(1, WireMove(kind="undo"), 1.0)
        done += 2
    with pytest.raises(race_module.RaceError) as refused:
        race.move(1, WireMove(kind="undo"), 1.0)
    assert refused.value.code == "illegal_move" and "at most" in refused.value.message
    race.move(1, WireMove(kind="resign"), 1.0)
    assert race.seats[1].status == "resigned"


def test_race_records_write_moves_as_people_do() -> None:
    """A move is recorded in its shortest notation where it was played (``10>7``, not
    ``10>7:1``; ``2>f`` where the card fits one foundation), as docs/records.md says."""
    from protocol.notation import format_move

    race = Race("r1", GameConfig("spider", {"suits": 1}), [(1, "Ann")], number=1)
    race.start(0.0)
    state = race.seats[1].state
    move = next(m for m in state.legal_moves() if m.kind == Kind.TABLEAU)
    race.move(1, to_wire(move), 1.0)
    assert ":" not in race.seats[1].moves[-1]
    assert race.seats[1].moves[-1] == format_move(move.__class__(move.kind, move.src, move.dst, 0))


def _one_move_from_stuck(r: Race) -> None:
    """Seat 1 at a St. Helena position, no redeal left, where 7H onto 8H (or 8H onto 7H) leaves
    no move at all."""
    state = one_move_from_stuck()
    assert len(state.legal_moves()) == 2  # 7H onto 8H, or 8H onto 7H: either leaves none
    r.seats[1].state = state


@pytest.mark.parametrize("undo", ["safe", "off"])
def test_a_move_that_leaves_none_is_stuck_only_when_it_cannot_be_undone(undo: str) -> None:
    """With undo allowed, the move that left no move can be taken back: the race goes on for
    that player (it ended at once, and the undo was refused: "your race is over: you have
    stuck").  With undo off, stuck is stuck."""
    r = Race("r1", GameConfig("st-helena"), [(1, "Ann"), (2, "Bob")], number=5, undo=undo)
    r.start(0.0)
    _one_move_from_stuck(r)
    r.move(1, wire("tableau", 0, 1), 1.0)
    seat = r.seats[1]
    assert seat.state.stuck
    if undo == "off":
        assert seat.status == "stuck" and seat.finish_ms == 1000
        return
    assert seat.status == "playing" and seat.finish_ms is None
    r.move(1, wire("undo"), 2.0)
    assert not seat.state.stuck and seat.status == "playing"
    r.move(1, wire("tableau", 0, 1), 3.0)  # again, and this time resigns
    r.move(1, wire("resign"), 4.0)
    assert seat.status == "resigned"


def test_a_player_stuck_with_only_an_undo_is_out_after_a_minute_not_ten() -> None:
    """Left with no move but an undo, and doing neither: the race (a race to finish first waits
    for everyone) waited on them for race_idle_s, ten minutes.  Their shorter wait starts at the
    move that left them stuck."""
    r = Race("r1", GameConfig("st-helena"), [(1, "Ann"), (2, "Bob")], number=5, undo="safe")
    r.start(0.0)
    _one_move_from_stuck(r)
    r.idle_seats(0.5, 600.0, 60.0)
    assert r.idle_due == 600.0  # nobody is due before ten minutes
    r.move(1, wire("tableau", 0, 1), 1.0)
    assert r.seats[1].status == "playing" and r.idle_due == 0.0  # look again at once
    assert r.idle_seats(30.0, 600.0, 60.0) == []
    assert r.idle_due == 61.0
    assert r.idle_seats(61.0, 600.0, 60.0) == [1]  # Ann; Bob has ten minutes
    assert r.idle_seats(61.0, 600.0, 0.0) == []  # (0: only the ten minutes)


def test_a_move_after_your_race_is_over_says_why_in_words() -> None:
    """A seat released after the grace read "your race is over: you have disconnected" to a
    player connected again and watching (a bad-network trial)."""
    from server.race import RaceError

    r = Race("r1", GameConfig("st-helena"), [(1, "Ann"), (2, "Bob")], number=5)
    r.start(0.0)
    r.drop(1, "disconnected", 1.0)
    r.move(2, wire("resign"), 2.0)
    said = {}
    for seat in (1, 2):
        with pytest.raises(RaceError) as refused:
            r.move(seat, wire("deal"), 3.0)
        said[seat] = str(refused.value)
    assert said[1] == "your race is over: you were away too long and your seat was released"
    assert said[2] == "your race is over: you have resigned"
