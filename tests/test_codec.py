"""The codec's two readings: a server reads a command exactly as its schema says, a client reads
an event of a newer minor version without the fields it does not know (docs/protocol.md,
Versioning)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol.codec import DecodeError, decode, decode_command, encode
from protocol.messages import Moved, RaceOver, Reveal, Settings, Standing, WireMove


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
