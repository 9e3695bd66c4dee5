"""The client's screens as plain code: messages from room and progress diffs, the results table,
the countdown, board sizes, the race panel, keys for runs, hostile names rendered as plain text."""

from __future__ import annotations

import re
import time

import pytest
from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from client import render, screens
from client.changes import progress_changes, room_changes
from client.grid import Grid
from client.helena_board import per_row_of
from client.keys import PILE_KEYS, Keys
from client.model import RaceModel
from client.panel import opponents, standings_line
from client.panel import watching as watching_view
from client.text import clip, ordinal, plural, safe, wrap_cells
from protocol.config import GameConfig
from protocol.game import new_game
from protocol.messages import (
    Countdown,
    Error,
    Kicked,
    Member,
    Progress,
    ProgressUpdate,
    PublicSettings,
    RaceStart,
    RoomInfo,
    RoomUpdate,
    Settings,
    Snapshot,
    Standing,
)
from protocol.moves import Kind

HOSTILE = ["[/]x", "[@click=app.quit]Bob[/]", "[link=http://x]L[/link]", "Eve\x1b[2J\x07"]


def settings(game: str = "spider", mode: str = "first") -> PublicSettings:
    return PublicSettings(
        game=game, options={}, numbering="pysolfc", mode=mode, time_limit=0, undo="safe",  # type: ignore[arg-type]
        seats=4, private=False, fixed_deal=False, title="Spider (4 suits)",
    )  # fmt: skip


def member(mid: int, name: str, **kw: object) -> Member:
    base = {"role": "player", "ready": False, "connected": True, "host": mid == 1}
    base.update(kw)
    return Member(id=mid, name=name, **base)  # type: ignore[arg-type]


def room(
    members: list[Member], state: str = "lobby", game: str = "spider", mode: str = "first"
) -> RoomInfo:
    return RoomInfo(
        code="ABCD2345", state=state, settings=settings(game, mode), members=members,  # type: ignore[arg-type]
        race_id=None, commitment=None,
    )  # fmt: skip


def progress(mid: int, name: str, status: str = "playing", **kw: object) -> Progress:
    base: dict[str, object] = dict(
        score=0, score2=None, turned=0, suits=0, foundation_cards=0, moves=0, undos=0,
        connected=True, finish_ms=None, score_ms=0,
    )  # fmt: skip
    base.update(kw)
    return Progress(id=mid, name=name, status=status, **base)  # type: ignore[arg-type]


def standing(rank: int, mid: int, name: str, status: str, **kw: object) -> Standing:
    base: dict[str, object] = dict(
        score=100, score2=None, finish_ms=65_000, score_ms=0, moves=1, undos=0
    )
    base.update(kw)
    return Standing(rank=rank, id=mid, name=name, status=status, **base)  # type: ignore[arg-type]


def no_live_styles(text: Text) -> bool:
    """No span of ``text`` is a link or a click action."""
    for span in text.spans:
        style = span.style if isinstance(span.style, Style) else Style.parse(str(span.style))
        if style.link or style.meta:
            return False
    return True


# -- words -----------------------------------------------------------------------------------


def test_plurals_ordinals_and_clipping() -> None:
    assert plural(1, "deal") == "1 deal" and plural(0, "deal") == "0 deals"
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
    ]  # fmt: skip
    assert clip("Bartholomew the Third", 10) == "Bartholom…"
    assert clip("Ann", 10) == "Ann"
    assert safe("a\x1b[2Jb\u202ec\x07") == "a\\x1b[2Jb\\u202ec\\x07"
    # the screen's rule is the terminal's (client.safe.clean): an unassigned character passed
    # raw, and a tag character came out as "\ue0041", U+E004 then "1" (a code review)
    assert safe("A\u0378B\U000e0041") == "A\\u0378B\\U000e0041"


def test_one_deal_one_move_in_the_header_and_board() -> None:
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 5)
    for _ in range(4):
        model.state.apply(model.state.legal_moves()[-1] if False else _deal())
    board = render.board(model, Keys(model), 24, 46)
    assert "(1 deal)" in board.plain
    model.state.moves = 1
    assert "1 move " in screens.header(model, True).plain + " "


def _deal():  # type: ignore[no-untyped-def]
    from protocol.moves import Move

    return Move(Kind.DEAL)


# -- messages ------------------------------------------------------------------------------


def test_room_changes_say_who_came_and_went() -> None:
    old = room([member(1, "Ann"), member(2, "Bob"), member(3, "Cy")])
    new = room(
        [
            member(1, "Ann"),
            member(2, "Bob", connected=False),
            member(4, "Dee"),
            member(5, "Eve", role="spectator"),
        ]
    )
    assert room_changes(old, new, you=1) == [
        "Bob is away (seat kept for a while)",
        "Dee joined",
        "Eve joined to watch",
        "Cy left",
    ]
    seated_next = room([*new.members[:3], member(5, "Eve", role="spectator", to_race=True)])
    assert "Eve joined to race the next one" in room_changes(old, seated_next, you=1)
    # how long, when the server said (welcome's grace_ms: "for a while" left a player who came
    # back "a minute later" without a seat, unwarned: a race-night trial)
    assert room_changes(old, new, you=1, grace_s=60)[0] == "Bob is away (seat kept 60 s)"
    assert room_changes(old, new, you=1, grace_s=300)[0] == "Bob is away (seat kept 5 min)"
    back = room([member(1, "Ann"), member(2, "Bob", rematch=True)], state="results")
    assert room_changes(new, back, you=1)[:2] == ["Bob is back", "Bob asks for a rematch"]
    # the host leaves: whoever becomes host is told (their keys changed without a word)
    handed = room([member(2, "Bob", host=True)])
    said = room_changes(back, handed, you=2)
    assert said[0].startswith("Ann left. You are the host now: s starts the race")
    assert "Ann left" not in said  # said once, with why
    # and the status line shows it, not only the last thing that happened at the same time
    model = RaceModel(name="Bob", you=2, phase="results")
    model.room = back
    model.apply(RoomUpdate(room=room([member(2, "Bob", host=True), member(3, "Cy")])), 0.0)
    assert model.status.startswith("Ann left. You are the host now") and "Cy joined" in model.status
    # everyone else is told who the host is now (only the new host was: club-night trial)
    assert room_changes(back, handed, you=3)[0] == "Ann left. Bob is the host now"
    hosting = room([member(1, "Ann", host=True), member(2, "Bob"), member(3, "Cy")])
    kept = room([member(1, "Ann", host=False), member(2, "Bob", host=True), member(3, "Cy")])
    assert room_changes(hosting, kept, you=3) == ["Bob is the host now"]
    # on the results screen s goes to the lobby first: said so (it said "s starts the race")
    on_results = room([member(2, "Bob", host=True)], state="results")
    said = room_changes(back, on_results, you=2)
    assert said[0] == (
        "Ann left. You are the host now: s takes the room to the lobby for the next race, "
        "n asks for it"
    )
    # a watcher made host (only bots racing) is told, without keys that do nothing for one
    # who does not race (s and n were offered on the results: a terminals trial)
    bot, bob = member(3, "Bot", bot=True), member(2, "Bob", role="spectator")
    watched = room([member(1, "Ann", host=True), bob, bot], "results")
    made = room([bob.model_copy(update={"host": True}), bot], "results")
    assert room_changes(watched, made, you=2)[0] == "Ann left. You are the host now"
    # one who came to race, left host on the results, takes the room to the lobby with s
    racer = bob.model_copy(update={"to_race": True})
    made = room([racer.model_copy(update={"host": True}), bot], "results")
    assert (
        room_changes(room([member(1, "Ann", host=True), racer, bot], "results"), made, you=2)[0]
        == "Ann left. You are the host now: s takes the room to the lobby, where you race"
    )
    waiting = RaceModel(name="Bob", you=2, role="spectator", phase="results")
    waiting.room = made
    waiting._hold_results()
    assert "s: to the lobby" in screens.footer_keys(waiting)
    # in a countdown s does nothing: its keys are said (a verification trial)
    counting = room([member(2, "Bob", host=True)], state="countdown")
    assert room_changes(back, counting, you=2)[0] == (
        "Ann left. You are the host now: r stops the countdown, g o v m t u + - p w change the "
        "settings"
    )
    # one away until the seat was let go did not leave: told so (it said "Cat left")
    away = room(
        [
            member(1, "Ann", host=True, connected=False),
            member(2, "Bob"),
            member(3, "Cat", connected=False),
        ]
    )
    released = room([member(2, "Bob", host=True)])
    said = room_changes(away, released, you=2)
    assert said[0].startswith("Ann did not come back in time: their seat was released. You are")
    assert said[1:] == ["Cat did not come back in time: their seat was released"]
    # a watcher moved into a seat that came free is told so, and to get ready
    ned = room([member(1, "Ann"), member(5, "Ned", role="spectator", to_race=True)])
    seated = room([member(1, "Ann"), member(5, "Ned")])
    assert room_changes(ned, seated, you=5) == ["You have a seat now: press r when you are ready"]
    # a watcher has no seat to release (it said so of one: a spectators trial)
    watcher = room([*away.members, member(4, "Dan", role="spectator", connected=False)])
    assert room_changes(watcher, away, you=2) == ["Dan stopped watching (gone too long)"]


def test_a_lobby_of_16_players_fits_80x24() -> None:
    """16 seats (the most) at 80x24: every player and the keys on the 21 lines of the board;
    free seats are one line however many."""
    host = RaceModel(name="Ann", you=1, phase="lobby")
    members = [member(1, "Ann"), *(member(i, f"Bot {i}", bot=True) for i in range(2, 17))]
    host.room = room(members)
    host.room.settings.seats = 16
    text = screens.lobby(host).plain
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 21, text
    assert all(len(line) <= 78 for line in lines)
    for m in members:
        assert m.name in text
    assert "s: ready and start" in text and "w winnable" in text
    few = RaceModel(name="Ann", you=1, phase="lobby")
    few.room = room([member(1, "Ann"), member(2, "Bob")])
    assert "2 free seats" in screens.lobby(few).plain  # four seats, two taken


def test_the_lobby_says_who_is_ready_and_whether_the_room_is_listed() -> None:
    """Each player ready or waiting, as they are (the host waits for those not ready before
    starting), and the room private or public, as set."""
    host = RaceModel(name="Ann", you=1, phase="lobby")
    host.room = room([member(1, "Ann", ready=True), member(2, "Bob")])
    lines = screens.lobby(host).plain.splitlines()
    assert any("ready" in line and "Ann" in line for line in lines)
    assert any("waiting" in line and "Bob" in line for line in lines)
    assert not any("ready" in line and "Bob" in line for line in lines)
    assert "(public)" in lines[0]
    host.room.settings.private = True
    assert "(private)" in screens.lobby(host).plain.splitlines()[0]


def test_the_race_panel_keeps_your_own_line_when_it_cannot_show_everyone() -> None:
    model = RaceModel(name="me", you=1, phase="racing")
    model.room = room([member(1, "me")], state="racing")
    model.progress = [progress(1, "me", score=0)] + [
        progress(i, f"Bot {i}", score=1000 - i) for i in range(2, 17)
    ]
    text = opponents(model, 29, 12).plain
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 12 and "me (you)" in text  # the last by score, still shown
    assert "Bot 2" in text and "Bot 16" not in text  # the leaders first
    assert "+6 more" in text  # those not shown are counted, not dropped silently
    assert "Bot 16" in opponents(model, 29).plain  # no height: everyone
    assert "more" not in opponents(model, 29).plain


def test_bots_are_marked_in_the_race_panel_and_the_results() -> None:
    model = results_model()
    model.apply(
        RoomUpdate(
            room=model.room.model_copy(  # type: ignore[union-attr]
                update={"members": [member(1, "Ann"), member(2, "Bob", bot=True)]}
            )
        )
    )
    assert "Bob (bot)" in screens.results(model).plain
    assert "Ann (bot)" not in screens.results(model).plain
    model.progress = [progress(1, "Ann"), progress(2, "Bob")]
    panel = opponents(model, 29).plain
    assert "Bob (bot)" in panel and "Ann (you)" in panel and "Ann (bot)" not in panel
    # a bot gone (its host quit with it) is still marked one (it lost its tag)
    model.apply(RoomUpdate(room=model.room.model_copy(update={"members": [member(1, "Ann")]})))  # type: ignore[union-attr]
    assert "Bob (bot)" in screens.results(model).plain
    assert "Bob (bot)" in opponents(model, 29).plain


def test_a_change_of_settings_in_the_lobby_is_said() -> None:
    before = room([member(1, "Ann"), member(2, "Bob")])
    after = before.model_copy(
        update={"settings": before.settings.model_copy(update={"title": "St. Helena"})}
    )
    assert "The host changed the settings: St. Helena" in room_changes(before, after, 2)
    assert "You changed the settings: St. Helena" in room_changes(before, after, 1)
    assert room_changes(before, before, 2) == []
    # each change in words, not the game's title whatever changed
    for update, said in (
        ({"undo": "off"}, "undo off"),
        ({"mode": "score", "time_limit": 600}, "mode: highest score, time limit 10 min"),
        ({"seats": 6, "private": True}, "6 seats, private"),
        ({"game": "louis", "title": "Louis"}, "Louis"),
    ):
        changed = before.model_copy(update={"settings": before.settings.model_copy(update=update)})
        assert room_changes(before, changed, 2) == [f"The host changed the settings: {said}"]


def test_a_countdown_stopped_is_said_and_the_lobby_comes_back() -> None:
    ready = [member(1, "Ann", ready=True), member(2, "Bob", ready=True)]
    model = RaceModel(name="Ann", you=1)
    model.apply(RoomUpdate(room=room(ready)))
    model.apply(Countdown(race_id="r2", ms=3000, commitment="c" * 64))
    model.apply(RoomUpdate(room=room(ready, state="countdown")))
    assert model.phase == "countdown"
    assert "r: stop the countdown" in screens.footer_keys(model)
    stopped = room([member(1, "Ann", ready=True), member(2, "Bob")])
    model.apply(RoomUpdate(room=stopped))
    assert model.phase == "lobby" and model.countdown_end is None
    assert "The countdown stopped: Bob pressed not ready" in model.log[-1]


def test_a_race_started_under_results_still_up_clears_what_they_said() -> None:
    """A watcher on the old results: the next race started, and the status line went on saying
    "Ann asks for a rematch" (a verification trial); the results say the race is on."""
    model = results_model()
    model.status = "Ann asks for a rematch"
    model.apply(RaceStart(race_id="r9", commitment="c" * 64, time_limit_ms=None, board=None))
    assert model.holding and model.status == ""


