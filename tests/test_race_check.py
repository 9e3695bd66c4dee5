"""A race's public record checked with no server (``protocol.race_check``): a record the hub kept
checks out, and each thing a forger could change in it is found (the command line around it,
``patience-race replay``, is tested in test_server_ops.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from protocol.messages import RaceRecord, Settings
from protocol.race_check import check_race

from .test_hub import Harness


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    """A race of two in the hub alone: each deals once and resigns."""
    h = Harness()
    _, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    h.tick(0.5)
    h.move(ann, kind="deal")
    h.tick(0.5)
    h.move(bob, kind="deal")
    h.tick(0.5)
    h.move(ann, kind="resign")
    h.tick(0.5)
    h.move(bob, kind="resign")
    h.tick(0.1)
    (kept,) = h.hub.finished.values()
    return kept.model_dump(mode="json")


def test_a_record_the_server_kept_checks_out(record: dict[str, Any]) -> None:
    found = check_race(RaceRecord.model_validate(record, strict=False))
    assert found.ok and found.commitment_ok and found.solution_ok is None
    assert not found.problems
    assert [p.standing.rank if p.standing else 0 for p in found.players] == [1, 2]  # by place
    assert all(p.matches and p.state is not None and p.state.resigned for p in found.players)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def forge(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            d = d[key] if not key.isdigit() else d[int(key)]  # type: ignore[index]
        d[last] = value

    return forge


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "the salt": (_set("reveal.salt", "0" * 32), "commitment"),
    "a score": (_set("standings.0.score", 999), "the record says score 999"),
    "a result": (_set("standings.0.status", "won"), "won (the moves give resigned)"),
    "the places": (_set("standings.0.rank", 2), "the places are not what"),
    "a finishing time": (_set("standings.0.finish_ms", 1), "finishing time"),
    "a move": (_set("players.0.moves", ["1>1"]), "move 1"),
    "the end": (_set("ended_at", 0.0), "ends before it starts"),
    "a name": (_set("standings.0.name", "Mallory"), "otherwise than their moves"),
}


@pytest.mark.parametrize("what", FORGERIES)
def test_a_forged_record_is_found_out(record: dict[str, Any], what: str) -> None:
    forge, said = FORGERIES[what]
    data = RaceRecord.model_validate(record, strict=False).model_dump(mode="json")
    forge(data)
    found = check_race(RaceRecord.model_validate(data, strict=False))
    assert not found.ok
    told = [*found.problems, *(t for p in found.players for t in p.problems)]
    if what == "the salt":
        assert not found.commitment_ok and not told
    else:
        assert found.commitment_ok and any(said in t for t in told), told
