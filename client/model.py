"""The client's view state as plain code: what the player sees.

:class:`RaceModel` takes server events (``apply``) and keeps the room, the player's own board (a
:class:`~protocol.game.GameState` built from what they may see), everyone's progress and the
results, and checks the revealed deal against every card it was shown; the functions after it
put what changed into words.  What the keys mean is :mod:`client.keys`.  Nothing here does I/O;
``client.app`` draws it and ``client.session`` talks to the server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from protocol import cards
from protocol.config import GameConfig, config_or_none
from protocol.fairness import Witness, verify
from protocol.game import GameState, state_class
from protocol.messages import (
    Countdown,
    Error,
    Event,
    Joined,
    Kicked,
    Member,
    MemberRemoved,
    Moved,
    Notice,
    Progress,
    ProgressUpdate,
    RaceOver,
    RaceRecord,
    RaceStart,
    Reveal,
    RoomInfo,
    RoomUpdate,
    Snapshot,
    Standing,
    from_wire,
)
from protocol.moves import IllegalMove, Kind, Move, Placed

from .changes import AWAY, progress_changes, room_changes, top_line
from .text import ordinal, safe, sentence


@dataclass
class LastResults:
    """A finished race as its results screen shows it: kept until its viewer leaves it, even
    when the room has moved on to the lobby or the next race."""

    race_id: str | None
    title: str
    game: str
    standings: list[Standing]
    reveal: Reveal | None
    verdict: str | None
    verified: bool | None
    record_at: str | None = None
    """Where the race's public record is: its URL on the server, or the file it was saved in
    (``patience-race play``'s races); set by the app."""
    record_saved: bool = False
    """``record_at`` is a file on this computer."""
    undo: bool = True
    """The race allowed undo (without it the table has no undos column: all would be 0)."""
    stopped: bool = False
    """The race was stopped (its room closed): whoever was still playing is not "idle"."""


BACK_WINDOW_S = 15.0
"""Seconds after this client took its seat back during which the others coming back are added to
what it was told (:meth:`RaceModel.back_together`)."""


@dataclass
class MissedEnd:
    """A race this client played and never heard the end of: its link stalled as the race
    ended, and the room went on to another.  What it needs to check that race's record."""

    race_id: str
    commitment: str | None
    witness: Witness
    complete: bool
    you: int | None


@dataclass
class RaceModel:
    name: str = ""
    you: int | None = None
    role: str = "player"
    token: str | None = None
    room: RoomInfo | None = None
    phase: str = "connecting"
    """connecting, lobby, countdown, racing, results, kicked, gone"""
    countdown_end: float | None = None
    race_id: str | None = None
    commitment: str | None = None
    config: GameConfig | None = None
    state: GameState | None = None
    started: float | None = None
    """Local monotonic time the race started (elapsed time is shown from it)."""
    time_limit_ms: int | None = None
    progress: list[Progress] = field(default_factory=list)
    standings: list[Standing] | None = None
    reveal: Reveal | None = None
    verdict: str | None = None
    verified: bool | None = None
    status: str = ""
    witness: Witness = field(default_factory=Witness)
    witness_complete: bool = True
    needs_resync: bool = False
    last: LastResults | None = None
    """The latest results, for the results screen."""
    holding: bool = False
    """The results screen stays up (until ``n`` or ``q``), whatever the room does meanwhile."""
    asked_rematch: bool = False
    """This player asked for a rematch on the results screen."""
    log: list[str] = field(default_factory=list)
    """What happened, newest last (joins, leaves, resignations...): see :meth:`say`."""
    out_reason: str | None = None
    """Why the server took you out of the race, until the progress that shows it comes."""
    seat_released: bool = False
    missed: MissedEnd | None = None
    """The race played before the one the room is in now, if its end never came (the session
    fetches its record, :meth:`missed_result` checks it: its results and its check were lost
    with the race over, a review)."""
    bots: set[int] = field(default_factory=set)
    """Every member of this room seen to be a bot (it keeps its "(bot)" after it left)."""
    back_status: str = ""
    """What this client was told when it took its seat back (:meth:`back_together`)."""
    back_until: float = 0.0
    back_names: list[str] = field(default_factory=list)
    helena_layout: tuple[tuple[object, ...], int, int, bool] | None = None
    """St. Helena and Louis: the deal and screen size for which the board was laid out, the
    cards' width and gap chosen, and whether it went to one row a pile (client.helena_board keeps
    all three until the next deal or a resize: one card more must not move the board)."""
    screen: tuple[int, int] | None = None
    """The terminal's size (columns, lines), set by the app before each drawing: what a resize
    changes.  The board's own height also changes with the status line's (a message of two
    lines), which must not move the board (:attr:`helena_layout`)."""
    removed: set[int] = field(default_factory=set)
    """Members the host removed (this client, or another as the server said:
    ``member_removed``): their going is said as such, not as leaving."""
    grace_s: float | None = None
    """How long the server keeps a seat in a race for a player who dropped (its ``welcome``
    says; None: an older server, which did not)."""
    room_said: str = ""
    """...and what it said (the status line then)."""
    room_said_at: float = -1e9
    """When a room update last said what changed (the countdown it starts keeps the line)."""

    @property
    def undo_allowed(self) -> bool:
        """The room's races allow undo (true while its settings are not known)."""
        return self.room is None or self.room.settings.undo != "off"

    def say(self, message: str) -> None:
        """A thing that happened: into the log and the status line."""
        self.say_all([message])

    def say_all(self, messages: list[str], now: float | None = None) -> None:
        """Things that happened at once (one room update): each into the log, all of them on the
        status line, the first first (the status line shows one line: the last alone lost "you
        are the host now" behind "Ann left")."""
        if not messages:
            return
        self._into_log(messages)
        # sentences, whatever each starts with ("Leo takes a seat to race; Back in the lobby":
        # a timed-race trial)
        self.status = sentences(messages)

    def _into_log(self, messages: list[str]) -> None:
        self.log.extend(messages)
        del self.log[:-50]

    def _say_room_changes(self, messages: list[str], now: float | None) -> None:
        """What a room update changed (:meth:`say_all`); just after this client took its seat
        back (:meth:`back_together`) and while the status line still says so, the others coming
        back too are added to that line rather than put in its place, and those who went away
        again taken out of it.  Anything else the status line said meanwhile ("Go!", a kick, a
        quit prompt), or a change of host (said first, with its keys), ends that."""
        now = time.monotonic() if now is None else now
        window = (
            self.back_status
            and now < self.back_until
            and self.status.startswith(self.back_status)
            and not any("you are the host now" in m.lower() for m in messages)
        )
        if not window:
            self.back_status = ""
            self.say_all(messages)
            return
        if not messages:
            return
        self._into_log(messages)
        others = []
        for m in messages:
            if m.endswith(" is back"):
                name = m.removesuffix(" is back")
                if name not in self.back_names:
                    self.back_names.append(name)
            elif AWAY.search(m):
                name = AWAY.sub("", m)
                if name in self.back_names:
                    self.back_names.remove(name)
                others.append(m)
            else:
                others.append(m)
        said = self.back_status
        if self.back_names:
            names = ", ".join(self.back_names)
            said += f" {names} {'is' if len(self.back_names) == 1 else 'are'} back too."
        self.status = f"{said} {sentences(others)}" if others else said

    def back_together(self, status: str, now: float, window: float = BACK_WINDOW_S) -> None:
        """This client took its seat back (``status`` says so): for ``window`` seconds the
        others coming back too (after a server restart, everyone) are added to that line,
        instead of each "X is back" taking its place (every player was left reading another's
        "Ann is back" after a restart, not that they themselves were back)."""
        self.status = self.back_status = status
        self.back_until = now + window
        self.back_names = []

    # -- events ---------------------------------------------------------------------------

    def apply(self, event: Event, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event, now)

    def _on_joined(self, e: Joined, now: float) -> None:
        self.you, self.role, self.token = e.you, e.role, e.token
        self._another_race(e.room.race_id)
        self._set_room(e.room, now)

    def _another_race(self, race_id: str | None) -> None:
        """The room is in a race this client never saw start (a rematch begun while it was
        away, a seat taken again after a release): nothing of the last race's board, witness
        or clock goes with it.  (Kept, the last race's witness was checked against the new
        race's reveal: "the revealed deal does not match", a false alarm; and its board was
        drawn as if still raced: a bad-network trial.)"""
        if race_id is not None and self.race_id is not None and race_id != self.race_id:
            if self.witness.start is not None and self.reveal is None:
                # raced, and its end never came: kept aside to check once its record is had
                self.missed = MissedEnd(
                    self.race_id, self.commitment, self.witness, self.witness_complete, self.you
                )
            self._reset_race()

    def _on_room(self, e: RoomUpdate, now: float) -> None:
        self._set_room(e.room, now)

    def _set_room(self, room: RoomInfo, now: float | None = None) -> None:
        old = self.room
        if old is None or old.code != room.code:
            self.bots = set()
        self.bots |= {m.id for m in room.members if m.bot}  # a bot gone is still one
        if old is not None and old.code == room.code:
            released = {p.id for p in self.progress if p.status == "disconnected"}
            said = room_changes(old, room, self.you, released, self.removed, self.grace_s)
            self._say_room_changes(said, now)
            if said:
                self.room_said_at = time.monotonic() if now is None else now
                self.room_said = self.status
        self.room = room
        me = self.me_member(room)
        if me is not None:
            if self.role == "spectator" and me.role == "player" and me.ready:
                # seated for the next race, ready (joined during the last one to play): when it
                # starts, go to the board as one who asked for it, not stay on the old results
                self.asked_rematch = True
            self.role = me.role
            if me.rematch:
                self.asked_rematch = True
        if room.state == "lobby" and self.phase in ("connecting", "results", "lobby", "countdown"):
            if self.phase in ("results", "countdown"):  # a countdown stopped: no race after all
                self._reset_race()
                if self.holding and self.asked_rematch:
                    self.holding = False  # this player asked to go on: here they are
            self.phase = "lobby"

    def me_member(self, room: RoomInfo | None = None) -> Member | None:
        room = room or self.room
        if room is None:
            return None
        return next((m for m in room.members if m.id == self.you), None)

    def _reset_race(self) -> None:
        self.state = None
        self.seat_released = False  # (kept, a release in a later race went unsaid: a review)
        self.progress = []
        self.standings = None
        self.reveal = None
        self.verdict = None
        self.verified = None
        self.witness = Witness()
        self.witness_complete = True
        self.started = None
        self.time_limit_ms = None
        self.countdown_end = None

    def _on_countdown(self, e: Countdown, now: float) -> None:
        if self.holding and self.asked_rematch:
            self.holding = False
        self.asked_rematch = False
        self._reset_race()
        self.phase = "countdown"
        self.countdown_end = now + e.ms / 1000
        self.race_id = e.race_id
        self.commitment = e.commitment
        if now - self.room_said_at > 1.0 or self.status != self.room_said:
            # (only the room update's own words stay: an older line, "no certified deal is
            # ready yet", stayed under the big 2 of the countdown it was waiting for: a trial)
            # (what the room update that started it said stays: the host left, everyone else
            # ready, and the countdown wiped "Ann left: Bob is the host now": a trial)
            self.status = ""

    def _on_race_start(self, e: RaceStart, now: float) -> None:
        self.phase = "racing"
        self.race_id = e.race_id
        self.commitment = e.commitment
        self.started = now
        self.time_limit_ms = e.time_limit_ms
        if e.board is not None:
            self.config = GameConfig(e.board.game, e.board.options)
            self.state = state_class(self.config).from_view(self.config, e.board)
            self.witness = Witness(start=e.board)
        else:
            self.state = None
        # (under results still up, "Go!" said nothing: moved_on says it; and what the status
        # line said of the results, "Ann asks for a rematch", is over: a verification trial)
        self.status = "" if self.holding else "Go!"

    def _on_moved(self, e: Moved, now: float) -> None:
        if self.state is None:
            return
        move = from_wire(e.move)
        try:
            if move.kind == Kind.UNDO:
                self.state.apply(move)
                applied = Move(Kind.UNDO)
            else:
                applied = self.state.apply(move).move
            for s in e.shown:
                self.state.show(Placed(s.pile, s.index, cards.parse(s.card)))
        except (IllegalMove, ValueError):
            # our copy and the server's disagree (after a reconnection): ask for a snapshot
            self.needs_resync = True
            self.witness_complete = False
            return
        if self.witness_complete:
            self.witness.saw(
                applied, [Placed(s.pile, s.index, cards.parse(s.card)) for s in e.shown]
            )

    def _on_progress(self, e: ProgressUpdate, now: float) -> None:
        if self.phase == "racing":
            messages = progress_changes(self.progress, e.players, self.you)
            for message in messages:
                self.say(message)
            if self.out_reason is not None and messages:
                # why you are out stays in view: the progress that shows it comes just after
                self.status = f"{self.out_reason}; {messages[-1]}"
                self.out_reason = None
        self.progress = e.players
        if self.started is not None and self.phase == "racing":
            self.started = now - e.elapsed_ms / 1000  # follow the server's clock

    def _on_race_over(self, e: RaceOver, now: float) -> None:
        self.phase = "results"
        self.standings = e.standings
        self.reveal = e.reveal
        self._verify()
        self._hold_results()
        if self.last is not None:
            self.last.stopped = e.reason == "aborted"
        why = {"time_up": "time is up", "all_done": "everyone has finished"}.get(
            e.reason, "the race was stopped"
        )
        self.status = f"Race over: {why}." + top_line(e.standings)

    def _hold_results(self) -> None:
        room = self.room
        self.last = LastResults(
            race_id=self.race_id,
            title=room.settings.title if room else "",
            game=room.settings.game if room else "",
            standings=list(self.standings or []),
            reveal=self.reveal,
            verdict=self.verdict,
            verified=self.verified,
            undo=self.undo_allowed,
        )
        self.holding = True
        self.asked_rematch = False

    def leave_results(self) -> None:
        """The viewer is done with the results screen: show what the room is doing now."""
        self.holding = False
        if self.room is not None and self.phase == "results" and self.room.state != "results":
            self._reset_race()
            self.phase = self.room.state

    def _on_snapshot(self, e: Snapshot, now: float) -> None:
        self.you, self.role = e.you, e.role
        if self.room is None or self.room.code != e.room.code:
            self.bots = set()
        self.bots |= {m.id for m in e.room.members if m.bot}  # (a seat taken back: as _set_room)
        self._another_race(e.room.race_id)
        self.room = e.room
        self.progress = e.progress
        self.needs_resync = False
        if e.board is not None:
            self.config = GameConfig(e.board.game, e.board.options)
            fresh = state_class(self.config).from_view(self.config, e.board)
            if self.state is None or self.state.view().tableau != e.board.tableau:
                if self.state is not None:
                    self.witness_complete = False
                self.state = fresh
        if e.elapsed_ms is not None:
            self.started = now - e.elapsed_ms / 1000
        self.time_limit_ms = e.time_limit_ms
        mine = next((p for p in e.progress if p.id == e.you), None)
        if mine is not None and mine.status == "disconnected" and not self.seat_released:
            self.seat_released = True
            self.say(
                "you were away too long: your seat in this race was released; you are watching"
            )
        state = e.room.state
        me = self.me_member(e.room)
        if state == "results":
            # the server's word, after a drop: a rematch asked over a link that lost it was
            # never asked, and n must ask again (it did nothing: "waiting for" you for ever)
            self.asked_rematch = me is not None and me.rematch
        elif state == "racing" and e.board is not None and self.holding:
            # seated in the race that started meanwhile (a rematch that arrived late): to the
            # board, not the old results while the race's clock runs
            self.holding = False
        elif (
            state in ("lobby", "countdown")
            and self.holding
            and me is not None
            and me.role == "player"
            and me.ready
        ):
            # ready for the next race: only a rematch asked (its answer lost) or a seat taken
            # to play makes one so; where the room is, not the old results
            self.asked_rematch = True
            self.holding = False
        if state == "countdown":
            if e.countdown_ms is None:  # held after a server restart until everyone is back
                self.countdown_end = None
                self.status = "The countdown starts again when everyone is back."
            else:
                self.countdown_end = now + e.countdown_ms / 1000
        self.race_id = e.room.race_id
        self.commitment = e.room.commitment
        self.phase = state
        if state == "results" and e.standings is not None:
            self.standings = e.standings
            self.reveal = e.reveal
            self._verify()
            if self.last is None or self.last.race_id != self.race_id:
                self._hold_results()

    def _on_kicked(self, e: Kicked, now: float) -> None:
        # results on screen stay there, the room gone under them (a room of watchers closes
        # after its race): nobody's results are taken away; q leaves them
        self.phase = "kicked"
        self.say(sentence(e.message))

    def _on_member_removed(self, e: MemberRemoved, now: float) -> None:
        if e.id != self.you:
            self.removed.add(e.id)  # the room update that follows says so

    def _on_notice(self, e: Notice, now: float) -> None:
        self.status = sentence(e.message)

    def _on_error(self, e: Error, now: float) -> None:
        if e.seq is None and e.code == "player_done":  # the server took you out (no move)
            self.out_reason = sentence(e.message)
            self.say(self.out_reason)
            return
        self.status = sentence(e.message)

    # -- fairness ------------------------------------------------------------------------------

    def _verify(self) -> None:
        reveal = self.reveal
        if reveal is None:
            return
        config = GameConfig(reveal.game, reveal.options, reveal.numbering)
        claimed = self.commitment or reveal.commitment
        # after a reconnection whose board differed from ours, the witness stopped at the drop:
        # every card seen up to it is still checked (docs/rules.md)
        problems = verify(
            config, reveal.number, reveal.salt, claimed, self.witness, reveal.solution
        )
        if self.witness.start is None:
            # no board of this race's start (a spectator, or a client started again during it):
            # only the commitment can be checked (not the role now: a server could send one
            # room update making a player a spectator just before the end, to skip the cards)
            problems = [p for p in problems if "commitment" in p]
        room = self.room
        if room is not None:
            # the game played must be the room's, options that do not change the deal included
            # (build, spaces, relaxed): a commitment and a reveal can agree on other rules
            s = room.settings
            played = config_or_none(s.game, s.options, s.numbering)
            if played != config:
                shown = played.title if played is not None else s.game
                problems.append(f"the room played {shown}, the reveal says {config.title}")
        self.verified = not problems
        if problems:
            self.verdict = "WARNING: the revealed deal does not match: " + "; ".join(problems)
        else:
            if self.witness.start is not None:
                what = "every card you were shown"
            elif self.role == "spectator":
                # (a spectator who watched from the lobby was told it had not seen the race
                # from its start: a timed-race trial)
                what = "the commitment (a spectator is shown no card, so none is checked)"
            else:
                # (why only that, said: "matches the commitment" after a rejoin read as less
                # than the README promised, unexplained: a new-user trial)
                what = (
                    "the commitment (this terminal did not see the race from its start, so "
                    "no card it was shown is checked)"
                )
            partial = "" if self.witness_complete else " (up to your reconnection)"
            self.verdict = f"deal verified: #{reveal.number} matches {what}{partial}"

    def missed_result(self, record: RaceRecord) -> str:
        """The end of the race :attr:`missed` names, from its record: where you placed, and
        whether its deal matches every card you were shown in it."""
        missed, self.missed = self.missed, None
        assert missed is not None and record.race_id == missed.race_id
        reveal = record.reveal
        config = GameConfig(reveal.game, reveal.options, reveal.numbering)
        problems = verify(
            config,
            reveal.number,
            reveal.salt,
            missed.commitment or reveal.commitment,
            missed.witness,
            reveal.solution,
        )
        mine = next((s for s in record.standings if s.id == missed.you), None)
        placed = f": you placed {ordinal(mine.rank)} ({mine.status})" if mine is not None else ""
        if problems:
            check = "WARNING: the revealed deal does not match: " + "; ".join(problems)
        else:
            partial = "" if missed.complete else " (up to your reconnection)"
            check = f"deal verified: #{reveal.number} matches every card you were shown{partial}"
        return f"Your last race ended while you were away{placed}; {check}."

    # -- reading ----------------------------------------------------------------------------------

    def elapsed_ms(self, now: float | None = None) -> int:
        if self.started is None:
            return 0
        now = time.monotonic() if now is None else now
        return max(0, int((now - self.started) * 1000))

    def countdown_left_ms(self, now: float | None = None) -> int:
        if self.countdown_end is None:
            return 0
        now = time.monotonic() if now is None else now
        return max(0, int((self.countdown_end - now) * 1000))

    def is_host(self) -> bool:
        me = self.me_member()
        return bool(me and me.host)

    def my_progress(self) -> Progress | None:
        return next((p for p in self.progress if p.id == self.you), None)

    def host_name(self) -> str:
        room = self.room
        host = next((m for m in room.members if m.host), None) if room else None
        return safe(host.name) if host else "the host"

    def moved_on(self) -> str | None:
        """While the results stay up: what the room is doing meanwhile (None: still the results)."""
        room = self.room
        if not self.holding or room is None or self.phase == "kicked":
            return None
        if room.state == "lobby":
            me = self.me_member()
            others = [
                m for m in room.members if m.role == "player" and m.id != self.you and m.connected
            ]
            if me is not None and me.role == "player" and others and all(m.ready for m in others):
                # the next race waits on this player alone (nothing said so: club-night trial)
                return "back in the lobby, everyone else ready: press n to start the next race"
            return "back in the lobby: press n"
        if room.state in ("countdown", "racing"):
            me = self.me_member()
            seated = self.role == "player" and me is not None and me.ready
            if room.state == "racing" and self.progress and self.my_progress() is None:
                # ready, but left out of it (away when it started): only to watch (it said
                # "press n to join in": a bad-network trial)
                seated = False
            when = "is about to start" if room.state == "countdown" else "has started"
            return f"the next race {when}: press n to {'join in' if seated else 'watch it'}"
        return None

    def rematch_asked(self) -> list[str]:
        """Names of the players who asked for a rematch."""
        room = self.room
        if room is None or room.state != "results":
            return []
        return [safe(m.name) for m in room.members if m.role == "player" and m.rematch]


def sentences(messages: list[str]) -> str:
    """Things said at once, one sentence each ("Leo takes a seat to race; Back in the lobby"
    read badly: a timed-race trial)."""
    return ". ".join([m.rstrip(".") for m in messages[:-1]] + messages[-1:])