def test_the_host_leaving_as_the_countdown_starts_is_still_said() -> None:
    """The host left the lobby, everyone else ready: the countdown started in the same moment
    and wiped "Ann left. Bob is the host now" from the status line (a race-night trial)."""
    lobby = [member(1, "Ann"), member(2, "Bob", host=False, ready=True)]
    lobby.append(member(3, "Cid", host=False, ready=True))
    model = RaceModel(name="Cid", you=3)
    model.apply(RoomUpdate(room=room(lobby)))
    model.status = "You are ready (r: not ready)."
    left = [member(2, "Bob", host=True, ready=True), member(3, "Cid", host=False, ready=True)]
    model.apply(RoomUpdate(room=room(left, state="countdown")))
    model.apply(Countdown(race_id="r2", ms=3000, commitment="c" * 64))
    assert model.phase == "countdown"
    assert model.status == "Ann left. Bob is the host now", model.status
    # only the room update's own words stay: an older line goes, however recent the update
    # ("no certified deal is ready yet" stayed under the countdown's big 2: a new-user trial)
    model.apply(RoomUpdate(room=room(lobby)))
    model.apply(RoomUpdate(room=room([*lobby, member(4, "Dee", host=False)])))
    model.status = "No certified winnable deal of Spider (4 suits) is ready yet"
    model.apply(RoomUpdate(room=room([*lobby, member(4, "Dee", host=False)], state="countdown")))
    model.apply(Countdown(race_id="r3", ms=3000, commitment="c" * 64))
    assert model.status == "", model.status


def test_progress_changes_say_who_won_resigned_and_whom_you_wait_for() -> None:
    before = [progress(1, "Ann"), progress(2, "Bob"), progress(3, "Cy"), progress(4, "Dee")]
    after = [
        progress(1, "Ann", "resigned"),
        progress(2, "Bob", "won"),
        progress(3, "Cy"),
        progress(4, "Dee"),
    ]
    assert progress_changes(before, after, you=1) == [
        "you resigned",
        "Bob won",
        "waiting for Cy, Dee",
    ]
    later = [*after[:2], progress(3, "Cy", "won"), progress(4, "Dee", "stuck")]
    assert progress_changes(after, later, you=1) == [
        "Cy finished 2nd",
        "Dee is stuck: no move left",
    ]


def test_a_rematch_asked_is_said_once_not_again_at_every_room_update() -> None:
    """Bob asks for a rematch: said once; the next room update (Cy comes to watch) says only
    what it changed, not "Bob asks for a rematch" again."""
    old = room([member(1, "Ann"), member(2, "Bob")], state="results")
    asked = room([member(1, "Ann"), member(2, "Bob", rematch=True)], state="results")
    assert room_changes(old, asked, you=1) == ["Bob asks for a rematch"]
    later = room([*asked.members, member(3, "Cy", role="spectator")], state="results")
    assert room_changes(asked, later, you=1) == ["Cy joined to watch"]


def test_model_messages_from_events() -> None:
    model = RaceModel(name="Ann", you=1, phase="lobby")
    model.room = room([member(1, "Ann")])
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(2, "[/]x")])))
    assert model.status == "[/]x joined"
    model.apply(Kicked(message="room ABCD-2345 closed: only bots were left in the room"))
    assert model.phase == "kicked" and model.status.startswith("Room ABCD-2345 closed")


def test_a_released_seat_is_explained_after_a_snapshot() -> None:
    model = RaceModel(name="Ann", you=1, phase="racing")
    snap = Snapshot(
        seq=1, next_seq=5, you=1, role="player",
        room=room([member(1, "Ann"), member(2, "Bob")], state="racing"),
        board=None, elapsed_ms=70_000, time_limit_ms=None, countdown_ms=None,
        progress=[progress(1, "Ann", "disconnected"), progress(2, "Bob")],
        standings=None, reveal=None,
    )  # fmt: skip
    model.apply(snap)
    assert model.status == (
        "you were away too long: your seat in this race was released; you are watching"
    )


def test_a_seat_taken_back_keeps_the_bots_tags() -> None:
    """join after q q: the room comes in a snapshot, and its bots lost their '(bot)' in the race
    panel until a later room update."""
    model = RaceModel(name="Ann", phase="connecting")
    snap = Snapshot(
        seq=1, next_seq=5, you=1, role="player",
        room=room([member(1, "Ann"), member(2, "Bot", bot=True)], state="racing"),
        board=None, elapsed_ms=70_000, time_limit_ms=None, countdown_ms=None,
        progress=[progress(1, "Ann"), progress(2, "Bot")],
        standings=None, reveal=None,
    )  # fmt: skip
    model.apply(snap)
    assert model.bots == {2}
    assert "Bot (bot)" in opponents(model, 30).plain


# -- results --------------------------------------------------------------------------------


def results_model(role: str = "player") -> RaceModel:
    model = RaceModel(name="Ann", you=1, role=role, phase="results")
    model.room = room(
        [member(1, "Ann", role=role), member(2, "Bob", rematch=True), member(3, "Cy")],
        state="results",
    )
    model.standings = [
        standing(1, 2, "Bob", "won", score=1234, score2=88, moves=1, undos=1),
        standing(2, 1, "Ann", "resigned", score=40, score2=12, finish_ms=None),
        standing(3, 3, "Cy", "disconnected", score=0, score2=0),
    ]
    model.verdict, model.verified = "deal verified: #7 matches every card you were shown", True
    model._hold_results()
    model.last.game = "spider"  # type: ignore[union-attr]
    return model


def test_results_table_has_every_column_and_the_keys() -> None:
    model = results_model()
    text = screens.results(model, 78).plain
    lines = text.splitlines()
    head = next(line for line in lines if "result" in line)
    for col in ("name", "result", "score", "aisl.", "time", "moves", "undos"):
        assert col in head
    assert (
        "aisl.: aisleriot's (0-96)" in text
    )  # Spider's second score is named (2nd read as a place)
    bob = next(line for line in lines if "Bob" in line and "won" in line)
    assert bob.split()[:5] == ["1.", "Bob", "won", "1234", "88"]
    assert "1:05" in bob
    assert any("Ann" in line and "resigned" in line and " - " in line for line in lines)
    # your own row says so in words, not only in colour (NO_COLOR: bold, as the heading)
    assert any("Ann (you)" in line and "resigned" in line for line in lines)
    assert not any("Bob (you)" in line for line in lines)
    # one word for it, the race panel's and the results' (gone, disconnected: a trial)
    assert any("Cy" in line and "dropped" in line for line in lines)
    model.progress = [progress(3, "Cy", "disconnected")]
    assert "dropped" in opponents(model, 29).plain
    assert "deal verified" in text
    assert "rematch asked by: Bob" in text
    assert "n: rematch    s: to the lobby    q: leave" in text  # Ann hosts
    # the loud warning when the deal does not match
    model.last.verdict, model.last.verified = "WARNING: the revealed deal does not match: x", False  # type: ignore[union-attr]
    warn = screens.results(model, 78)
    assert "WARNING" in warn.plain
    assert any("on red" in str(s.style) for s in warn.spans)


def test_the_results_table_shows_each_ones_own_moves_and_undos() -> None:
    model = RaceModel(name="Ann", you=1, phase="results")
    model.room = room([member(1, "Ann"), member(2, "Bob")], state="results")
    model.standings = [
        standing(1, 2, "Bob", "won", score=500, score2=40, moves=87, undos=3),
        standing(2, 1, "Ann", "resigned", score=40, score2=12, moves=21, undos=0),
    ]
    model._hold_results()
    lines = screens.results(model, 78).plain.splitlines()
    head = next(line for line in lines if "result" in line).split()
    bob = next(line for line in lines if "Bob" in line and "won" in line).split()
    ann = next(line for line in lines if "Ann" in line and "resigned" in line).split()
    assert head[-2:] == ["moves", "undos"]
    assert bob[-2:] == ["87", "3"] and ann[-2:] == ["21", "0"]


def test_a_race_without_undo_counts_no_undos() -> None:
    """With undo off every count of undos is 0: the header, the race panel and the results
    table leave them out (they said "0 undos" all race long), and results kept up say so of
    their race even when the room then turns undo on."""
    race = RaceModel(name="Ann", you=1, phase="racing")
    race.room = room([member(1, "Ann"), member(2, "Bob")], state="racing")
    race.state = new_game(GameConfig("spider", {"suits": 1}), 3)
    race.progress = [progress(1, "Ann", moves=4), progress(2, "Bob", moves=2)]
    assert "0 undos" in screens.header(race, True).plain
    assert "0 undos" in opponents(race, 29).plain
    race.room.settings.undo = "off"
    assert "undo" not in screens.header(race, True).plain
    assert "0 moves" in screens.header(race, True).plain
    panel = opponents(race, 29).plain
    assert "undo" not in panel and "4 moves" in panel
    model = results_model()
    assert "undos" in screens.results(model, 78).plain
    model.room.settings.undo = "off"  # type: ignore[union-attr]
    model._hold_results()
    model.last.game = "spider"  # type: ignore[union-attr]
    text = screens.results(model, 78).plain
    assert "undos" not in text and "moves" in text
    bob = next(line for line in text.splitlines() if "Bob" in line and "won" in line)
    assert bob.split()[-2:] == ["1:05", "1"]  # time, moves: no undo column after them
    model.room.settings.undo = "safe"  # type: ignore[union-attr]  (the room moved on)
    assert "undos" not in screens.results(model, 78).plain


def test_results_columns_stay_straight_with_wide_names_and_name_the_join_command() -> None:
    """Names in two-cell characters (CJK, emoji) are cut and padded by cells, so the result
    column starts at one place on every row; the join command shows when there is one."""
    from rich.cells import cell_len

    model = results_model()
    model.last.standings = [  # type: ignore[union-attr]
        standing(1, 2, "漢字漢字漢字漢字漢字漢字漢字漢字", "won"),
        standing(2, 1, "W" * 24, "resigned"),
        standing(3, 3, "🃏 Cy", "resigned"),
    ]
    text = screens.results(
        model, 78, "patience-race join ABCD-2345 --server ws://127.0.0.1:4"
    ).plain
    rows = [line for line in text.splitlines() if line[:3] in (" 1.", " 2.", " 3.")]
    assert len(rows) == 3
    starts = {
        cell_len(row[: row.index(word)])
        for row, word in zip(rows, ("won", "res", "res"), strict=True)
    }
    assert len(starts) == 1
    assert "漢…" in rows[0]
    assert (
        "others join the next race with:\n  patience-race join ABCD-2345 --server ws://127.0.0.1:4"
        in text
    )
    assert "others join" not in screens.results(model, 78).plain


INDIC = ("किकिकिकिकिकिकिकिकखगघङचछज", "தமிழ்தமிழ்தமிழ்தமிழ்")


def test_indic_vowel_signs_take_a_cell_in_the_panel_the_lobby_and_the_results() -> None:
    """A spacing vowel sign (``ि`` in ``कि``) is one cell to glibc's wcwidth and the terminals
    that go by it, none to rich: two such names pushed the race panel's scores off their lines
    (125 showed as 1), the lobby's second column and the results' columns aside (a terminals
    trial).  Names are cut and padded by the cells a terminal draws."""
    import ctypes
    import locale

    from client.text import drawn_cells

    # the measure is the C library's, where the machine has one (each vowel sign a cell)
    try:
        locale.setlocale(locale.LC_CTYPE, "C.UTF-8")
        wcwidth = ctypes.CDLL("libc.so.6").wcwidth
        for name in (*INDIC, "Ann", "山田", "Zoë"):
            assert drawn_cells(name) == sum(wcwidth(ctypes.c_wchar(ch)) for ch in name), name
    except (OSError, locale.Error):
        pass
    finally:
        locale.setlocale(locale.LC_CTYPE, "")
    assert drawn_cells("कि") == 2 and drawn_cells("த") == 1

    race = RaceModel(name="Ann", you=1, phase="racing")
    race.room = room([member(1, "Ann"), member(2, INDIC[0]), member(3, INDIC[1])], "racing")
    race.state = new_game(GameConfig("spider", {"suits": 1}), 3)
    race.progress = [
        progress(1, "Ann", score=7), progress(2, INDIC[0], score=125),
        progress(3, INDIC[1], score=433),
    ]  # fmt: skip
    race.bots = {2, 3}
    for height in (0, 4):  # three lines a player, one
        panel = opponents(race, 29, height).plain.splitlines()
        rows = [line for line in panel if line.rstrip().endswith(("7", "125", "433"))]
        assert len(rows) == 3, panel
        assert {drawn_cells(row) for row in rows} == {29}, [drawn_cells(r) for r in rows]
        assert [row.split()[-1] for row in rows] == ["433", "125", "7"]

    lobby = RaceModel(name="Ann", you=1, phase="lobby")
    members = [member(i, n) for i, n in enumerate(["Ann", *INDIC, "Bob", "Cy", "Dee"], 1)]
    lobby.room = room(members)
    lines = screens.lobby(lobby, 80).plain.splitlines()
    seconds = [line for line in lines if "Bob" in line or "Cy" in line or "Dee" in line]
    assert len(seconds) == 3
    at = {
        drawn_cells(line[: line.index(word)])
        for line, word in zip(seconds, ("Bob", "Cy", "Dee"), strict=True)
    }
    assert len(at) == 1, seconds

    model = results_model()
    model.last.standings = [  # type: ignore[union-attr]
        standing(1, 2, INDIC[0], "won"), standing(2, 1, "Ann", "resigned"),
        standing(3, 3, INDIC[1], "resigned"),
    ]  # fmt: skip
    text = screens.results(model, 78).plain
    rows = [line for line in text.splitlines() if line[:3] in (" 1.", " 2.", " 3.")]
    starts = {
        drawn_cells(row[: row.index(word)])
        for row, word in zip(rows, ("won", "res", "res"), strict=True)
    }
    assert len(starts) == 1, rows


def test_results_stay_when_the_room_closes_under_them() -> None:
    """A room of watchers closes after its race: their results were taken away by the
    closing message; they stay, the message said below them, and only q is offered."""
    model = results_model("spectator")
    model.apply(Kicked(message="room ABCD-2345 closed: no player was left in the room"))
    assert model.holding and model.phase == "kicked"
    assert "Results" in screens.results(model, 78).plain
    assert screens.footer_keys(model) == "q: quit   ?: help"
    assert model.status == "Room ABCD-2345 closed: no player was left in the room"


