"""Live rooms written down, so that a crash, a restart or an upgrade loses no race in progress.

What a room and its race need to go on is kept in SQLite beside the finished races, in the same
transactions as the moves (so before anything that depends on it is acknowledged):

- ``live_rooms``: one JSON document a room: its settings, state, host, members and roles, each
  seat's token as its sha256 only, and its race: the committed deal number and salt (the server's
  secret until the reveal), the clock (the wall-clock start and the time the server was down),
  and the seats that left or were dropped.  Written whenever the room changes, removed when it
  closes.
- ``seat_answers``: the last :attr:`~server.rooms.SeqCache.SIZE` answers of each seat, by
  sequence number, with the type and digest of the command each answered, so a command sent
  again after a restart (its answer lost in the crash) is answered again and never applied
  twice, and another command sent with its number is refused.  Answers that carry a token or a
  whole snapshot are not kept: their number is (so it is not used again), a repeat of one is
  refused.
- ``meta.alive_at``: the wall-clock time the server was last known to be running (written about
  once a second, and when it stops: at the start of a drain, not at its end): the time after it,
  up to the restart, was downtime.

The moves themselves are the ``moves`` rows every race already writes.  :func:`revive` reads it
all back: each race is dealt again from its number and salt (and must match its commitment), and
every seat's moves are replayed through the rules engine.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from protocol.config import GameConfig
from protocol.messages import RaceOver, Settings

from .race import Race
from .rooms import MAX_KEPT_OUT, MemberState, Room

if TYPE_CHECKING:
    from .store import Store

log = logging.getLogger("patience_race.server")

SavedAnswer = tuple[int, tuple[bytes, ...] | None, tuple[str, bytes] | None]
"""A seat's saved answer: its sequence number, its frames (None: the number only), and the type
and digest of the command it answered (None if not known)."""

DOC_VERSION = 1


def room_doc(room: Room, awaiting: bool = False) -> str:
    """Everything ``room`` needs to go on, as JSON (``awaiting``: everyone in its lobby is
    ready and was told the countdown starts by itself once it can)."""
    race = room.race
    race_doc: dict[str, Any] | None = None
    if race is not None:
        race_doc = {
            "race_id": race.race_id,
            "number": str(race.number),
            "salt": race.salt,
            "commitment": race.commitment,
            "solution": race.solution,
            "mode": race.mode,
            "time_limit_s": race.time_limit_s,
            "undo": race.undo,
            "seats": [[s.id, s.name] for s in race.seats.values()],
            "dropped": {
                str(s.id): [s.status, s.finish_ms]
                for s in race.seats.values()
                if s.status in ("left", "disconnected", "stuck")
            },
            "away": {
                str(s.id): s.away_ms
                for s in race.seats.values()
                if s.away_ms is not None and s.status == "playing"
            },
            "wall_started": race.wall_started,
            "paused_ms": race.paused_ms,
        }
    doc = {
        "v": DOC_VERSION,
        "code": room.code,
        "owner": room.owner,
        "settings": room.settings.model_dump(mode="json"),
        "state": room.state,
        "host": room.host,
        "next_id": room.next_id,
        "members": [
            {
                "id": m.id,
                "name": m.name,
                "role": m.role,
                "token_hash": m.token_hash,
                "ready": m.ready,
                "bot": m.bot,
                "rematch": m.rematch,
                "wants_seat": m.wants_seat,
                "peer": m.peer,
            }
            for m in room.members.values()
        ],
        # whom the host removed (seats' token hashes, addresses): kept out after a restart too
        # (for the keep-out time again from the restart: a deadline here would be another
        # process's clock)
        "kicked": list(room.kicked),
        "removed": list(room.removed),
        "race": race_doc,
        "last_over": room.last_over.model_dump(mode="json") if room.last_over else None,
        "awaiting": awaiting,
    }
    return json.dumps(doc, separators=(",", ":"))


class Unrevivable(Exception):
    """A room whose document or moves cannot be read back into a race that goes on."""


def revive_room(
    doc: str,
    moves: dict[int, list[tuple[int, str, int]]],
    *,
    now: float,
    wall: float,
    alive_at: float | None,
    countdown_s: float,
    kept_out_s: float = 0.0,
) -> Room:
    """A room from its document and its race's stored moves, as it was when the server stopped.

    Every member is away (their connections are gone) since ``now``; a race's clock goes on
    from where it was when the server was last known alive: the time it was down is added to
    its ``paused_ms`` and charged to nobody."""
    try:
        d = json.loads(doc)
        if d.get("v") != DOC_VERSION:
            raise Unrevivable(f"document version {d.get('v')!r}")
        settings = Settings.model_validate(d["settings"], strict=False)
        config = GameConfig(settings.game, settings.options, settings.numbering)
        room = Room(d["code"], settings, config, now, owner=d.get("owner", ""))
        room.state = d["state"]
        room.next_id = int(d["next_id"])
        for m in d["members"]:
            member = MemberState(
                int(m["id"]),
                m["name"],
                m["role"],
                m["token_hash"],
                now,
                ready=bool(m["ready"]),
                bot=bool(m["bot"]),
                rematch=bool(m["rematch"]),
                wants_seat=bool(m["wants_seat"]),
                peer=str(m.get("peer", "")),
            )
            member.away_since = now
            room.members[member.id] = member
            room.away.add(member.id)
        room.host = d["host"]
        for digest in d.get("kicked", [])[-MAX_KEPT_OUT:]:
            room.kicked[str(digest)] = now + kept_out_s
        for address in d.get("removed", [])[-MAX_KEPT_OUT:]:
            room.removed[str(address)] = now + kept_out_s
        if d.get("last_over") is not None:
            room.last_over = RaceOver.model_validate(d["last_over"], strict=False)
        rd = d.get("race")
        if rd is not None:
            room.race = _revive_race(rd, config, moves, now, wall, alive_at)
        if room.state == "countdown":
            room.countdown_end = now + countdown_s
        if room.state in ("countdown", "racing") and room.race is None:
            raise Unrevivable(f"state {room.state} without a race")
        return room
    except Unrevivable:
        raise
    except Exception as exc:  # anything unreadable: the caller closes the race as best it can
        raise Unrevivable(f"{type(exc).__name__}: {exc}") from exc


def _deal(rd: dict[str, Any], config: GameConfig) -> Race:
    """The race of a stored document, dealt again from its number and salt, no move made."""
    return Race(
        rd["race_id"],
        config,
        [(int(i), str(n)) for i, n in rd["seats"]],
        mode=rd["mode"],
        time_limit_s=int(rd["time_limit_s"]),
        undo=rd["undo"],
        number=int(rd["number"]),
        salt=rd["salt"],
        solution=rd.get("solution"),
    )


def _revive_race(
    rd: dict[str, Any],
    config: GameConfig,
    moves: dict[int, list[tuple[int, str, int]]],
    now: float,
    wall: float,
    alive_at: float | None,
) -> Race:
    race = _deal(rd, config)
    if race.commitment != rd["commitment"]:
        raise Unrevivable("the deal does not match its commitment")
    last_t = 0
    for seat_id, rows in moves.items():
        if seat_id not in race.seats:
            raise Unrevivable(f"moves of seat {seat_id}, who is not in the race")
        for i, (idx, text, t_ms) in enumerate(rows):
            if idx != i:
                raise Unrevivable(f"seat {seat_id}'s moves skip from {i} to {idx}")
            race.replay(seat_id, text, t_ms, last=i == len(rows) - 1)
            last_t = max(last_t, t_ms)
    for sid, (status, finish_ms) in rd.get("dropped", {}).items():
        seat = race.seats[int(sid)]
        if seat.status == "playing":
            seat.status = status
            seat.finish_ms = finish_ms
    for seat in race.seats.values():
        seat.connected = False
    for sid, away_ms in (rd.get("away") or {}).items():
        gone = race.seats.get(int(sid))
        if gone is not None and isinstance(away_ms, int) and gone.status == "playing":
            gone.away_ms = away_ms  # (the grace starts again; the time out is when they went)
    race.wall_started = rd.get("wall_started")
    race.paused_ms = int(rd.get("paused_ms") or 0)
    if race.wall_started is not None:
        # how far the race had run when the server was last seen alive
        seen = alive_at if alive_at is not None else wall
        ran_ms = int((seen - race.wall_started) * 1000) - race.paused_ms
        ran_ms = max(ran_ms, last_t, 0)
        race.paused_ms = max(0, int((wall - race.wall_started) * 1000) - ran_ms)
        race.started_at = now - ran_ms / 1000
        for seat in race.seats.values():
            if seat.status == "playing" and seat.away_ms is None:
                seat.away_ms = ran_ms  # away since the restart (the downtime charged to nobody)
    return race


def revive_race_only(doc: str, now: float) -> tuple[Race, Room]:
    """The race of a room that cannot go on, dealt again from its number and salt, with no
    move replayed, and its room's settings: enough to end it and reveal it."""
    d = json.loads(doc)
    settings = Settings.model_validate(d["settings"], strict=False)
    config = GameConfig(settings.game, settings.options, settings.numbering)
    room = Room(d["code"], settings, config, now)
    rd = d["race"]
    race = _deal(rd, config)
    race.wall_started = rd.get("wall_started")
    race.start(now)
    return race, room


