"""A whole race against a real server: lobby, countdown, race, results, for every game and mode."""

from __future__ import annotations

import pytest

from client.net import Connection, ServerError
from protocol.config import GameConfig
from protocol.fairness import commitment, verify
from protocol.messages import (
    Countdown,
    GetRace,
    Joined,
    JoinRoom,
    ProgressUpdate,
    RaceOver,
    RaceRecordMsg,
    RaceStart,
    Ready,
    Rematch,
    RoomUpdate,
    Settings,
    Snapshot,
    Standing,
    Start,
)

from .rules_helpers import spider, suit_run
from .server_helpers import (
    close_all,
    host_and_join,
    move,
    play,
    room_of,
    running_server,
    seat_state,
    start_race,
    wait_until,
    witness_of,
)

GAMES = ["spider", "st-helena", "louis"]


def ranked(standings: list[Standing], mode: str) -> list[int]:
    """The ids in the order the rules rank them, from the standings' own fields."""

    def key(s: Standing) -> tuple[int, int, int]:
        if mode == "first" and s.status == "won":
            return (0, s.finish_ms or 0, 0)
        return (1, -s.score, s.score_ms)

    return [s.id for s in sorted(standings, key=key)]


@pytest.mark.parametrize("mode", ["first", "score"])
@pytest.mark.parametrize("game", GAMES)
async def test_whole_race(game: str, mode: str) -> None:
    # St. Helena races a fixed deal: about 1 random deal in 5,000 leaves Ann stuck within 5 moves.
    # Spider and Louis, never stuck so early in 20,000 random deals, race a secret random one
    fixed = 1 if game == "st-helena" else None
    settings = Settings(
        game=game, mode=mode, time_limit=1 if mode == "score" else 0, deal_number=fixed
    )
    async with running_server() as server:
        conns, code, joined = await host_and_join(server.url, ["Ann", "Bob"], settings)
        ann, bob = conns
        assert [j.role for j in joined] == ["player", "player"]
        assert joined[0].room.state == "lobby"
        assert joined[0].room.settings.title == GameConfig(game).title
        assert [m.host for m in joined[1].room.members] == [True, False]
        # Ann hears of Bob
        update = await wait_until(ann, RoomUpdate, lambda u: len(u.room.members) == 2)
        assert [m.name for m in update.room.members] == ["Ann", "Bob"]

        watcher = Connection(server.url)
        await watcher.open()
        seen = await watcher.request(JoinRoom(seq=0, code=code.lower(), name="Cy", spectate=True))
        assert isinstance(seen, Joined) and seen.role == "spectator"

        await ann.request(Ready(seq=0))
        await bob.request(Ready(seq=0))
        countdowns = [await c.wait_for(Countdown) for c in (ann, bob, watcher)]
        assert len({(c.race_id, c.commitment, c.ms) for c in countdowns}) == 1
        assert countdowns[0].ms == 50
        starts = [await c.wait_for(RaceStart) for c in (ann, bob)]
        watch_start = await watcher.wait_for(RaceStart)
        assert watch_start.commitment == countdowns[0].commitment
        assert watch_start.board is None
        assert starts[0].board is not None and starts[0].board == starts[1].board
        assert starts[0].board.game == game
        assert starts[0].race_id == starts[1].race_id == watch_start.race_id
        assert starts[0].commitment == watch_start.commitment
        assert starts[0].time_limit_ms == (1000 if mode == "score" else None)
        assert room_of(server, code).state == "racing"

        ann_moves = await play(ann, server, code, joined[0].you, 5)
        bob_moves = await play(bob, server, code, joined[1].you, 2)
        assert [m.seq for m in ann_moves] == sorted(m.seq for m in ann_moves)
        assert ann_moves[-1].score == seat_state(server, code, joined[0].you).score()
        # spectators see progress, never a board
        progress = await wait_until(
            watcher, ProgressUpdate, lambda p: sum(pl.moves for pl in p.players) == 7
        )
        by_name = {p.name: p for p in progress.players}
        assert by_name["Ann"].moves == 5 and by_name["Bob"].moves == 2
        assert by_name["Ann"].score == ann_moves[-1].score

        if mode == "first":
            await move(bob, "resign")
            await move(ann, "resign")
        over = await ann.wait_for(RaceOver, timeout=5)
        assert over.reason == ("all_done" if mode == "first" else "time_up")
        assert over.race_id == starts[0].race_id
        for other in (bob, watcher):
            assert (await other.wait_for(RaceOver)) == over
        assert [s.rank for s in over.standings] == [1, 2]
        assert [s.id for s in over.standings] == ranked(over.standings, mode)
        statuses = {s.name: s.status for s in over.standings}
        assert statuses == (
            {"Ann": "resigned", "Bob": "resigned"}
            if mode == "first"
            else {"Ann": "playing", "Bob": "playing"}
        )
        if mode == "score":
            assert server.hub.finished[over.race_id].ended_at is not None
            race = room_of(server, code).race
            assert race is not None and race.elapsed_ms(0) == 1000  # ended at the deadline

        # the proof: the commitment published at the start matches the reveal...
        reveal = over.reveal
        assert reveal.commitment == starts[0].commitment
        assert (
            commitment(reveal.game, reveal.options, reveal.numbering, reveal.number, reveal.salt)
            == starts[0].commitment
        )
        # ...and every card each player was shown is where the revealed deal puts it
        config = GameConfig(reveal.game, reveal.options, reveal.numbering)
        for start, answers in ((starts[0], ann_moves), (starts[1], bob_moves)):
            assert (
                verify(
                    config, reveal.number, reveal.salt, start.commitment, witness_of(start, answers)
                )
                == []
            )

        # the public record: every move in notation with its time, the final boards
        record = await ann.request(GetRace(seq=0, race_id=over.race_id))
        assert isinstance(record, RaceRecordMsg)
        rec = record.record
        assert rec.reveal == reveal and rec.standings == over.standings
        players = {p.name: p for p in rec.players}
        assert len(players["Ann"].moves) == 5 + (mode == "first")
        assert len(players["Bob"].moves) == len(players["Bob"].times_ms) == 2 + (mode == "first")
        assert players["Ann"].times_ms == sorted(players["Ann"].times_ms)
        assert players["Ann"].board == seat_state(server, code, joined[0].you).view()
        assert room_of(server, code).state == "results"
        await close_all([ann, bob, watcher])


