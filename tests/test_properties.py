"""Properties of random legal play, for every game and a spread of options (hypothesis).

Each example deals a random game and plays random legal moves (undos included), checking after
every move: the 104 cards are all there exactly once, the scores are within bounds and equal an
independent recomputation, an undo restores the exact earlier position (and only back to the last
card shown), the player's view never holds a hidden card and a client copy built from it keeps up,
and a record of the game replays to the same position.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import cards
from protocol.config import XPAT2, GameConfig
from protocol.game import GameState, new_game, state_class
from protocol.moves import RESIGN, UNDO, UNKNOWN, Change, IllegalMove, Kind, Move
from protocol.notation import format_move, parse_move
from protocol.record import Recorder, Result, load, replay
from protocol.spider import SpiderState
from tests.rules_helpers import (
    RANKS,
    aisleriot_score,
    all_names,
    face_up,
    full_deck,
    helena_score,
    view_cards,
    xpat2_score,
)

CONFIGS = [
    GameConfig("spider"),
    GameConfig("spider", {"suits": 2, "relaxed": 1}),
    GameConfig("spider", {"suits": 1, "relaxed": 2}),
    GameConfig("spider", {"suits": 1}, numbering=XPAT2),
    GameConfig("st-helena"),
    GameConfig("st-helena", {"build": "any", "spaces": "any"}),
    GameConfig("louis"),
    GameConfig("louis", {"build": "any"}),
]

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_STEPS = 120


@st.composite
def games(draw: Any) -> tuple[GameConfig, int]:
    config = draw(st.sampled_from(CONFIGS))
    if config.numbering == XPAT2:
        number = draw(st.integers(0, 999_999_999))
    else:
        number = draw(st.one_of(st.integers(1, 31999), st.integers(32000, 10**20)))
    return config, number


SUIT_SETS = {4: "CSHDCSHD", 2: "CCCCHHHH", 1: "CCCCCCCC"}


@st.composite
def spider_positions(draw: Any) -> SpiderState:
    """A Spider position near the end: some of the eight suits whole on the foundations, some
    in two face-up runs on the piles (one move from complete), the other cards in random piles,
    partly face down, and maybe a stock.  Random play from here moves suits to the foundations
    and wins, which random play from a new deal almost never does."""
    suits = draw(st.sampled_from([4, 2, 1]), label="suits")
    relaxed = draw(st.sampled_from([0, 1, 2]), label="relaxed")
    order = draw(st.permutations(SUIT_SETS[suits]), label="suit order")
    on_foundations = draw(st.integers(0, 4), label="on foundations")
    in_runs = draw(st.integers(0, 8 - on_foundations), label="in runs")
    loose = [cards.parse(r + suit) for suit in order[on_foundations + in_runs :] for r in RANKS]
    loose = draw(st.permutations(loose), label="loose cards")
    stock_size = draw(st.sampled_from([0, 10, 20]), label="stock")
    stock_size = min(stock_size, len(loose) // 10 * 10)
    stock, loose = loose[:stock_size], loose[stock_size:]
    piles: list[list[int]] = [[] for _ in range(10)]
    for card in loose:
        piles[draw(st.integers(0, 9), label="pile")].append(card)
    down, budget = [], 44
    for p in piles:
        d = min(budget, draw(st.integers(0, max(0, len(p) - 1)), label="down")) if p else 0
        down.append(d)
        budget -= d
    for suit in order[on_foundations : on_foundations + in_runs]:
        run = [cards.parse(r + suit) for r in reversed(RANKS)]  # K..A
        cut = draw(st.integers(1, 13), label="cut")
        piles[draw(st.integers(0, 9), label="upper")].extend(run[:cut])
        piles[draw(st.integers(0, 9), label="lower")].extend(run[cut:])
    foundations = [
        [cards.parse(r + suit) for r in reversed(RANKS)] for suit in order[:on_foundations]
    ] + [[] for _ in range(8 - on_foundations)]
    config = GameConfig("spider", {"suits": suits, "relaxed": relaxed})
    return SpiderState(config, piles, down, stock, foundations)


@st.composite
def starts(draw: Any) -> GameState:
    """A new game of a random deal, or (a third of the time) a Spider position near the end."""
    if draw(st.integers(0, 2), label="built?") == 0:
        return draw(spider_positions())
    config, number = draw(games())
    return new_game(config, number)


def priority(state: GameState, move: Move) -> int:
    """A cheap hint for the greedy player: foundations first, then builds in suit and moves that
    turn a card, so that some games get far (complete suits, wins) in few moves."""
    if move.kind == Kind.FOUNDATION:
        return 3
    if move.kind != Kind.TABLEAU:
        return 0
    src, dst = state.piles[move.src], state.piles[move.dst]
    if state.config.game != "spider":
        return 1
    if dst and cards.suit(dst[-1]) == cards.suit(src[-move.count]):
        return 2
    if state.down[move.src] and len(src) - move.count == state.down[move.src]:
        return 2
    return 1 if dst else 0


def play(data: Any, state: GameState) -> Iterator[tuple[GameState, Move, Change]]:
    """Random legal moves on ``state`` (undos now and then); yields (before, move, change).

    Half the games are played by a greedy player (best :func:`priority`, ties broken at random),
    who completes suits and sometimes wins; the others by a purely random one."""
    steps = data.draw(st.integers(0, MAX_STEPS), label="steps")
    greedy = data.draw(st.booleans(), label="greedy")
    for _ in range(steps):
        moves = state.legal_moves()
        if greedy and moves:
            best = max(priority(state, m) for m in moves)
            moves = [m for m in moves if priority(state, m) == best]
        if state.can_undo and data.draw(st.integers(0, 5), label="undo?") == 0:
            move = UNDO
        elif moves:
            move = moves[data.draw(st.integers(0, len(moves) - 1), label="move")]
        else:
            return
        before = state.copy()
        change = state.apply(move)
        yield before, move, change


def deck_of(config: GameConfig):
    return full_deck(config.option("suits") if config.game == "spider" else 4)


def independently_won(state: GameState) -> bool:
    if state.config.game != "spider":
        return all(len(f) == 13 for f in state.foundations)
    if state.stock:
        return False
    for p, d in zip(state.piles, state.down, strict=True):
        if p and (
            d or [cards.name(x) for x in p] != [r + cards.name(p[0])[1] for r in "KQJT98765432A"]
        ):
            return False
    return True


@SETTINGS
@given(start=starts(), data=st.data())
def test_cards_scores_and_outcome(start, data):
    state = start
    config = state.config
    deck = deck_of(config)
    for before, _move, change in play(data, state):
        assert all_names(state) == deck  # all 104 cards, each once
        if config.game == "spider":
            assert 0 <= state.score() <= 1000 and state.score() == xpat2_score(state)
            assert 0 <= state.score2() <= 96 and state.score2() == aisleriot_score(state)
        else:
            assert 0 <= state.score() <= 96 and state.score() == helena_score(state)
            assert state.score2() is None
        assert state.won == independently_won(state)
        assert state.stuck == (not state.won and not state.resigned and not state.legal_moves())
        # what became visible is face up where the change says
        for placed in change.shown:
            assert placed.index >= state.down[placed.pile]
            assert state.piles[placed.pile][placed.index] == placed.card
        # the scores only count the position: a copy scores the same
        assert state.copy().score() == state.score()
        assert before.moves + (change.move.kind != Kind.UNDO) == state.moves


@SETTINGS
@given(start=starts(), data=st.data())
def test_undo_restores_the_exact_earlier_state(start, data):
    state = start
    undoable: list[tuple[Any, ...]] = []  # the boards an undo may go back to, oldest first
    for before, move, change in play(data, state):
        if move == UNDO:
            assert state.board() == undoable.pop()
            assert change.undone is not None
            assert state.undos == before.undos + 1
        elif change.turned or change.dealt or move.kind in (Kind.DEAL, Kind.REDEAL):
            undoable.clear()  # a card shown, a deal or a redeal: nothing before it comes back
        else:
            undoable.append(before.board())
        if state.won:
            undoable.clear()  # a win is final: nothing before it comes back
        assert state.can_undo == bool(undoable)
        assert state.view().can_undo == bool(undoable)
    if not undoable:
        board = state.board()
        try:
            state.apply(UNDO)
        except IllegalMove:
            pass
        else:
            raise AssertionError("an undo went past a card shown, a deal or a redeal")
        assert state.board() == board


@SETTINGS
@given(start=starts(), data=st.data())
def test_projection_never_holds_a_hidden_card(start, data):
    state = start
    config = state.config
    client = state_class(config).from_view(config, state.view())
    for _before, move, change in play(data, state):
        view = state.view()
        assert view_cards(state) == face_up(state)
        assert [pv.hidden for pv in view.tableau] == state.down
        assert view.stock == len(state.stock)
        # a client's copy, told only what the change showed, keeps up with the server's
        client.apply(move)
        for placed in change.shown:
            client.show(placed)
        assert client.view() == view
        assert client.legal_moves() == state.legal_moves()
        assert all(x == UNKNOWN for x in client.stock)
        for p, d in zip(client.piles, client.down, strict=True):
            assert all(x == UNKNOWN for x in p[:d])
            assert UNKNOWN not in p[d:]


def test_a_card_shown_where_the_player_sees_none_is_refused() -> None:
    """A client's copy takes a shown card only at a face-up position: one said to be at a
    face-down position (a server out of step) is an error, which asks for a snapshot, not a
    card written under the face-down count."""
    from protocol.moves import Placed

    config = GameConfig("spider", {"suits": 1})
    state = new_game(config, 1)
    client = state_class(config).from_view(config, state.view())
    top = len(state.piles[0]) - 1
    client.show(Placed(0, top, state.piles[0][top]))  # what the player was shown: taken
    for index in (0, state.down[0] - 1):
        with pytest.raises(ValueError):
            client.show(Placed(0, index, state.piles[0][index]))
    assert client.piles[0][: client.down[0]] == [UNKNOWN] * client.down[0]


@SETTINGS
@given(game=games(), data=st.data(), resign=st.booleans())
def test_replay_equals_live_play(game, data, resign):
    config, number = game
    recorder = Recorder(config, number)
    live = recorder.state
    for before, _move, change in play(data, live):
        # the text written for a move means that same move in the position it was played from
        text = format_move(change.move, before)
        assert before.copy().apply(parse_move(text)).move == change.move
        recorder.moves.append(text)
    if resign:
        recorder.play(RESIGN)
    record = load(recorder.record().dumps())
    again = replay(record)
    assert again.board() == live.board()
    assert Result.of(again) == Result.of(live)
    assert (again.moves, again.undos, again.resigned) == (live.moves, live.undos, live.resigned)


@SETTINGS
@given(start=starts(), data=st.data())
def test_legal_moves_are_exactly_the_accepted_moves(start, data):
    state = start
    config = state.config
    for _ in play(data, state):
        pass
    piles = len(state.piles)
    counts = range(1, 14) if config.game == "spider" else (1,)
    candidates = [
        Move(Kind.TABLEAU, s, d, n) for s in range(piles) for d in range(piles) for n in counts
    ]
    candidates += [Move(Kind.FOUNDATION, s, f, 0) for s in range(piles) for f in range(8)]
    candidates += [Move(Kind.DEAL), Move(Kind.REDEAL)]
    listed = state.legal_moves()
    for move in candidates:
        board = state.board()
        try:
            settled = state.copy().apply(move).move
        except IllegalMove:
            settled = None
        assert state.board() == board
        if config.game == "spider" and move.kind == Kind.FOUNDATION:
            # Spider lists a complete suit's move once, to the first free foundation
            ok = any(m[:2] == move[:2] for m in listed) and not state.foundations[move.dst]
            assert (settled is not None) == ok
        else:
            assert (settled is not None) == (settled in listed), move
    for move in listed:
        assert state.check(move) is None, move
