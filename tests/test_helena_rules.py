"""St. Helena and Louis: RULES.md sections 4 and 5, one test (or a few) per rule, illegal cases
included."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from protocol import cards
from protocol.config import ConfigError, GameConfig
from protocol.deals import pysolfc_order
from protocol.game import new_game
from protocol.helena import HelenaState
from protocol.moves import DEAL, REDEAL, RESIGN, UNDO, IllegalMove, Kind, Move, Placed
from tests.rules_helpers import (
    RANKS,
    SUITS,
    VECTORS,
    all_names,
    c,
    face_up,
    full_deck,
    helena,
    names,
    pile_names,
    view_cards,
)


def T(src: int, dst: int, count: int = 0) -> Move:
    return Move(Kind.TABLEAU, src, dst, count)


def F(src: int, dst: int = -1) -> Move:
    return Move(Kind.FOUNDATION, src, dst, 0)


def illegal(state: HelenaState, move: Move) -> str:
    before = state.board()
    with pytest.raises(IllegalMove) as exc:
        state.apply(move)
    assert state.board() == before
    if move.kind not in (Kind.UNDO, Kind.RESIGN):
        assert state.check(move) is not None
        assert not any(m[:3] == move[:3] for m in state.legal_moves())
    reason = str(exc.value)
    assert reason
    return reason.lower()


def legal(state: HelenaState, move: Move):
    settled = state.copy().apply(move).move
    assert settled in state.legal_moves()
    return state.apply(move)


# Filler cards that fit no foundation and build on nothing around them.
FILL = c("5D 9S 5H 9C 7D 7S")


def fill_piles(**cards_at: str) -> list[str]:
    """Twelve one-card piles of filler, with the given pile (``p3="QC"``: pile index 3) replaced."""
    piles = [cards.name(FILL[i % len(FILL)]) for i in range(12)]
    for key, card in cards_at.items():
        piles[int(key[1:])] = card
    return piles


# -- options and layout ---------------------------------------------------------------------------


def test_options():
    assert GameConfig("st-helena").options == {"build": "suit", "spaces": "none"}
    assert GameConfig("louis").options == {"build": "suit"}
    for game, bad in (
        ("st-helena", {"build": "colour"}),
        ("st-helena", {"spaces": "king"}),
        ("louis", {"spaces": "any"}),  # Louis has no spaces option
        ("louis", {"suits": 4}),
    ):
        with pytest.raises(ConfigError):
            GameConfig(game, bad)


@pytest.mark.parametrize("number", [1, 2, 31999, 32000, 10**16 + 1])
def test_st_helena_layout(number):
    state = new_game(GameConfig("st-helena"), number)
    assert [len(p) for p in state.piles] == [8] * 12
    assert state.down == [0] * 12 and state.stock == []
    assert [names(f) for f in state.foundations] == ["KC", "KS", "KH", "KD", "AC", "AS", "AH", "AD"]
    assert all_names(state) == full_deck()
    # every card is face up and visible
    assert view_cards(state) == full_deck()
    v = state.view()
    assert v.stock == 0 and v.deals_left == 0 and v.redeals_left == 2 and v.first_deal


@pytest.mark.parametrize("number", [1, 40000])
def test_louis_layout(number):
    state = new_game(GameConfig("louis"), number)
    assert [len(p) for p in state.piles] == [1] * 12
    assert state.down == [0] * 12 and len(state.stock) == 84
    assert [names(f) for f in state.foundations] == ["KC", "KS", "KH", "KD", "AC", "AS", "AH", "AD"]
    assert all_names(state) == full_deck()
    v = state.view()
    assert v.stock == 84 and v.deals_left == 1 and v.redeals_left == 2 and not v.first_deal
    assert view_cards(state) == face_up(state)
    assert sum(view_cards(state).values()) == 20


@pytest.mark.parametrize("game", ["st-helena", "louis"])
@pytest.mark.parametrize("number", [1, 31999, 32000, 10**19])
def test_base_cards_are_the_first_decks_kings_and_aces(game, number):
    order = pysolfc_order(number)  # card ids, deck*52 + code, first dealt first
    base = [i for i in order if i < 52 and cards.rank(i) in (1, 13)]
    assert sorted(base) == [0, 12, 13, 25, 26, 38, 39, 51]
    rest = [i % 52 for i in order if i not in base]  # the second deck's kings and aces stay
    state = new_game(GameConfig(game), number)
    if game == "st-helena":
        assert state.piles == [rest[k::12] for k in range(12)]  # round robin, piles 1..12
    else:
        assert state.piles == [[x] for x in rest[:12]]
        assert state.stock == list(reversed(rest[12:]))


@pytest.mark.parametrize("game", ["st-helena", "louis"])
def test_state_from_vector_deal(game):
    vec = json.loads((VECTORS / f"{game}-1.json").read_text())
    state = new_game(GameConfig(game), 1)
    assert pile_names(state) == [" ".join(p) for p in vec["tableau"]]
    assert names(reversed(state.stock)) == " ".join(vec["stock"])
    assert [names(f) for f in state.foundations] == [" ".join(f) for f in vec["foundations"]]


# -- building on the piles ------------------------------------------------------------------------


@pytest.fixture(params=["st-helena", "louis"])
def game(request) -> str:
    return request.param


def builds(game: str, build: str = "suit") -> HelenaState:
    return helena(
        "5H",  # 1
        "6H",  # 2
        "4H",  # 3
        "6S",  # 4
        "7H",  # 5
        "KH",  # 6
        "AH",  # 7
        "QH",  # 8
        "2H",  # 9
        "KS",  # 10
        "AS 9D",  # 11
        "5H 9C",  # 12: 5H would go on 6H or 4H, but it is not on top
        game=game,
        build=build,
        stock_dealt=True,
    )


def test_build_down_and_up_in_suit(game):
    state = builds(game)
    legal(state.copy(), T(0, 1))  # 5H on 6H: down
    change = legal(state, T(0, 2))  # 5H on 4H: up
    assert pile_names(state)[2] == "4H 5H" and pile_names(state)[0] == ""
    assert change.move == T(0, 2, 1) and change.turned == [] and change.dealt == []


def test_build_suit_refuses_another_suit(game):
    reason = illegal(builds(game), T(0, 3))  # 5H on 6S
    assert "5h" in reason and "6s" in reason and "suit" in reason


def test_build_any_accepts_another_suit(game):
    state = builds(game, build="any")
    legal(state, T(0, 3))
    assert pile_names(state)[3] == "6S 5H"


@pytest.mark.parametrize("build", ["suit", "any"])
def test_build_one_rank_only(game, build):
    state = builds(game, build)
    assert "5h" in illegal(state, T(0, 4))  # 5H on 7H
    illegal(state, T(0, 0))  # onto itself
    illegal(state, T(11, 0))  # 9C on 5H


@pytest.mark.parametrize("build", ["suit", "any"])
def test_king_and_ace_never_wrap_on_the_piles(game, build):
    state = builds(game, build)
    reason = illegal(state, T(5, 6))  # KH on AH
    assert "king" in reason and "ace" in reason
    assert "ace" in illegal(state, T(6, 5))  # AH on KH
    illegal(state, T(9, 6))  # KS on AH
    illegal(state, T(6, 9))  # AH on KS
    legal(state.copy(), T(5, 7))  # KH on QH
    legal(state.copy(), T(6, 8))  # AH on 2H


def test_one_card_at_a_time(game):
    state = builds(game)
    assert "one card" in illegal(state, T(11, 10, 2))
    illegal(state, T(11, 10, 1))  # 9C on 9D: not a build either
    assert legal(state, T(0, 1, 1)).move == T(0, 1, 1)


def test_only_the_top_card_moves(game):
    state = builds(game)
    assert all(m.src != 11 for m in state.legal_moves())
    illegal(state, T(11, 1))
    illegal(state, T(11, 1, 2))


@pytest.mark.parametrize("card", ["5H", "KH", "AH"])
def test_spaces_none_keeps_empty_piles_empty(card):
    state = helena(card, "", "9C", spaces="none")
    assert "pile 2" in illegal(state, T(0, 1))


@pytest.mark.parametrize("card", ["5H", "KH", "AH"])
def test_spaces_any_takes_any_single_card(card):
    state = helena(card, "", "9C", spaces="any")
    legal(state, T(0, 1))
    assert pile_names(state)[:2] == ["", card]


@pytest.mark.parametrize("build", ["suit", "any"])
def test_louis_empty_piles_stay_empty_after_the_deal(build):
    state = helena("5H", "", "9C", game="louis", build=build, stock_dealt=True)
    assert "pile 2" in illegal(state, T(0, 1))


def test_empty_source_and_bad_piles(game):
    state = helena("5H", "", "4H", game=game, stock_dealt=True)
    assert "pile 2" in illegal(state, T(1, 0))
    assert "pile 2" in illegal(state, F(1))
    assert "13" in illegal(state, T(12, 0))
    assert "13" in illegal(state, T(0, 12))
    assert "13" in illegal(state, F(12))
    assert "f9" in illegal(state, F(0, 8))
    # a move's pile left at -1, its default on the wire: named as missing, not "pile 0"
    for move in (T(-1, 0), T(0, -1), F(-1)):
        reason = illegal(state, move)
        assert "pile 0" not in reason and "names it" in reason, move


# -- foundations ----------------------------------------------------------------------------------


def test_foundations_build_by_suit_in_their_direction(game):
    state = helena("QC", "2C", "QS", "2D", game=game, stock_dealt=True, redeals_left=1)
    legal(state, F(0, 0))  # QC on KC: kings build down
    legal(state, F(1, 4))  # 2C on AC: aces build up
    legal(state, F(3, 7))  # 2D on AD
    assert [names(f) for f in state.foundations] == [
        "KC QC", "KS", "KH", "KD", "AC 2C", "AS", "AH", "AD 2D",
    ]  # fmt: skip
    assert "qs" in illegal(state, F(2, 0))  # QS on QC: another suit
    illegal(state, F(2, 3))  # QS on KD: another suit
    illegal(state, F(2, 4))  # QS on 2C
    legal(state, F(2, 1))  # QS on KS
    assert state.score() == 4


def test_foundation_direction_and_skips(game):
    state = helena("2C", "QC", "JC", "3C", game=game, stock_dealt=True, redeals_left=1)
    illegal(state, F(0, 0))  # 2C onto KC: kings build down to the ace, one rank at a time
    illegal(state, F(1, 4))  # QC onto AC
    illegal(state, F(2, 0))  # JC onto KC: skips the queen
    illegal(state, F(3, 4))  # 3C onto AC: skips the two
    reason = illegal(state, F(2))
    assert "jc" in reason and "qc" in reason  # says what the king foundation takes next
    legal(state, F(1, 0))
    legal(state, F(2, 0))  # now the jack fits
    legal(state, F(0, 4))
    legal(state, F(3, 4))
    assert names(state.foundations[0]) == "KC QC JC"
    assert names(state.foundations[4]) == "AC 2C 3C"


def test_full_foundations_take_nothing_and_never_wrap(game):
    # f2 (kings of spades) is complete down to AS; f5 (aces of clubs) up to KC.
    state = helena("KS", "AC", "KC", "AS", "KH", game=game, stock_dealt=True, redeals_left=1)
    state.foundations[1] = c("KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S AS")
    state.foundations[4] = c("AC 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC")
    for s in range(5):
        for f in range(8):
            illegal(state, F(s, f))
        assert "foundation" in illegal(state, F(s))
    assert all(m.kind != Kind.FOUNDATION for m in state.legal_moves())


def test_foundation_auto_choice_and_ambiguity(game):
    # f1 (kings of clubs) waits for 7C, and so does f5 (aces of clubs)
    state = helena(
        "7C", "7C", "8H", game=game, stock_dealt=True, redeals_left=1, tops={0: "8C", 4: "6C"}
    )
    assert state.score() == 5 + 5
    reason = illegal(state, F(0))
    assert "f1" in reason and "f5" in reason
    legal(state, F(0, 0))
    legal(state, F(1, 4))
    assert state.score() == 12
    assert "8h" in illegal(state, F(2))
    assert legal(helena("QS", game=game, stock_dealt=True), F(0)).move == Move(
        Kind.FOUNDATION, 0, 1, 1
    )


def test_foundation_cards_never_come_back(game):
    state = helena("QC", "JC", "3C", game=game, stock_dealt=True, redeals_left=1)
    state.apply(F(0, 0))
    # nothing in the move set takes a card from a foundation
    for m in state.legal_moves():
        assert m.kind in (Kind.TABLEAU, Kind.FOUNDATION, Kind.REDEAL)
        assert m.kind == Kind.REDEAL or state.piles[m.src]
    assert names(state.foundations[0]) == "KC QC"
    # a redeal gathers the piles only
    state.apply(REDEAL)
    assert names(state.foundations[0]) == "KC QC"
    assert sorted(pile_names(state)) == sorted(["JC", "3C"] + [""] * 10)


# -- St. Helena's first deal ----------------------------------------------------------------------

KING_ONLY = range(0, 4)  # piles 1-4
ACE_ONLY = range(6, 10)  # piles 7-10


@pytest.mark.parametrize("p", range(12))
def test_first_deal_king_foundations_pile_by_pile(p):
    state = helena(*fill_piles(**{f"p{p}": "QC"}))
    assert state.first_deal
    if p in ACE_ONLY:
        reason = illegal(state, F(p, 0))
        assert f"pile {p + 1}" in reason and "first deal" in reason
        assert f"pile {p + 1}" in illegal(state, F(p))
    else:
        legal(state, F(p, 0))
        assert names(state.foundations[0]) == "KC QC"


@pytest.mark.parametrize("p", range(12))
def test_first_deal_ace_foundations_pile_by_pile(p):
    state = helena(*fill_piles(**{f"p{p}": "2C"}))
    if p in KING_ONLY:
        reason = illegal(state, F(p, 4))
        assert f"pile {p + 1}" in reason and "first deal" in reason
        assert f"pile {p + 1}" in illegal(state, F(p))
    else:
        assert legal(state, F(p)).move == Move(Kind.FOUNDATION, p, 4, 1)
        assert names(state.foundations[4]) == "AC 2C"


@pytest.mark.parametrize("p", range(12))
@pytest.mark.parametrize("card, f", [("QC", 0), ("2C", 4)])
def test_first_deal_restriction_is_lifted_by_a_redeal(p, card, f):
    # one card a pile: the redeal puts the card of pile 12-k on pile k+1 (from 0: 11-k -> k)
    state = helena(*fill_piles(**{f"p{11 - p}": card}))
    legal(state, REDEAL)
    assert pile_names(state)[p] == card
    assert not state.first_deal and not state.view().first_deal
    legal(state, F(p, f))
    assert state.score() == 1


def test_louis_has_no_first_deal_restriction():
    for p in KING_ONLY:
        state = helena(*fill_piles(**{f"p{p}": "2C"}), game="louis", stock="8H " * 5)
        assert not state.first_deal
        legal(state, F(p, 4))
    for p in ACE_ONLY:
        state = helena(*fill_piles(**{f"p{p}": "QC"}), game="louis", stock="8H " * 5)
        legal(state, F(p, 0))


# -- redeals --------------------------------------------------------------------------------------


def gather_and_deal(piles: list[list[str]]) -> list[list[str]]:
    """RULES.md section 4's redeal, step by step as written."""
    pack = list(piles[11])  # pile 12 ...
    for k in range(10, -1, -1):  # ... is put on pile 11, that on 10, ... on pile 1
        pack = list(piles[k]) + pack
    out: list[list[str]] = [[] for _ in range(12)]
    k = 0
    while pack:  # dealt again from the top, one card at a time, piles 1..12 round robin
        out[k % 12].append(pack.pop())
        k += 1
    return out