def test_results_stay_when_the_room_moves_on() -> None:
    model = results_model()
    lobby = room([member(1, "Ann"), member(2, "Bob", ready=True), member(3, "Cy")])
    model.apply(RoomUpdate(room=lobby))
    assert model.holding and model.phase == "lobby"
    assert "back in the lobby: press n" in screens.results(model).plain
    assert "everyone else ready" not in screens.results(model).plain  # Cy is not
    assert "Results" in screens.results(model).plain
    # the next race waits on this player alone: said (club-night trial)
    ready = room([member(1, "Ann"), member(2, "Bob", ready=True), member(3, "Cy", ready=True)])
    model.apply(RoomUpdate(room=ready))
    assert "everyone else ready: press n to start the next race" in screens.results(model).plain
    # one away does not hold the start (the server starts without them): still said
    away = room(
        [
            member(1, "Ann"),
            member(2, "Bob", ready=True),
            member(3, "Cy", ready=True),
            member(4, "Dee", connected=False),
        ]
    )
    model.apply(RoomUpdate(room=away))
    assert "everyone else ready: press n to start the next race" in screens.results(model).plain
    model.apply(RoomUpdate(room=ready))
    model.leave_results()
    lobby_text = " ".join(screens.lobby(model).plain.split())
    assert "Everyone else is ready: press r to start the race." in lobby_text
    model.holding = True
    model.apply(RoomUpdate(room=lobby))
    model.apply(Countdown(race_id="r2", ms=3000, commitment="c" * 64))
    model.apply(RoomUpdate(room=lobby.model_copy(update={"state": "countdown"})))
    assert model.holding
    # a countdown is not a race yet: said so (it said "has started" during the countdown)
    assert "the next race is about to start: press n to watch it" in screens.results(model).plain
    seated = room([member(1, "Ann", ready=True), member(2, "Bob", ready=True)], state="countdown")
    model.apply(RoomUpdate(room=seated))
    assert "the next race is about to start: press n to join in" in screens.results(model).plain
    racing = seated.model_copy(update={"state": "racing"})
    model.apply(RoomUpdate(room=racing))
    from protocol.messages import RaceStart

    model.apply(RaceStart(race_id="r2", commitment="c" * 64, time_limit_ms=None, board=None))
    assert "the next race has started: press n to join in" in screens.results(model).plain
    assert model.holding and model.status != "Go!"  # not under the old results (new-user trial)
    # ready, but left out of the race (away when it started): to watch it, not to join in
    others = [progress(2, "Bob"), progress(3, "Cy")]
    model.apply(ProgressUpdate(elapsed_ms=1000, players=others))
    assert "the next race has started: press n to watch it" in screens.results(model).plain
    model.apply(ProgressUpdate(elapsed_ms=2000, players=[progress(1, "Ann"), *others]))
    assert "the next race has started: press n to join in" in screens.results(model).plain
    model.leave_results()
    assert not model.holding and model.phase == "racing"


def test_after_asking_for_a_rematch_the_lobby_comes_by_itself() -> None:
    model = results_model()
    asked = room(
        [member(1, "Ann", rematch=True), member(2, "Bob", rematch=True), member(3, "Cy")],
        state="results",
    )
    model.apply(RoomUpdate(room=asked))
    assert model.asked_rematch and model.holding
    text = screens.results(model).plain
    assert "waiting for Cy" in text and "n: " not in text  # asked: n has nothing left to do
    assert "s: to the lobby    q: leave" in text
    model.apply(RoomUpdate(room=room([member(1, "Ann", ready=True), member(2, "Bob")])))
    assert not model.holding and model.phase == "lobby"


# -- footer and help ----------------------------------------------------------------------------


def test_footer_keys_match_each_screen() -> None:
    host = RaceModel(name="Ann", you=1, phase="lobby")
    host.room = room([member(1, "Ann"), member(2, "Bob")])
    assert (
        "s: start" in screens.footer_keys(host)
        and "g/o/v/m/t/u/+/-/p" in screens.footer_keys(host)
        and "k: kick" in screens.footer_keys(host)
    )
    guest = RaceModel(name="Bob", you=2, phase="lobby")
    guest.room = host.room
    assert "r: ready" in screens.footer_keys(guest) and "s:" not in screens.footer_keys(guest)
    watcher = RaceModel(name="Eve", you=5, role="spectator", phase="lobby")
    watcher.room = host.room
    # a watcher's r takes a free seat (there was no way to race but to leave: a trial)
    assert screens.footer_keys(watcher).startswith("r: take a seat and race")
    full = room([member(1, "Ann"), member(2, "Bob")])
    full.settings.seats = 2
    watcher.room = full
    assert screens.footer_keys(watcher) == "q: leave   ?: help   (watching)"
    race = RaceModel(name="me", phase="racing")
    race.state = new_game(GameConfig("st-helena", {}), 3)
    keys = screens.footer_keys(race)
    assert "rr redeal" in keys and "k/a" in keys and "d deal" not in keys
    assert "1-0 -= pick" in keys and "u undo" in keys
    # no redeal left: none offered; a room with undo off: no undo offered
    race.state._redeals_left = 0  # type: ignore[attr-defined]
    race.room = room([member(1, "Ann")])
    race.room.settings.undo = "off"
    keys = screens.footer_keys(race)
    assert "redeal" not in keys and "u undo" not in keys and "xx resign" in keys
    assert "n: rematch" in screens.footer_keys(results_model())
    watcher = results_model("spectator")
    assert screens.footer_keys(watcher) == "q: leave   ?: help"  # nothing to ask on the results
    watcher.apply(RoomUpdate(room=watcher.room.model_copy(update={"state": "lobby"})))
    assert screens.footer_keys(watcher).startswith("n: follow the room")
    assert "docs/rules.md" in screens.HELP
    for key in (
        "↑ / ↓",
        "x x",
        "r r",
        "mouse",
        "s ready and start",
        "n rematch",
        "k / a",
        "escape",
        "h ",
    ):
        assert key in screens.HELP
    # asked from the lobby or the results, their keys come first (past two pages: a trial)
    for phase, first in (
        ("lobby", "Lobby:"),
        ("countdown", "Lobby:"),
        ("results", "Results:"),
        ("watching", "Watching:"),
    ):
        text = screens.help_text(phase)
        assert text.splitlines()[1].startswith(first), phase
        if phase != "watching":
            assert sorted(text.splitlines()) == sorted(screens.HELP.splitlines())
    # how a card and a pile are drawn, in the race's help and practice's (an appearance trial)
    from client.practice_app import PRACTICE_HELP

    for text in (screens.HELP, PRACTICE_HELP):
        for mark in ("TC is the ten of clubs", "▒5", "__", "+3", "…3", "reversed"):
            assert mark in text, mark
    # a watcher has no board: no race keys in its help, its own and the rest all there
    watching = screens.help_text("watching").splitlines()
    assert not any(line.startswith(("Race:", "  d ", "  x x", "St. Helena")) for line in watching)
    heads = ("Lobby:", "Results:", "Watching:", "?  this")
    assert all(any(line.startswith(h) for line in watching) for h in heads)
    assert any(line.startswith("Spider's score") for line in watching)
    assert screens.help_text("racing") == screens.HELP
    # undo off: the help does not list u (the footer did not, the help did: a rules trial)
    off = screens.help_text("racing", undo=False)
    assert "  u           undo\n" not in off and "u undo..." not in off and "undo is off" in off


def test_every_footer_and_the_racing_header_fit_80_columns() -> None:
    """At 80 columns nothing a key does is cut from the footer (the help key last of all), and
    the racing header keeps its scores and auto-home by leaving out the room's code."""
    from rich.cells import cell_len

    models = []
    for game, options in (("spider", {"suits": 1}), ("st-helena", {}), ("louis", {})):
        race = RaceModel(name="Ann", you=1, phase="racing")
        race.room = room([member(1, "Ann")], state="racing", game=game)
        race.state = new_game(GameConfig(game, options), 3)  # type: ignore[arg-type]
        models.append(race)
    host = RaceModel(name="Ann", you=1, phase="lobby")
    host.room = room([member(1, "Ann"), member(2, "Bob")])
    models += [host, results_model(), results_model("spectator")]
    for m in models:
        keys = screens.footer_keys(m)
        # the status line's padding leaves 78 of the 80 columns
        assert cell_len(keys) <= 78 and keys.rstrip().endswith("help"), keys
    assert "p/w: settings" in screens.footer_keys(host)
    spider = models[0]
    spider.started, spider.time_limit_ms = 0.0, 15 * 60_000
    wide = screens.header(spider, True, now=1.0, width=200).plain
    narrow = screens.header(spider, True, now=1.0, width=80).plain
    assert "room ABCD-2345" in wide and "room" not in narrow
    assert cell_len(narrow) <= 80 and "auto-home on" in narrow and "time left 14:59" in narrow
    # a small screen (a large font): auto-home's word goes before the game's suits (it showed
    # "Spider …": a trial)
    spider.state.moves = 100  # type: ignore[union-attr]
    small = screens.header(spider, True, now=1.0, width=60).plain
    assert cell_len(small) <= 60 and small.startswith(" Spider (") and "home" not in small