async def test_first_to_win_takes_first_place_and_the_others_play_on() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob", "Cy"], Settings(game="spider")
        )
        ann, bob, cy = conns
        await start_race(conns)
        # Ann's board is one move from a win: seven suits home, the last one split in two
        race = room_of(server, code).race
        assert race is not None
        race.seats[joined[0].you].state = spider(
            suit_run("S", 2), "AS", foundations=["C", "C", "H", "H", "D", "D", "S"]
        )
        bob_moves = await play(bob, server, code, joined[1].you, 3)
        won = await move(ann, "tableau", 1, 0)
        assert won.won and not won.stuck
        # the race goes on for the others
        progress = await wait_until(
            cy,
            ProgressUpdate,
            lambda p: any(pl.status == "won" for pl in p.players),
        )
        assert {p.name: p.status for p in progress.players} == {
            "Ann": "won",
            "Bob": "playing",
            "Cy": "playing",
        }
        assert room_of(server, code).state == "racing"
        more = await play(bob, server, code, joined[1].you, 1)
        assert more[0].seq == bob_moves[-1].seq + 1
        with pytest.raises(ServerError) as done:
            await move(ann, "resign")
        assert done.value.code == "player_done"
        await move(cy, "resign")
        await move(bob, "resign")
        over = await ann.wait_for(RaceOver)
        assert over.reason == "all_done"
        assert over.standings[0].name == "Ann"
        assert over.standings[0].status == "won" and over.standings[0].finish_ms is not None
        # the rest by score
        rest = over.standings[1:]
        assert [s.score for s in rest] == sorted((s.score for s in rest), reverse=True)
        await close_all(conns)


