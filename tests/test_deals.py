"""Deals against the vectors and docs/rules.md"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from protocol import cards
from protocol.config import MAX_PYSOLFC_NUMBER, ConfigError, GameConfig
from protocol.deals import LCGRandom, MTRandom, Xpat2Random, deal, pysolfc_order

VECTORS = Path(__file__).resolve().parent / "vectors"
"""Deals as PySolFC (and, for Spider's xpat2 numbering, xpat2) deal them: tests/vectors/README.md."""
VECTOR_FILES = sorted(VECTORS.glob("*.json"))


def test_vectors_are_found() -> None:
    assert len(VECTOR_FILES) >= 6, f"no deal vectors under {VECTORS}"


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.stem)
def test_vector(path: Path) -> None:
    expected = json.loads(path.read_text())
    config = GameConfig(expected["game"], expected["options"], expected["numbering"])
    d = deal(config, expected["number"])
    assert d.to_json() == expected
    assert d.dumps() == path.read_text().rstrip("\n")


def test_lcg_matches_the_formula() -> None:
    rng = LCGRandom(1)
    state = 1
    for k in (103, 50, 7, 1):
        state = (state * 214013 + 2531011) % 2**32
        assert rng.draw(k) == ((state >> 16) & 0x7FFF) % (k + 1)


def test_generator_switches_at_32000() -> None:
    def order_with(rng: LCGRandom | MTRandom) -> list[int]:
        ids = list(range(104))
        for i in range(103, 0, -1):
            j = rng.draw(i)
            ids[i], ids[j] = ids[j], ids[i]
        return ids[::-1]

    assert pysolfc_order(31999) == order_with(LCGRandom(31999))
    assert pysolfc_order(31999) != order_with(MTRandom(31999))
    assert pysolfc_order(32000) == order_with(MTRandom(32000))
    assert pysolfc_order(32000) != order_with(LCGRandom(32000))


def test_xpat2_draws_stay_in_range() -> None:
    rng = Xpat2Random(123456789)
    draws = [rng.below(7) for _ in range(2000)]
    assert set(draws) == set(range(7))


@pytest.mark.parametrize("number", [1, 2, 31999, 32000, 12345678, 10**16, MAX_PYSOLFC_NUMBER])
@pytest.mark.parametrize("suits", [4, 2, 1])
def test_spider_deal_shape(number: int, suits: int) -> None:
    d = deal(GameConfig("spider", {"suits": suits}), number)
    assert [len(p) for p in d.tableau] == [6, 5, 5, 6, 5, 5, 6, 5, 5, 6]
    assert d.face_down == (5, 4, 4, 5, 4, 4, 5, 4, 4, 5)
    assert len(d.stock) == 50
    everything = Counter(c for p in d.tableau for c in p) + Counter(d.stock)
    per_card = {4: 2, 2: 4, 1: 8}[suits]
    suits_used = {4: "CSHD", 2: "CH", 1: "C"}[suits]
    assert everything == Counter(
        {cards.parse(r + s): per_card for r in cards.RANKS for s in suits_used}
    )


@pytest.mark.parametrize("number", [1, 7, 40000, 10**19 + 3])
def test_spider_ranks_do_not_depend_on_suits(number: int) -> None:
    ranks = {
        suits: [
            [cards.rank(c) for c in p]
            for p in deal(GameConfig("spider", {"suits": suits}), number).tableau
        ]
        for suits in (4, 2, 1)
    }
    assert ranks[4] == ranks[2] == ranks[1]


@pytest.mark.parametrize("number", [1, 5, 99999])
def test_st_helena_and_louis_share_the_order(number: int) -> None:
    helena = deal(GameConfig("st-helena"), number)
    louis = deal(GameConfig("louis"), number)
    assert helena.foundations == louis.foundations
    assert [f[0] for f in helena.foundations] == [
        cards.parse(n) for n in ("KC", "KS", "KH", "KD", "AC", "AS", "AH", "AD")
    ]
    # St. Helena deals round robin what Louis puts one per pile and then in its stock.
    order = [louis.tableau[k][0] for k in range(12)] + list(louis.stock)
    assert [list(p) for p in helena.tableau] == [order[k::12] for k in range(12)]
    assert all(len(p) == 8 for p in helena.tableau)
    assert len(louis.stock) == 84


def test_options_that_do_not_change_the_deal() -> None:
    base = deal(GameConfig("spider"), 99)
    relaxed = deal(GameConfig("spider", {"relaxed": 2}), 99)
    assert base.tableau == relaxed.tableau and base.stock == relaxed.stock
    assert relaxed.to_json()["options"] == {"suits": 4, "relaxed": 2}
    assert deal(GameConfig("st-helena", {"build": "any"}), 3).to_json()["options"] == {
        "build": "any"
    }


@pytest.mark.parametrize(
    ("game", "options", "numbering", "number", "words"),
    [
        ("spider", {}, "pysolfc", 0, "from 1"),
        ("spider", {}, "pysolfc", -3, "from 1"),
        ("spider", {}, "pysolfc", MAX_PYSOLFC_NUMBER + 1, "from 1"),
        ("spider", {}, "pysolfc", "twelve", "not a whole number"),
        ("spider", {}, "pysolfc", "1.5", "not a whole number"),
        ("spider", {}, "pysolfc", "\u00b2", "not a whole number"),  # isdigit, not int's
        ("spider", {}, "pysolfc", "--5", "not a whole number"),
        ("spider", {}, "pysolfc", "9" * 5000, "not a whole number"),  # past int()'s digits
        ("spider", {"suits": "\u00b2"}, "pysolfc", 1, "suits"),
        ("spider", {}, "xpat2", 10**9, "0 to 999999999"),
        ("spider", {}, "xpat2", -1, "0 to 999999999"),
        ("spider", {"suits": 3}, "pysolfc", 1, "suits"),
        ("spider", {"relaxed": 5}, "pysolfc", 1, "relaxed"),
        ("spider", {"build": "any"}, "pysolfc", 1, "no option 'build'"),
        ("st-helena", {"spaces": "some"}, "pysolfc", 1, "spaces"),
        ("louis", {"spaces": "any"}, "pysolfc", 1, "no option 'spaces'"),
        ("louis", {}, "xpat2", 1, "numbering"),
        ("klondike", {}, "pysolfc", 1, "unknown game"),
    ],
)
def test_bad_deals_say_why(
    game: str, options: dict[str, object], numbering: str, number: object, words: str
) -> None:
    with pytest.raises(ConfigError, match=words):
        deal(GameConfig(game, options, numbering), number)  # type: ignore[arg-type]


def test_xpat2_accepts_zero_and_its_maximum() -> None:
    config = GameConfig("spider", numbering="xpat2")
    assert deal(config, 0).number == 0
    assert deal(config, 999_999_999).number == 999_999_999
    assert deal(config, 0).tableau != deal(config, 1).tableau


def test_numbers_as_text() -> None:
    config = GameConfig("spider")
    assert deal(config, "12345") == deal(config, 12345)
    assert deal(config, "#12345") == deal(config, 12345)
