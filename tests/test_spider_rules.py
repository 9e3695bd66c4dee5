"""Spider's rules, one test (or a few) per line of docs/rules.md, illegal cases included."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from protocol import cards
from protocol.config import ConfigError, GameConfig
from protocol.deals import deal
from protocol.game import new_game
from protocol.moves import DEAL, REDEAL, RESIGN, UNDO, IllegalMove, Kind, Move, Placed
from protocol.spider import SpiderState
from tests.rules_helpers import (
    VECTORS,
    all_names,
    c,
    face_up,
    full_deck,
    names,
    pile_names,
    spider,
    suit_run,
    view_cards,
)


def T(src: int, dst: int, count: int = 0) -> Move:
    """A tableau move, piles from 0."""
    return Move(Kind.TABLEAU, src, dst, count)


def F(src: int, dst: int = -1) -> Move:
    return Move(Kind.FOUNDATION, src, dst, 0)


def illegal(state: SpiderState, move: Move) -> str:
    """Apply ``move``, expecting it refused and the state untouched; the reason, lower-cased."""
    before = state.board()
    with pytest.raises(IllegalMove) as exc:
        state.apply(move)
    assert state.board() == before
    assert move not in state.legal_moves()
    reason = str(exc.value)
    assert reason
    return reason.lower()


def legal(state: SpiderState, move: Move):
    """Apply ``move``, expecting it allowed and listed among the legal moves."""
    settled = state.copy().apply(move).move
    listed = state.legal_moves()
    if settled.kind == Kind.FOUNDATION:  # the list names one foundation: the first free one
        assert any(m[:2] == settled[:2] for m in listed)
    else:
        assert settled in listed
    return state.apply(move)


# -- options and layout ---------------------------------------------------------------------------


def test_options_defaults_and_bad_values():
    assert GameConfig("spider").options == {"suits": 4, "relaxed": 0}
    for bad in ({"suits": 3}, {"relaxed": 3}, {"suits": 0}, {"jokers": 1}):
        with pytest.raises(ConfigError):
            GameConfig("spider", bad)


@pytest.mark.parametrize("suits", [4, 2, 1])
@pytest.mark.parametrize("number", [1, 2, 31999, 32000, 40000, 10**16 + 7])
def test_layout(suits, number):
    state = new_game(GameConfig("spider", {"suits": suits}), number)
    assert [len(p) for p in state.piles] == [6, 5, 5, 6, 5, 5, 6, 5, 5, 6]
    assert state.down == [5, 4, 4, 5, 4, 4, 5, 4, 4, 5]
    assert sum(state.down) == 44
    assert len(state.stock) == 50
    assert state.foundations == [[]] * 8
    assert all_names(state) == full_deck(suits)
    v = state.view()
    assert [pv.hidden for pv in v.tableau] == state.down
    assert all(len(pv.cards) == 1 for pv in v.tableau)
    assert v.stock == 50 and v.deals_left == 5 and v.redeals_left == 0


def test_layout_xpat2_numbering():
    state = new_game(GameConfig("spider", numbering="xpat2"), 0)
    assert [len(p) for p in state.piles] == [6, 5, 5, 6, 5, 5, 6, 5, 5, 6]
    assert sum(state.down) == 44 and len(state.stock) == 50
    assert all_names(state) == full_deck(4)


@pytest.mark.parametrize("number", [5, 40000])
def test_suit_options_fold_suits_and_keep_ranks(number):
    decks = {s: deal(GameConfig("spider", {"suits": s}), number) for s in (4, 2, 1)}

    def order(d):
        return [x for p in d.tableau for x in p] + list(d.stock)

    four, two, one = (order(decks[s]) for s in (4, 2, 1))
    assert [cards.rank(x) for x in four] == [cards.rank(x) for x in two]
    assert [cards.rank(x) for x in four] == [cards.rank(x) for x in one]
    assert {cards.SUITS[cards.suit(x)] for x in two} == {"C", "H"}
    assert {cards.SUITS[cards.suit(x)] for x in one} == {"C"}
    # C,S -> C and H,D -> H
    fold = {"C": "C", "S": "C", "H": "H", "D": "H"}
    assert [fold[cards.name(x)[1]] for x in four] == [cards.name(x)[1] for x in two]


def test_state_from_vector_deal():
    vec = json.loads((VECTORS / "spider-1.json").read_text())
    state = new_game(GameConfig("spider"), 1)
    assert pile_names(state) == [" ".join(p) for p in vec["tableau"]]
    assert state.down == vec["face_down"]
    # the engine keeps the next card to deal last
    assert names(reversed(state.stock)) == " ".join(vec["stock"])


# -- building -------------------------------------------------------------------------------------


@pytest.fixture
def board() -> SpiderState:
    return spider(
        "5C 9D | 8H 7H 6H",  # 1: a three-card run in hearts over a face-down 9D
        "| 9S",  # 2
        "| 9H",  # 3
        "| 7C",  # 4
        "",  # 5: empty
        "2D | KS",  # 6
        "| AC",  # 7
        "| 8S 7H 6H",  # 8: in rank order, but 8S breaks the suit
        "| QD",  # 9
        "4D | 4C",  # 10
        stock=" ".join(["3C"] * 10),
    )


def test_run_onto_next_rank_of_another_suit(board):
    change = legal(board, T(0, 1, 3))
    assert pile_names(board)[1] == "9S 8H 7H 6H"
    assert change.move == T(0, 1, 3)
    # the last face-up card left pile 1: its top face-down card turned up, in the same move
    assert change.turned == [Placed(0, 1, cards.parse("9D"))]
    assert change.dealt == []
    assert board.down[0] == 1 and pile_names(board)[0] == "5C 9D"


def test_run_onto_next_rank_of_the_same_suit(board):
    legal(board, T(0, 2, 3))
    assert pile_names(board)[2] == "9H 8H 7H 6H"


def test_count_zero_picks_the_part_of_the_run_that_fits(board):
    assert legal(board, T(0, 3)).move == T(0, 3, 1)  # 6H onto 7C
    assert pile_names(board)[3] == "7C 6H"
    assert legal(board, T(0, 1)).move == T(0, 1, 2)  # then 8H 7H onto 9S
    assert pile_names(board)[1] == "9S 8H 7H"


def test_tail_of_a_run_moves(board):
    legal(board, T(0, 3, 1))
    assert pile_names(board)[0] == "5C 9D 8H 7H"
    assert board.down[0] == 2


def test_wrong_rank_is_refused(board):
    reason = illegal(board, T(0, 1, 2))  # 7H 6H onto 9S
    assert "7h" in reason and "9s" in reason
    illegal(board, T(0, 1, 1))  # 6H onto 9S
    illegal(board, T(3, 1))  # 7C onto 9S: count 0 and nothing fits
    illegal(board, T(1, 3))  # 9S onto 7C: building goes down only


@pytest.mark.parametrize("count", [0, 1])
@pytest.mark.parametrize("dst", [1, 3, 6, 8, 9])
def test_king_onto_a_card_is_refused(board, dst, count):
    reason = illegal(board, T(5, dst, count))
    assert "ks" in reason or "pile 6" in reason or names(board.piles[dst][-1:]).lower() in reason


def test_king_onto_a_card_says_kings_go_to_empty_piles(board):
    assert "empty" in illegal(board, T(5, 8, 1))  # KS onto QD


def test_king_onto_an_empty_pile(board):
    change = legal(board, T(5, 4))
    assert pile_names(board)[4] == "KS"
    assert change.turned == [Placed(5, 0, cards.parse("2D"))]


@pytest.mark.parametrize("src", [0, 3, 9])
def test_nothing_goes_on_an_ace(board, src):
    assert "ac" in illegal(board, T(src, 6, 1))


def test_run_not_one_suit_is_refused(board):
    # 8S 7H 6H is in rank order but not one suit: only 7H 6H move together
    reason = illegal(board, T(7, 4, 3))
    assert "pile 8" in reason
    assert "pile 8" in illegal(board, T(7, 1, 3))  # onto 9S: the rank fits, the suits do not
    legal(board, T(7, 4, 2))
    assert pile_names(board)[4] == "7H 6H" and pile_names(board)[7] == "8S"


def test_a_run_with_a_gap_is_not_a_run():
    state = spider("| 9S 7S 6S", "| 8H", "")
    illegal(state, T(0, 2, 3))
    assert "pile 1" in illegal(state, T(0, 1, 3))
    legal(state, T(0, 2, 2))


@pytest.mark.parametrize("count", [1, 2, 3])
def test_any_movable_unit_goes_to_an_empty_pile(board, count):
    change = legal(board, T(0, 4, count))
    moved = ["8H", "7H", "6H"][3 - count :]
    assert pile_names(board)[4] == " ".join(moved)
    assert bool(change.turned) == (count == 3)


def test_count_zero_onto_an_empty_pile_moves_the_whole_run(board):
    assert legal(board.copy(), T(0, 4)).move == T(0, 4, 3)
    assert legal(board, T(7, 4)).move == T(7, 4, 2)  # 8S 7H 6H -> only 7H 6H is a unit


def test_face_down_cards_never_move(board):
    reason = illegal(board, T(0, 4, 4))
    assert "pile 1" in reason
    illegal(board, T(0, 4, 5))
    illegal(board, T(0, 4, -1))


def test_bad_piles_are_refused(board):
    assert "pile 5" in illegal(board, T(4, 0))  # empty source
    assert "11" in illegal(board, T(10, 0))
    assert "11" in illegal(board, T(0, 10))
    assert "pile 1" in illegal(board, T(0, 0))
    assert "spider" in illegal(board, REDEAL)
    # a move's pile left at -1, its default on the wire: named as missing, not "pile 0"
    for move in (T(-1, 0), T(0, -1)):
        reason = illegal(board, move)
        assert "pile 0" not in reason and "names it" in reason, move


def test_whole_face_up_pile_moves_without_turning(board):
    change = legal(board, T(1, 4))  # 9S, the only card of pile 2
    assert pile_names(board)[1] == "" and change.turned == []


def test_legal_moves_of_the_board(board):
    got = set(board.legal_moves())
    expected = {
        T(0, 1, 3), T(0, 2, 3), T(0, 3, 1), T(7, 3, 1),  # builds
        T(0, 4, 1), T(0, 4, 2), T(0, 4, 3), T(7, 4, 1), T(7, 4, 2),  # into the space
        T(1, 4, 1), T(2, 4, 1), T(3, 4, 1), T(5, 4, 1), T(6, 4, 1), T(8, 4, 1), T(9, 4, 1),
        T(8, 5, 1),  # QD onto KS
    }  # fmt: skip
    # no deal: pile 5 is empty
    assert got == expected


# -- dealing --------------------------------------------------------------------------------------


def test_deal_puts_one_card_on_each_pile_in_order():
    vec = json.loads((VECTORS / "spider-1.json").read_text())
    state = new_game(GameConfig("spider"), 1)
    heights = [len(p) for p in state.piles]
    change = legal(state, DEAL)
    first = [cards.parse(n) for n in vec["stock"][:10]]
    assert change.dealt == [Placed(i, heights[i], first[i]) for i in range(10)]
    assert change.turned == []
    assert [p[-1] for p in state.piles] == first
    assert [len(p) for p in state.piles] == [h + 1 for h in heights]
    assert state.down == [5, 4, 4, 5, 4, 4, 5, 4, 4, 5]  # dealt cards are face up
    assert len(state.stock) == 40 and state.deals_left == 4
    assert state.view().deals_left == 4


def test_five_deals_then_the_stock_is_empty():
    state = new_game(GameConfig("spider"), 1)
    vec = json.loads((VECTORS / "spider-1.json").read_text())
    for k in range(5):
        change = state.apply(DEAL)
        assert [p.card for p in change.dealt] == c(" ".join(vec["stock"][10 * k : 10 * k + 10]))
    assert state.stock == [] and state.deals_left == 0
    assert "stock" in illegal(state, DEAL)
    assert all(m.kind != Kind.DEAL for m in state.legal_moves())


EMPTY_PILE_CASES = {
    # name: (pile 2, allowed under relaxed 0, 1, 2)
    "suit runs": ("9S 8S 7S", (False, True, True)),
    "rank run of mixed suits": ("9S 8H 7S", (False, False, True)),
    "not in sequence": ("9S 7S 6S", (False, False, False)),
    "ascending": ("7S 8S 9S", (False, False, False)),
    "face-down card": ("5D | 9S 8S 7S", (False, False, False)),
    "face-down card in sequence": ("TS | 9S 8S 7S", (False, False, False)),
}


@pytest.mark.parametrize("relaxed", [0, 1, 2])
@pytest.mark.parametrize("case", list(EMPTY_PILE_CASES))
def test_deal_with_an_empty_pile(relaxed, case):
    pile2, allowed = EMPTY_PILE_CASES[case]
    stock = "AC 2C 3C 4C 5C 6C 7C 8C 9C TC"
    others = ["| 5H", "| JD", "| 2S", "| KH", "| 4C", "| 7D", "| TH", "| 3D"]
    state = spider("", pile2, *others, relaxed=relaxed, stock=stock)
    if allowed[relaxed]:
        change = legal(state, DEAL)
        # the deal puts a card on every pile, the empty one included
        assert change.dealt[0] == Placed(0, 0, cards.parse("AC"))
        assert [p.card for p in change.dealt] == c(stock)
        assert pile_names(state)[0] == "AC"
    else:
        reason = illegal(state, DEAL)
        assert "pile 1" in reason or "pile 2" in reason


def test_relaxed_0_names_the_empty_piles():
    state = spider("", "| 9S 8S", "", *["| 5H"] * 7, stock="AC " * 10)
    reason = illegal(state, DEAL)
    assert "(piles 1, 3): fill them first" in reason and "empty" in reason
    one = spider("", "| 9S 8S", *["| 5H"] * 8, stock="AC " * 10)
    assert "(pile 1): fill it first" in illegal(one, DEAL)


@pytest.mark.parametrize("relaxed", [1, 2])
def test_relaxed_deal_with_every_pile_empty(relaxed):
    state = spider(stock="AC 2C 3C 4C 5C 6C 7C 8C 9C TC", relaxed=relaxed)
    legal(state, DEAL)
    assert pile_names(state) == ["AC", "2C", "3C", "4C", "5C", "6C", "7C", "8C", "9C", "TC"]


@pytest.mark.parametrize("relaxed", [0, 1, 2])
def test_deal_without_empty_piles_ignores_the_relaxed_conditions(relaxed):
    state = spider(*["5D 6D | 9S 4H"] * 10, relaxed=relaxed, stock="AC " * 10)
    legal(state, DEAL)


# -- foundations ----------------------------------------------------------------------------------


def test_complete_suit_to_a_foundation():
    state = spider("5D | " + suit_run("S"), "| 9H")
    change = legal(state, F(0))
    assert change.move == Move(Kind.FOUNDATION, 0, 0, 13)
    assert names(state.foundations[0]) == suit_run("S")
    assert change.turned == [Placed(0, 0, cards.parse("5D"))]
    assert state.down[0] == 0


def test_completing_a_suit_does_not_move_it_by_itself():
    state = spider("| " + suit_run("S", 2), "| AS 5D", "| 6C")
    legal(state, T(1, 2, 1))  # 5D onto 6C first
    legal(state, T(1, 0))
    assert state.foundations == [[]] * 8
    assert len(state.piles[0]) == 13
    assert Move(Kind.FOUNDATION, 0, 0, 13) in state.legal_moves()
    legal(state, F(0))


@pytest.mark.parametrize(
    "pile",
    [
        "| " + suit_run("S", 1, 12),  # queen to ace only
        "| KS QS JS TS 9H 8S 7S 6S 5S 4S 3S 2S AS",  # a heart in it
        "KS | " + suit_run("S", 1, 12),  # the king is face down
        "| " + suit_run("S") + " 5D",  # not on top
        "| " + suit_run("S", 2) + " AC",  # the ace of another suit
    ],
)
def test_incomplete_or_mixed_suit_cannot_go_to_a_foundation(pile):
    state = spider(pile)
    assert "pile 1" in illegal(state, F(0))


def test_foundation_choice_and_occupied_foundation():
    state = spider("| " + suit_run("S"), "| " + suit_run("H"), "| 5D", foundations=["C"])
    assert "foundation 1" in illegal(state, F(0, 0))
    legal(state, F(0, 4))
    assert names(state.foundations[4]) == suit_run("S")
    assert legal(state, F(1)).move.dst == 1  # the first free one


def test_a_foundation_that_is_not_there_is_named_before_the_run():
    """A client sent a run to foundation 9 and was told pile 1 does not end with a run (a
    trial of a client written from docs/protocol.md): the foundation is the first thing wrong."""
    for pile in ("| 5D", "| " + suit_run("S")):
        state = spider(pile, "| 7H")
        for f in (8, 15):
            assert f"no foundation f{f + 1}" in illegal(state, F(0, f))
            assert "f1 to f8" in illegal(state, F(0, f))


def test_king_and_ace_never_wrap():
    # AS then KC is not a run (the codes are adjacent, the ranks wrap), nor KS on AS
    state = spider("| 2S AS KC", "| 3S 2S AS KS", "", "| QC", "| 3H")
    assert "pile 1" in illegal(state, T(0, 2, 2))
    assert "pile 2" in illegal(state, T(1, 2, 2))
    illegal(state, T(0, 4, 2))  # AS KC onto 3H
    illegal(state, T(0, 3, 1))  # KC onto QC: a king goes on nothing
    illegal(state, T(4, 0, 1))  # 3H onto KC
    # pairs: 2S-AS, 3S-2S and 2S-AS again; never AS-KC or AS-KS
    assert state.score() == 10 * 44 + 15 * 10 + 2 * 3


# -- won, stuck, resigned -------------------------------------------------------------------------


def test_won_with_every_suit_on_the_foundations():
    state = spider(foundations=list("CSHDCSHD"))
    assert state.won and not state.stuck and state.legal_moves() == []
    assert state.view().won
    assert "won" in illegal(state, DEAL)


def test_won_with_every_suit_standing_alone_in_the_tableau():
    state = spider(*["| " + suit_run(s) for s in "CSHDCSHD"])
    assert state.won and not state.stuck


def test_won_with_suits_in_both_places():
    state = spider(*["| " + suit_run(s) for s in "CSH"], foundations=list("DCSHD"))
    assert state.won


def test_winning_move():
    state = spider("| " + suit_run("S", 2), "| AS", foundations=list("CHDCSHD"))
    assert not state.won
    legal(state, T(1, 0))
    assert state.won  # the suit stands alone as a whole pile
    # a win is final: the winning move cannot be taken back
    assert not state.can_undo and not state.view().can_undo
    assert "won" in illegal(state, UNDO)
    state = spider("| " + suit_run("S"), "| 5D", foundations=list("CHDCSHD"))
    assert not state.won


@pytest.mark.parametrize(
    "piles",
    [
        ["| " + suit_run(s) for s in "CSHDCSH"] + ["| 5D " + suit_run("D")],  # not alone
        ["| " + suit_run(s) for s in "CSHDCSH"] + ["5D | " + suit_run("D")],  # on a face-down card
    ],
)
def test_not_won_when_a_suit_does_not_stand_alone(piles):
    assert not spider(*piles).won


def test_not_won_with_cards_in_the_stock():
    assert not spider(*["| " + suit_run(s) for s in "CSHDCSHD"], stock="5D " * 10).won


def test_stuck():
    state = spider(*["5D | AC"] * 10)
    assert state.legal_moves() == [] and state.stuck and state.view().stuck
    assert not state.won


def test_a_resigned_player_is_not_stuck():
    state = spider(*["5D | AC"] * 9, "5D | 2C")
    assert not state.stuck
    state.apply(RESIGN)
    assert state.resigned and not state.stuck and not state.view().stuck
    # a deal left: not stuck
    assert not spider(*["5D | AC"] * 10, stock="2H " * 10).stuck
    # a pointless move left: not stuck
    assert not spider(*["5D | AC"] * 9).stuck


def test_resign_keeps_the_score_and_ends_the_game():
    state = spider("5D | 9S 8S", "| 9H", "| 7C", stock="2H " * 10)
    first = state.score()
    state.apply(T(0, 1, 1))  # 8S onto 9H: one same-suit pair fewer
    score = state.score()
    assert first - score == 2
    state.apply(RESIGN)
    assert state.resigned and state.score() == score
    assert state.legal_moves() == []
    for move in (T(0, 2), DEAL, UNDO):
        illegal(state, move)


# -- undo (the "safe" policy) ---------------------------------------------------------------------


def test_undo_restores_the_exact_position(board):
    before = board.board()
    board.apply(T(0, 3))  # 6H onto 7C, no card turned
    middle = board.board()
    board.apply(T(7, 0, 1))  # 6H of pile 8 onto 7H
    assert board.can_undo
    change = board.apply(UNDO)
    assert change.undone == T(7, 0, 1)
    assert board.board() == middle
    board.apply(UNDO)
    assert board.board() == before
    assert board.undos == 2 and board.moves == 2
    assert not board.can_undo
    assert "nothing to undo" in illegal(board, UNDO)


def test_undo_of_a_move_into_a_space_and_of_a_foundation_move():
    state = spider("| 9H " + suit_run("S"), "", "| 5C")
    before = state.board()
    state.apply(F(0))
    state.apply(T(2, 1))
    state.apply(UNDO)
    state.apply(UNDO)
    assert state.board() == before


def test_no_undo_past_a_card_turned_up(board):
    board.apply(T(0, 3))  # undoable
    board.apply(T(0, 1))  # 8H 7H onto 9S: turns up 9D
    assert not board.can_undo and not board.view().can_undo
    assert "turned" in illegal(board, UNDO)


def test_no_undo_past_a_foundation_move_that_turned_a_card():
    state = spider("5D | " + suit_run("S"))
    state.apply(F(0))
    illegal(state, UNDO)


def test_no_undo_past_a_deal():
    state = spider("5D | 9S", "| 8S 8H", *["| 3H"] * 8, stock="AC 2C 3C 4C 5C 6C 7C 8C 9C TC")
    state.apply(T(1, 0))
    state.apply(DEAL)
    after = state.board()
    illegal(state, UNDO)
    assert state.board() == after


# -- what a player sees ---------------------------------------------------------------------------


def test_view_holds_only_face_up_cards(board):
    v = board.view()
    assert view_cards(board) == face_up(board)
    assert view_cards(board) == Counter(
        ["8H", "7H", "6H", "9S", "9H", "7C", "KS", "AC", "8S", "7H", "6H", "QD", "4C"]
    )
    assert [pv.hidden for pv in v.tableau] == [2, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert v.stock == 10 and v.deals_left == 1
    text = v.model_dump_json()
    for hidden in ("5C", "9D", "2D", "4D", "3C"):
        assert hidden not in text
