"""What a cluster node knows of the others (server/directory.py): plain state, no Redis."""

from __future__ import annotations

import json

from protocol.messages import RoomSummary
from server.directory import KNOWN_RACES, Directory


def summary(code: str, state: str = "lobby", players: int = 1) -> str:
    return RoomSummary(
        code=code, state=state, title="Spider", mode="first", players=players, seats=4,
        spectators=0,
    ).model_dump_json()  # fmt: skip


def test_other_nodes_rooms_are_listed_joinable_first() -> None:
    """The other nodes' rooms came in the order they were announced: one node's rooms held
    open filled the rest of every list (a review); now as a node lists its own, by kind."""
    directory = Directory(nodes={"node2": "/n/node2/"})
    directory.public = {
        "node2": {
            "RACE0000": summary("RACE0000", "racing", 4),
            "DONE0000": summary("DONE0000", "results", 2),
            "FULL0000": summary("FULL0000", "lobby", 4),
            "OPEN0000": summary("OPEN0000", "lobby", 1),
        },
        "gone": {"GONE0000": summary("GONE0000", "lobby", 1)},  # a node no longer in the cluster
    }
    # a newer node's summary, with a field this node does not know, is listed all the same (an
    # upgrade node by node hid the upgraded nodes' rooms); a summary that is no object is not
    newer = json.loads(summary("NEWR0000", "results", 1)) | {"since_1_9": [1]}
    directory.public["node2"] |= {"NEWR0000": json.dumps(newer), "LIST0000": "[1]"}
    codes = [r.code for r in directory.remote_summaries(10)]
    assert codes == ["OPEN0000", "FULL0000", "RACE0000", "DONE0000", "NEWR0000"]
    assert [r.code for r in directory.remote_summaries(2)] == ["OPEN0000", "FULL0000"]


def test_a_nodes_changes_locate_and_list_its_rooms_and_only_it_deletes_them() -> None:
    directory = Directory()
    directory.apply(
        {"node": "b", "url": "ws://b/", "set": {"PUB00000": summary("PUB00000"), "PRIV0000": ""}}
    )
    assert directory.locate("PUB00000", 0.0) == ("b", "ws://b/")
    assert directory.locate("PRIV0000", 0.0) == ("b", "ws://b/")  # private: found, not listed
    assert [r.code for r in directory.remote_summaries(10)] == ["PUB00000"]
    # another node cannot delete b's room (a stale message from where it was before)
    directory.apply({"node": "c", "url": "ws://c/", "del": ["PUB00000"]})
    assert directory.locate("PUB00000", 0.0) == ("b", "ws://b/")
    # a room made private is no longer listed, still found
    directory.apply({"node": "b", "set": {"PUB00000": ""}})
    assert directory.remote_summaries(10) == []
    assert directory.locate("PUB00000", 0.0) == ("b", "ws://b/")
    directory.apply({"node": "b", "del": ["PUB00000", "PRIV0000"]})
    assert directory.locate("PUB00000", 0.0) is None and directory.locate("PRIV0000", 0.0) is None
    assert directory.locate("NONE0000", 0.0) is None


def test_the_rooms_of_a_node_that_left_are_sent_on_to_it_for_a_while_not_listed() -> None:
    directory = Directory()
    directory.apply({"node": "b", "url": "ws://b/", "set": {"ROOM0000": summary("ROOM0000")}})
    assert directory.apply({"node": "b", "bye": True}) == "b"  # the caller drops it and logs
    directory.drop("b", until=100.0)
    assert directory.locate("ROOM0000", 99.0) == ("b", "ws://b/")  # it may be restarting
    assert directory.remote_summaries(10) == []
    assert directory.locate("ROOM0000", 100.0) is None  # its time is over
    directory.forget_departed(100.0)
    assert directory.departed == {}


def test_a_room_another_node_holds_now_is_not_sent_to_the_node_that_left() -> None:
    directory = Directory(nodes={"c": "ws://c/"})
    directory.replace("c", {"ROOM0000": ""})
    directory.departed_rooms("b", "ws://b/", ["ROOM0000", "OLD00000"], until=50.0)
    assert directory.locate("ROOM0000", 0.0) == ("c", "ws://c/")
    assert directory.locate("OLD00000", 0.0) == ("b", "ws://b/")


def test_a_full_read_replaces_what_a_node_holds() -> None:
    directory = Directory(nodes={"b": "ws://b/"})
    directory.replace("b", {"AAAA0000": summary("AAAA0000"), "BBBB0000": ""})
    directory.replace("b", {"BBBB0000": summary("BBBB0000")})  # AAAA closed meanwhile
    assert directory.locate("AAAA0000", 0.0) is None
    assert [r.code for r in directory.remote_summaries(10)] == ["BBBB0000"]
    assert directory.rooms_of("b") == ["BBBB0000"]


def test_messages_that_do_not_read_change_nothing() -> None:
    """Not even their parts that do read: a node's URL beside a summary that is no text."""
    directory = Directory()
    for message in (
        None, [], "text", {"url": "ws://x/"}, {"node": 3}, {"node": "b", "set": ["ROOM0000"]},
        {"node": "b", "url": "ws://b/", "set": {"ROOM0000": 5}},
        {"node": "b", "url": "ws://b/", "del": "ROOM0000"},
        {"node": "b", "url": "ws://b/", "del": [7]},
        {"node": "b", "url": "ws://b/", "races": {"r": 1}},
        {"node": "b", "url": 5, "set": {"ROOM0000": ""}},
    ):  # fmt: skip
        assert directory.apply(message) is None
    assert directory == Directory()


def test_the_races_remembered_are_the_latest_ones() -> None:
    directory = Directory(nodes={"b": "ws://b/"})
    directory.apply({"node": "b", "races": ["again", "first"]})
    directory.apply({"node": "b", "races": ["again"]})  # announced again: the latest now
    assert list(directory.races) == ["first", "again"]
    directory.apply({"node": "b", "races": [f"r{i}" for i in range(KNOWN_RACES)]})
    assert len(directory.races) == KNOWN_RACES
    assert directory.locate_race("first") is None
    assert directory.locate_race(f"r{KNOWN_RACES - 1}") == ("b", "ws://b/")
    directory.drop("b", until=0.0)
    assert directory.locate_race("r1") is None  # its node is gone: asked of Redis instead
