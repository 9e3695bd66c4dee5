"""What happened, said for people: who joined, left, came back or asked for a rematch between
two room updates, what a settings change changed, who won or resigned between two progress
updates, and the one line the results lead with.  Pure functions of the messages (names made
safe for a terminal); the model (:mod:`client.model`) puts them on the status line.
"""

from __future__ import annotations

import re

from protocol.messages import Member, Progress, PublicSettings, RoomInfo, Standing

from .text import ordinal, safe

FINISHED = ("won", "resigned", "stuck", "disconnected", "left")
"""A player's statuses once their race is over."""


def top_line(standings: list[Standing] | None) -> str:
    """Who came first, in words: " Won by X." when the first place won, " Best score: X (N)."
    when nobody won (everyone resigned, got stuck or ran out of time), "" for no standings."""
    if not standings:
        return ""
    top = standings[0]
    if top.status == "won":
        return f" Won by {top.name}."
    return f" Nobody won; best score: {top.name} ({top.score})."


def _gone(m: Member) -> str:
    """A member no longer in the room: one away until then did not come back in time (their
    seat was released), not one who left."""
    name = safe(m.name)
    if m.connected:
        return f"{name} left"
    if m.role == "spectator":  # (no seat to release: "their seat was released", of a watcher)
        return f"{name} stopped watching (gone too long)"
    return f"{name} did not come back in time: their seat was released"


AWAY = re.compile(r" is away \(seat kept [^)]*\)$")
"""The end of "Ann is away (seat kept 60 s)": who is meant is the rest."""


def kept_for(grace_s: float | None) -> str:
    """How long a seat is kept, as the server said (``60 s``, ``2 min``), or ``for a while``."""
    if grace_s is None:
        return "for a while"
    if grace_s >= 120 and grace_s % 60 == 0:
        return f"{grace_s / 60:g} min"
    return f"{grace_s:g} s"


def room_changes(
    old: RoomInfo,
    new: RoomInfo,
    you: int | None,
    released: set[int] | frozenset[int] = frozenset(),
    removed: set[int] | frozenset[int] = frozenset(),
    grace_s: float | None = None,
) -> list[str]:
    """What happened between two room updates, for people: joins, leaves, comings and goings
    (``released``: the racers whose seat in the race was released, who come back to watch)."""
    out: list[str] = []
    before = {m.id: m for m in old.members}
    after = {m.id: m for m in new.members}
    for mid, m in after.items():
        if mid == you:
            was = before.get(mid)
            if was is not None and was.role == "spectator" and m.role == "player":
                # a seat came free and is yours (one waiting for it was moved into it with no
                # word: "mo left", and nothing said to press r: a spectators trial)
                ready = (
                    ""
                    if m.ready
                    else (": press r when you are ready" if new.state == "lobby" else "")
                )
                out.append(f"You have a seat now{ready}")
            continue
        name = safe(m.name)
        was = before.get(mid)
        if was is None:
            if m.role == "spectator" and m.to_race:
                # (they came to play: "joined to watch" was said of one seated next: a trial)
                out.append(f"{name} joined to race the next one")
            else:
                out.append(f"{name} joined" + (" to watch" if m.role == "spectator" else ""))
            continue
        if was.role == "spectator" and m.role == "player":
            # (others still read "root joined to watch": a race-night trial)
            out.append(f"{name} takes a seat to race")
        if was.connected and not m.connected:
            # a dropped line and a quit during a race look alike to the server: both keep the
            # seat for a while, so the message says only what is known
            if m.role == "spectator":
                out.append(f"{name} stopped watching")
            else:
                out.append(f"{name} is away (seat kept {kept_for(grace_s)})")
        elif not was.connected and m.connected:
            watching = m.role == "spectator" or mid in released
            out.append(f"{name} is back" + (", watching" if watching else ""))
        if m.rematch and not was.rematch:
            out.append(f"{name} asks for a rematch")
    was_host = next((mid for mid, m in before.items() if m.host), None)
    host = next((mid for mid, m in after.items() if m.host), None)
    told: set[int] = set()
    if host != was_host and host is not None and host == you and was_host is not None:
        # first, and with why: the keys that run the room are now yours
        keys = (
            "s takes the room to the lobby for the next race, n asks for it"
            if new.state == "results"
            # (in the countdown s does nothing: "s starts the race" was said: a trial)
            else "r stops the countdown, g o v m t u + - p w change the settings"
            if new.state == "countdown"
            else "s starts the race, g o v m t u + - p w change it, k removes someone"
        )
        # a watcher made host (the room's people gone, its bots left) has none of those keys:
        # s and n do nothing for one who does not race (offered, they did nothing: a trial);
        # one who came to race takes the room to the lobby with s, and races there
        me = after[host]
        if me.role == "spectator":
            keys = (
                "s takes the room to the lobby, where you race"
                if me.to_race and new.state == "results"
                else ""
            )
        now_host = "You are the host now" + (f": {keys}" if keys else "")
        if was_host not in after:
            told.add(was_host)
            # (one sentence each: "...: their seat was released: you are the host now: s
            # takes..." was a chain of colons, a timed-race trial)
            out.insert(0, f"{_gone(before[was_host])}. {now_host}")
        else:
            out.insert(0, now_host)
    elif host != was_host and host is not None and host in after and was_host is not None:
        # everyone else learns it too: who runs the room now (only the new host was told)
        host_name = safe(after[host].name)
        if was_host not in after:
            told.add(was_host)
            out.insert(0, f"{_gone(before[was_host])}. {host_name} is the host now")
        else:
            out.insert(0, f"{host_name} is the host now")
    for mid, m in before.items():
        if mid not in after and mid != you and mid not in told:
            if mid in removed:  # by the host: you, or the one the server said (member_removed)
                who = "You" if was_host == you else "The host"
                out.append(f"{who} removed {safe(m.name)} from the room")
            else:
                out.append(_gone(m))
    if old.state == "countdown" and new.state == "lobby":
        stopped = [m for mid, m in after.items() if not m.ready and before.get(mid, m).ready]
        if new.settings != old.settings:
            out.append("The countdown stopped: the host is changing the settings")
        elif stopped:
            who = "you" if stopped[0].id == you else safe(stopped[0].name)
            out.append(f"The countdown stopped: {who} pressed not ready")
    if old.state == "results" and new.state == "lobby":
        out.append("Back in the lobby for the next race")
    if (
        new.state == "lobby"
        and old.state in ("lobby", "countdown")
        and new.settings != old.settings
    ):
        new_host = next((m for m in new.members if m.host), None)
        who = "You" if new_host is not None and new_host.id == you else "The host"
        said = f"{who} changed the settings: {settings_change(old.settings, new.settings)}"
        mine_before, mine = before.get(you or -1), after.get(you or -1)
        if mine_before is not None and mine is not None and mine_before.ready and not mine.ready:
            said += " (not ready any more: r when you are)"
        out.append(said)
    return out


