"""Scores on hand-built positions (RULES.md sections 3 to 5): every term, 990, 1000 and 96.

Each expected value is worked out by hand in the comments, and checked against the recomputation
in ``rules_helpers`` as well, so that the two cannot drift apart silently.
"""

from __future__ import annotations

import pytest

from protocol.config import GameConfig
from protocol.game import new_game
from protocol.moves import UNDO, Kind, Move
from tests.rules_helpers import (
    aisleriot_score,
    helena,
    helena_score,
    spider,
    suit_run,
    xpat2_score,
)


def check(state, score: int, score2: int | None) -> None:
    assert state.score() == score
    assert state.score2() == score2
    assert xpat2_score(state) == score
    assert aisleriot_score(state) == score2
    v = state.view()
    assert (v.score, v.score2) == (score, score2)


# -- Spider ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        GameConfig("spider"),
        GameConfig("spider", {"suits": 2}),
        GameConfig("spider", {"suits": 1}),
        GameConfig("spider", numbering="xpat2"),
    ],
    ids=["4 suits", "2 suits", "1 suit", "xpat2"],
)
@pytest.mark.parametrize("number", [1, 33000])
def test_a_new_spider_game_scores_zero(config, number):
    check(new_game(config, number), 0, 0)


def test_each_term_of_the_spider_score():
    state = spider(
        "5D 6D 7D 8D 9D | 8S 7S 6S",  # 5 down; pairs 8S-7S, 7S-6S
        "5D 6D 7D 8D | 9H 8S",  # 4 down; 8S is not a heart: no pair
        "| 4C 3C 2C AC",  # no down; 3 pairs
        "9H | 8H",  # 1 down; 9H is face down: no pair
        "",  # empty: counts as a pile with no face-down card
        "AS | KC",  # 1 down
        "| 2S AS KC",  # no down; 2S-AS, never AS-KC
        "3D 4D 5D 6D | TD 9D 8D 7D 6D 5D 4D 3D 2D AD KD",  # 4 down; 9 pairs, not AD-KD
        "2H 2H 2H 2H | QH",  # 4 down
        "2H 2H 2H 2H | JH",  # 4 down
        foundations=["C"],
    )
    # face down: 5+4+0+1+0+1+0+4+4+4 = 23, so 21 of 44 turned: 210
    # piles without face-down cards: 3, 5, 7: 45
    # pairs: 2+3+1+9 = 15: 30; one foundation: 50
    check(state, 210 + 45 + 30 + 50, 15 + 12)


def test_complete_runs_in_the_tableau():
    state = spider(
        "5D | " + suit_run("S"),  # 1 down; 12 pairs, a run
        "| " + suit_run("H") + " 5C",  # a run under another card still counts
        "6D 6D | " + suit_run("C"),  # 2 down; 12 pairs, a run
        "KD | " + suit_run("D", 1, 12),  # the king is face down: 11 pairs, no run
        *["7D | 8C"] * 6,  # 1 down each
        foundations=["C", "S"],
    )
    # down 1+0+2+1+6 = 10: 340; no down: 1 pile: 15; pairs 12*3+11 = 47: 94; 3 runs: 78;
    # two foundations: 100.  3 + 2 suits complete: no bonus.
    check(state, 340 + 15 + 94 + 78 + 100, 47 + 24)


def test_990_with_every_suit_on_the_foundations():
    check(spider(foundations=list("CSHDCSHD")), 990, 96)


def test_1000_with_every_suit_left_in_the_tableau():
    state = spider(*["| " + suit_run(s) for s in "CSHDCSHD"])
    # 440 turned + 150 for ten piles + 8*12 pairs (192) + 8 runs (208) + 2*(8-3) = 1000
    check(state, 1000, 96)
    assert state.won


@pytest.mark.parametrize("left", range(9))
def test_won_scores_by_suits_left_in_the_tableau(left):
    suits = "CSHDCSHD"
    state = spider(*["| " + suit_run(s) for s in suits[:left]], foundations=list(suits[left:]))
    assert state.won
    # each suit is worth 50 either way (24 for its pairs + 26, or 50 on a foundation)
    check(state, 990 + 2 * max(0, left - 3), 96)


def test_no_bonus_until_every_suit_is_complete():
    state = spider(*["| " + suit_run(s) for s in "CSHDCSH"], "| 5D")
    # 440 + 150 + 7 * 50, and 7 of 8 suits complete: no bonus
    check(state, 940, 84)
    assert not state.won


def test_score_is_a_function_of_the_position():
    state = spider("5D | 9S", "| 8S 8H", "| 7S", *["| 3H"] * 7)
    first = state.score()
    state.apply(Move(Kind.TABLEAU, 1, 0, 1))  # 8H onto 9S: no pair
    assert state.score() == first
    state.apply(Move(Kind.TABLEAU, 2, 1, 1))  # 7S onto 8S: a pair
    assert state.score() == first + 2 and state.score2() == 1
    state.apply(UNDO)
    state.apply(UNDO)
    assert state.score() == first


def test_turning_a_card_and_clearing_a_pile():
    state = spider("5D | 9S", "| TH", *["4D | 3H"] * 8)
    # 44 - 9 = 35 turned: 350; pile 2 has no face-down card: 15
    check(state, 365, 0)
    state.apply(Move(Kind.TABLEAU, 0, 1, 1))  # 9S onto TH turns 5D
    check(state, 365 + 10 + 15, 0)


# -- St. Helena and Louis -------------------------------------------------------------------------


@pytest.mark.parametrize("game", ["st-helena", "louis"])
def test_helena_scores(game):
    assert new_game(GameConfig(game), 1).score() == 0
    assert new_game(GameConfig(game), 1).score2() is None
    state = helena(game=game, tops={0: "9C", 5: "3S"}, stock_dealt=True)
    assert state.score() == helena_score(state) == 4 + 2
    tops = {f: ("A" if f < 4 else "K") + "CSHD"[f % 4] for f in range(8)}
    state = helena(game=game, tops=tops, stock_dealt=True)
    assert state.score() == 96 and state.view().score == 96 and state.view().score2 is None


def test_helena_score_counts_moves_to_the_foundations():
    state = helena("9D", "QC", "9D", "9D", "2C")
    state.apply(Move(Kind.FOUNDATION, 1, 0))
    assert state.score() == 1
    state.apply(Move(Kind.FOUNDATION, 4, -1))
    assert state.score() == 2
    state.apply(UNDO)
    assert state.score() == 1