class LiveRooms:
    """The live-room tables of a :class:`~server.store.Store`; writes join its transactions."""

    def __init__(self, store: Store) -> None:
        self.store = store  # its tables come with the store's schema (version 3)
        self.clock_stopped = False
        """Set by :meth:`stop_clock`: the server is going down, ``alive_at`` stays put."""

    def save(self, room: Room, awaiting: bool = False) -> None:
        with self.store.writing():
            self.store.db.execute(
                "INSERT OR REPLACE INTO live_rooms(code, doc) VALUES (?, ?)",
                (room.code, room_doc(room, awaiting)),
            )

    def forget(self, code: str) -> None:
        with self.store.writing():
            self.store.db.execute("DELETE FROM live_rooms WHERE code = ?", (code,))
            self.store.db.execute("DELETE FROM seat_answers WHERE room = ?", (code,))

    def forget_member(self, code: str, member: int) -> None:
        """A member gone from the room for good (left, removed, seat let go): their answers
        with it, so that members coming and going cannot grow the table while the room lives."""
        with self.store.writing():
            self.store.db.execute(
                "DELETE FROM seat_answers WHERE room = ? AND member = ?", (code, member)
            )

    def answer(
        self,
        code: str,
        member: int,
        seq: int,
        frames: tuple[bytes, ...] | None,
        kind: tuple[str, bytes] | None = None,
    ) -> None:
        """The answer to a seat's command (None: its number only), in a ring of slots, with the
        type and digest of the command it answered."""
        blob = None if frames is None else _pack_frames(frames)
        name, digest = kind if kind is not None else (None, None)
        with self.store.writing():
            self.store.db.execute(
                "INSERT OR REPLACE INTO seat_answers(room, member, slot, seq, frames, kind, digest) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (code, member, seq % 16, seq, blob, name, digest),
            )

    def alive(self, wall: float) -> None:
        """Note that the server is alive at ``wall`` (nothing once :meth:`stop_clock` ran)."""
        if self.clock_stopped:
            return
        with self.store.writing():
            self.store.db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('alive_at', ?)", (repr(wall),)
            )

    def stop_clock(self, wall: float) -> None:
        """The server starts going down (a drain): ``wall`` is the last moment it counts as
        alive, and every race's clock stops there.  However long the drain then waits for
        clients to close, that time is downtime, charged to nobody after the restart."""
        self.alive(wall)
        self.clock_stopped = True

    def alive_at(self) -> float | None:
        row = self.store.db.execute("SELECT value FROM meta WHERE key = 'alive_at'").fetchone()
        try:
            return float(row[0]) if row else None
        except ValueError:
            return None

    def docs(self) -> list[tuple[str, str]]:
        return self.store.db.execute("SELECT code, doc FROM live_rooms ORDER BY code").fetchall()

    def answers(self, code: str) -> dict[int, list[SavedAnswer]]:
        """Each seat's saved answers, by member id, lowest number first: the number, the frames
        (None: the number only) and the type and digest of the command (None: written before
        they were kept, schema 2)."""
        out: dict[int, list[SavedAnswer]] = {}
        for member, seq, blob, name, digest in self.store.db.execute(
            "SELECT member, seq, frames, kind, digest FROM seat_answers WHERE room = ? "
            "ORDER BY seq",
            (code,),
        ):
            frames = None if blob is None else _unpack_frames(blob)
            kind = (name, bytes(digest)) if name is not None and digest is not None else None
            out.setdefault(member, []).append((seq, frames, kind))
        return out


def _pack_frames(frames: tuple[bytes, ...]) -> bytes:
    out = bytearray()
    for f in frames:
        out += len(f).to_bytes(4, "big")
        out += f
    return bytes(out)


def _unpack_frames(blob: bytes) -> tuple[bytes, ...]:
    frames = []
    i = 0
    while i < len(blob):
        n = int.from_bytes(blob[i : i + 4], "big")
        frames.append(bytes(blob[i + 4 : i + 4 + n]))
        i += 4 + n
    return tuple(frames)
