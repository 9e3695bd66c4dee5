"""A room's race from the lobby to the results: readiness, the countdown, the start, the moves,
the end, the record kept, and the rematch back to the lobby.

:class:`RaceLifecycle` is a part of :class:`server.hub.Hub` (which mixes it in): the hub keeps the
connections, the rooms and their members; this keeps what a room does with its race.  Its
methods take and answer with the same :class:`~server.outbox.Outbox` as every command, and use
the hub's helpers for what members are told (``_broadcast``, ``_room_update``) and logged
(``_event``).
"""

from __future__ import annotations

import logging
import math
import secrets
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol.config import SPIDER
from protocol.messages import (
    Ack,
    Countdown,
    EndReason,
    Error,
    Event,
    MoveCmd,
    Moved,
    PlayerRecord,
    ProgressUpdate,
    RaceOver,
    RaceRecord,
    RaceStart,
    Ready,
    Rematch,
    Start,
)

from .limits import BudgetKind, Limits, TokenBucket
from .outbox import CommandError, Conn, Outbox
from .pool import DealPool
from .race import Race, RaceError
from .rooms import MemberState, Room
from .store import Store

log = logging.getLogger("patience_race.server")

AWAY_SEATED_S = 10.0
"""A ready player whose connection dropped less than this long before a race starts is seated
in it (back within the grace, they race); one away longer sits it out."""

FINISHED_KEPT = 256
"""Finished races' records kept in memory (the store keeps them all, for ``keep_days``)..."""
FINISHED_MOVES = 400_000
"""...and moves in them all, about 30 MB (a race of sixteen at 5,000 moves each is 80,000 moves
and 6 MB: 256 of them were 1.6 GB, a red team)."""


def _moves(record: RaceRecord) -> int:
    return sum(len(p.moves) for p in record.players)


