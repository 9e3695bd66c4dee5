"""The hub's upkeep between commands: the passing of time (countdowns, grace periods, time
limits, progress, idle connections, the retention of old races), bringing rooms back after a
restart, and stopping (a drain before a restart, or every room closed for good).

Mixed into :class:`server.hub.Hub`, after :class:`server.lifecycle.RaceLifecycle` whose race
steps the ticks drive.  Sans-I/O like the rest of the hub: ``now`` is given, and what is to be
sent comes back in an :class:`~server.outbox.Outbox`.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from protocol.messages import Notice, RaceOver

from .durable import LiveRooms, Unrevivable, revive_race_only, revive_room
from .lifecycle import RaceLifecycle
from .limits import count_held
from .outbox import CLOSE_IDLE, CLOSE_RESTART, Conn, Outbox
from .rooms import MemberState, Room, log_label

log = logging.getLogger("patience_race.server")

WALL_STEP_S = 2.0
"""A change of the wall clock against the monotonic one past this (looked at about once a second,
against the last step followed) is a step of the clock, and followed: a slow drift too, once it
adds up to this."""
PROGRESS_EVERY_S = 5.0
"""A racing room's progress goes out at least this often, moves or not (its elapsed time sets
every client's clock)."""


class Upkeep(RaceLifecycle):
    """Time, restarts and shutdown: the hub's side that no command drives."""

    # the hub's state this part uses (set by Hub.__init__)
    rooms: dict[str, Room]
    conns: dict[int, Conn]
    live: LiveRooms | None
    log_key: bytes
    rooms_per_address: dict[str, int]
    _next_sweep: float
    clock: float
    _next_prune: float
    _alive_written: float
    _wall_offset: float | None

    if TYPE_CHECKING:
        # the hub's methods this part calls (defined in server.hub.Hub), declared for the type
        # checker only: at run time they are the hub's own

        def _close_room(self, room: Room, now: float, out: Outbox, why: str = "") -> None: ...

        def _flush_room_update(self, room: Room, now: float, out: Outbox) -> None: ...

        def _remove_member(
            self, room: Room, member: MemberState, why: str, now: float, out: Outbox
        ) -> None: ...

    # -- time ------------------------------------------------------------------------------

    def tick(self, now: float) -> Outbox:
        """The passing of time: countdowns, grace periods, time limits, progress, timeouts.

        It runs many times a second, so it looks only at what can be due: members who are away,
        races with a deadline, rooms whose progress changed, and the connections only once the
        earliest of their timeouts can have come."""
        self.clock = now
        out = Outbox()
        for room in list(self.rooms.values()):
            self._tick_room(room, now, out)
        if self.held_by_restart and not self.draining:
            self._end_restart_holds(now, out)
        if self.awaiting_start:
            self._start_awaiting(now, out)
        if now >= self._next_sweep:
            self._sweep(now, out)
        self._note_alive(now)
        retention = self.limits.keep_days > 0 or self.limits.max_db_mb > 0
        if now >= self._next_prune and self.store is not None and retention:
            self._prune(now)
        return out

    def _tick_room(self, room: Room, now: float, out: Outbox) -> None:
        """What can be due in one room: its held update, its countdown, the seats away, its
        race's time limit and idle players, its progress."""
        race = room.race
        if room.update_pending:
            self._flush_room_update(room, now, out)
        if room.state == "countdown" and room.countdown_end is None and race is not None:
            self._countdown_after_restart(room, race, now, out)
        if (
            room.state == "countdown"
            and room.countdown_end is not None
            and now >= room.countdown_end
            and not self.draining
        ):
            # (not while draining: no new race; the countdown is saved as it is, and held
            # after the restart until everyone is back, as one cut short there)
            self._start_race(room, now, out)
            self._check_end(room, now, out)  # everyone may have left during the countdown
        if room.away and not self._grace(room, now, out):
            return  # the room closed
        if race is not None and room.state == "racing":
            deadline = race.deadline
            if deadline is not None and now >= deadline and not self.draining:
                # (not while draining: the race clock stopped when the drain began, and
                # its last seconds are played after the restart)
                self._check_end(room, now, out)
            elif now >= race.idle_due and not self.draining:
                self._idle(room, race, now, out)
        if race is not None and (
            (room.progress_dirty and now - room.progress_sent >= self.limits.progress_interval_s)
            # and now and then with nothing new, for its clock: a client that got the
            # start late (a stalled link) ran its clock behind until someone moved
            or (room.state == "racing" and now - room.progress_sent >= PROGRESS_EVERY_S)
        ):
            self._send_progress(room, now, out)

    def _end_restart_holds(self, now: float, out: Outbox) -> None:
        """Lobbies held after a restart for their players: once the hold is over, they start
        if everyone there is ready."""
        for code, alone_ok in list(self.held_by_restart.items()):
            held = self.rooms.get(code)
            if held is None or held.state != "lobby":
                del self.held_by_restart[code]
            elif now >= held.restored_at + self.limits.restart_hold_s:
                del self.held_by_restart[code]
                self._countdown_if_all_ready(held, now, out, alone_ok=alone_ok)

    def _start_awaiting(self, now: float, out: Outbox) -> None:
        """Lobbies whose start waited (for a certified deal, the address's race budget, or
        players back after a restart): the countdown now, where it may go."""
        for code in list(self.awaiting_start):
            waiting = self.rooms.get(code)
            if waiting is None or waiting.state != "lobby":
                self.awaiting_start.discard(code)
                continue
            if self.draining or self._no_deal_yet(waiting) or self._race_wait(waiting, now):
                continue  # (draining: no new race; the restart brings it back)
            if (
                waiting.restored_at
                and now < waiting.restored_at + self.limits.restart_hold_s
                and any(p.conn is None for p in waiting.players())
            ):
                # back after a restart: its players first (a few seconds; one who was
                # not ready and does not come back holds nobody after that)
                continue
            self.awaiting_start.discard(code)
            # (alone too: a player on their own who pressed start was waiting like the rest)
            self._countdown_if_all_ready(waiting, now, out, alone_ok=True)

    def _note_alive(self, now: float) -> None:
        """Once a second: a step of the wall clock followed, and, while a clock runs (a countdown
        or a race), the time written down: what a restart measures the time the server was down
        by."""
        live = self.live
        if live is None or now - self._alive_written < 1.0:
            return
        self._alive_written = now
        wall = self.wall()
        self._follow_clock_step(wall, now)
        # only while a clock runs (a countdown or a race): what the restart measures it by;
        # an idle server wrote it, and synced it, every second for nothing (an operator's
        # soak: 26 KB a second, three syncs)
        if any(r.state in ("countdown", "racing") for r in self.rooms.values()):
            live.alive(wall)

    def _grace(self, room: Room, now: float, out: Outbox) -> bool:
        """Seats kept past the grace period are dropped; False if that closed the room."""
        grace = self.limits.grace_s
        if self.draining:
            return True  # the rooms go on after the restart: nobody is dropped while stopping
        if (
            room.state in ("lobby", "results")
            and len(room.away) >= len(room.members)
            and now >= room.held_until
        ):
            last = max((m.away_since or now) for m in room.members.values())
            if now - last >= self.limits.abandoned_s:
                self._close_room(
                    room, now, out, f"nobody was connected for {self.limits.abandoned_s:g} s"
                )
                return False
        dropped = False
        for mid in list(room.away):
            m = room.members.get(mid)
            if m is None or m.away_since is None:
                room.away.discard(mid)
                continue
            if now - m.away_since < grace:
                continue
            race = room.race
            if room.state in ("countdown", "racing") and race is not None and m.id in race.seats:
                # the seat stays, out of the race; after the results the member is removed
                if race.seats[m.id].status == "playing":
                    race.drop(m.id, "disconnected", now)  # (out from when they went away)
                    room.progress_dirty = True
                    dropped = True
                    self._event("grace_over", room, m)
                    self._save(room)
            else:
                self._remove_member(room, m, "seat_released", now, out)
                if room.code not in self.rooms:
                    return False
        if dropped:
            self._check_end(room, now, out)
        return True

    def _sweep(self, now: float, out: Outbox) -> None:
        """Close connections that never said hello or stayed idle outside a race; note when the
        next one can be due (a connection's timeouts only move later as it sends)."""
        limits = self.limits
        due = now + min(limits.hello_timeout_s, limits.idle_timeout_s)
        for conn in list(self.conns.values()):
            if not conn.hello:
                at = conn.opened_at + limits.hello_timeout_s
                if now >= at:
                    out.close(conn.id, CLOSE_IDLE, "no hello")
                    continue
                due = min(due, at)
            at = conn.last_seen + limits.idle_timeout_s
            if now >= at:
                if conn.room is None or conn.room.state != "racing":
                    out.close(conn.id, CLOSE_IDLE, "idle")
                    continue
                at = now + 1.0  # racing: look again later, the race will end
            due = min(due, at)
        self._next_sweep = due

    def _bury(self, code: str, doc: str, now: float) -> None:
        """A room that could not be brought back: its race, if the deal is known, ends
        ``aborted`` with what could be replayed, and is revealed and stored like any other."""
        try:
            if json.loads(doc).get("state") not in ("countdown", "racing"):
                return  # no race in progress: nothing to end
            race, room = revive_race_only(doc, now)
        except Exception:
            return
        assert self.store is not None
        for seat_id, rows in self.store.moves(race.race_id).items():
            for _idx, text, t_ms in rows:
                try:
                    race.replay(seat_id, text, t_ms)
                except Exception:
                    break  # the moves up to the first that does not apply stand
        race.end(now, "aborted")
        over = RaceOver(
            race_id=race.race_id,
            reason="aborted",
            standings=race.standings(),
            reveal=race.reveal(),
        )
        self._keep_record(room, race, over, "aborted")

    def _prune(self, now: float) -> None:
        """One small batch of the retention: races older than ``keep_days`` go, or the oldest
        whatever their age while the database holds more than ``max_db_mb``; if a whole batch
        went, the next one follows a second later, else a minute later (the size is looked at
        each minute, the age matters to the hour)."""
        assert self.store is not None
        limits = self.limits
        live = {r.race.race_id for r in self.rooms.values() if r.race is not None}
        full = limits.max_db_mb > 0 and self.store.data_bytes() > limits.max_db_mb * 2**20
        if full:
            cutoff = self.wall()
        elif limits.keep_days > 0:
            cutoff = self.wall() - limits.keep_days * 86400
        else:
            cutoff = 0.0
        gone = self.store.prune(cutoff, live, batch=50)
        if gone:
            self.count("races_deleted", gone)
            why = "database_full" if full else "keep_days"
            fields = {"event": "races_deleted", "races": gone, "why": why}
            log.info("races_deleted", extra={"fields": fields})
        more = gone >= 50 or self.store.vacuum_left > 0 or (full and gone > 0)
        self._next_prune = now + (1.0 if more else 60.0)

    # -- restarts ---------------------------------------------------------------------------

    def _follow_clock_step(self, wall: float, now: float) -> None:
        """The wall clock stepped (NTP, an operator) while the server ran: the races' wall
        start moves with it, so that a restart, which counts a race's time from the wall
        clock, charges it nothing (an hour forward ended a race as time up at once after a
        restart: a cluster trial).  Written down for each room with a race."""
        if self.live is not None and self.live.clock_stopped:
            return  # draining: the clock the restart counts from is frozen (a review)
        offset = wall - now
        if self._wall_offset is None:
            self._wall_offset = offset
            return
        step = offset - self._wall_offset
        if abs(step) < WALL_STEP_S:
            return
        self._wall_offset = offset
        moved = 0
        for room in self.rooms.values():
            race = room.race
            if race is not None and race.wall_started is not None and race.ended_at is None:
                race.wall_started += step
                self._save(room)
                moved += 1
        log.warning(
            "clock_stepped",
            extra={"fields": {"event": "clock_stepped", "step_s": round(step, 1), "races": moved}},
        )

    def restore(self, now: float) -> int:
        """Bring back every room that was open when the server stopped (``server.durable``);
        before any connection is accepted.  A room that cannot be read back is closed: its race
        with a result and its reveal where the deal is known.  The number of rooms back."""
        self.clock = now
        live, store = self.live, self.store
        if live is None or store is None:
            return 0
        wall = self.wall()
        alive_at = live.alive_at()
        back = 0
        for code, doc in live.docs():
            race_id = _race_id_of(doc)
            try:
                room = revive_room(
                    doc,
                    store.moves(race_id) if race_id else {},
                    now=now,
                    wall=wall,
                    alive_at=alive_at,
                    countdown_s=self.limits.countdown_ms / 1000,
                    kept_out_s=self.limits.kicked_out_s,
                )
            except Unrevivable as exc:
                log.warning(
                    "room_lost",
                    extra={
                        "fields": {
                            "event": "room_lost",
                            "room": log_label(code, _private(doc), self.log_key),
                            "why": str(exc),
                        }
                    },
                )
                self.count("rooms_lost")
                self._bury(code, doc, now)
                live.forget(code)
                continue
            # nobody is connected yet: give everyone the grace period to come back
            room.held_until = now + self.limits.grace_s
            room.restored_at = now
            if room.state == "countdown":
                # held until its players are back (or the grace is over): it ran out with
                # nobody connected, and the race started with everyone a few seconds behind
                room.countdown_end = None
            for member_id, answers in live.answers(code).items():
                member = room.members.get(member_id)
                if member is None:
                    continue
                for seq, frames, kind in answers:
                    if frames is not None:
                        member.seqs.put(seq, frames, kind)
                    member.seqs.highest = max(member.seqs.highest, seq)
            self.rooms[code] = room
            if room.state == "lobby" and _awaiting(doc):
                # everyone was ready, waiting for the race budget or a certified deal, and told
                # the countdown would start by itself: so it does, once they are back (a lobby
                # with a player not ready, there and then, waits for them as it did)
                self.awaiting_start.add(code)
            if room.owner:
                count_held(self.rooms_per_address, room.owner, 1)
            self._save(room)  # its clock, with the downtime counted
            self._event("room_restored", room, None, state=room.state)
            back += 1
        # races left unfinished by a server from before live rooms were kept, or whose room
        # was lost: their deal was never written down, so they end with no reveal
        lost = store.end_unfinished(
            {r.race.race_id for r in self.rooms.values() if r.race is not None}, wall
        )
        if lost:
            self.count("races_lost", lost)
            log.warning("races_lost", extra={"fields": {"event": "races_lost", "races": lost}})
        live.alive(wall)
        self.count("rooms_restored", back)
        return back

    # -- shutdown ---------------------------------------------------------------------------

    def drain(self, retry_ms: int = 5000) -> Outbox:
        """SIGTERM: no new rooms or races; everyone is told to come back; every connection closes 1012.

        The race clocks stop now: the time the drain waits for connections to close is
        downtime, like the time the server is down, charged to nobody."""
        self.draining = True
        if self.live is not None:
            self.live.stop_clock(self.wall())
        out = Outbox()
        for conn in self.conns.values():
            out.send(
                conn.id,
                Notice(
                    code="shutdown",
                    message="the server is restarting: come back in a few seconds; every room and race goes on where it was (the time it is down is charged to nobody)",
                    retry_ms=retry_ms,
                ),
            )
            out.close(conn.id, CLOSE_RESTART, "server restarting")
        return out

    def close_all(self, now: float, why: str) -> Outbox:
        """Every room closes for good (a server inside ``patience-race play`` whose player quit):
        races end as they stand and every member is told why; no new room is opened."""
        self.clock = now
        self.draining = True
        out = Outbox()
        for room in list(self.rooms.values()):
            self._close_room(room, now, out, why)
        return out


def _race_id_of(doc: str) -> str | None:
    try:
        race = json.loads(doc).get("race")
        return str(race["race_id"]) if race else None
    except (ValueError, AttributeError, KeyError, TypeError):
        return None


def _awaiting(doc: str) -> bool:
    """Whether a stored lobby was to start by itself (see :func:`server.durable.room_doc`)."""
    try:
        return json.loads(doc).get("awaiting") is True
    except (ValueError, AttributeError):
        return False


def _private(doc: str) -> bool:
    """Whether a stored room document is a private room's (if it cannot be read: as if it were,
    so that its code stays out of the logs)."""
    try:
        return bool(json.loads(doc)["settings"]["private"])
    except (ValueError, KeyError, TypeError):
        return True
