"""A race's public record checked with no server (``protocol.race_check``): a record the hub kept
checks out, and what a forger could change in it is found (the command line around it,
``patience-race replay``, is tested in test_server_ops.py, a certified deal's solution in
test_certified.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from protocol.messages import RaceRecord, Settings
from protocol.race_check import check_race

from .test_hub import Harness

WALL = 1_700_000_000.0


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    """A race of two in the hub alone, 2 s long on the hub's clocks (both run): each deals
    once, then resigns."""
    h = Harness()
    h.hub.wall = lambda: WALL + h.now  # (the harness's wall clock stands still)
    _, (ann, bob), _ = h.race(Settings(), "Ann", "Bob")
    for cid, kind in ((ann, "deal"), (bob, "deal"), (ann, "resign"), (bob, "resign")):
        h.tick(0.5)
        h.move(cid, kind=kind)
    h.tick(0.1)
    (kept,) = h.hub.finished.values()
    assert 1.9 <= kept.ended_at - kept.started_at <= 2.1  # type: ignore[operator]
    return kept.model_dump(mode="json")


def test_a_record_the_server_kept_checks_out(record: dict[str, Any]) -> None:
    found = check_race(RaceRecord.model_validate(record, strict=False))
    assert found.ok and found.commitment_ok and found.solution_problem is None
    assert not found.problems
    assert [p.standing.rank if p.standing else 0 for p in found.players] == [1, 2]  # by place
    assert all(p.matches and p.state is not None and p.state.resigned for p in found.players)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def forge(d: Any) -> None:
        *parents, last = path.split(".")
        for key in parents:
            d = d[int(key)] if key.isdigit() else d[key]
        d[last] = value

    return forge


def _drop_standing(d: dict[str, Any]) -> None:
    d["standings"].pop()


def _swap_times(d: dict[str, Any]) -> None:
    times = d["players"][0]["times_ms"]
    times[0], times[-1] = times[-1] + 1, times[0]


def _another_card_on_the_table(d: dict[str, Any]) -> None:
    shown = d["players"][0]["board"]["tableau"][0]["cards"]
    shown[-1] = "AS" if shown[-1] != "AS" else "2S"


def _later_finish(d: dict[str, Any]) -> None:
    d["standings"][0]["finish_ms"] += 100  # a winner's rival pushed back would look just so


def _a_player_twice(d: dict[str, Any]) -> None:
    d["standings"].append(dict(d["standings"][-1], rank=len(d["standings"]) + 1))


def _stuck_not_resigned(d: dict[str, Any]) -> None:
    """Ann's resignation taken out of her moves, and her result said to be stuck: the moves
    that are left give a game still going on."""
    ann = d["players"][0]
    ann["moves"].pop()
    ann["times_ms"].pop()
    (standing,) = (s for s in d["standings"] if s["id"] == ann["id"])
    standing["status"] = "stuck"


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a score": (_set("standings.0.score", 999), "the record says score 999"),
    "aisleriot's score": (_set("standings.0.score2", 95), "aisleriot score 95"),
    "when a score was reached": (_set("standings.0.score_ms", 7), "the score reached at ms 7"),
    "the counts": (_set("standings.0.moves", 99), "moves 99 (the moves give"),
    "a result": (_set("standings.0.status", "won"), "won (the moves give resigned)"),
    "the places": (_set("standings.0.rank", 2), "the places are not what"),
    "a finishing time": (_set("standings.0.finish_ms", 1), "finishing time"),
    "a move": (_set("players.0.moves", ["1>1"]), "move 1"),
    "the board": (_set("players.0.board.stock", 0), "a board the moves do not reach"),
    "a card on the table": (_another_card_on_the_table, "a board the moves do not reach"),
    "the undos": (_set("standings.0.undos", 5), "undos 5 (the moves give 0)"),
    "a later finishing time": (_later_finish, "finishing time"),
    "a player twice": (_a_player_twice, "not the same players"),
    "a result of stuck": (_stuck_not_resigned, "stuck (the moves give a game going on)"),
    "the move times": (_swap_times, "the move times do not go with the moves"),
    "moves after the end": (_set("ended_at", WALL + 0.5), "a move is timed after the race ended"),
    "the end": (_set("ended_at", 0.0), "ends before it starts"),
    "a name": (_set("standings.0.name", "Mallory"), "otherwise than their moves"),
    "a player left out": (_drop_standing, "not the same players"),
    "the settings": (_set("settings.game", "louis"), "are not the revealed game's"),
}


@pytest.mark.parametrize("what", FORGERIES)
def test_a_forged_record_is_found_out(record: dict[str, Any], what: str) -> None:
    forge, said = FORGERIES[what]
    data = RaceRecord.model_validate(record, strict=False).model_dump(mode="json")
    forge(data)
    found = check_race(RaceRecord.model_validate(data, strict=False))
    told = [*found.problems, *(t for p in found.players for t in p.problems)]
    assert not found.ok and found.commitment_ok
    assert any(said in t for t in told), told


def test_another_salt_breaks_the_commitment(record: dict[str, Any]) -> None:
    data = RaceRecord.model_validate(record, strict=False).model_dump(mode="json")
    data["reveal"]["salt"] = "0" * len(data["reveal"]["salt"])
    found = check_race(RaceRecord.model_validate(data, strict=False))
    assert not found.ok and not found.commitment_ok
    assert not found.problems and all(p.matches for p in found.players)  # the rest is true


def test_a_commitment_changed_in_its_last_digit_is_found_out(record: dict[str, Any]) -> None:
    """The whole hash is compared: a record claiming another commitment, however alike, is not
    the race whose commitment was published."""
    data = RaceRecord.model_validate(record, strict=False).model_dump(mode="json")
    sealed = data["reveal"]["commitment"]
    data["reveal"]["commitment"] = sealed[:-1] + ("0" if sealed[-1] != "0" else "1")
    found = check_race(RaceRecord.model_validate(data, strict=False))
    assert not found.ok and not found.commitment_ok


def test_a_certified_solution_that_does_not_win_is_found_out(record: dict[str, Any]) -> None:
    """A record whose reveal says the deal was certified winnable, with a "solution" that does
    not win it, is found out even when its commitment covers that solution (as a server that
    made the certification up would have committed to it)."""
    from protocol.fairness import commitment

    data = RaceRecord.model_validate(record, strict=False).model_dump(mode="json")
    rv = data["reveal"]
    for solution, said in ((["d"], "does not win"), (["1>1"], "move 1 (1>1) does not apply")):
        rv["solution"] = solution
        rv["commitment"] = commitment(
            rv["game"], rv["options"], rv["numbering"], int(rv["number"]), rv["salt"], solution
        )
        found = check_race(RaceRecord.model_validate(data, strict=False))
        assert found.commitment_ok and not found.ok
        assert found.solution_problem is not None and said in found.solution_problem