def test_spiders_home_is_a_click_target_that_sends_the_picked_run_home() -> None:
    """The help says a click on a foundation sends the picked pile home: in Spider that is the
    "Home n/8" label."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.room = room([member(1, "Ann")], state="racing")
    state = new_game(GameConfig("spider", {"suits": 1}), 1)
    state.piles[0] = [*state.piles[0][: state.down[0]], *range(12, -1, -1)]  # K..A of clubs
    model.state = state
    keys = Keys(model)
    grid = render.board_grid(model, keys, 22, 80)
    hit = next((y, x0) for y, x0, _x1, target in grid.hits if target == ("foundation", 0))
    assert "Home 0/8" in grid.lines[hit[0]].plain[hit[1] :]
    assert grid.at(hit[1] + 2, hit[0]) == ("foundation", 0)
    keys.source = 0
    move = keys.home(0)
    assert move is not None and move.kind == Kind.FOUNDATION and move.src == 0


def test_louis_deal_line_fits_a_narrow_board() -> None:
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.room = room([member(1, "Ann")], state="racing", game="louis")
    model.state = new_game(GameConfig("louis", {}), 3)
    for width in (46, 80):
        # before the deal: the redeals are counted, not offered (r r is refused until then)
        first = render.board_grid(model, Keys(model), 22, width).lines[0].plain.rstrip()
        assert len(first) <= width and "redeals" in first and "(r r)" not in first, first
    model.state.apply(_deal())
    for width in (46, 80):
        first = render.board_grid(model, Keys(model), 22, width).lines[0].plain.rstrip()
        assert len(first) <= width and first.endswith("(r r)"), first


# -- countdown, boards, race panel ------------------------------------------------------------------


def test_a_countdown_past_zero_without_a_start_says_it_waits() -> None:
    """A stalled link: the big 1 stayed for twelve seconds while the others raced (a trial)."""
    model = RaceModel(name="me", phase="countdown")
    model.apply(Countdown(race_id="r", ms=3000, commitment="c" * 64), now=100.0)
    assert "waiting for the server" not in screens.countdown(model, 60, 20, now=103.5).plain
    late = screens.countdown(model, 60, 20, now=104.1).plain
    assert "waiting for the server" in late and "█" not in late
    # and no countdown left to stop on the footer (it offered "r: stop the countdown")
    model.you, model.role = 1, "player"
    model.countdown_end = time.monotonic() - 2.0
    assert screens.footer_keys(model) == "q q: leave   ?: help"


def test_a_big_countdown_in_the_middle() -> None:
    model = RaceModel(name="me", phase="countdown")
    model.apply(Countdown(race_id="r", ms=2500, commitment="c" * 64), now=100.0)
    text = screens.countdown(model, 60, 20, now=100.0).plain
    lines = text.splitlines()
    three = screens.big_number(3)
    assert len(three) == 5
    start = next(i for i, line in enumerate(lines) if line.strip() == three[0].strip())
    for k in range(5):
        assert lines[start + k].strip() == three[k].strip()
    assert 5 <= start <= 12  # the middle of 20 rows
    assert lines[start].index("█") > 20  # and of 60 columns
    assert screens.big_number(1) != screens.big_number(2)
    # held after a server restart: said, not a big 1 frozen for seconds
    model.countdown_end = None
    held = screens.countdown(model, 80, 24, now=100.0).plain
    assert "restarted during the countdown" in held and "every player is back" in held
    assert "█" not in held


def test_cards_grow_with_the_screen() -> None:
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 9)
    small = render.board_grid(model, Keys(model), 21, 46)
    big = render.board_grid(model, Keys(model), 41, 98)
    assert all(line.cell_len <= 46 for line in small.lines)
    assert len(small.lines) <= 21
    assert max(line.cell_len for line in big.lines) > 80
    assert len(big.lines) > len(small.lines) + 4  # taller cards
    small_card = next(x1 - x0 for _, x0, x1, t in small.hits if t[0] == "card")
    big_card = next(x1 - x0 for _, x0, x1, t in big.hits if t[0] == "card")
    assert big_card > small_card


def test_a_long_spider_pile_folds_only_cards_its_runs_imply() -> None:
    """At 80x24 in a race (a 46x21 board) a pile of 22 face-up cards does not fit: the middle
    of its same-suit runs is folded ("…n": the cards between the run's first and last shown),
    so no card is hidden that is not known from the ones around it."""
    model = RaceModel(name="me", phase="racing")
    state = new_game(GameConfig("spider", {"suits": 2}), 9)
    up = [*range(12, -1, -1), 13 + 7, *range(13 + 12, 13 + 4, -1)]  # K..A C, 8H, K..5 H
    state.piles[0] = [*state.piles[0][: state.down[0]], *up]
    model.state = state
    grid = render.board_grid(model, Keys(model), 21, 46)
    text = grid.text().plain
    assert "+" not in text and "…" in text
    drawn = {t[2] - state.down[0] for _, _, _, t in grid.hits if t[:2] == ("card", 0)}
    folded = sum(int(m[1:]) for m in re.findall(r"…\d+", text))
    assert len(drawn) + folded == len(up)
    # every card not drawn lies inside a run between two drawn cards of that run
    for j in set(range(len(up))) - drawn:
        before = max(d for d in drawn if d < j)
        after = min(d for d in drawn if d > j)
        assert all(up[k] == up[k - 1] - 1 for k in range(before + 1, after + 1))
    assert {0, 12, 13, 14, len(up) - 1} <= drawn  # the ends of the runs, and the lone 8H


def test_st_helenas_pile_keys_sit_on_a_row_of_their_own() -> None:
    """A key right above (or below) each pile's own cards stood beside a longer pile's card and
    read as a card ("1  8C"): the keys of a band are on one row, past its longest pile (a
    trial)."""
    model = RaceModel(name="me", phase="racing")
    state = new_game(GameConfig("st-helena", {}), 4)
    state.piles[1].extend([state.piles[10].pop(), state.piles[11].pop()])  # pile 2: 3 cards
    state.piles[8].append(state.piles[5].pop())  # pile 9 (bottom band): 2 cards
    model.state = state
    lines = render.board_grid(model, Keys(model), 27, 86).text().plain.splitlines()
    card = re.compile(r"\b[2-9TJQKA][CDHS]\b")
    top = [line for line in lines if re.fullmatch(r"\s*1\s+2\s+3\s+4\s*", line)]
    bottom = [line for line in lines if re.fullmatch(r"\s*0\s+9\s+8\s+7\s*", line)]
    assert len(top) == 1 and len(bottom) == 1, "\n".join(lines)
    assert not card.search(top[0] + bottom[0])


def test_st_helena_is_laid_out_around_the_foundations() -> None:
    """Where every card fits around the foundations (a race at 120x30, practice at 100x30), the
    board is PySolFC's; each pile's key sits right by its cards."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 4)
    grid = render.board_grid(model, Keys(model), 27, 86)
    text = grid.text().plain
    assert "deal 1 of 3" in text
    assert "deal 1: piles 1-4 → kings, 7-10 → aces only" in text
    assert len(grid.lines) <= 27 and all(line.cell_len <= 86 for line in grid.lines)

    def where(target: tuple) -> tuple[int, int]:
        return next((y, x0) for y, x0, _, t in grid.hits if t == target)

    kings_y, k0 = where(("foundation", 0))
    aces_y, a0 = where(("foundation", 4))
    assert aces_y == kings_y + 1 and a0 == k0
    # which foundations are which, beside them (nothing said it, and messages name "f8": a
    # St. Helena trial)
    assert grid.lines[kings_y - 1].plain[:k0].rstrip().endswith("kings f1-4 ↓")
    assert grid.lines[aces_y + 1].plain[:a0].rstrip().endswith("aces f5-8 ↑")
    # piles 1-4 above the kings, 7-10 below the aces, 5-6 right, 11-12 left
    for i in range(4):
        assert where(("card", i, len(model.state.piles[i]) - 1))[0] == kings_y - 1
    for i in range(6, 10):
        assert where(("card", i, len(model.state.piles[i]) - 1))[0] == aces_y + 1
    assert (
        where(("card", 6, len(model.state.piles[6]) - 1))[1]
        > where(("card", 9, len(model.state.piles[9]) - 1))[1]
    )
    assert where(("card", 11, len(model.state.piles[11]) - 1)) < (kings_y, k0 + 1)
    assert where(("card", 10, len(model.state.piles[10]) - 1))[0] == aces_y
    assert where(("card", 4, len(model.state.piles[4]) - 1)) > (kings_y - 1, k0 + 8)
    assert where(("card", 5, len(model.state.piles[5]) - 1))[0] == aces_y
    # the keys of piles 1 and 7 right above and below their cards (not at the band's edge)
    y1, x1 = where(("card", 0, 0))
    assert grid.lines[y1 - 1].plain[x1:].strip()[0] == "1"
    y7, x7 = where(("card", 6, 0))
    assert grid.lines[y7 + 1].plain[x7:].strip()[0] == "7"
    # after a redeal the restriction is gone and the redeal order is told
    keys = Keys(model)
    assert keys.press("r") is None and "Redeal? Press r again" in model.status
    move = keys.press("r")
    assert move is not None and move.kind == Kind.REDEAL
    model.state.apply(move)
    text = render.board(model, keys, 21, 46).plain
    assert "deal 2 of 3" in text and "gathers piles 12..1, deals from pile 1" in text


@pytest.mark.parametrize("width", [100, 120, 160, 200])
def test_st_helena_side_piles_lie_on_one_row_with_their_keys_beside(width: int) -> None:
    """From 100 columns a side pile as dealt lies on its foundation row, whole: it wrapped into
    the rows of piles 1-4's top cards (at 100 to 160 columns), where a player took its cards for
    those piles' own; its key sits right past its outer card (it was 38 columns away at 200),
    and the cards grow with the screen (they stopped at 4 columns)."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 12)
    grid = render.board_grid(model, Keys(model), 27, width)
    assert all(line.cell_len <= width for line in grid.lines)
    cards = {t[1:]: (y, x0, x1) for y, x0, x1, t in grid.hits if t[0] == "card"}
    kings_y = next(y for y, _, _, t in grid.hits if t == ("foundation", 0))
    for i, row in ((11, kings_y), (4, kings_y), (10, kings_y + 1), (5, kings_y + 1)):
        assert {cards[(i, j)][0] for j in range(len(model.state.piles[i]))} == {row}, i
    line = grid.lines[kings_y].plain
    outer_left = min(cards[(11, j)][1] for j in range(8))
    assert line[:outer_left].strip() == "="  # pile 12's key, and nothing else, left of it
    assert outer_left - line.index("=") <= 4
    outer_right = max(cards[(4, j)][2] for j in range(8))
    assert line[outer_right:].strip() == "5" and line.index("5", outer_right) - outer_right <= 4
    width_of_a_card = cards[(0, 0)][2] - cards[(0, 0)][1]
    assert width_of_a_card == {100: 3, 120: 4, 160: 5, 200: 6}[width]


@pytest.mark.parametrize(("width", "screen"), [(66, (100, 30)), (100, (100, 30)), (120, (120, 40))])
def test_st_helena_side_piles_have_room_and_the_board_stays_put(
    width: int, screen: tuple[int, int]
) -> None:
    """(Second new-user trial.) A race at 100x30 (a board 66 wide) wrapped its side piles from
    the start (one card short, counted with a space the key's label already has); a side pile
    one card longer wrapped at once; and a status message of two lines moved the whole board
    up a line, and back after it."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 5)
    model.screen = screen
    board_h = screen[1] - 3  # the apps': the header, a message of one line, the keys line

    def where() -> dict[tuple[object, ...], tuple[int, int]]:
        grid = render.board_grid(model, Keys(model), board_h, width)
        return {t: (y, x0) for y, x0, _, t in grid.hits if t[0] == "card"}

    def rows_of(i: int, at: dict[tuple[object, ...], tuple[int, int]]) -> set[int]:
        return {at[("card", i, j)][0] for j in range(len(model.state.piles[i]))}  # type: ignore[union-attr]

    at = where()
    kings_y = at[("card", 11, 7)][0]
    for i in (4, 5, 10, 11):
        assert len(rows_of(i, at)) == 1, i
    if width > 66:  # (66 columns hold 8 of the smallest cards a side, not 9)
        model.state.piles[4].append(model.state.piles[0][0])  # one card more
        at = where()
        assert rows_of(4, at) == {kings_y}
    board_h -= 1  # a message of two lines
    assert where() == at


@pytest.mark.parametrize("width", [100, 120, 160])
def test_st_helena_cards_keep_their_size_within_a_deal(width: int) -> None:
    """The cards' size is chosen once a deal and screen: a side pile one card longer moved every
    pile under the mouse (the size followed the longest side pile; review).  A side pile longer
    than its row went on in the rows of piles 1-4 or 7-10, in line with their cards, and was read
    as theirs (a St. Helena trial): the board goes to one row a pile then, for the deal."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 12)
    piles = model.state.piles

    def drawn() -> tuple[tuple[int, int, int], dict[int, set[int]]]:
        grid = render.board_grid(model, Keys(model), 40, width)
        first = next((y, x0, x1) for y, x0, x1, t in grid.hits if t == ("card", 0, 0))
        rows: dict[int, set[int]] = {}
        for y, _, _, t in grid.hits:
            if t[0] == "card":
                rows.setdefault(y, set()).add(t[1])  # type: ignore[arg-type]
        return first, rows

    before, _ = drawn()
    fits = per_row_of(width, *model.helena_layout[1:3])  # type: ignore[index]
    for k in range(24):
        piles[4].append(piles[5][k % 8])
        first, rows = drawn()
        if len(piles[4]) <= fits:
            assert first == before, k  # the board stays put
            # pile 5 on the kings' row (beside pile 12), and on no other
            assert [held for held in rows.values() if 4 in held] == [{4, 11}], k
        else:
            assert first[0] != before[0], k  # one row a pile: pile 1 on a row of its own
            assert all(len(held) == 1 for held in rows.values()), k
    assert len(piles[4]) > fits
    del piles[4][-20:]
    assert drawn()[0] != before  # the same deal: one row a pile still


def grown_board(
    game: str, piles: tuple[int, ...], grown: int, width: int, height: int
) -> tuple[RaceModel, Grid, set[tuple[int, ...]]]:
    """Deal 4 of ``game`` with ``piles`` grown by ``grown`` cards, drawn in ``width`` x
    ``height``: the model, the grid (checked to stay in its size) and the cards drawn."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig(game, {}), 4)
    for i in piles:
        for k in range(grown):
            model.state.piles[i].append(model.state.piles[i][k % len(model.state.piles[i])])
    grid = render.board_grid(model, Keys(model), height, width)
    assert all(line.cell_len <= width for line in grid.lines)
    assert len(grid.lines) <= height
    return model, grid, {t[1:] for _, _, _, t in grid.hits if t[0] == "card"}


@pytest.mark.parametrize("game", ["st-helena", "louis"])
@pytest.mark.parametrize(
    ("width", "height"),
    [(46, 21), (80, 21), (66, 27), (86, 27), (78, 37), (100, 40)],
)
@pytest.mark.parametrize("grown", [0, 5, 12])
def test_every_card_is_on_the_screen_at_every_size(
    game: str, width: int, height: int, grown: int
) -> None:
    """Every card is face up in St. Helena and Louis, and every one is drawn (none folded into
    "+N") at the board sizes of a race at 80x24 (46x21), practice at 80x24 (80x21), 100x30, a
    race and practice at 120x40, with piles as dealt and grown by 5 and 12 cards: around the
    foundations where they fit, else one row a pile."""
    model, grid, drawn = grown_board(game, (0, 4, 6, 11), grown, width, height)  # each band
    assert model.state is not None
    for i, pile in enumerate(model.state.piles):
        assert {(i, j) for j in range(len(pile))} <= drawn, i
    assert "+" not in grid.text().plain


@pytest.mark.parametrize("game", ["st-helena", "louis"])
@pytest.mark.parametrize(("width", "height"), [(58, 15), (46, 16), (58, 16)])
@pytest.mark.parametrize(("piles", "grown"), [((0, 4, 6, 11), 12), (tuple(range(12)), 14)])
def test_a_small_screen_keeps_the_whole_board_and_the_newest_cards(
    game: str, width: int, height: int, piles: tuple[int, ...], grown: int
) -> None:
    """At 60x20 (a 58x15 board) and 80x20 (46x16), long piles wrapped to more rows than the
    screen has and ran off its bottom (a review): the board stays in its height, the longest
    piles get the rows there are, and a pile without one shows its newest cards, its top card
    always, after a "+N" of the oldest."""
    model, _, drawn = grown_board(game, piles, grown, width, height)
    assert model.state is not None
    for i, pile in enumerate(model.state.piles):
        assert (i, len(pile) - 1) in drawn, i  # every top card, the one that plays
        shown = [j for j in range(len(pile)) if (i, j) in drawn]
        assert shown == list(range(len(pile) - len(shown), len(pile)))  # the newest, in order


def test_race_panel_is_a_clean_column() -> None:
    model = RaceModel(name="me", you=1, phase="racing")
    model.room = room([member(1, "me")], state="racing")
    model.progress = [
        progress(1, "me", suits=3, moves=1, score=123456),
        progress(2, "A very long name indeed!", "won", suits=8, finish_ms=3_723_000),
        progress(3, "Cy", connected=False),
    ]
    text = opponents(model, 29)
    lines = text.plain.splitlines()
    assert all(len(line) <= 29 for line in lines)
    assert lines[0] == "Race ABCD-2345: first to win"  # the room's code too (a new-user trial)
    assert opponents(model, 22).plain.splitlines()[0] == "Race: first to win"
    # places as the results will rank them: the winner first, though "me" scores more
    assert lines[1].startswith("1 A very long n…") and "won" in lines[1]
    assert lines[4].startswith("2 me (you)")
    assert lines[7].startswith("3 Cy") and "away" in lines[7]
    assert any("3/8 suits" in line for line in lines)
    assert any("8/8 suits" in line and "█" * 15 in line for line in lines)
    assert any("1 move," in line for line in lines)
    assert any("62:03" in line for line in lines)
    helena = RaceModel(name="me", you=1, phase="racing")
    helena.room = room([member(1, "me")], state="racing", game="st-helena")
    helena.progress = [progress(1, "me", foundation_cards=44)]
    assert "44/96 home" in opponents(helena, 29).plain  # as the score: 0 to 96
    # a race for the best score ranks by score alone
    model.room = room([member(1, "me")], state="racing", mode="score")
    lines = opponents(model, 29).plain.splitlines()
    assert lines[0] == "Race ABCD-2345: best score"
    assert lines[1].startswith("1 me (you)") and lines[4].startswith("2 A very long n…")


def test_arrows_grow_and_shrink_the_picked_run() -> None:
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 1)
    state = model.state
    state.piles[0][-1] = 30  # 5H
    state.piles[0] += [29, 28]  # 4H 3H: a three-card run
    keys = Keys(model)
    keys.press("1")
    assert keys.count == 0 and keys.movable(0) == 3
    keys.press("down")
    assert keys.count == 2 and "4H 3H" in model.status
    keys.press("down")
    keys.press("down")
    assert keys.count == 1
    keys.press("up")
    assert keys.count == 2
    # a click on a card picks the run from it; one that is not in the run is refused
    assert keys.select(0, 3) and keys.count == 0
    assert not keys.select(0, 4) and "do not move together" in model.status


def test_spider_keys_in_st_helena_say_what_is_so_there() -> None:
    """In St. Helena, ↑ said "then up/down for more/fewer cards", and with a card picked "That
    is the whole run"; k with nothing picked said "then f" (a client trial)."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena"), 1)
    keys = Keys(model)
    keys.press("up")
    assert model.status.startswith("One card moves at a time here")
    keys.press("k")
    assert model.status == "Pick a pile first (its key), then k to send it home."
    keys.press("1")
    keys.press("down")
    assert "whole run" not in model.status and keys.source == 0 and keys.count == 0


def test_the_lobbys_join_command_is_never_broken_in_two() -> None:
    """At 80 columns "others join with: .venv/bin/patience-race join NYAA-73WG --server" ended
    a line and the URL began the next: the first line pasted ran join without a server (a
    terminals trial).  A command too long for the line goes whole on a line of its own."""
    model = RaceModel(name="Ann", you=1, phase="lobby")
    model.room = room([member(1, "Ann")])
    short = "patience-race join ABCD-2345"
    lines = screens.lobby(model, join_hint=short, width=78).plain.splitlines()
    assert f"others join with: {short}" in lines
    long = ".venv/bin/patience-race join ABCD-2345 --server ws://127.0.0.1:24001"
    lines = screens.lobby(model, join_hint=long, width=78).plain.splitlines()
    at = lines.index("others join with: ")
    assert lines[at + 1] == f"  {long}"


# -- hostile names ------------------------------------------------------------------------------------


def test_hostile_names_are_plain_text_everywhere() -> None:
    members = [member(1, "Ann")] + [member(i + 2, n) for i, n in enumerate(HOSTILE)]
    model = RaceModel(name="Ann", you=1, phase="lobby")
    model.room = room(members)
    outputs = [screens.lobby(model, join_hint="others join with: [b]x[/b]")]
    model.phase = "racing"
    model.room = room(members, state="racing")
    model.progress = [progress(m.id, m.name) for m in members]
    outputs.append(opponents(model, 29))
    model.standings = [standing(i + 1, m.id, m.name, "won") for i, m in enumerate(members)]
    model.room = room([m.model_copy(update={"rematch": True}) for m in members], state="results")
    model._hold_results()
    outputs.append(screens.results(model))
    model.status = "waiting for [/]x, Eve\x1b[2J to be ready"
    outputs.append(screens.status_line(model, "q: quit", False))
    model.status = "[/]"
    outputs.append(screens.message_screen(model))
    for text in outputs:
        assert isinstance(text, Text)
        assert "\x1b" not in text.plain and "\x07" not in text.plain
        assert no_live_styles(text)
    everything = "\n".join(t.plain for t in outputs)
    assert "[@click=app.quit]Bob[/]" in everything
    assert "[link=http://x]L[/link]" in everything
    assert "Eve\\x1b[2J\\x07" in everything
    assert "waiting for [/]x, Eve\\x1b[2J to be ready" in everything
    assert "[b]x[/b]" in everything
    # and messages derived from events quote them the same way
    assert room_changes(room(members[:1]), room(members), 1)[-1] == "Eve\\x1b[2J\\x07 joined"
    progress_update = ProgressUpdate(elapsed_ms=1, players=[progress(3, "[@click=app.quit]Bob[/]")])
    assert progress_update.players[0].name == HOSTILE[1]


def test_results_of_a_certified_deal_show_its_par() -> None:
    from protocol.messages import Reveal

    model = results_model()
    reveal = Reveal(
        game="spider", options={"suits": 4, "relaxed": 0}, numbering="pysolfc", number=7,
        salt="s", commitment="c", solution=["1>2"] * 150,
    )  # fmt: skip
    model.reveal = reveal
    model.last.reveal = reveal  # type: ignore[union-attr]
    text = screens.results(model, 78).plain
    assert "Certified winnable: the solver won it (in 150 moves: a sure way" in text
    assert "the best winner took 1 move" in text
    assert "Replay it in PySolFC as game #7." in text
    # an xpat2 number is xpat2's deal, not PySolFC's
    model.last.reveal = reveal.model_copy(update={"numbering": "xpat2", "solution": None})  # type: ignore[union-attr]
    text = screens.results(model, 78).plain
    assert "Replay it in xpat2 as game #7." in text and "PySolFC" not in text
    # xpat2 deals 4 suits only: a 2-suit deal is its 4-suit game recoloured (a rules trial)
    two = reveal.model_copy(update={"numbering": "xpat2", "options": {"suits": 2, "relaxed": 0}})
    model.last.reveal = two  # type: ignore[union-attr]
    text = " ".join(screens.results(model, 78).plain.split())
    assert (
        "Replay it in xpat2 as game #7 (its 4-suit game: the same layout, here recoloured" in text
    )
    # where PySolFC plays the deal by other rules, said: its St. Helena builds in any suit and
    # never fills an empty pile; its Louis builds in suit with a wrap (said backwards for Louis,
    # and nothing for St. Helena's spaces: a St. Helena and Louis trial)
    for game, options, said in (
        ("st-helena", {"build": "suit", "spaces": "none"}, "PySolFC builds in any suit)"),
        ("st-helena", {"build": "any", "spaces": "none"}, None),
        ("st-helena", {"build": "any", "spaces": "any"}, "PySolFC never fills an empty pile)"),
        (
            "st-helena",
            {"build": "suit", "spaces": "any"},
            "PySolFC builds in any suit and never fills an empty pile)",
        ),
        ("louis", {"build": "suit"}, "PySolFC lets a king and an ace go on each other)"),
        ("louis", {"build": "any"}, "PySolFC builds in suit there, a king and an ace on each"),
    ):
        model.last.reveal = reveal.model_copy(update={"game": game, "options": options})  # type: ignore[union-attr]
        text = " ".join(screens.results(model, 78).plain.split())
        if said is None:
            assert "Replay it in PySolFC as game #7." in text, options
        else:
            assert f"Replay it in PySolFC as game #7 (the same deal; {said}" in text, options
        assert "any suit" not in text or game == "st-helena", (game, options)


def test_race_over_names_a_winner_only_when_someone_won() -> None:
    from protocol.messages import RaceOver, Reveal

    reveal = Reveal(
        game="spider", options={}, numbering="pysolfc", number="7", salt="00", commitment="00"
    )

    def over(standings: list[Standing]) -> str:
        model = RaceModel(name="Ann", you=1, phase="racing")
        model.room = room([member(1, "Ann"), member(2, "Bob")], state="racing")
        model.apply(RaceOver(race_id="r1", reason="all_done", standings=standings, reveal=reveal))
        return model.status

    everyone_resigned = [
        standing(1, 2, "Bob", "resigned", score=300),
        standing(2, 1, "Ann", "resigned", score=120),
    ]
    assert over(everyone_resigned) == (
        "Race over: everyone has finished. Nobody won; best score: Bob (300)."
    )
    won = [standing(1, 1, "Ann", "won", score=990), standing(2, 2, "Bob", "resigned")]
    assert over(won) == "Race over: everyone has finished. Won by Ann."


def test_auto_home_keeps_the_cards_the_deals_need() -> None:
    """Sending a complete suit home automatically is skipped when it would leave fewer cards on
    the table than piles, with deals to come: the player would be stuck for good (and an undo
    would only send it home again).  With the stock empty it goes home at once."""
    from client.keys import auto_home

    from .test_strategy import _one_suit_near_a_stuck_end

    trapped = _one_suit_near_a_stuck_end(stock=True)
    assert any(m.kind == Kind.FOUNDATION for m in trapped.legal_moves())  # legal, not wise
    assert auto_home(trapped) is None
    done = _one_suit_near_a_stuck_end(stock=False)
    move = auto_home(done)
    assert move is not None and move.kind == Kind.FOUNDATION
    # an ordinary start: nothing complete, nothing sent
    assert auto_home(new_game(GameConfig("spider", {"suits": 1}), 1)) is None


def test_st_helenas_longest_foundation_message_fits_two_lines_at_80_columns() -> None:
    """ "...f4 (diamonds kings, building down) takes QD ne…": the end of the rule was cut off at
    80x24 (a trial)."""
    from protocol import cards
    from protocol.helena import ACE_FOUNDATIONS, KING_FOUNDATIONS

    state = new_game(GameConfig("st-helena", {}), 4)
    assert state.first_deal
    keys = "1-0-= pick  f/k/a home  r r redeal  u undo  xx resign  qq quit  ? help"
    model = RaceModel(name="Ann", you=1, phase="racing")
    for allowed in (KING_FOUNDATIONS, ACE_FOUNDATIONS):
        for card in range(52):
            problem = state._foundation_problem(card, 11, allowed)  # pile 12: two digits
            model.status = f"Not allowed: {problem}."
            lines = screens.status_line(model, keys, False, 78).plain.split("\n")
            assert len(lines) <= 3 and "…" not in lines[-2], (cards.name(card), lines)


def test_a_long_message_takes_two_lines_and_the_keys_stay_on_screen() -> None:
    """A rule message longer than the screen (St. Helena's first-deal restriction) wrapped onto
    the keys' line and hid them."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.status = (
        "Not allowed: QS does not go to a foundation (on the first deal pile 9 plays only to "
        "the ace foundations): f6 (spades aces, up) takes 2S next.\nand more"
    )
    keys = "1-0-= pick  f/k/a home  r r redeal  u undo  xx resign  qq quit  ? help"
    lines = screens.status_line(model, keys, False, 78).plain.split("\n")
    # two lines for the message (the app gives it the room), the keys below
    assert len(lines) == 3 and lines[2] == keys
    assert lines[0].startswith("Not allowed: QS") and "takes 2S next." in lines[1]
    assert all(cell_len(line) <= 78 for line in lines)
    model.status = "word " * 60  # longer still: cut at the end of the second line
    lines = screens.status_line(model, keys, False, 40).plain.split("\n")
    assert len(lines) == 3 and lines[1].endswith("…") and lines[2] == keys
    model.status = "short"
    assert screens.status_line(model, keys, False, 78).plain == f"short\n{keys}"


def test_the_lobby_marks_a_deal_that_can_be_found_from_its_cards() -> None:
    """A fixed number or xpat2's billion deals can be searched for the opening cards
    (docs/rules.md, "What the server cannot hide"): the lobby says so; a random PySolFC deal
    is not marked."""
    host = RaceModel(name="Ann", you=1, phase="lobby")
    members = [member(1, "Ann"), *(member(i, f"Bot {i}", bot=True) for i in range(2, 17))]
    host.room = room(members)
    assert "can be found" not in screens.lobby(host).plain
    for update in ({"fixed_deal": True}, {"numbering": "xpat2"}):
        host.room = room(members)
        host.room.settings = host.room.settings.model_copy(update={"seats": 16, **update})
        text = screens.lobby(host).plain
        assert "can be found from its first cards: race people you trust" in text
        lines = text.rstrip("\n").splitlines()
        assert len(lines) <= 21 and all(len(line) <= 78 for line in lines)  # 80x24 still
    assert "(xpat2 numbering)" in text


def test_comings_and_goings_say_who_only_watches() -> None:
    """A spectator has no seat to keep; a racer whose seat was released comes back to watch."""
    before = room([member(1, "Ann"), member(2, "Bob"), member(3, "Spy", role="spectator")])
    gone = room(
        [
            member(1, "Ann"),
            member(2, "Bob", connected=False),
            member(3, "Spy", role="spectator", connected=False),
        ]
    )
    assert room_changes(before, gone, 1) == [
        "Bob is away (seat kept for a while)",
        "Spy stopped watching",
    ]
    assert room_changes(gone, before, 1, {2}) == ["Bob is back, watching", "Spy is back, watching"]
    assert room_changes(gone, before, 1) == ["Bob is back", "Spy is back, watching"]


def test_a_racer_out_for_making_no_move_is_told_why_and_the_others_see_it() -> None:
    model = RaceModel(name="Bob", you=2, phase="racing")
    players = [progress(1, "Ann"), progress(2, "Bob"), progress(3, "Cy")]
    model.apply(ProgressUpdate(elapsed_ms=1000, players=players))
    message = "no move for 10 minutes: you are out of this race (your score stands)"
    model.apply(Error(seq=None, code="player_done", message=message))
    out = [progress(1, "Ann"), progress(2, "Bob", "left"), progress(3, "Cy")]
    model.apply(ProgressUpdate(elapsed_ms=600_000, players=out))
    assert model.status == f"N{message[1:]}; waiting for Ann, Cy"  # not overwritten by the wait
    # the others: a racer still connected but out is out for idling, not gone
    assert progress_changes(players, out, 1) == ["Bob is out: no move for too long"]
    gone = [progress(1, "Ann"), progress(2, "Bob", "left", connected=False), progress(3, "Cy")]
    assert progress_changes(players, gone, 1) == ["Bob left the race"]


def test_while_reconnecting_the_status_line_fits_80_columns() -> None:
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 1)
    model.room = room([member(1, "Ann")], state="racing")
    model.progress = [progress(1, "Ann")]
    keys = screens.footer_keys(model)
    line = screens.status_line(model, keys, True, 78).plain.split("\n")[1]
    assert line == "connection lost: reconnecting...   q q: quit" and len(line) <= 78
    assert screens.status_line(model, keys, False, 78).plain.split("\n")[1] == keys