async def host_start(conn: Connection) -> None:
    await conn.request(Start(seq=0))


async def test_rematch_new_deal_everyone_seated_again() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="louis", seats=3, deal_number=4242)
        )
        ann, bob = conns
        first = await start_race(conns)
        late = Connection(server.url)
        await late.open()
        j = await late.request(JoinRoom(seq=0, code=code, name="Cy"))
        assert isinstance(j, Joined) and j.role == "spectator"
        with pytest.raises(ServerError) as early:
            await ann.request(Rematch(seq=0))
        assert early.value.code == "wrong_state"
        await move(ann, "resign")
        await move(bob, "resign")
        over = await ann.wait_for(RaceOver)
        assert over.reveal.number == 4242

        with pytest.raises(ServerError) as watcher:
            await late.request(Rematch(seq=1))
        assert watcher.value.code == "not_a_player"  # a spectator cannot end the results

        await ann.request(Rematch(seq=0))
        asked = await wait_until(bob, RoomUpdate, lambda u: any(m.rematch for m in u.room.members))
        assert asked.room.state == "results"  # nobody's results are taken away
        assert {m.name for m in asked.room.members if m.rematch} == {"Ann"}
        await host_start(ann)  # the host starts it: back to the lobby
        lobby = await wait_until(bob, RoomUpdate, lambda u: u.room.state == "lobby")
        roles = {m.name: (m.role, m.ready) for m in lobby.room.members}
        assert roles == {
            "Ann": ("player", False),  # the host, to set the next race up, then start it
            "Bob": ("player", False),
            "Cy": ("player", True),  # came to play during the race: seated, and ready
        }
        assert lobby.room.settings.fixed_deal is False  # a rematch is a new deal
        await bob.request(Ready(seq=0))  # Cy is ready already
        await host_start(ann)
        second = [await c.wait_for(RaceStart) for c in (ann, bob, late)]
        assert second[0].race_id != first[0].race_id
        assert second[0].commitment != first[0].commitment
        assert second[2].board == second[0].board  # Cy plays this time
        race = room_of(server, code).race
        assert race is not None and race.number != 4242
        assert set(race.seats) == {j.you, joined[0].you, joined[1].you}
        await close_all([ann, bob, late])


async def test_late_arrival_watches_with_a_snapshot() -> None:
    async with running_server() as server:
        conns, code, joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="st-helena")
        )
        await start_race(conns)
        await play(conns[0], server, code, joined[0].you, 2)
        late = Connection(server.url)
        await late.open()
        answer = await late.request(JoinRoom(seq=0, code=code, name="Dee"))
        assert isinstance(answer, Joined) and answer.role == "spectator"
        snap = await late.wait_for(Snapshot)
        assert snap.seq == answer.seq and snap.role == "spectator"
        assert snap.board is None and snap.room.state == "racing"
        assert {p.name: p.moves for p in snap.progress} == {"Ann": 2, "Bob": 0}
        assert snap.elapsed_ms is not None and snap.standings is None and snap.reveal is None
        # a spectator cannot move, and the race does not wait for them
        with pytest.raises(ServerError) as refused:
            await move(late, "resign")
        assert refused.value.code == "not_a_player"
        with pytest.raises(ServerError) as not_ready:
            await late.request(Ready(seq=0))
        assert not_ready.value.code == "not_a_player"
        await move(conns[0], "resign")
        await move(conns[1], "resign")
        over = await late.wait_for(RaceOver)
        assert {s.name for s in over.standings} == {"Ann", "Bob"}
        await close_all([*conns, late])