class RaceLifecycle:
    """The race's side of the hub (mixed into :class:`server.hub.Hub`)."""

    # the hub's state this part uses (set by Hub.__init__)
    limits: Limits
    store: Store | None
    pool: DealPool | None
    awaiting_start: set[str]
    held_by_restart: dict[str, bool]
    wall: Callable[[], float]
    finished: OrderedDict[str, RaceRecord]
    finished_moves: int
    unannounced: deque[str]
    draining: bool

    if TYPE_CHECKING:
        # the hub's methods this part calls (defined in server.hub.Hub), declared for the type
        # checker only: at run time they are the hub's own

        def count(self, name: str, by: int = 1) -> None: ...

        def budget(
            self,
            peer: str,
            now: float,
            kind: BudgetKind = "rooms",
        ) -> TokenBucket: ...

        def _membership(self, conn: Conn) -> tuple[Room, MemberState]: ...

        def _host_only(self, conn: Conn) -> tuple[Room, MemberState]: ...

        def _seat_waiting(self, room: Room) -> list[MemberState]: ...

        def _close_if_only_bots(self, room: Room, now: float, out: Outbox) -> None: ...

        def _room_update(self, room: Room, out: Outbox, skip: int | None = None) -> None: ...

        def _save(self, room: Room) -> None: ...

        def _broadcast(
            self, room: Room, event: Event, out: Outbox, skip: int | None = None
        ) -> None: ...

        def _event(
            self, name: str, room: Room, member: MemberState | None, **fields: object
        ) -> None: ...

    def _ready(self, conn: Conn, cmd: Ready, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        if member.role != "player":
            if room.state != "lobby" or not cmd.ready:
                raise CommandError("not_a_player", "spectators have no seat to get ready in")
            # a watcher in the lobby takes a free seat (there was no way but to leave and join
            # again: a race-night trial)
            if len(room.players()) >= room.settings.seats:
                raise CommandError("room_full", "no seat is free: you go on watching")
            member.role = "player"
            member.wants_seat = False
            self._event("seated", room, member)
        if room.state == "countdown" and not cmd.ready:
            # not ready after all: the countdown stops and the room is back in its lobby (no
            # card was sent yet; the deal committed to is dropped, never revealed)
            out.reply(conn.id, Ack(seq=cmd.seq))
            self._stop_countdown(room, member, out)
            return
        if room.state != "lobby":
            raise CommandError("wrong_state", "ready is for the lobby, before the start")
        member.ready = cmd.ready
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._countdown_if_all_ready(room, now, out)

    def _give_back_deal(self, room: Room) -> None:
        """A countdown ends before its race began (stopped, or its room closed): a certified
        deal goes back to the pool, no card of it shown (a countdown started and stopped, or
        a room opened, started and left, over and over, drained the pool for everyone)."""
        race = room.race
        if (
            room.state == "countdown"
            and race is not None
            and race.solution is not None
            and self.pool is not None
        ):
            self.pool.give_back(race.config, race.number, race.solution)

    def _stop_countdown(self, room: Room, by: MemberState, out: Outbox) -> None:
        self._give_back_deal(room)
        room.state = "lobby"
        room.race = None
        room.countdown_end = None
        by.ready = False
        self.awaiting_start.discard(room.code)
        self._event("countdown_stopped", room, by)
        self._room_update(room, out)

    def _countdown_if_all_ready(
        self, room: Room, now: float, out: Outbox, alone_ok: bool = False
    ) -> None:
        """Two players or more ready (one with ``alone_ok``: a rematch everyone asked for), and
        none connected who is not: the countdown starts; else everyone sees who is ready.  A
        player away and not ready does not hold the others back: they race without them; but
        just after a restart everyone is away, so for the limits' ``restart_hold_s`` a player
        not ready holds the start until they are back (the first ready player back started a
        race the others, the host among them, had not agreed to)."""
        players = room.players()
        # ready and here (or only just gone): one ready long away would not race, and two of
        # them made a race of nobody, its deal published
        ready = [p for p in players if p.ready and self._races_now(p, now)]
        restarting = bool(room.restored_at) and now < room.restored_at + self.limits.restart_hold_s
        # (just after a restart, one away is not left behind: the first back started the race
        # with the others, ready, seated while still reconnecting: a review)
        not_ready = [p for p in players if not p.ready and p.conn is not None]
        away = [p for p in players if restarting and p.conn is None]
        enough = len(ready) >= (1 if alone_ok else 2)
        if enough and not not_ready and not away:
            self.held_by_restart.pop(room.code, None)
            self._countdown_or_wait(room, now, out)
        else:
            if enough and not not_ready:
                # held only by those not back yet from the restart: looked at again once the
                # hold is over (nothing did: ready players and a lobby that never started,
                # until someone pressed a key: a bad-network trial)
                self.held_by_restart[room.code] = alone_ok
            else:
                # held for another reason now (one not ready, too few): no start later on the
                # strength of an earlier look (a rematch's "alone is fine" started one alone
                # after the other had stepped back: a review)
                self.held_by_restart.pop(room.code, None)
            self._room_update(room, out)

    def _start(self, conn: Conn, cmd: Start, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        if member.role != "player" and not member.wants_seat:
            # a watcher is host only when no player is left: a lobby of watchers is no room
            # (one who joined to play is seated by it, and races)
            raise CommandError(
                "not_a_player", "you are watching: a race needs a player to start it"
            )
        if room.state == "results":
            # the host takes the room back to the lobby at once, where everyone who asked for
            # the rematch is ready; the host is not (to change the settings first, say): their
            # start or ready there starts the next race
            out.reply(conn.id, Ack(seq=cmd.seq))
            member.rematch = False
            self._back_to_lobby(room, member, now, out, "to_lobby")
            return
        if room.state != "lobby":
            raise CommandError("wrong_state", "the race has already started")
        if self.draining:
            raise CommandError("shutting_down", "the server is restarting: no new races")
        was_ready, member.ready = member.ready, True
        waiting = [p.name for p in room.players() if not p.ready and p.conn is not None]
        if waiting:
            # "start" is the host's ready too: the race starts as soon as the others are
            if not was_ready:
                self._room_update(room, out)
            raise CommandError(
                "not_ready",
                f"you are ready: waiting for {', '.join(waiting)} to be ready "
                "(the race starts when they are)",
            )
        # (no certified deal ready yet: the room is told, and starts by itself once there is
        # one; the host was told to try again in a few seconds, for minutes on end)
        out.reply(conn.id, Ack(seq=cmd.seq))
        self._countdown_or_wait(room, now, out)

    def _countdown_or_wait(self, room: Room, now: float, out: Outbox) -> None:
        """Everyone is ready: the countdown starts, or, when it cannot yet (no certified deal
        ready, or the race budget of the room's address spent), everyone is told why and it
        starts by itself as soon as it can (the hub's tick)."""
        why = self._start_countdown(room, now, out)
        if why is not None:
            self.awaiting_start.add(room.code)
            self._room_update(room, out)
            if not room.wait_told:  # (once: a ready toggled over and over sent it each time)
                room.wait_told = True
                self._broadcast(room, Error(seq=None, code="not_ready", message=why), out)

    def _no_deal_yet(self, room: Room) -> bool:
        """The room asks for a certified winnable deal and none is ready (its game keeps its
        place among those the solver works for first)."""
        if not room.settings.winnable or self.pool is None or self.pool.count(room.config):
            return False
        self.pool.awaited(room.config)
        return True

    def _race_wait(self, room: Room, now: float) -> float:
        """Seconds until the address that created ``room`` may start another race (0: now)."""
        if not room.owner:
            return 0.0
        return self.budget(room.owner, now, "races").wait(now)

    def _no_certified_deal(self, room: Room) -> str:
        config = room.config
        slow = config.game != SPIDER and config.options.get("build") == "suit"
        return (
            f"no certified winnable deal of {config.title} is ready yet: the server's solver is "
            "still working"
            + (" (few of this game's deals can be won: it can take minutes)" if slow else "")
            + "; the countdown starts by itself as soon as it has one"
        )

    @staticmethod
    def _races_now(p: MemberState, now: float) -> bool:
        """Whether player ``p`` gets a place in the race starting at ``now``."""
        if p.conn is not None:
            return True
        return p.ready and p.away_since is not None and now - p.away_since < AWAY_SEATED_S

    def _start_countdown(self, room: Room, now: float, out: Outbox) -> str | None:
        """The countdown starts; or why it cannot yet (no certified deal ready, or the race
        budget of the room's address spent), said to a room that starts by itself when it can."""
        settings = room.settings
        # a player away sits this race out (the seat stays, for the next) unless ready and only
        # just gone (a blip as the countdown starts): one asleep for a minute, ready, was
        # seated to be put out as disconnected half a minute into the race
        racers = [(p.id, p.name) for p in room.players() if self._races_now(p, now)]
        if not racers:
            return None  # nobody to race (the callers count only who would): nothing starts
        wait = self._race_wait(room, now)
        if wait:
            self.count("races_refused_rate")
            return (
                "the address that opened this room has started many races in a short time: "
                f"the countdown starts by itself in {math.ceil(wait)} s, or later if that "
                "address's other rooms start first"
            )
        updates = room.updates
        if updates is not None and updates.wait(now) > 0:
            # the room's budget of updates spent (a countdown started and stopped over and
            # over, each start and stop sent to everyone at once: a review): it starts by itself
            # once the budget allows, unsaid (its start sends the room as it is then; an update
            # held now would take the next token before it, every time)
            self.awaiting_start.add(room.code)
            return None
        number, solution = settings.deal_number, None
        if settings.winnable and self.pool is not None:
            got = self.pool.take(room.config)
            if got is None:
                self.count("certified_deal_not_ready")
                return self._no_certified_deal(room)
            number, solution = got
        race_id = secrets.token_hex(6)
        room.race = Race(
            race_id,
            room.config,
            racers,
            mode=settings.mode,
            time_limit_s=settings.time_limit,
            undo=settings.undo,
            number=number,
            solution=solution,
        )
        room.state = "countdown"
        room.wait_told = False
        room.countdown_end = now + self.limits.countdown_ms / 1000
        room.last_over = None
        self._event("countdown", room, None, race=race_id, players=len(room.race.seats))
        self._room_update(room, out)
        self._broadcast(
            room,
            Countdown(
                race_id=race_id, ms=self.limits.countdown_ms, commitment=room.race.commitment
            ),
            out,
        )
        return None

    def _countdown_after_restart(self, room: Room, race: Race, now: float, out: Outbox) -> None:
        """A countdown restored after a restart is held (``countdown_end`` None) until every
        player of the race is connected again, or for the limits' ``restart_hold_s`` (clients
        try again every second: who is not back by then may not come, a bot that died with the
        server, say): then it starts again from the top, for everyone at once."""
        # (a player who left the room is not waited for)
        back = all((m := room.members.get(sid)) is None or m.conn is not None for sid in race.seats)
        if not back and now < min(room.held_until, room.restored_at + self.limits.restart_hold_s):
            return
        room.countdown_end = now + self.limits.countdown_ms / 1000
        self._event(
            "countdown",
            room,
            None,
            race=race.race_id,
            players=len(race.seats),
            after_restart=True,
        )
        self._broadcast(
            room,
            Countdown(
                race_id=race.race_id, ms=self.limits.countdown_ms, commitment=race.commitment
            ),
            out,
        )

    def _move(self, conn: Conn, cmd: MoveCmd, now: float, out: Outbox) -> None:
        room, member = self._membership(conn)
        race = room.race
        if member.role != "player":
            self.count("moves_not_a_player")
            raise CommandError("not_a_player", "you are watching this room, not playing in it")
        if race is None or room.state not in ("countdown", "racing"):
            self.count("moves_race_not_running")
            raise CommandError("race_not_running", "there is no race running in this room")
        if member.id not in race.seats:
            self.count("moves_not_a_player")
            raise CommandError("not_a_player", "you are watching this race, not playing in it")
        try:
            result = race.move(member.id, cmd.move, now)
        except RaceError as exc:
            self.count(f"moves_{exc.code}")
            raise CommandError(exc.code, exc.message) from None
        self.count("moves_ok")
        if self.store is not None:
            self.store.add_move(race.race_id, member.id, result.index, result.notation, result.t_ms)
        seat = race.seats[member.id]
        state = seat.state
        out.reply(
            conn.id,
            Moved(
                seq=cmd.seq,
                move=result.move,
                undone=result.undone,
                shown=result.shown,
                score=seat.score,
                score2=seat.score2,
                won=state.won,
                stuck=state.stuck,
                can_undo=state.can_undo and race.undo != "off",
            ),
        )
        room.progress_dirty = True
        if seat.status != "playing":
            self._event(seat.status, room, member, score=seat.score, ms=seat.finish_ms)
        self._check_end(room, now, out)

    def _rematch(self, conn: Conn, cmd: Rematch, now: float, out: Outbox) -> None:
        """A player asks for a rematch: everyone sees who asked; the room goes back to the
        lobby once every connected player has asked (or the host starts it)."""
        room, member = self._membership(conn)
        if member.role != "player":
            raise CommandError(
                "not_a_player", "spectators watch: only the players can ask for a rematch"
            )
        if room.state == "lobby":
            out.reply(conn.id, Ack(seq=cmd.seq))  # the room is back already: asking is ready
            member.ready = True
            self._countdown_if_all_ready(room, now, out)
            return
        if room.state != "results":
            raise CommandError("wrong_state", "a rematch comes after the results")
        out.reply(conn.id, Ack(seq=cmd.seq))
        if not member.rematch:
            member.rematch = True
            self._event("rematch_asked", room, member)
        if not self._rematch_if_agreed(room, now, out):
            self._room_update(room, out)

    def _rematch_if_agreed(self, room: Room, now: float, out: Outbox) -> bool:
        """Back to the lobby if every connected player has asked for the rematch (and one has)."""
        players = [p for p in room.players() if p.conn is not None]
        asked = [p for p in players if p.rematch]
        if not asked or len(asked) < len(players):
            return False
        self._back_to_lobby(room, asked[0], now, out)
        return True

    def _back_to_lobby(
        self, room: Room, by: MemberState, now: float, out: Outbox, why: str = "rematch"
    ) -> None:
        """After the results: the same settings and a new deal. Players who asked for the
        rematch are ready; spectators who came to play take the free seats.  ``why``: the log's
        event, ``rematch`` (everyone asked; ``by`` the first) or ``to_lobby`` (the host's start)."""
        room.state = "lobby"
        room.race = None
        room.countdown_end = None
        if room.settings.deal_number is not None:
            room.settings = room.settings.model_copy(update={"deal_number": None})
        for m in room.members.values():
            m.ready = m.role == "player" and m.rematch
            m.rematch = False
        for m in self._seat_waiting(room):  # they came to play this race: ready, if still here
            m.ready = m.conn is not None
        # a person playing hosts: never a bot while a person is in the room (a watcher's start
        # made the bot seated there host over the person)
        people = [p for p in room.players() if not p.bot]
        if people and (room.host is None or room.members[room.host].role != "player"):
            room.host = people[0].id
        self._event(why, room, by)
        self._countdown_if_all_ready(room, now, out, alone_ok=True)
        self._close_if_only_bots(room, now, out)  # a lobby nobody there can start: closed

    def _idle(self, room: Room, race: Race, now: float, out: Outbox) -> None:
        """Players who made no move for ``race_idle_s`` are out of the race, as if they had left
        (their score stands), and told why: a seat nobody plays would hold the race, its results
        and the next race back for ever."""
        limit, stuck_s = self.limits.race_idle_s, self.limits.stuck_undo_s
        idle = race.idle_seats(now, limit, stuck_s)
        if not idle:
            return
        for sid in idle:
            stuck = race.seats[sid].state.stuck
            # left with no move, only an undo, and neither undone nor resigned: stuck, as
            # they would have been without undo (the race waited on them up to race_idle_s)
            race.drop(sid, "stuck" if stuck else "left", now)
            member = room.members.get(sid)
            self._event("stuck" if stuck else "idle", room, member)
            if member is not None and member.conn is not None:
                why = (
                    f"no move left and no undo for {_span(stuck_s)}: you are stuck"
                    if stuck
                    else f"no move for {_span(limit)}: you are out of this race"
                )
                out.send(
                    member.conn,
                    Error(seq=None, code="player_done", message=f"{why} (your score stands)"),
                )
        room.progress_dirty = True
        self._save(room)
        self._check_end(room, now, out)

    def _start_race(self, room: Room, now: float, out: Outbox) -> None:
        race = room.race
        assert race is not None
        if room.owner:
            # the race budget pays for races, not countdowns: a guest pressing ready and not
            # ready over and over spent the budget of every room the owner's address opened
            self.budget(room.owner, now, "races").take(now)
        race.start(now)
        room.state = "racing"
        room.countdown_end = None
        for seat in race.seats.values():
            member = room.members.get(seat.id)
            race.set_connected(seat.id, member is not None and member.conn is not None, now)
        race.wall_started = self.wall()
        if self.store is not None:
            code = "" if room.settings.private else room.code  # a private code is never kept
            self.store.start_race(race, code, room.public_settings(), race.wall_started)
        self.count("races_started")
        self._event("race_started", room, None, race=race.race_id)
        self._room_update(room, out)
        limit = race.time_limit_s * 1000 or None
        for m in room.connected():
            board = race.seats[m.id].state.view() if m.id in race.seats else None
            assert m.conn is not None
            out.send(
                m.conn,
                RaceStart(
                    race_id=race.race_id,
                    commitment=race.commitment,
                    time_limit_ms=limit,
                    board=board,
                ),
            )
        self._send_progress(room, now, out)

    def _check_end(
        self, room: Room, now: float, out: Outbox, stopped: EndReason | None = None
    ) -> None:
        """End the race if it is over (``stopped``: it is, for that reason: its room closed)."""
        race = room.race
        if race is None or room.state != "racing":
            return
        reason = stopped or race.check_end(now)
        if reason is None:
            return
        race.end(now, reason)
        room.state = "results"
        for m in room.members.values():
            m.ready = m.rematch = False
        standings = race.standings()
        over = RaceOver(
            race_id=race.race_id, reason=reason, standings=standings, reveal=race.reveal()
        )
        room.last_over = over
        self._keep_record(room, race, over, reason)
        self._event(
            "race_over",
            room,
            None,
            race=race.race_id,
            reason=reason,
            winner=f"{standings[0].id}:{standings[0].name}"
            if standings and standings[0].status == "won"
            else None,
        )
        self._send_progress(room, now, out)
        self._broadcast(room, over, out)
        self._room_update(room, out)
        self._close_if_only_bots(room, now, out)

    def _keep_record(self, room: Room, race: Race, over: RaceOver, reason: EndReason) -> None:
        """The finished race's public record, kept in memory and stored."""
        record = RaceRecord(
            race_id=race.race_id,
            room=None if room.settings.private else room.code,
            settings=room.public_settings(),
            started_at=race.wall_started if race.wall_started is not None else self.wall(),
            ended_at=self.wall(),
            reveal=over.reveal,
            standings=over.standings,
            players=[
                PlayerRecord(
                    id=s.id, name=s.name, moves=s.moves, times_ms=s.times_ms, board=s.state.view()
                )
                for s in race.seats.values()
            ],
        )
        self.finished[race.race_id] = record
        self.unannounced.append(race.race_id)
        self.finished_moves += _moves(record)
        while len(self.finished) > FINISHED_KEPT or (
            self.finished_moves > FINISHED_MOVES and len(self.finished) > 1
        ):
            _, dropped = self.finished.popitem(last=False)
            self.finished_moves -= _moves(dropped)
        if self.store is not None:
            self.store.finish_race(record, reason)
        self.count("races_finished")

    def _send_progress(self, room: Room, now: float, out: Outbox) -> None:
        race = room.race
        if race is None:
            return
        room.progress_dirty = False
        room.progress_sent = now
        self._broadcast(
            room, ProgressUpdate(elapsed_ms=race.elapsed_ms(now), players=race.progress()), out
        )


def _span(seconds: float) -> str:
    """``10 minutes``, ``1 minute``, ``45 seconds``."""
    n, unit = (round(seconds / 60), "minute") if seconds >= 60 else (round(seconds), "second")
    return f"{n} {unit}{'' if n == 1 else 's'}"