def test_who_joined_to_play_the_next_race_goes_to_its_board_when_it_starts() -> None:
    """Joined during a race, seated ready for the next: its start takes them off the old
    results (they stayed there while a timed race ran)."""
    model = results_model("spectator")
    seated = [member(1, "Ann", ready=True), member(2, "Bob", ready=True)]
    model.apply(RoomUpdate(room=room(seated)))
    assert model.role == "player"
    model.apply(Countdown(race_id="r2", ms=3000, commitment="c" * 64))
    assert not model.holding and model.phase == "countdown"


def test_a_busy_racing_header_keeps_auto_home_on_or_off_at_80_columns() -> None:
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 1)
    model.state.moves, model.state.undos = 1234, 123
    model.room = room([member(1, "Ann")], state="racing")
    model.room.settings = model.room.settings.model_copy(update={"title": "Spider (4 suits, r1)"})
    model.started = 0
    text = screens.header(model, True, 3599.0, 80).plain
    assert len(text) <= 80 and text.endswith("  home on"), text  # not "auto-home o…"
    assert screens.header(model, True, 3599.0, 120).plain.endswith("auto-home on")


def test_back_in_the_lobby_and_settings_that_unready_you_are_said() -> None:
    results = room([member(1, "Ann"), member(2, "Bob", rematch=True)], state="results")
    lobby = room([member(1, "Ann"), member(2, "Bob", ready=True)])
    assert "Back in the lobby for the next race" in room_changes(results, lobby, 2)
    changed = room([member(1, "Ann"), member(2, "Bob")])
    changed.settings = changed.settings.model_copy(update={"seats": 3})
    said = room_changes(lobby, changed, 2)
    assert said == ["The host changed the settings: 3 seats (not ready any more: r when you are)"]


def test_a_racer_out_for_idling_shows_as_idle_in_the_panel_and_the_results() -> None:
    model = results_model()
    model.progress = [progress(1, "Ann", "left"), progress(2, "Bob", "left", connected=False)]
    model.last.standings = [standing(1, 1, "Ann", "left"), standing(2, 2, "Bob", "left")]  # type: ignore[union-attr]
    text = screens.results(model).plain
    assert "Ann" in text and " idle " in text and " left " in text
    panel = opponents(model, 29).plain
    assert "idle" in panel and "left" in panel


