"""The codec's two readings: a server reads a command exactly as its schema says, a client reads
an event of a newer minor version without the fields it does not know (docs/protocol.md,
Versioning)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol.codec import DecodeError, decode, decode_command, encode
from protocol.messages import (
    Moved,
    RaceOver,
    Reveal,
    Settings,
    Standing,
    WireMove,
    from_wire,
    to_wire,
)
from protocol.moves import Kind, Move


def frame(value: dict[str, Any]) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def race_over() -> dict[str, Any]:
    standing = Standing(
        rank=1, id=1, name="Ann", status="won", score=900, score2=None,
        finish_ms=61_000, score_ms=61_000, moves=120, undos=2,
    )  # fmt: skip
    reveal = Reveal(
        game="spider", options={"suits": 1}, numbering="pysolfc", number=7, salt="ab",
        commitment="cd",
    )  # fmt: skip
    message = RaceOver(race_id="r1", reason="all_done", standings=[standing], reveal=reveal)
    data: dict[str, Any] = msgpack.unpackb(encode(message))
    return data


def test_an_event_with_fields_of_a_newer_minor_version_is_read_without_them() -> None:
    data = race_over()
    data["trophy"] = "gold"  # at the top
    data["standings"][0]["bot"] = True  # in a list of models
    data["reveal"]["seed_hint"] = None  # in a nested model
    event = decode(frame(data))
    assert isinstance(event, RaceOver)
    assert event == decode(frame(race_over()))


def test_a_field_unknown_inside_a_move_is_dropped_too() -> None:
    moved = Moved(
        seq=3, move=WireMove(kind="deal"), undone=None, shown=[], score=10, score2=None,
        won=False, stuck=False, can_undo=True,
    )  # fmt: skip
    data = msgpack.unpackb(encode(moved))
    data["move"]["speed"] = 2
    data["shown"] = [{"pile": 1, "index": 4, "card": "TS", "glow": True}]
    event = decode(frame(data))
    assert isinstance(event, Moved)
    assert event.move == WireMove(kind="deal")
    assert event.shown[0].card == "TS"


def test_an_unknown_field_does_not_hide_a_wrong_one() -> None:
    data = race_over()
    data["trophy"] = "gold"
    data["standings"][0]["rank"] = "first"
    with pytest.raises(DecodeError) as caught:
        decode(frame(data))
    assert caught.value.code == "bad_message"
    assert "standings.0.rank" in caught.value.message


def test_a_server_reads_a_command_exactly_as_its_schema_says() -> None:
    with pytest.raises(DecodeError) as caught:
        decode_command(frame({"type": "list_rooms", "seq": 1, "page": 2}))
    assert caught.value.code == "bad_message"
    assert caught.value.seq == 1


def test_the_tests_read_the_servers_frames_strictly() -> None:
    """The tests' own reading of a server frame keeps every field the schema does not know an
    error: a field outside it would be a server bug, a hidden card in a field of its own."""
    from tests.server_helpers import decode as strict

    data = race_over()
    data["standings"][0]["hidden"] = "KS"
    with pytest.raises(DecodeError) as caught:
        strict(frame(data))
    assert "standings.0.hidden" in caught.value.message


def test_a_deal_number_past_two_to_the_53_is_a_string_in_json() -> None:
    """A record over HTTP carried ``"number": 41297902966321250304`` as a bare JSON integer,
    which JavaScript's JSON.parse rounds: the commitment check failed in a browser (a docs-only
    client trial). In JSON a number past 2**53 - 1 is its decimal string; msgpack keeps its
    integers up to 2**64 - 1; every reader takes either form."""
    import json

    for number, in_json in (
        (2**53 - 1, 2**53 - 1),
        (2**53, str(2**53)),
        (41297902966321250304, "41297902966321250304"),
    ):
        reveal = Reveal(
            game="spider", options={"suits": 1}, numbering="pysolfc", number=number, salt="ab",
            commitment="cd",
        )  # fmt: skip
        assert json.loads(reveal.model_dump_json())["number"] == in_json
        assert Reveal.model_validate_json(reveal.model_dump_json()) == reveal
        over = RaceOver(race_id="r1", reason="all_done", standings=[], reveal=reveal)
        sent = msgpack.unpackb(encode(over))["reveal"]["number"]
        assert sent == (number if number < 2**64 else str(number))
        assert decode(encode(over)) == over


def test_a_deal_number_string_is_what_the_schema_says() -> None:
    """The published schema takes a deal number's string of 1 to 21 digits; the server took 23
    (zero-padded), which a client checking against the schema refuses (a protocol trial)."""
    from pydantic import ValidationError

    ok = Settings.model_validate({"deal_number": "1" + "0" * 20})
    assert ok.deal_number == 10**20
    assert Settings.model_validate({"deal_number": "0" * 20 + "7"}).deal_number == 7
    for refused in ("0" * 22 + "1", "", "1e5", "١٢"):
        with pytest.raises(ValidationError):
            Settings.model_validate({"deal_number": refused})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seats", 1),
        ("seats", 17),
        ("time_limit", 86_401),
        ("deal_number", str(10**20 + 1)),  # past 2**64: a string
        ("options", {f"o{i}": i for i in range(9)}),
    ],
)
def test_settings_out_of_the_schemas_range_are_a_bad_message(field: str, value: Any) -> None:
    """docs/protocol.md: ``seats`` 1, a ``time_limit`` over 86,400, a ``deal_number`` past
    10^20 are ``bad_message``, refused by the schema with the command's seq (a room of a
    million seats, or a time limit whose milliseconds no msgpack integer holds, never made)."""
    settings = {"game": "spider", field: value}
    with pytest.raises(DecodeError) as caught:
        decode_command(
            frame({"type": "create_room", "seq": 4, "name": "Ann", "settings": settings})
        )
    assert (caught.value.code, caught.value.seq) == ("bad_message", 4)
    assert f"settings.{field}" in caught.value.message


def test_settings_at_the_edges_of_the_schemas_range_are_read() -> None:
    for field, value in (
        ("seats", 2),
        ("seats", 16),
        ("time_limit", 86_400),
        ("deal_number", 10**20),
    ):
        sent = str(value) if value > 2**64 - 1 else value  # as the codec sends it
        command = {"type": "create_room", "seq": 4, "name": "Ann", "settings": {field: sent}}
        read = decode_command(frame(command))
        assert getattr(read.settings, field) == value  # type: ignore[union-attr]


def test_a_name_past_24_characters_is_a_bad_name_before_any_room_sees_it() -> None:
    assert decode_command(
        frame({"type": "join_room", "seq": 2, "code": "K7QMX2PF", "name": "A" * 24})
    )
    with pytest.raises(DecodeError) as caught:
        decode_command(frame({"type": "join_room", "seq": 2, "code": "K7QMX2PF", "name": "A" * 25}))
    assert (caught.value.code, caught.value.seq) == ("bad_name", 2)


def test_a_move_off_the_wire_keeps_its_piles_and_count() -> None:
    """``3>7:2`` sent as a move of two cards moves two, not the run the server would choose:
    the count the player picked reaches the rules (a deal, undo or resign takes none)."""
    for move in (
        Move(Kind.TABLEAU, 2, 6, 2),
        Move(Kind.TABLEAU, 0, 9, 0),
        Move(Kind.FOUNDATION, 4, 5, 0),
        Move(Kind.FOUNDATION, 4, -1, 0),
        Move(Kind.DEAL),
    ):
        assert from_wire(to_wire(move)) == move
        assert from_wire(decode_command(encode_move(move)).move) == move  # type: ignore[union-attr]
    assert from_wire(WireMove(kind="tableau", src=2, dst=6, count=4)) == Move(Kind.TABLEAU, 2, 6, 4)
    assert from_wire(WireMove(kind="resign", src=3, dst=1, count=2)) == Move(Kind.RESIGN)


def encode_move(move: Move) -> bytes:
    from protocol.messages import MoveCmd

    return encode(MoveCmd(seq=9, move=to_wire(move)))
