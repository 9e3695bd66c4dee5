"""The host's side of a room: the settings a room is made with or changed to, and removing a
member.

Mixed into :class:`server.hub.Hub`, which dispatches the ``update_settings`` and ``kick``
commands here and checks a new room's settings with :meth:`HostCommands._check_settings`.
Sans-I/O like the rest of the hub: ``now`` is given, and what is to be sent comes back in an
:class:`~server.outbox.Outbox`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.config import OPTIONS, ConfigError, GameConfig
from protocol.messages import Ack, Kick, Kicked, MemberRemoved, Settings, UpdateSettings

from .limits import Limits
from .outbox import CommandError, Conn, Outbox
from .pool import DealPool
from .rooms import MAX_KEPT_OUT, MemberState, Room, display_code

if TYPE_CHECKING:
    from protocol.messages import RoomSummary


def _settings_changes(old: Settings, new: Settings) -> str:
    """What a settings change changed, for the log (``mode=score time_limit=600``); a fixed
    deal's number never: only ``deal=fixed`` or ``deal=random``."""
    parts = []
    for name in Settings.model_fields:
        before, after = getattr(old, name), getattr(new, name)
        if name == "deal_number":
            if before != after:
                parts.append(f"deal={'random' if after is None else 'fixed'}")
        elif before != after:
            value = (
                ",".join(f"{k}:{v}" for k, v in after.items()) or "defaults"
                if name == "options"
                else after
            )
            parts.append(f"{name}={value}")
    return " ".join(parts)