def sixteen_racing(you: int = 1, role: str = "player") -> RaceModel:
    model = RaceModel(name="me", you=you, role=role, phase="racing")
    model.room = room([member(1, "me")], state="racing")
    model.progress = [progress(1, "me", score=0)] + [
        progress(i, f"Bot {i}", score=1000 - i, suits=i % 3, turned=i) for i in range(2, 17)
    ]
    return model


def test_the_race_panel_uses_the_rows_it_has() -> None:
    """16 players in the 21 rows of the race panel at 80x24: everyone, a line each (it showed 5
    in blocks of three lines and "+11 more", four rows left empty); fewer players, or more rows,
    get the bars and the moves."""
    model = sixteen_racing()
    lines = opponents(model, 29, 21).plain.rstrip("\n").splitlines()
    assert len(lines) == 17 and all(cell_len(line) <= 29 for line in lines)
    assert "more" not in "\n".join(lines)
    for i in range(2, 17):
        assert any(f"Bot {i}" in line and "/8" in line for line in lines), i
    assert any("me (you)" in line for line in lines)
    two = opponents(model, 29, 33).plain  # two lines a player: the bars come back
    assert two.count("█") + two.count("░") > 0 and "moves" not in two
    three = opponents(model, 37, 56).plain  # 200x60: three lines a player
    assert "16 move" not in three and three.count(" 0 moves, ") == 16
    # and the cards each has turned, which the rules say everyone sees (never drawn: a trial)
    for i in range(2, 17):
        assert f"0 moves, {i} turned, 0 undos" in three, i
    at_80 = opponents(model, 29, 56).plain  # the panel at 80 columns: it fits
    assert at_80.count(" turned, 0 undos") == 16
    narrow = opponents(model, 24, 56).plain  # where it does not: "mv", or no "0 undos"
    assert narrow.count(" turned") == 16 and narrow.count(" 0 mv, ") >= 9
    assert all(cell_len(line) <= 24 for line in narrow.splitlines())
    # finished (the time beside) or past 100 moves, in the panel of 80 and 100 columns: the
    # cards turned were left out (a timed-race trial)
    for p in model.progress[1:]:
        p.moves, p.status, p.finish_ms = 126, "resigned", 7000
    done = opponents(model, 29, 56).plain
    assert (
        done.count(" 126 moves, ") == 15 and done.count(" turned ") + done.count(" turned\n") == 15
    )
    assert done.count("0:07") == 15 and all(cell_len(line) <= 29 for line in done.splitlines())
    model.progress[2].undos = 3  # an undo is always said
    assert " 126 moves, 3 undos" in opponents(model, 29, 56).plain


def test_a_spectator_sees_everyones_progress_in_the_main_area() -> None:
    """A spectator has no board: the main area lists every player (at 80x24 the panel showed
    6 of 16 beside one sentence; at 200x60 the main area was empty)."""
    model = sixteen_racing(you=99, role="spectator")
    small = render.board_grid(model, Keys(model), 21, 46).text().plain
    assert "boards stay private" in small
    lines = small.splitlines()
    assert len(lines) <= 21 and all(cell_len(line) <= 46 for line in lines)
    for i in range(2, 17):
        assert f"Bot {i}" in small, i
    assert "me" in small and "more" not in small
    big = render.board_grid(model, Keys(model), 56, 160).text().plain
    assert big.count("0/8 suits") + big.count("1/8 suits") + big.count("2/8 suits") == 16
    assert big.count(" turned, 0 undos") == 16


def test_many_watchers_take_one_line_and_the_settings_keys_stay() -> None:
    """11 watchers at 80x24: one "Watching:" line, "+N more", and the host's settings keys still
    on the board (the list took three lines and pushed them off)."""
    host = RaceModel(name="Ann", you=1, phase="lobby")
    members = [member(1, "Ann"), member(2, "Bob")]
    members += [member(i, f"Watcher number {i}", role="spectator") for i in range(3, 14)]
    host.room = room(members)
    host.room.settings.seats = 16
    text = screens.lobby(host, width=78).plain
    lines = text.rstrip("\n").splitlines()
    watching = [line for line in lines if line.startswith("Watching:")]
    assert len(watching) == 1 and cell_len(watching[0]) <= 78, watching
    assert "Watcher number 3" in watching[0] and re.search(r" \+\d+ more$", watching[0])
    shown = watching[0].count("Watcher number")
    assert f"+{11 - shown} more" in watching[0]
    assert "g game  o/v options" in text and len(lines) <= 21
    one = RaceModel(name="Ann", you=1, phase="lobby")
    one.room = room([member(1, "Ann"), member(2, "[/]Cy", role="spectator")])
    assert "Watching: [/]Cy\n" in screens.lobby(one).plain  # (a name is plain text)


def test_a_long_title_is_shortened_before_the_racing_header_is_cut() -> None:
    """80 columns, Spider with every option, a day's time limit: the title is shortened with an
    ellipsis; the clock, the scores, the counts and auto-home stay (the line was cut in the
    middle of "0 moves", with no ellipsis)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 1)
    model.room = room([member(1, "Ann")], state="racing")
    title = "Spider (4 suits, relaxed 2, xpat2 numbering)"
    model.room.settings = model.room.settings.model_copy(update={"title": title})
    model.started, model.time_limit_ms = 0.0, 1440 * 60_000
    text = screens.header(model, True, 3.0, 80).plain
    assert cell_len(text) <= 80, text
    assert "Spider (4 suits" in text and "…" in text and title not in text
    assert "time left 1439:57" in text and "0 moves  0 undos" in text
    assert text.endswith("home on")
    tiny = screens.header(model, True, 3.0, 40).plain  # no room even then: cut, with "…"
    assert cell_len(tiny) <= 40 and tiny.endswith("…") and "time left" in tiny
    assert screens.header(model, True, 3.0, 200).plain.startswith(f" {title}")


def test_the_board_says_when_the_terminal_is_too_small() -> None:
    text = screens.too_small(50, 16).plain
    assert text == (
        "This terminal is 50x16: the race needs at least 60x20. Make it bigger; the race goes on."
    )


def test_a_long_results_table_leaves_the_keys_on_screen() -> None:
    """16 players at 80x24: the first places and your own, "... and N more", and what follows
    the table (the keys above all) still in the height (they fell off the screen)."""
    model = results_model()
    names = [f"P{i}" for i in range(4, 18)]
    model.last.standings = [  # type: ignore[union-attr]
        *model.last.standings,  # type: ignore[union-attr]
        *[standing(3 + i, 4 + i, n, "resigned", score=0, score2=0) for i, n in enumerate(names)],
    ]
    model.last.standings.append(model.last.standings.pop(1))  # type: ignore[union-attr]  # Ann last
    text = screens.results(model, 78, height=20).plain
    lines = text.splitlines()
    assert len(lines) <= 20, text
    assert "n: rematch" in lines[-1]
    assert any(line.split()[1:2] == ["Ann"] for line in lines if line.strip()[:1].isdigit())
    assert "more players" in text
    # the players left out are said where they are: above your own place, the last (it came
    # after it, as if some had placed below the last: a re-trial)
    places = [line for line in lines if line.strip()[:1].isdigit() or "more player" in line]
    assert "more player" in places[-2] and places[-1].split()[1] == "Ann"
    # a tall terminal shows everyone
    assert "more player" not in screens.results(model, 78, height=60).plain
    # and a table that fits whole is shown whole, using the height to its last line (8
    # players at 80x24 showed 6, "... and 2 more", and two empty lines)
    model.last.standings = model.last.standings[:8]  # type: ignore[union-attr]
    whole = screens.results(model, 78).plain
    snug = screens.results(model, 78, height=len(whole.splitlines()))
    assert "more player" not in snug.plain and snug.plain == whole


def test_st_helena_keeps_one_row_a_pile_for_the_rest_of_a_deal() -> None:
    """At 80x24 a pile grown past the band sends the board to one row a pile; a card moved back
    does not send it around the foundations again within that deal (the whole board moved under
    the mouse at every such card)."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 4)
    piles = model.state.piles

    def one_row_a_pile(grid: Grid) -> bool:
        # around the foundations, the top cards of piles 1 and 2 share a row
        top = {
            t[1]: y for y, _, _, t in grid.hits if t[0] == "card" and t[2] == len(piles[t[1]]) - 1
        }
        return top[0] != top[1]

    assert not one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))
    piles[0].extend(piles[11][:6])  # a pile longer than the band: rows
    assert one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))
    del piles[0][-6:]  # back to its length: still rows, the same deal on the same screen
    assert one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))
    # another screen size is chosen afresh
    assert not one_row_a_pile(render.board_grid(model, Keys(model), 40, 120))
    # the app gives the terminal's size: a status message of two lines takes a line from the
    # board, which is no resize (the board went around the foundations and back at each one)
    model.helena_layout = None
    model.screen = (120, 30)
    piles[0].extend(piles[11][:6])
    assert one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))
    del piles[0][-6:]
    assert one_row_a_pile(render.board_grid(model, Keys(model), 26, 86))  # two-line status
    assert one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))
    model.screen = (130, 30)  # a resize: chosen afresh
    assert not one_row_a_pile(render.board_grid(model, Keys(model), 27, 86))


@pytest.mark.parametrize("size", [(27, 86), (24, 46)])  # around the foundations, and in rows
def test_st_helena_underlines_the_card_each_pile_can_play(size: tuple[int, int]) -> None:
    """Side piles fanned around the foundations wrap into two rows, and which end was the top
    could only be found by pressing the pile's key: the playable card of each pile is
    underlined, and no other card."""
    model = RaceModel(name="me", phase="racing")
    model.state = new_game(GameConfig("st-helena", {}), 4)
    grid = render.board_grid(model, Keys(model), *size)
    underlined = set()
    for y, line in enumerate(grid.lines):
        for span in line.spans:
            if "underline" in str(span.style):
                target = next(
                    t
                    for yy, x0, _, t in grid.hits
                    if yy == y and x0 == span.start and t[0] == "card"
                )
                underlined.add(target[1:])
    piles = model.state.piles
    assert underlined == {(i, len(p) - 1) for i, p in enumerate(piles)}


def test_the_hosts_lobby_keys_change_the_settings() -> None:
    """host_settings, plain: each key's new settings, the options a game had kept while another
    was chosen, and a sentence where the key changes nothing."""
    from client.keys import host_settings

    kept: dict[str, tuple[dict[str, object], str]] = {}
    lobby = room([member(1, "me"), member(2, "Bob"), member(3, "Cy")])
    two = host_settings(lobby, "o", kept)  # Spider's suits: 4 -> next
    assert isinstance(two, Settings) and two.options["suits"] != lobby.settings.options.get(
        "suits", 4
    )
    spider = lobby.model_copy(
        update={"settings": lobby.settings.model_copy(update={"options": two.options})}
    )
    helena = host_settings(spider, "g", kept)
    assert isinstance(helena, Settings) and helena.game == "st-helena" and helena.options == {}
    assert kept["spider"] == (two.options, "pysolfc")
    louis_room = room([member(1, "me")], game="louis")
    assert host_settings(louis_room, "v", kept) == "Louis has one option: o changes it."
    back = room([member(1, "me")], game="louis")
    spider_again = host_settings(back, "g", kept)  # louis -> spider: its options come back
    assert isinstance(spider_again, Settings) and spider_again.options == two.options
    score = host_settings(lobby, "m", kept)
    assert isinstance(score, Settings) and (score.mode, score.time_limit) == ("score", 600)
    fewer = host_settings(lobby, "-", kept)  # 4 seats, 3 players: 3, never fewer
    assert isinstance(fewer, Settings) and fewer.seats == 3
    three = lobby.model_copy(update={"settings": lobby.settings.model_copy(update={"seats": 3})})
    still = host_settings(three, "-", kept)  # (third trial: it said "you changed the settings")
    assert still == "3 players are seated: k removes one first."
    assert host_settings(lobby, "z", kept) is None


def test_no_move_left_but_an_undo_stays_said_with_the_minute() -> None:
    """Left with only an undo: the status line says so, and that a minute later the player is
    out as stuck, whatever else happens meanwhile (another player's resign wrote over it)."""
    from .rules_helpers import one_move_from_stuck

    model = RaceModel(name="me", you=1, phase="racing")
    model.room = room(
        [member(1, "me"), member(2, "Bot", bot=True)], state="racing", game="st-helena"
    )
    state = one_move_from_stuck()
    model.state = state
    model.progress = [progress(1, "me"), progress(2, "Bot")]
    keys = Keys(model)
    assert keys.press("1") is None
    move = keys.press("2")
    assert move is not None
    state.apply(move)
    assert state.stuck and state.can_undo
    model.say("Bot resigned")
    line = screens.status_line(model, "keys", False, 200).plain
    assert "No move is left: u takes back your last move" in line and "in a minute" in line
    model.progress = [progress(1, "me", "stuck"), progress(2, "Bot", "resigned")]
    assert "No move is left" not in screens.status_line(model, "keys", False, 200).plain


def test_after_taking_the_seat_back_the_others_coming_back_are_added_to_it() -> None:
    """After a server restart every client takes its seat back, and each was left reading
    another's "Ann is back" instead of its own "Reconnected" (new-user trial)."""
    model = RaceModel(name="Cy", you=3)
    away = [member(1, "Ann", connected=False), member(2, "Bob", connected=False), member(3, "Cy")]
    model.apply(RoomUpdate(room=room(away)), now=100.0)
    model.back_together("Reconnected: your seat is back.", 100.0)
    ann_back = [member(1, "Ann"), away[1], away[2]]
    model.apply(RoomUpdate(room=room(ann_back)), now=101.0)
    assert model.status == "Reconnected: your seat is back. Ann is back too."
    both = [member(1, "Ann"), member(2, "Bob"), away[2]]
    model.apply(RoomUpdate(room=room(both)), now=102.0)
    assert model.status == "Reconnected: your seat is back. Ann, Bob are back too."
    assert model.log[-2:] == ["Ann is back", "Bob is back"]  # the log has each, as before
    model.apply(RoomUpdate(room=room([*both, member(4, "Dee")])), now=103.0)
    assert model.status == "Reconnected: your seat is back. Ann, Bob are back too. Dee joined"
    # later, each thing that happens is said on its own again
    model.apply(RoomUpdate(room=room([*both, member(4, "Dee"), member(5, "Eve")])), now=200.0)
    assert model.status == "Eve joined"
    # (review) within the window: one gone again is taken out, a name is said once, and
    # anything else the status line said meanwhile, or a kick, ends the window
    model.grace_s = 60.0  # as the server's welcome says: "seat kept 60 s"
    model.back_together("Reconnected: your seat is back.", 300.0)
    model.apply(RoomUpdate(room=room([away[0], *both[1:]])), now=301.0)
    model.apply(RoomUpdate(room=room(both)), now=302.0)
    assert model.status == "Reconnected: your seat is back. Ann is back too."
    model.apply(RoomUpdate(room=room([away[0], *both[1:]])), now=303.0)
    assert model.status == "Reconnected: your seat is back. Ann is away (seat kept 60 s)"
    model.status = "Go!"
    model.apply(RoomUpdate(room=room(both)), now=304.0)
    assert model.status == "Ann is back"
    model.back_together("Reconnected: your seat is back.", 400.0)
    model.apply(Kicked(message="The host removed you from the room."), now=401.0)
    assert model.status == "The host removed you from the room."


