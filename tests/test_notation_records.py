"""Card and move notation both ways (docs/rules.md), and game records: a game played through
a :class:`Recorder` replays to the same position; a tampered record is rejected saying where and
why."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import cards
from protocol.config import GameConfig
from protocol.game import new_game
from protocol.moves import DEAL, REDEAL, RESIGN, UNDO, IllegalMove, Kind, Move
from protocol.notation import NotationError, format_move, parse_move
from protocol.record import GameRecord, Recorder, RecordError, ReplayError, Result, load, replay
from tests.rules_helpers import RANKS, SUITS, helena, spider, suit_run

# -- cards ----------------------------------------------------------------------------------------


def test_every_card_name_round_trips():
    seen = set()
    for s, suit in enumerate(SUITS):
        for r, rank in enumerate(RANKS, start=1):
            code = cards.parse(rank + suit)
            assert code == s * 13 + r - 1  # suit*13 + rank-1, suits C S H D
            assert cards.name(code) == rank + suit
            assert (cards.rank(code), cards.suit(code)) == (r, s)
            seen.add(code)
    assert seen == set(range(52))


def test_card_examples():
    assert cards.parse("TS") == 13 + 9
    assert cards.parse("ac") == 0 and cards.parse("KD") == 51
    assert cards.long_name(cards.parse("TS")) == "ten of spades"
    for bad in ("10S", "1S", "TX", "", "T", "TSS", "ST"):
        with pytest.raises(ValueError):
            cards.parse(bad)


# -- moves ----------------------------------------------------------------------------------------

EXAMPLES = {
    "3>7": Move(Kind.TABLEAU, 2, 6, 0),
    "3>7:4": Move(Kind.TABLEAU, 2, 6, 4),
    "10>1:13": Move(Kind.TABLEAU, 9, 0, 13),
    "12>11": Move(Kind.TABLEAU, 11, 10, 0),
    "3>f": Move(Kind.FOUNDATION, 2, -1, 0),
    "3>f5": Move(Kind.FOUNDATION, 2, 4, 0),
    "1>f1": Move(Kind.FOUNDATION, 0, 0, 0),
    "d": DEAL,
    "r": REDEAL,
    "u": UNDO,
    "resign": RESIGN,
}


@pytest.mark.parametrize("text", list(EXAMPLES))
def test_parse_and_format_examples(text):
    move = EXAMPLES[text]
    assert parse_move(text) == move
    assert format_move(move) == text
    assert parse_move(format_move(move)) == move


@pytest.mark.parametrize(
    "text, move",
    [
        (" 3 > 7 : 4 ", Move(Kind.TABLEAU, 2, 6, 4)),
        ("3>F5", Move(Kind.FOUNDATION, 2, 4, 0)),
        ("deal", DEAL),
        ("Redeal", REDEAL),
        ("UNDO", UNDO),
        (" u ", UNDO),
    ],
)
def test_parse_is_lenient_with_case_and_spaces(text, move):
    assert parse_move(text) == move


@pytest.mark.parametrize(
    "text",
    ["", "x", "3", "3>", "3>7:", "0>3", "3>0", "3>7:0", "3>f0", "3>g", "-1>3", "3>>7", "3<7", "dd"],
)
def test_not_a_move(text):
    with pytest.raises(NotationError):
        parse_move(text)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.builds(
            lambda s, d, n: Move(Kind.TABLEAU, s, d, n),
            st.integers(0, 11),
            st.integers(0, 11),
            st.integers(0, 13),
        ),
        st.builds(
            lambda s, f: Move(Kind.FOUNDATION, s, f, 0), st.integers(0, 11), st.integers(-1, 7)
        ),
        st.sampled_from([DEAL, REDEAL, UNDO, RESIGN]),
    )
)
def test_format_then_parse_is_the_same_move(move):
    assert parse_move(format_move(move)) == move


def test_format_with_the_position_writes_the_shortest_text():
    state = spider("| 9H 8S 7S", "| 9S", "| 8H", "")
    # 8S 7S is the part that fits 9S: no count needed; 7S alone onto 8H needs none either
    assert format_move(Move(Kind.TABLEAU, 0, 1, 2), state) == "1>2"
    assert format_move(Move(Kind.TABLEAU, 0, 2, 1), state) == "1>3"
    # onto an empty pile, the whole run is the default: one card less needs a count
    assert format_move(Move(Kind.TABLEAU, 0, 3, 2), state) == "1>4"
    assert format_move(Move(Kind.TABLEAU, 0, 3, 1), state) == "1>4:1"


def test_spider_foundation_text_names_the_foundation_when_it_is_not_the_first_free():
    state = spider("| " + suit_run("S"), "| 5D")
    for f in range(8):
        move = Move(Kind.FOUNDATION, 0, f, 13)
        text = format_move(move, state)
        assert text == ("1>f" if f == 0 else f"1>f{f + 1}")
        assert state.copy().apply(parse_move(text)).move == move


def test_helena_moves_are_written_with_their_foundation():
    state = helena("QC", "5H", "6H")
    assert format_move(Move(Kind.FOUNDATION, 0, 0, 1), state) == "1>f1"
    assert format_move(Move(Kind.TABLEAU, 1, 2, 1), state) == "2>3"


# -- records --------------------------------------------------------------------------------------


def play_some(recorder: Recorder, moves: int, *, undo_every: int = 0) -> None:
    """Play the first legal move ``moves`` times, undoing now and then."""
    for k in range(moves):
        state = recorder.state
        if undo_every and k % undo_every == undo_every - 1 and state.can_undo:
            recorder.play("u")
            continue
        legal = state.legal_moves()
        if not legal:
            break
        recorder.play(legal[(7 * k) % len(legal)])


@pytest.mark.parametrize(
    "config, number",
    [
        (GameConfig("spider"), 1),
        (GameConfig("spider", {"suits": 2, "relaxed": 2}), 7),
        (GameConfig("spider", numbering="xpat2"), 1),
        (GameConfig("st-helena"), 1),
        (GameConfig("st-helena", {"build": "any", "spaces": "any"}), 40000),
        (GameConfig("louis"), 1),
    ],
)
def test_record_replays_to_the_live_position(config, number):
    recorder = Recorder(config, number)
    play_some(recorder, 60, undo_every=5)
    live = recorder.state
    assert recorder.moves and "u" in recorder.moves
    record = recorder.record()
    assert record.result == Result.of(live)
    for source in (record.dumps(), json.loads(record.dumps())):
        loaded = load(source)
        assert loaded == record
        again = replay(loaded)
        assert again.board() == live.board()
        assert (again.moves, again.undos) == (live.moves, live.undos)
        assert again.view() == live.view()


def test_record_of_a_resigned_game():
    recorder = Recorder(GameConfig("spider"), 3)
    recorder.play(recorder.state.legal_moves()[0])
    recorder.play("resign")
    assert recorder.moves[-1] == "resign"
    again = replay(load(recorder.record().dumps()))
    assert again.resigned and Result.of(again) == Result.of(recorder.state)


def test_recorder_refuses_an_illegal_move_and_records_nothing():
    recorder = Recorder(GameConfig("spider"), 1)
    board = recorder.state.board()
    with pytest.raises(IllegalMove):
        recorder.play("1>f")
    with pytest.raises(NotationError):
        recorder.play("1>")
    assert recorder.moves == [] and recorder.state.board() == board


def test_record_file_format():
    recorder = Recorder(GameConfig("spider", {"suits": 2}), 12345)
    recorder.play("d")
    data = json.loads(recorder.record().dumps())
    assert data["format"] == "patience-race-record" and data["version"] == 1
    assert data["game"] == "spider" and data["options"] == {"suits": 2, "relaxed": 0}
    assert data["numbering"] == "pysolfc" and data["number"] == 12345
    assert data["moves"] == ["d"]
    assert data["result"]["moves"] == 1 and data["result"]["won"] is False
    assert "result" not in json.loads(recorder.record(with_result=False).dumps())


def a_record() -> GameRecord:
    recorder = Recorder(GameConfig("st-helena"), 1)
    play_some(recorder, 20)
    return recorder.record()


def test_tampered_move_is_rejected_with_its_index_and_reason():
    record = a_record()
    moves = list(record.moves)
    k = 6
    # a move that cannot be legal there: a pile moved onto itself
    src = moves[k].split(">")[0] if ">" in moves[k] else "1"
    moves[k] = f"{src}>{src}"
    with pytest.raises(ReplayError) as exc:
        replay(record.model_copy(update={"moves": moves}))
    err = exc.value
    assert err.index == k and err.notation == moves[k]
    assert f"pile {src}" in err.reason
    assert f"move {k + 1}" in str(err) and err.reason in str(err)


def test_redeal_beyond_the_two_is_rejected():
    record = GameRecord(game="st-helena", number=1, moves=["r", "r", "r"])
    with pytest.raises(ReplayError) as exc:
        replay(record)
    assert exc.value.index == 2 and "redeal" in exc.value.reason


def test_unreadable_move_is_rejected_with_its_index():
    record = a_record()
    moves = [*record.moves[:3], "3>>7", *record.moves[3:]]
    with pytest.raises(ReplayError) as exc:
        replay(record.model_copy(update={"moves": moves}))
    assert exc.value.index == 3 and exc.value.notation == "3>>7"


def test_tampered_result_is_rejected():
    record = a_record()
    assert record.result is not None
    wrong = record.result.model_copy(update={"score": record.result.score + 1})
    with pytest.raises(RecordError) as exc:
        replay(record.model_copy(update={"result": wrong}))
    assert "score" in str(exc.value)
    replay(record)  # the untouched record is fine


def test_a_record_missing_a_move_is_rejected():
    record = a_record()
    moves = list(record.moves)
    # the move is illegal further on, or the replay ends one move short of the recorded result
    with pytest.raises(RecordError):
        replay(record.model_copy(update={"moves": moves[1:]}))


@pytest.mark.parametrize(
    "source",
    [
        "not json",
        "[]",
        json.dumps({"game": "spider"}),  # no number
        json.dumps({"format": "other", "game": "spider", "number": 1}),
        json.dumps({"game": "spider", "number": 1, "moves": "d"}),
        json.dumps({"game": "spider", "number": 1, "surprise": True}),
    ],
)
def test_malformed_records_are_rejected(source):
    with pytest.raises(RecordError):
        load(source)


@pytest.mark.parametrize(
    "fields",
    [
        {"game": "klondike", "number": 1},
        {"game": "spider", "number": 0},
        {"game": "spider", "number": 1, "options": {"suits": 3}},
        {"game": "louis", "number": 1, "numbering": "xpat2"},
    ],
)
def test_records_of_games_that_do_not_exist_are_rejected(fields):
    with pytest.raises(RecordError):
        replay(load(json.dumps(fields)))


def test_replay_of_an_empty_record_is_the_deal():
    record = GameRecord(game="louis", number=1)
    assert replay(record).board() == new_game(GameConfig("louis"), 1).board()