class HostCommands:
    """The host's commands (mixed into :class:`server.hub.Hub`)."""

    # the hub's state this part uses (set by Hub.__init__)
    limits: Limits
    pool: DealPool | None
    conns: dict[int, Conn]
    _rooms_listed: tuple[float, list[RoomSummary]]

    if TYPE_CHECKING:
        # the hub's methods this part calls, declared for the type checker only

        def _host_only(self, conn: Conn) -> tuple[Room, MemberState]: ...

        def _stop_countdown(self, room: Room, by: MemberState, out: Outbox) -> None: ...

        def _seat_waiting(self, room: Room) -> list[MemberState]: ...

        def _unbind(self, conn: Conn) -> None: ...

        def _remove_member(
            self,
            room: Room,
            member: MemberState,
            why: str,
            now: float,
            out: Outbox,
            by: MemberState | None = None,
        ) -> None: ...

        def _room_update(self, room: Room, out: Outbox, skip: int | None = None) -> None: ...

        def _event(
            self, name: str, room: Room, member: MemberState | None, **fields: object
        ) -> None: ...

    def _check_settings(self, settings: Settings, players: int) -> GameConfig:
        """The game ``settings`` make, or a ``bad_settings`` error.  A deal number refused is
        quoted: it is the sender's own (a room's kept deal, a secret, is never checked again
        here: :meth:`_update_settings` keeps it only with its numbering, which is all that a
        number's check depends on)."""
        for key, value in settings.options.items():
            allowed = OPTIONS.get(settings.game, {}).get(key)
            if allowed and isinstance(allowed[0], int) and not isinstance(value, int):
                # (the wire is strict: "1" for 1 is refused, as for every other number)
                raise CommandError(
                    "bad_settings",
                    f"{settings.game} option {key} is a number "
                    f"({', '.join(str(a) for a in allowed)}), not the string {value[:20]!r}",
                )
        try:
            config = GameConfig(settings.game, settings.options, settings.numbering)
        except ConfigError as exc:
            raise CommandError("bad_settings", str(exc)) from None
        if settings.deal_number is not None:
            try:
                config.check_number(settings.deal_number)
            except ConfigError as exc:
                raise CommandError("bad_settings", str(exc)) from None
        if settings.mode == "score" and not settings.time_limit:
            raise CommandError("bad_settings", "mode score needs a time limit")
        if settings.winnable:
            if settings.deal_number is not None:
                raise CommandError(
                    "bad_settings", "a fixed deal is not certified: winnable draws a random one"
                )
            if self.pool is None:
                raise CommandError(
                    "bad_settings", "this server does not certify deals: play a random deal"
                )
            self.pool.want(config)
        if players > settings.seats:
            raise CommandError(
                "bad_settings", f"{players} players are seated: seats cannot be fewer"
            )
        return config

    def _update_settings(self, conn: Conn, cmd: UpdateSettings, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        if room.state not in ("lobby", "countdown"):
            raise CommandError("wrong_state", "settings change only in the lobby, before the start")
        settings = cmd.settings
        if cmd.keep_deal and room.settings.deal_number is not None:
            if settings.deal_number is not None:
                raise CommandError("bad_settings", "keep_deal keeps the deal: send no deal_number")
            if settings.numbering != room.settings.numbering:
                # whatever the number: a refusal that hung on it (xpat2 deal 0 has no PySolFC
                # twin) would tell a new host the secret deal (a review)
                raise CommandError(
                    "bad_settings",
                    "keep_deal keeps the deal and its numbering: another numbering takes "
                    "another deal",
                )
            settings = settings.model_copy(update={"deal_number": room.settings.deal_number})
        if room.state == "lobby" and settings.deal_number is None and _unchanged(settings, room):
            # nothing changes: nobody is made to press ready again, nothing is sent or logged
            # (not with a fixed deal: a host who took over would learn whether a number they
            # sent is the secret one); options compared as the game takes them, the defaults
            # written or not (the room's own settings sent back, {"suits": 2, "relaxed": 0} for
            # {"suits": 2}, made everyone ready again: a protocol trial), and before the checks
            # of a change (a restored winnable room's own settings were refused by a server
            # that no longer certifies deals: a review)
            out.reply(conn.id, Ack(seq=cmd.seq))
            return
        config = self._check_settings(settings, len(room.players()))
        # (the answer first: nothing below refuses, and the room stopped from its countdown, then
        # changed, reaches the host as one room event, not two)
        out.reply(conn.id, Ack(seq=cmd.seq))
        if room.state == "countdown":
            self._stop_countdown(room, member, out)
        room.config = config
        if room.settings.private != settings.private:
            self._rooms_listed = (-1.0, [])  # a room gone private leaves the list at once
        changed = _settings_changes(room.settings, settings)
        room.settings = settings
        for m in room.members.values():
            m.ready = False
        self._seat_waiting(room)  # more seats: those who came to play take them
        self._event(
            "settings_changed", room, member, game=room.config.title, changed=changed or None
        )
        self._room_update(room, out)

    def _kick(self, conn: Conn, cmd: Kick, now: float, out: Outbox) -> None:
        room, member = self._host_only(conn)
        target = room.members.get(cmd.id)
        if target is None:
            raise CommandError("not_in_room", f"nobody with id {cmd.id} is in this room")
        if target is member:
            raise CommandError("bad_message", "you cannot remove yourself: leave instead")
        if room.state in ("countdown", "racing"):
            raise CommandError(
                "wrong_state", "players can be removed before or after a race, not during one"
            )
        out.reply(conn.id, Ack(seq=cmd.seq))
        kept_out = target.peer and target.peer != conn.peer
        if target.conn is not None:
            # (how long is said: the join refused then did not say, a race-night trial)
            minutes = max(1, round(self.limits.kicked_out_s / 60))
            until = f": you may join it again in {minutes} min" if kept_out else ""
            out.send(
                target.conn,
                Kicked(message=f"the host removed you from room {display_code(room.code)}{until}"),
            )
            tconn = self.conns.get(target.conn)
            if tconn is not None:
                self._unbind(tconn)
        if kept_out:
            # their address may not join this room again for a while (they rejoined as fast
            # as they were removed; or, removed while away, on their return); not the host's
            # own machine's (bots, a friend at the same computer)
            room.keep_out(target.peer, now + self.limits.kicked_out_s)
        # a resume with its token says why it holds nothing (a player whose terminal was gone
        # when removed was told on return only that their old seat was released)
        room.kicked[target.token_hash] = now + self.limits.kicked_out_s
        while len(room.kicked) > MAX_KEPT_OUT:
            room.kicked.popitem(last=False)
        # everyone else is told it was the host (they read "Cat left", or, of one away,
        # "did not come back in time": a race-night trial)
        told = MemberRemoved(id=target.id)
        for m in room.members.values():
            if m.conn is not None and m is not member and m is not target:
                out.send(m.conn, told)
        self._remove_member(room, target, "kicked", now, out, by=member)


def _unchanged(settings: Settings, room: Room) -> bool:
    """``settings`` are the room's own, the options compared as the game takes them (every
    default written, in any order)."""
    try:
        config = GameConfig(settings.game, settings.options, settings.numbering)
    except ConfigError:
        return False
    return _as_played(settings, config) == _as_played(room.settings, room.config)


def _as_played(settings: Settings, config: GameConfig) -> Settings:
    """``settings`` with the options as the game takes them (every default written)."""
    return settings.model_copy(update={"options": dict(config.options)})