def test_red_cards_stay_red_on_a_16_colour_terminal() -> None:
    """The theme's ANSI red (Textual draws ANSI red as #f4005f) came out magenta on TERM=xterm
    and the Linux console: a red card as the app draws it, brought down to 16 colours."""
    from rich.color import ColorSystem
    from rich.segment import Segment
    from rich.style import Style
    from textual.color import Color

    from client.grid import RED
    from client.practice_app import PracticeApp
    from protocol.config import GameConfig

    app = PracticeApp(GameConfig("spider", {"suits": 2}), 1)
    segments = [Segment("5H", Style.parse(RED))]
    for f in app.get_line_filters():
        segments = f.apply(segments, Color(18, 18, 18))
    style = segments[0].style
    assert style is not None and style.color is not None
    assert style.color.downgrade(ColorSystem.STANDARD).number in (1, 9)  # red or bright red


def test_a_rematch_lost_in_a_drop_is_asked_again_and_one_that_came_late_goes_to_the_board() -> None:
    """n pressed over a link that lost it: the screen said "waiting for" you for ever and n did
    nothing; delivered late instead, the race started with you seated while you sat on the old
    results (25 s of a two-minute score race lost)."""
    from protocol.config import GameConfig
    from protocol.game import new_game

    model = results_model()
    model.asked_rematch = True  # n was pressed; the server never heard it
    lost = Snapshot(
        seq=1, next_seq=5, you=1, role="player",
        room=room([member(1, "Ann"), member(2, "Bob", rematch=True)], state="results"),
        board=None, elapsed_ms=None, time_limit_ms=None, countdown_ms=None,
        progress=[], standings=model.standings, reveal=None,
    )  # fmt: skip
    model.apply(lost)
    assert model.holding and not model.asked_rematch  # n asks again
    board = new_game(GameConfig("spider", {"suits": 1}), 1).view()
    late = Snapshot(
        seq=2, next_seq=6, you=1, role="player",
        room=room([member(1, "Ann", ready=True), member(2, "Bob", ready=True)], state="racing"),
        board=board, elapsed_ms=25_000, time_limit_ms=None, countdown_ms=None,
        progress=[progress(1, "Ann"), progress(2, "Bob")], standings=None, reveal=None,
    )  # fmt: skip
    model.apply(late)
    assert not model.holding and model.phase == "racing" and model.state is not None


def test_a_rematch_whose_answer_was_lost_goes_on_with_the_room_in_its_lobby_or_countdown() -> None:
    """The rematch reached the server, its answer did not: back in a countdown (no board yet),
    the player stayed on the old results and the race started under them."""
    for state in ("lobby", "countdown"):
        model = results_model()
        model.asked_rematch = False  # the command failed, as far as this client knows
        snap = Snapshot(
            seq=1, next_seq=5, you=1, role="player",
            room=room([member(1, "Ann", ready=True), member(2, "Bob", ready=True)], state=state),
            board=None, elapsed_ms=None, time_limit_ms=None,
            countdown_ms=2000 if state == "countdown" else None,
            progress=[], standings=None, reveal=None,
        )  # fmt: skip
        model.apply(snap)
        assert not model.holding and model.asked_rematch, state
    # one who did not ask (not ready) keeps the results: they are never taken away
    model = results_model()
    snap = Snapshot(
        seq=1, next_seq=5, you=1, role="player",
        room=room([member(1, "Ann"), member(2, "Bob", ready=True)], state="lobby"),
        board=None, elapsed_ms=None, time_limit_ms=None, countdown_ms=None,
        progress=[], standings=None, reveal=None,
    )  # fmt: skip
    model.apply(snap)
    assert model.holding


def test_emoji_are_drawn_without_what_only_shapes_them() -> None:
    """A name with a joined emoji showed "Zoe 🏳️\\u200d🌈" on every screen, and one with a skin
    tone lost its score off the row's end (terminals disagree on shaped emoji widths: club-night
    trial).  Drawn as the server compares names: the pictures alone."""
    assert safe("Zoe 🏳️\u200d🌈") == "Zoe 🏳🌈"
    assert safe("😀 Joy 👍🏽") == "😀 Joy 👍"
    assert safe("An\u200dn") == "An\\u200dn"  # a joiner not between pictures is shown
    row = opponents(
        RaceModel(name="me", progress=[progress(2, "😀 Joy 👍🏽")], phase="racing"), 30, 20
    )
    assert all(cell_len(line) <= 30 for line in row.plain.splitlines())


def test_the_header_over_results_kept_names_their_race_not_the_next_game() -> None:
    """The host took the room to the lobby and changed the game: the header said Louis over
    the St. Helena results still on screen (a trial)."""
    model = results_model()
    assert model.last is not None
    model.last.title = "St. Helena"
    lobby = room([member(1, "Ann"), member(2, "Bob")], game="louis")
    lobby.settings.title = "Louis"
    model.apply(RoomUpdate(room=lobby))
    assert model.holding
    top = screens.header(model, True, width=80).plain
    assert "St. Helena" in top and "Louis" not in top
    model.leave_results()
    assert "Louis" in screens.header(model, True, width=80).plain


def test_results_say_how_equal_scores_are_placed() -> None:
    model = results_model()
    assert "equal scores" not in screens.results(model, 78).plain
    assert model.last is not None
    model.last.standings[1] = model.last.standings[1].model_copy(update={"score_ms": 6_868})
    model.last.standings[2] = model.last.standings[2].model_copy(
        update={"score": 40, "score_ms": 9_327}
    )
    text = screens.results(model, 78).plain
    # when each reached it, which placed them (the time column is when each finished, and a
    # player who finished first came last, unexplained: a race-night trial)
    assert "equal scores: placed by who reached it first: Ann 0:06, Cy 0:09" in text
    model.last.standings[2] = model.last.standings[2].model_copy(update={"score_ms": 6_868})
    text = screens.results(model, 78).plain
    assert "equal scores: placed by who reached it first (then who joined first): Ann" in text
    # four tied in two groups at 80 columns: all of it, on more lines (one line cut it short)
    assert model.last is not None
    rows = model.last.standings
    extra = [
        rows[2].model_copy(update={"id": 7 + i, "name": n, "score": 0, "score_ms": 500 * i})
        for i, n in enumerate(["Dorothea", "Eberhardt", "Fionnuala", "Gwendolyn"])
    ]
    model.last.standings = [*rows, *extra]
    text = " ".join(screens.results(model, 78).plain.split())
    assert "Gwendolyn 0:01" in text and "…" not in text


def test_a_results_table_cut_to_the_screen_says_the_ties_of_the_rows_shown() -> None:
    """16 players at 80x24: the table showed its first places, and the tie note under it named
    the players left out (a trial)."""
    model = results_model()
    assert model.last is not None
    rows = model.last.standings
    model.last.standings = [
        rows[2].model_copy(
            update={"id": 10 + i, "rank": 3 + i, "name": f"P{i:02d}", "score": 10 - i // 2 * 2}
        )
        for i in range(14)
    ]
    model.last.standings[:0] = rows[:2]
    text = screens.results(model, 80, height=24).plain
    assert "more player" in text
    note = " ".join(line for line in text.splitlines() if "equal scores" in line or ", P" in line)
    assert "P00" in note and "P01" in note  # a tie shown
    shown = {word for line in text.splitlines() for word in line.split() if word.startswith("P")}
    named = {word.strip(",;:") for word in note.split() if word.startswith("P")}
    assert named and named <= shown
    assert "P13" not in text
    # all of it on a tall screen, every tie said
    assert "P13 " in screens.results(model, 80, height=60).plain


def test_one_released_and_back_as_a_watcher_is_told_of_the_next_race() -> None:
    """ "You joined again as a new spectator", and no word of racing again (a trial)."""
    from client.session import released_again

    said = released_again("spectator", "racing")
    assert "next race" in said and "spectator" not in said
    assert "every seat is taken" in released_again("spectator", "lobby")  # (a review)
    assert released_again("player", "lobby").endswith("as a new player.")


def test_a_seat_released_in_one_race_is_not_taken_as_released_in_the_next() -> None:
    """``seat_released`` outlived its race: a release in a later one went unsaid (a review)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.seat_released = True
    model.apply(Countdown(race_id="r2", ms=3000, commitment="c" * 64), now=1.0)
    assert not model.seat_released


def test_one_the_host_removed_is_said_so_to_everyone() -> None:
    """Others read "Cy left" of one the host removed, and of one away "did not come back in
    time: their seat was released" (a race-night trial): ``member_removed`` comes first."""
    from protocol.messages import MemberRemoved

    model = RaceModel(name="Bob", you=2, phase="lobby")
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(2, "Bob"), member(3, "Cy")])))
    model.apply(MemberRemoved(id=3))
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(2, "Bob")])))
    assert "The host removed Cy from the room" in model.status
    away = [member(1, "Ann"), member(2, "Bob"), member(4, "Di", connected=False)]
    model.apply(RoomUpdate(room=room(away)))
    model.apply(MemberRemoved(id=4))
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(2, "Bob")])))
    assert "The host removed Di from the room" in model.status
    assert "did not come back" not in model.status


def test_a_released_seat_is_said_in_the_header() -> None:
    """Back after the grace, the board and a ticking clock looked like a live race, and the
    header never said "watching" (a race-night trial)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.state = new_game(GameConfig("spider", {"suits": 1}), 1)
    model.room = room([member(1, "Ann")], state="racing")
    model.started = 0
    assert "watching" not in screens.header(model, True, 10.0, 120).plain
    model.seat_released = True
    assert screens.header(model, True, 10.0, 120).plain.endswith("  watching")
    assert screens.header(model, True, 10.0, 80).plain.endswith("  watching")  # (a review)


def test_t_in_the_lobby_offers_a_one_minute_race() -> None:
    """A one-minute score race could only be asked for from the command line (a trial)."""
    from client.keys import host_settings

    lobby = room([member(1, "Ann")])
    limits = []
    settings = None
    for _ in range(7):
        new = host_settings(lobby, "t", {}, settings)
        assert isinstance(new, Settings)
        settings = new
        limits.append(new.time_limit)
    assert limits == [60, 180, 300, 600, 900, 1800, 0]
    # from a limit given on the command line, the next step up (2 min and 1:30 went to none,
    # 45 min back to the first: a timed-race trial)
    for given, mode, after in (
        (120, "first", 180),
        (90, "first", 180),
        (2700, "first", 0),
        (120, "score", 180),
        (2700, "score", 60),
    ):
        custom = Settings(mode=mode, time_limit=given)
        new = host_settings(lobby, "t", {}, custom)
        assert isinstance(new, Settings) and new.time_limit == after, (given, mode)


def test_a_watcher_taking_a_seat_is_said() -> None:
    """Others still read "Cy joined to watch" once Cy had taken a seat (a race-night trial)."""
    model = RaceModel(name="Ann", you=1, phase="lobby")
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(3, "Cy", role="spectator")])))
    model.apply(RoomUpdate(room=room([member(1, "Ann"), member(3, "Cy", ready=True)])))
    assert "Cy takes a seat to race" in model.status


@pytest.mark.parametrize("game", ["spider", "st-helena"])
@pytest.mark.parametrize("status", ["resigned", "disconnected", "stuck", "won"])
def test_your_mark_never_pushes_your_score_off_a_crowded_panel(game: str, status: str) -> None:
    """16 players a line each at 80x24: "(you)" after a name and a long status made the line 30
    to 33 cells in 29, and the score was cut off (a review)."""
    model = sixteen_racing()
    assert model.room is not None
    model.room.settings = model.room.settings.model_copy(update={"game": game})
    for p in model.progress:
        if p.id == model.you:
            p.status, p.score = status, 312  # type: ignore[assignment]
    lines = opponents(model, 29, 20).plain.splitlines()
    assert all(cell_len(line) <= 29 for line in lines)
    mine = [line for line in lines if "(yo" in line]
    assert len(mine) == 1 and mine[0].endswith(" 312")


def test_a_spider_pile_with_no_face_down_card_starts_on_the_others_row() -> None:
    """A pile with no face-down card drew its first card on the row of the others' face-down
    counts, as if a row apart (a new-user trial)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.room = room([member(1, "Ann")], state="racing")
    state = new_game(GameConfig("spider", {"suits": 1}), 1)
    state.piles[2] = state.piles[2][state.down[2] :]  # pile 3: its face-up card alone
    state.down[2] = 0
    model.state = state
    grid = render.board_grid(model, Keys(model), 22, 80)

    def first_card_row(pile: int) -> int:
        return min(y for y, _x0, _x1, t in grid.hits if t[:2] == ("card", pile))

    assert first_card_row(2) == first_card_row(0) == first_card_row(9)


def test_a_win_with_suits_left_complete_on_the_table_says_won() -> None:
    """With auto-home off the last suit wins where it lies: "Home 7/8" after a win read as a
    win not counted (a new-user trial)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.room = room([member(1, "Ann")], state="racing")
    state = new_game(GameConfig("spider", {"suits": 1}), 1)
    state.stock = []
    state.piles = [list(range(12, -1, -1))] + [[] for _ in range(9)]
    state.down = [0] * 10
    state.foundations = [list(range(12, -1, -1)) for _ in range(7)] + [[]]
    assert state.won
    model.state = state
    grid = render.board_grid(model, Keys(model), 22, 80)
    assert "Home 7/8 + 1 complete: won" in grid.lines[0].plain


def test_a_tall_pile_with_no_face_down_card_keeps_the_row_for_its_cards() -> None:
    """The blank beside the others' face-down counts cost a tall pile a card: 18 face-up cards
    in the 21 rows of an 80x24 race showed "+2" (a review)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    model.room = room([member(1, "Ann")], state="racing")
    state = new_game(GameConfig("spider", {"suits": 4}), 1)
    state.piles[0] = [(k % 2) * 13 + 12 - (k % 13) for k in range(18)]  # no run to fold
    state.down[0] = 0
    model.state = state
    grid = render.board_grid(model, Keys(model), 21, 46)
    column = [line.plain[:3] for line in grid.lines]
    assert not any(cell.startswith("+") for cell in column)
    assert sum(1 for y, _x0, _x1, t in grid.hits if t[:2] == ("card", 0)) == 18