def test_redeal_order_small_example():
    # thirteen cards: pile 12 holds two. The top card (QH) goes to pile 1, then JH to pile 2,
    # then pile 11's card to pile 3, and so on; pile 1's own card comes round last, onto pile 1.
    piles = [f"{r}D" for r in "A23456789TJ"] + ["JH QH"]
    state = helena(*piles)
    legal(state, REDEAL)
    assert pile_names(state) == [
        "QH AD", "JH", "JD", "TD", "9D", "8D", "7D", "6D", "5D", "4D", "3D", "2D",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "sizes",
    [
        [3, 0, 2, 1, 0, 4, 1, 0, 2, 1, 0, 1],  # 15: piles 1-3 get two
        [0] * 11 + [5],  # everything on pile 12
        [8] * 12,
        [9, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7],  # 95
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    ],
)
def test_redeal_order_with_uneven_counts(sizes):
    # distinct cards where there are few enough, so that the order is checked exactly
    distinct = [f"{r}{s}" for s in SUITS for r in RANKS]
    it = iter(distinct + distinct)
    piles = [[next(it) for _ in range(n)] for n in sizes]
    state = helena(*[" ".join(p) for p in piles])
    change = legal(state, REDEAL)
    assert change.move == REDEAL
    expected = gather_and_deal(piles)
    assert pile_names(state) == [" ".join(p) for p in expected]
    total = sum(sizes)
    # uneven counts: the first piles get one more
    assert [len(p) for p in state.piles] == [total // 12 + (k < total % 12) for k in range(12)]
    assert Counter(map(cards.name, (x for p in state.piles for x in p))) == Counter(
        x for p in piles for x in p
    )


def test_two_redeals_then_no_more(game):
    state = helena("5D", "9C", "", "7S", game=game, stock_dealt=True)
    before = state.board()
    legal(state, REDEAL)
    assert state.redeals_left == 1 and state.view().redeals_left == 1
    assert pile_names(state)[:4] == ["7S", "9C", "5D", ""]
    legal(state, REDEAL)
    assert state.redeals_left == 0
    assert pile_names(state)[:4] == ["5D", "9C", "7S", ""]
    assert state.board() != before  # the counter is part of the position
    assert "redeal" in illegal(state, REDEAL)
    assert REDEAL not in state.legal_moves()


def test_redeal_at_any_time():
    state = new_game(GameConfig("st-helena"), 1)
    assert any(m.kind != Kind.REDEAL for m in state.legal_moves())  # moves are left
    assert REDEAL in state.legal_moves()
    legal(state, REDEAL)
    assert [len(p) for p in state.piles] == [8] * 12


def test_st_helena_has_no_stock_to_deal():
    state = new_game(GameConfig("st-helena"), 1)
    assert "stock" in illegal(state, DEAL)
    assert DEAL not in state.legal_moves()


# -- Louis: the stock -----------------------------------------------------------------------------


def louis(*piles: str, stock: str, build: str = "suit") -> HelenaState:
    return helena(*piles, game="louis", build=build, stock=stock)


def test_louis_refills_an_emptied_pile_from_the_stock():
    state = louis("2C", "3C", "4D", "5D", stock="9H 8S 7D")
    change = legal(state, F(0, 4))  # 2C up: pile 1 empties and takes the stock's top card
    assert change.turned == [Placed(0, 0, cards.parse("9H"))]
    assert pile_names(state)[0] == "9H" and len(state.stock) == 2
    change = legal(state, F(1, 4))
    assert change.turned == [Placed(1, 0, cards.parse("8S"))]
    change = legal(state, T(2, 3))  # a build empties a pile too
    assert change.turned == [Placed(2, 0, cards.parse("7D"))]
    assert pile_names(state)[:4] == ["9H", "8S", "7D", "5D 4D"]
    assert state.stock == [] and state.view().stock == 0


def test_louis_refills_the_empty_piles_until_the_stock_is_dealt():
    state = louis("2C", "3C", "4D", stock="9H 8S")
    legal(state, F(0, 4))
    legal(state, DEAL)
    assert pile_names(state)[:2] == ["9H 8S", "3C"]
    change = legal(state, F(1, 4))
    assert change.turned == []
    assert pile_names(state)[1] == ""  # stays empty now
    assert "pile 2" in illegal(state, T(2, 1))


def test_louis_when_refills_empty_the_stock_before_the_deal():
    state = louis("2C", "3C", "5D", stock="8H")
    legal(state, F(0, 4))
    change = legal(state, F(1, 4))
    assert change.turned == []  # nothing left to refill with
    assert pile_names(state)[:3] == ["8H", "", "5D"]
    # the deal is still the player's to make (it deals nothing), then the redeals
    assert REDEAL not in state.legal_moves()
    before = state.board()
    change = legal(state, DEAL)
    assert change.dealt == []
    assert state.deals_left == 0 and state.redeals_left == 2
    # a stock deal is never undone
    illegal(state, UNDO)
    assert state.board()[:4] == before[:4]
    legal(state, REDEAL)


def test_louis_deal_puts_the_whole_stock_round_robin_from_pile_1():
    stock = "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH 2S 3S 4S"  # 14 cards
    piles = ["5D", "9C", "7S", "JD", "5D", "9C", "7S", "JD", "5D", "9C", "7S", "JD"]
    state = louis(*piles, stock=stock)
    assert state.deals_left == 1 and DEAL in state.legal_moves()
    change = legal(state, DEAL)
    dealt = stock.split()
    assert change.dealt == [
        Placed(k % 12, 1 + k // 12, cards.parse(n)) for k, n in enumerate(dealt)
    ]
    assert pile_names(state)[:3] == ["5D 2H 3S", "9C 3H 4S", "7S 4H"]
    assert state.stock == [] and state.deals_left == 0
    # that deal is not a redeal
    assert state.redeals_left == 2 and state.view().redeals_left == 2
    assert "dealt" in illegal(state, DEAL)
    legal(state, REDEAL)


def test_louis_redeals_only_after_the_deal():
    state = louis("5D", "9C", stock="2H 3H")
    assert "deal" in illegal(state, REDEAL)
    assert REDEAL not in state.legal_moves()


@pytest.mark.parametrize("build", ["suit", "any"])
def test_louis_building(build):
    state = louis("5H", "6H", "6S", "KH", "AH", stock="2S 3S", build=build)
    legal(state.copy(), T(0, 1))
    if build == "suit":
        illegal(state, T(0, 2))
    else:
        legal(state.copy(), T(0, 2))
    illegal(state, T(3, 4))
    illegal(state, T(4, 3))


# -- won, stuck, resigned -------------------------------------------------------------------------


def complete_tops() -> dict[int, str]:
    return {f: ("A" if f < 4 else "K") + SUITS[f % 4] for f in range(8)}


def test_won(game):
    state = helena(game=game, tops=complete_tops(), stock_dealt=True)
    assert state.won and not state.stuck and state.score() == 96
    assert state.legal_moves() == []
    assert "won" in illegal(state, REDEAL)


def test_winning_move(game):
    tops = complete_tops()
    tops[0] = "2C"
    state = helena("AC", game=game, tops=tops, stock_dealt=True, redeals_left=0)
    assert not state.won and state.score() == 95
    legal(state, F(0, 0))
    assert state.won and state.view().won and state.score() == 96


def test_stuck_when_no_move_and_no_redeal(game):
    state = helena("5D", "9C", "5D", game=game, stock_dealt=True, redeals_left=0)
    assert state.legal_moves() == [] and state.stuck and state.view().stuck
    state = helena("5D", "9C", "5D", game=game, stock_dealt=True, redeals_left=1)
    assert state.legal_moves() == [REDEAL] and not state.stuck


def test_louis_with_its_stock_is_never_stuck():
    state = louis(*fill_piles(), stock="5D")  # before the deal, no pile is ever empty
    assert state.legal_moves() == [DEAL] and not state.stuck


def test_resign(game):
    state = helena("QC", "9C", game=game, stock_dealt=True)
    state.apply(F(0, 0))
    state.apply(RESIGN)
    assert state.resigned and state.score() == 1
    for move in (F(1), REDEAL, UNDO):
        illegal(state, move)


# -- undo -----------------------------------------------------------------------------------------


def test_undo_restores_the_exact_position(game):
    state = helena("QC", "5H", "6H", "4H", game=game, stock_dealt=True)
    boards = [state.board()]
    for move in (F(0, 0), T(1, 2), T(3, 2)):
        state.apply(move)
        boards.append(state.board())
    for k in range(3):
        assert state.can_undo
        state.apply(UNDO)
        assert state.board() == boards[2 - k]
    assert not state.can_undo and state.undos == 3 and state.moves == 3
    assert "nothing to undo" in illegal(state, UNDO)


def test_no_undo_past_a_redeal(game):
    state = helena("QC", "5H", "6H", game=game, stock_dealt=True)
    state.apply(T(1, 2))
    state.apply(REDEAL)
    illegal(state, UNDO)
    assert not state.view().can_undo


def test_no_undo_past_a_louis_refill_or_deal():
    state = louis("2C", "3C", "5H", "6H", "9D 4H", stock="9H 8S 7D 7C")
    state.apply(T(2, 3))  # 5H onto 6H: pile 3 takes 9H from the stock
    illegal(state, UNDO)
    state.apply(F(0, 4))  # 2C up: pile 1 takes 8S
    illegal(state, UNDO)
    state.apply(T(4, 3))  # 4H onto 5H: no refill, so undoable
    assert state.can_undo
    state.apply(DEAL)
    assert pile_names(state)[:2] == ["8S 7D", "3C 7C"]
    illegal(state, UNDO)