def settings_change(old: PublicSettings, new: PublicSettings) -> str:
    """What changed between two settings, in words: ``Louis``, ``undo off``, ``8 seats``..."""
    parts: list[str] = []
    if (old.game, old.options, old.numbering) != (new.game, new.options, new.numbering):
        parts.append(safe(new.title))
    if new.mode != old.mode:
        parts.append("mode: " + ("first to win" if new.mode == "first" else "highest score"))
    if new.time_limit != old.time_limit:
        limit = new.time_limit
        parts.append(
            "no time limit"
            if not limit
            else f"time limit {limit // 60} min"
            if not limit % 60
            else f"time limit {limit} s"
        )
    if new.undo != old.undo:
        parts.append(f"undo {new.undo}")
    if new.seats != old.seats:
        parts.append(f"{new.seats} seats")
    if new.private != old.private:
        parts.append("private" if new.private else "public")
    if new.winnable != old.winnable:
        parts.append("certified winnable deal" if new.winnable else "random deal")
    if new.fixed_deal != old.fixed_deal:
        parts.append("fixed deal" if new.fixed_deal else "random deal")
    return ", ".join(parts) or safe(new.title)


def progress_changes(old: list[Progress], new: list[Progress], you: int | None) -> list[str]:
    """What happened in the race between two progress updates: who won, resigned, got stuck."""
    out: list[str] = []
    before = {p.id: p for p in old}
    if not before:
        return out
    winners = sum(1 for p in old if p.status == "won")
    for p in new:
        was = before.get(p.id)
        if was is None or was.status == p.status:
            continue
        who = "you" if p.id == you else safe(p.name)
        if p.status == "won":
            winners += 1
            out.append(f"{who} won" if winners == 1 else f"{who} finished {ordinal(winners)}")
        elif p.status == "resigned":
            out.append(f"{who} resigned")
        elif p.status == "stuck":
            out.append(f"{who} {'are' if p.id == you else 'is'} stuck: no move left")
        elif p.status == "disconnected" and p.id != you:
            out.append(f"{who} was away too long: their seat was released")
        elif p.status == "left" and p.id != you:
            # still connected: out of the race for making no move (a racer who leaves is gone)
            out.append(
                f"{who} {'is out: no move for too long' if p.connected else 'left the race'}"
            )
    mine_before, mine = before.get(you or -1), next((p for p in new if p.id == you), None)
    if mine is not None and mine.status in FINISHED and mine.status != "disconnected":
        playing = [safe(p.name) for p in new if p.status == "playing"]
        if playing and ((mine_before is not None and mine_before.status != mine.status) or out):
            out.append("waiting for " + ", ".join(playing))
    return out