def test_things_said_at_once_are_sentences() -> None:
    """ "Leo takes a seat to race; Back in the lobby for the next race" and "...: their seat was
    released: you are the host now: s takes..." (a timed-race trial)."""
    model = RaceModel(name="Ann", you=1, phase="lobby")
    model.say_all(["Leo takes a seat to race", "Back in the lobby for the next race."])
    assert model.status == "Leo takes a seat to race. Back in the lobby for the next race."
    before = room([member(1, "Ann", host=True), member(2, "Bob")], state="results")
    gone = before.model_copy(
        update={"members": [member(1, "Ann", host=True, connected=False), member(2, "Bob")]}
    )
    after = room([member(2, "Bob", host=True)], state="results")
    from client.changes import room_changes

    room_changes(before, gone, you=2)
    said = room_changes(gone, after, you=2)
    assert said[0].startswith("Ann did not come back in time: their seat was released. You are")
    assert said[0].count(":") == 2


def test_a_narrow_screen_has_the_places_on_one_line_and_keys_that_fit() -> None:
    """Below 80 columns (a large font) the race panel gives way to one line of places, yours
    always in it; a keys line too long keeps its first item and help (it was cut, help and
    all: a large-font trial)."""
    model = RaceModel(name="Ann", you=1, phase="racing")
    rows = [("Ann", 120, "playing"), ("Bob", 340, "won"), ("Cyrilla Montgomery", 12, "resigned")]
    rows += [("Dee", 200, "playing"), ("Eve", 5, "playing"), ("Fay", 1, "playing")]
    model.progress = [
        progress(i, n, score=score, status=st) for i, (n, score, st) in enumerate(rows, 1)
    ]
    line = standings_line(model, 58).plain
    assert line.startswith("1 Bob: 340 won  2 Dee: 200  3 Ann (you): 120")
    assert cell_len(line) <= 58
    model.you = 6  # last: shown after the leaders that fit
    line = standings_line(model, 40).plain
    assert line.startswith("1 Bob: 340 won") and line.endswith("6 Fay (you): 1")
    assert cell_len(line) <= 40
    # the room's code first: the header gives it up first (nothing showed it: a trial)
    model.room = room([member(1, "Ann")], state="racing")
    line = standings_line(model, 58).plain
    assert line.startswith("ABCD-2345  1 Bob: 340 won") and line.endswith("6 Fay (you): 1")
    model.you = 2  # leading: those left out are counted (they went unsaid: a re-trial)
    line = standings_line(model, 58).plain
    assert line.startswith("ABCD-2345  1 Bob (you): 340 won") and line.endswith(" +3")
    keys = "1-0 pick  ↑↓ more/fewer  f home  d deal  u undo  xx resign  qq quit  ? help"
    assert screens.fit_keys(keys, 80) == keys
    short = screens.fit_keys(keys, 58)
    # what has another way (a click on a card, a foundation, the stock) goes first; resign and
    # quit stay (a mouse user at 60 columns could not resign or quit: a mouse trial)
    assert short == "1-0 pick  d deal  u undo  xx resign  qq quit  ? help"
    host = "r: ready  s: start  g/o/v/m/t/u/+/-/p/w: settings  k: kick  q: leave  ?: help"
    assert screens.fit_keys(host, 58) == "r: ready  s: start  k: kick  q: leave  ?: help"
    watcher = "r: take a seat and race   q: leave   ?: help   (watching)"
    assert screens.fit_keys(watcher, 40) == "r: take a seat and race  ?: help"
    # a line too long for the screen in the countdown is wrapped, not cut (a review)
    model.countdown_end = time.monotonic() - 2
    said = screens.countdown(model, 58, 17).plain
    assert "with the start" in said and all(cell_len(line) <= 58 for line in said.splitlines())


def test_results_on_a_narrow_screen_keep_the_names_and_the_join_command() -> None:
    """At 60x20 the names were "… (bo…" and the join command fell off the bottom (a large-font
    trial): the result column narrows, aisleriot's score goes, and the record's whereabouts
    give way to the places."""
    model = results_model()
    assert model.last is not None
    model.last.record_at, model.last.record_saved = "/home/ann/.local/state/x/r.json", True
    model.last.race_id = "bc910bcce1b7"
    hint = "patience-race join K7QM-X2PF --server ws://192.168.1.20:8765"
    text = screens.results(model, 58, hint, 15).plain
    lines = text.splitlines()
    assert any(line.split()[:4] == ["2.", "Ann", "(you)", "resigned"] for line in lines)
    assert "aisl." not in text and "undos" in text
    assert "ws://192.168.1.20:8765" in text and "n: rematch" in text
    # the command on lines a shell reads as one (it broke before the URL, which a paste of the
    # first line left out: a large-font trial)
    assert "patience-race join K7QM-X2PF \\\n  --server ws://192.168.1.20:8765" in text
    assert screens.command_text(hint, 78).plain == f"  {hint}"
    assert screens.drawn_lines(Text(text), 58) <= 15 and "r.json" not in text
    # lines wrap at words, as the screen wraps them: a line more than the cells say (the keys
    # went off the bottom: a review)
    assert screens.drawn_lines(Text("aaa bbbbbbbb ccc"), 10) == 3
    assert screens.drawn_lines(Text("\nhello\n\nkeys\n"), 20) == 4
    wide = screens.results(model, 78, hint, 22).plain
    assert "aisl." in wide and "r.json" in wide  # wide: everything, as before
    # St. Helena, no aisl. to give up: the result's column narrows for the names all the same
    # (they were cut to five cells: "Alexa… (you)", a review)
    model.last.game = "st-helena"
    model.last.standings[1] = model.last.standings[1].model_copy(update={"name": "Alexandra L"})
    text = screens.results(model, 58, hint, 15).plain
    assert "Alexandra… (you)" in text or "Alexandra L (you)" in text


def test_a_full_lobby_fits_a_large_font_screen() -> None:
    """At 60x20 the host's keys fell off the bottom of a lobby of 3 (a large-font trial): a
    lobby taller than the screen leaves out its blank lines and the keys the keys line has,
    and 16 players go in two columns as wide as half the screen."""
    model = RaceModel(name="Ann", you=1, phase="lobby")
    members = [member(1, "Ann", host=True)]
    members += [member(i, f"Bot {i} with a long name", bot=True, ready=True) for i in range(2, 17)]
    model.room = room(members)
    model.room.settings.seats = 16
    hint = "patience-race join K7QM-X2PF --server ws://192.168.1.20:8765"
    full = screens.lobby(model, join_hint=hint, width=78)
    assert "g game" in full.plain  # room enough: as it was
    small = screens.lobby(model, join_hint=hint, width=58, height=17)  # 60x20's
    assert screens.drawn_lines(small, 58) <= 17
    lines = [line for line in small.plain.splitlines() if "join" not in line]  # (it wraps)
    assert all(cell_len(line) <= 58 for line in lines)
    assert "Ann" in small.plain and "Bot 16" in small.plain and "ws://192.168.1.20" in small.plain
    assert "Everyone else is ready" in small.plain and "g game" not in small.plain
    # a lobby of three at 60x20, with a watcher: the blank lines go, the keys stay, broken
    # between keys (both went, five lines stayed empty, "p" / "private": a large-font trial)
    model.room = room([*members[:3], member(20, "Wes", role="spectator")])
    few = screens.lobby(model, join_hint=hint, width=58, height=16)  # a two-line message's
    assert screens.drawn_lines(few, 58) <= 16 and "\n\n" not in few.plain.strip()
    assert "g game" in few.plain and "w winnable" in few.plain
    assert all(cell_len(line) <= 58 for line in few.plain.splitlines() if "join" not in line)
    # a line short: one blank line goes, not all of them (lines were left empty: a re-trial)
    one_short = screens.lobby(model, join_hint=hint, width=58, height=19)
    assert screens.drawn_lines(one_short, 58) == 19 and one_short.plain.count("\n\n") == 3
    # the host's settings keys go before "r: ready" (all three lines went, one fitting)
    tight = screens.lobby(model, join_hint=hint, width=58, height=14)
    assert "g game" not in tight.plain and "r: ready / not ready" in tight.plain


@pytest.mark.parametrize("players", [2, 7, 14, 15, 16])
def test_a_watcher_on_a_small_screen_sees_everyone_within_its_height(players: int) -> None:
    """At 60x20 the watcher's sentence takes two lines, and the race below it took the lines
    for one: the last player or "+N more" fell off the bottom (a review)."""
    model = RaceModel(name="Wes", you=99, phase="racing", role="spectator")
    model.progress = [progress(i, f"Player {i}") for i in range(1, players + 1)]
    for width, height in ((58, 17), (78, 21)):
        lines = watching_view(model, width, height).plain.splitlines()
        assert len(lines) <= height, (width, height)
        assert any(f"Player {players}" in line or "more" in line for line in lines)


@pytest.mark.parametrize("width", [40, 55, 74])
def test_the_help_is_wrapped_to_its_box_each_entry_under_its_own_text(width: int) -> None:
    """At 60 columns the help, laid out for 74, was wrapped again by its box: a key's
    description went on under the keys, and every long line broke in two (a large-font
    trial).  Each entry is wrapped again whole, under its own column; nothing is lost."""
    from client.practice_app import PRACTICE_HELP
    from client.widgets import fit_help

    for text in (screens.HELP, PRACTICE_HELP, screens.help_text("watching")):
        fitted = fit_help(text, width)
        assert all(cell_len(line) <= width for line in fitted.splitlines())
        assert fitted.split() == text.split()  # the same words, in the same order
        if width == 74:
            assert fitted == text
    lines = fit_help(screens.HELP, 55).splitlines()
    undo = next(i for i, line in enumerate(lines) if line.startswith("  mouse"))
    assert lines[undo + 1].startswith(" " * 14 + "a pile")  # under the description
    # a paragraph at the margin after an indented line is its own (a watcher's "Spider's
    # score..." ran on from "q leave (q q during a race)": a client trial)
    for text in (screens.help_text("watching"), screens.HELP):
        if width < 74:
            assert any(
                line.startswith("Spider's score") for line in fit_help(text, width).split("\n")
            )


def test_a_click_on_one_of_several_keys_presses_that_one() -> None:
    """The host's settings ("g/o/v/m/t/u/+/-/p/w: settings") could not be reached by mouse (a
    mouse trial): a click on a letter presses it; on a slash or the word, nothing."""
    from client.widgets import footer_key

    line = "r: ready  s: start  g/o/v/m/t/u/+/-/p/w: settings  k: kick  ?: help"
    at = line.index("g/o/v")
    assert [footer_key(line, at + i) for i in range(0, 19, 2)] == list("govmtu+-pw")
    assert footer_key(line, at + 1) is None  # a slash
    assert footer_key(line, line.index("settings")) is None
    assert footer_key(line, line.index("k: kick")) == "k"
    race = "1-0 -= pick  f/k/a home  rr redeal  u undo  ? help"
    assert footer_key(race, race.index("k/a")) == "k"
    assert footer_key(race, race.index("home")) == "f"  # the word: f, as before
    assert footer_key(race, 0) is None  # a range of piles: pick one on the board


def test_a_click_on_a_key_pressed_twice_presses_it_once() -> None:
    """A click on "rr redeal", "xx resign" or "qq quit" is one press of r, x or q (the second
    click confirms, as the second press does); "rr" is no key, and the click did nothing."""
    from client.widgets import footer_key

    race = "1-0 -= pick  f/k/a home  rr redeal  u undo  xx resign  qq quit  ? help"
    for word, key in (("rr redeal", "r"), ("xx resign", "x"), ("qq quit", "q"), ("u undo", "u")):
        at = race.index(word)
        assert footer_key(race, at) == key, word
        assert footer_key(race, at + len(word) - 1) == key, word


def test_an_unchanged_text_is_not_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The apps draw every 0.2 s and on every event; each update repainted the whole screen (idle
    practice: 4 % of a core and 25 KB/s to the terminal at 80x24, 6 % and 97 KB/s at 200x60: a
    client cost measurement).  The same text again is no update; another text, or the same
    words in another style, is."""
    from textual.widgets import Static

    from client.widgets import Steady

    drawn: list[object] = []
    monkeypatch.setattr(
        Static, "update", lambda self, content="", *, layout=True: drawn.append(content)
    )
    widget = Steady()
    widget.update(Text("score 12", style="bold"))
    widget.update(Text("score 12", style="bold"))  # the same: not drawn
    widget.update(Text("score 12", style="dim"))  # another style: drawn
    widget.update(Text("score 13", style="dim"))
    widget.update("plain")
    widget.update("plain")
    assert [getattr(c, "plain", c) for c in drawn] == ["score 12", "score 12", "score 13", "plain"]


def test_the_question_of_whom_to_remove_numbers_only_the_names_it_shows_whole() -> None:
    """The host's k at 60 columns, or with long names, cut the question: names numbered past
    the status line's two lines could be removed unseen, and "k: the next" was lost."""
    people = [(f"Someone With A Long Name {i}", i == 3) for i in range(12)]
    for width in (58, 78, 118):
        question, shown = screens.kick_question(people, width)
        lines = wrap_cells(question, width, 3)
        assert len(lines) <= 2 and not lines[-1].endswith("…"), (width, lines)
        assert 1 <= shown < 10 and f"; k: {12 - shown} more;" in question
        assert f"{PILE_KEYS[shown - 1]}: Someone With A Long Name {shown - 1}" in question
        assert f"Name {shown}," not in question and f"Name {shown};" not in question
    assert "4: Someone With A Long Name 3 (watching)" in screens.kick_question(people, 200)[0]
    few = [("Bob", False), ("Eve", True)]
    assert screens.kick_question(few, 58) == (
        "Remove whom from the room? 1: Bob, 2: Eve (watching); any other key: nobody.",
        2,
    )
    # a screen too narrow for even one whole name still numbers one, and the next by k
    assert screens.kick_question(people, 20)[1] == 1
