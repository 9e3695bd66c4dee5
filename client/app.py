"""The Textual terminal client: lobby, race and results on one screen.

The screen is drawn from the plain :class:`~client.model.RaceModel` by ``client.render``; keys
go through :class:`~client.keys.Keys`, which checks every move against the rules before it is
sent.  ``patience-race play`` runs the server in this same process and seats bots.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import time
from collections import deque
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events

from protocol.config import SPIDER
from protocol.messages import MAX_NAME, Kick, Member, Moved, RoomInfo, Settings
from protocol.moves import Kind, Move

from . import render, screens
from .args import Plan
from .board_app import O_IS_FOR_SPIDER, SUIT_BACK, BoardApp
from .changes import kept_for
from .keys import HOST_KEYS, PILE_KEYS, auto_home, host_settings, settings_of
from .model import LastResults
from .net import Disconnected, ServerError
from .panel import PANEL_MIN_WIDTH, opponents, standings_line
from .safe import clean
from .saved_races import record_url, save_race
from .session import SeatInUse, Session
from .terminal import program
from .text import safe
from .widgets import HelpScreen, escape_and_key

if TYPE_CHECKING:
    from server.app import RaceServer  # (imported when needed: only ``play`` runs a server)

log = logging.getLogger("patience_race.client")

TYPE_AHEAD = 16
"""Race keys kept while a move awaits the server's answer; past that they are dropped."""
ASKING_REMATCH = "Asking for a rematch..."
TAKE_IT_BACK = "the command that takes it back is printed as you leave"
"""(The command itself, in the status line, broke in two at 80 columns: a terminals trial; the
farewell prints it on a line of its own.)"""
LOBBY_AHEAD = 8
"""Lobby keys waiting for the one before to be answered."""


class RaceApp(BoardApp):
    """A race on a server: getting into its room, then its lobby, countdown, race and results,
    and ``play``'s own server and bots."""

    TITLE = "Patience Race"

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan.name)
        self.plan = plan
        self.session: Session | None = None
        self.server: RaceServer | None = None
        """The server this process runs (``patience-race play``), or None."""
        self.bots: list[asyncio.Task[None]] = []
        self.kick_choice: list[Member] | None = None
        """The host pressed k in the lobby: who the next key may remove (1, 2... 0 for the 10th)."""
        self.kick_shown = 0
        """How many of :attr:`kick_choice` the question numbered."""
        self.typed_ahead: deque[str] = deque()
        """Race keys pressed while a move awaits the server's answer (at most TYPE_AHEAD)."""
        self.kept_options: dict[str, tuple[dict[str, object], str]] = {}
        """The host's options and numbering of each game left with ``g``: back to it, they are."""
        self._sent_settings: tuple[Settings | None, float] = (None, 0.0)
        """The settings the host's last key sent, and when: the next key starts from them until
        the room says it took them (:func:`client.keys.host_settings`'s ``base``)."""
        self.lobby_keys: asyncio.Queue[str] = asyncio.Queue(maxsize=LOBBY_AHEAD)
        """Lobby and countdown keys, done one after another by :meth:`lobby_keys_worker`
        (awaited in the key handler, a command without its answer held every key, q and ?
        too, for up to 10 s: a code review)."""
        self.lobby_worker_started = False
        self.quit_armed_in = ""
        """The screen the first q was pressed on: another screen (the race started) disarms it."""
        self.lost_at: float | None = None
        """When the connection was lost (``time.monotonic``), while it is."""
        self.failed: str | None = None
        self.farewell: str | None = None
        """Said on the terminal after the app is gone (how to take back a seat left)."""
        self.join_hint: str | None = None
        """A command that joins this room from another terminal (set once in the room)."""
        self.records_kept: set[str] = set()
        """The races whose records this ``play`` has fetched (or is fetching) to keep."""
        self.kept_files: dict[str, str] = {}
        """The files the races' records were kept in, by race id (said once the room is gone)."""
        self.record_tasks: set[asyncio.Task[None]] = set()

    # -- getting into a room --------------------------------------------------------------

    async def setup(self) -> None:
        from websockets.exceptions import InvalidHandshake, InvalidURI

        from .session import join_command

        plan = self.plan
        try:
            url = plan.url
            if url is None:
                from server.app import RaceServer
                from server.limits import Limits
                from server.pool import DealPool
                from server.store import Store

                # a pool that certifies nothing until a room asks (--deal winnable, or w in
                # the lobby: without one, w said "this server does not certify deals": a trial)
                self.server = RaceServer(
                    "127.0.0.1",
                    plan.port,
                    limits=Limits(countdown_ms=3000),
                    store=Store(":memory:"),
                    pool=DealPool(size=1, prefill=False),
                )
                try:
                    await self.server.start()
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE:
                        raise
                    # (it said "Could not get into the room: [Errno 98] error while attempting
                    # to bind...": nothing to do with a room, a new-user trial)
                    self.server = None
                    self.failed = (
                        f"port {plan.port} is in use on this computer (another server?): "
                        "give another --port, or none for any free one"
                    )
                    self.model.status = f"Could not start the race: {self.failed}."
                    self.model.phase = "gone"
                    self.exit()
                    return
                url = self.server.url
            self.session = Session(url, self.model, self.refresh_view)
            # a server inside this process is gone when it quits: nothing to resume; a
            # spectator never takes or resumes a seat
            self.session.remember = plan.url is not None and plan.action != "watch"
            try:
                await self.session.connect()
            except (OSError, TimeoutError, InvalidURI, InvalidHandshake, Disconnected) as exc:
                self.failed = f"cannot reach the race server at {url}: {exc}"
                self.exit()
                return
            if plan.action in ("play", "host"):
                await self.session.create(plan.name, plan.settings or Settings())
            else:
                assert plan.code is not None
                await self._join(plan)
                if plan.note:
                    self.model.status = f"{plan.note} {self.model.status}".strip()
            code = self.session.code
            assert code is not None
            self.join_hint = join_command(code, url, embedded=plan.url is None)
            self.session.start_events()
            if plan.bots:
                from .bot import start_bots

                self.bots += start_bots(url, code, plan.bots, plan.bot_level, plan.bot_think)
            if plan.auto_ready:
                await self.wait_for_players(plan.bots + 1)
                if plan.bots:
                    await self.session.ready(True)
                else:
                    await self.session.start()
        except (ServerError, SeatInUse, Disconnected, OSError) as exc:
            self.failed = (
                exc.message
                if isinstance(exc, ServerError)
                else exc.reason
                if isinstance(exc, Disconnected) and exc.code is None and exc.reason
                else str(exc)
            )
            if isinstance(exc, ServerError) and exc.code == "name_taken":
                # (no way forward was said: a new-user trial)
                self.failed += ": pass --name with another name"
            self.model.status = f"Could not get into the room: {self.failed}."
            self.model.phase = "gone"
        self.refresh_view()

    async def _join(self, plan: Plan) -> None:
        """Join (or watch) the plan's room; a default name the room already has gets a number."""
        assert plan.code is not None
        session = self.session
        assert session is not None  # (connected by setup)
        spectate = plan.action == "watch"
        names = [plan.name]
        if plan.any_name:
            names += [f"{plan.name[: MAX_NAME - 1 - len(str(i))]} {i}" for i in range(2, 10)]
        for i, name in enumerate(names):
            try:
                await session.join(plan.code, name, spectate=spectate)
                return
            except ServerError as exc:
                if exc.code != "name_taken" or i == len(names) - 1:
                    raise

    async def wait_for_players(self, n: int, timeout: float = 15.0) -> None:
        """Until ``n`` players are seated (the bots have joined), or the time runs out."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while loop.time() < end:
            room = self.model.room
            if room is not None and sum(1 for m in room.members if m.role == "player") >= n:
                return
            await asyncio.sleep(0.05)

    # -- drawing ----------------------------------------------------------------------------

    def refresh_view(self) -> None:
        if self.is_running:
            self._place_record()
        super().refresh_view()

    def _place_record(self) -> None:
        """Say where the last race's record is: on the server, or (``play``, whose server goes
        when it quits) in a file, fetched once the race is over.  A race on a server of its own
        that this player raced in is kept in a file too, unsaid (``patience-race races`` lists
        them: the next morning, nobody could find the night's races: a race-night trial)."""
        last, session = self.model.last, self.session
        if (
            last is not None
            and last.race_id in self.kept_files
            and not last.record_saved
            and self.model.phase in ("kicked", "gone")
        ):
            # the room is gone, maybe its server too (play's, whose player quit): the copy kept
            # here, not a URL that may answer no more (a review)
            last.record_at, last.record_saved = self.kept_files[last.race_id], True
        if last is None or not last.race_id or last.record_at is not None or session is None:
            return
        if self.server is None:
            last.record_at = record_url(session.url, last.race_id)
            # (by id, or by name: one whose seat was released, back after the end as a new
            # member, raced in it all the same: a verification trial)
            raced = any(s.id == self.model.you or s.name == self.model.name for s in last.standings)
            if not raced or not session.remember:
                return
        if last.race_id not in self.records_kept:
            self.records_kept.add(last.race_id)
            keep = self._keep_record(last, say=self.server is not None)
            task = asyncio.get_running_loop().create_task(keep)
            self.record_tasks.add(task)
            task.add_done_callback(self.record_tasks.discard)

    async def _keep_record(self, last: LastResults, say: bool = True) -> None:
        """Fetch the race's record and keep it in a file; ``say``: the results then point to
        the file (``play``), else they go on pointing to the server's copy."""
        assert self.session is not None and last.race_id is not None
        record = await self.session.race_record(last.race_id)
        if record is None:
            return
        try:
            path = await asyncio.to_thread(save_race, record, None, last.race_id)
        except (OSError, ValueError) as exc:
            if say:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                self.model.status = f"The race's record could not be saved: {clean(str(why))}."
            else:
                log.warning("race %s not kept: %s", last.race_id, exc)
        else:
            self.kept_files[last.race_id] = str(path)
            # said as well once the room is gone (its server may be too: play's, whose player
            # quit, and the results pointed to it: a records trial)
            if say or self.model.phase in ("kicked", "gone"):
                last.record_at, last.record_saved = str(path), True
        self.refresh_view()

    def _draw(self) -> None:
        m = self.model
        if self.keys.follow():
            self.typed_ahead.clear()  # keys typed ahead in another race are not for this one
        if m.phase == "racing" and self.session is not None and self.session.connected:
            self.keys.slow_answer(time.monotonic())
        if self.kick_choice is not None and (m.phase != "lobby" or m.holding or not m.is_host()):
            self.kick_choice = None  # "remove whom?" is a lobby's question: not asked past it
        if self.quit_armed and self.quit_armed_in != self.where():
            # (a q pressed in the lobby, then the race started: one q left the race: a trial)
            self.drop_quit()
        reconnecting = (
            self.session is not None
            and not self.session.connected
            and m.phase not in ("gone", "kicked", "connecting")  # (connecting: not lost yet)
        )
        # the clock stops where it was while the connection is lost: the server may be down,
        # and one that restarts does not count that time (the next snapshot sets it right)
        if not reconnecting:
            self.lost_at = None
        elif self.lost_at is None:
            self.lost_at = time.monotonic()
        small = self.too_small()
        # (a spectator has no board: everyone's progress is in the main area instead)
        # (from the race's first drawing, before the first progress: the board is laid out
        # once, beside it)
        board_shown = m.phase == "racing" and not m.holding and m.state is not None and not small
        # narrower than the panel and the board need (a large font): the board takes the width
        # and the places are a line under the header (nothing below 80x24 was drawn: a trial)
        side_shown = board_shown and self.size.width >= PANEL_MIN_WIDTH
        places = board_shown and not side_shown
        header = screens.header(m, self.auto_home, self.lost_at, self.size.width, reconnecting)
        if places:
            header.append("\n ")
            header.append_text(standings_line(m, max(20, self.size.width - 3)))
        top_h = 2 if places else 1
        if self.top.styles.height is None or self.top.styles.height.value != top_h:
            self.top.styles.height = top_h
        self.top.update(header)
        main = self.main_view
        status_h = self.draw_status(screens.footer_keys(m), reconnecting)
        height = max(8, self.size.height - top_h - status_h if self.size.height else 18)
        self.grid = None
        side = self.side
        side_w = 40 if self.size.width >= 120 else 32
        # the main area's width as this drawing makes it, not as the last layout left it: at
        # "Go!" the board was laid out for the countdown's whole width (the panel not shown
        # yet), piles 8 to 10 cut off, and a drawing before Textual's next layout did it again
        # (a terminals trial, then a review); the board's padding is a column each side
        width = max(20, (self.size.width or 80) - 2 - (side_w if side_shown else 0))
        # the race's board and the countdown's digits are cropped, never wrapped (a wrapped
        # board shows cards where they are not, and clicks would pick others)
        main.set_class(m.phase in ("racing", "countdown") and not m.holding and not small, "grid")
        if m.phase in ("kicked", "gone") and not m.holding:
            main.update(screens.message_screen(m))
        elif small:
            goes_on = {
                "racing": "the race goes on",
                "countdown": "the race is about to start",
            }.get(m.phase, "you are still in the room")
            if m.holding:
                goes_on = "you are still in the room"
            # (the lobby's and the results' screens said "the race needs": a trial)
            what = "the race" if goes_on.startswith("the race") else "this screen"
            main.update(screens.too_small(self.size.width, self.size.height, what, goes_on))
        elif m.holding:
            main.update(screens.results(m, width, self.join_hint, height))
        elif m.phase == "lobby":
            main.update(screens.lobby(m, join_hint=self.join_hint, width=width, height=height))
        elif m.phase == "countdown":
            main.update(screens.countdown(m, width, height))
        elif m.phase == "racing":
            m.screen = (self.size.width, self.size.height - (top_h - 1))
            self.grid = render.board_grid(m, self.keys, height, width)
            main.update(self.grid.text())
        elif m.phase == "results":
            main.update(screens.results(m, width, self.join_hint, height))
        else:
            main.update(Text("Connecting..."))
        side.display = side_shown
        side.set_class(self.size.width >= 120, "wide")
        if side_shown:  # (built for a hidden panel too, twice a draw for a watcher: a review)
            side.update(opponents(m, side_w - 3, height))

    # -- keys -----------------------------------------------------------------------------------

    async def on_key(self, event: events.Key) -> None:
        split = escape_and_key(event)
        if split:
            for key_event in split:
                await self.on_key(key_event)
            return
        key = event.character if event.character and event.character.isprintable() else event.key
        if key == "escape" and (self.model.phase != "racing" or self.model.holding):
            if self.kick_choice is not None:  # the host's "remove whom?" is dropped
                self.kick_choice = None
                self.model.status = "Nobody removed."
                self.refresh_view()
            elif self.quit_armed:  # (it stayed armed, the question on screen: a trial)
                self.stay()
            return
        event.stop()
        if key == "?" or key == "question_mark":
            phase = "results" if self.model.holding else self.model.phase
            if self.model.role == "spectator" and phase != "lobby":
                phase = "watching"  # (a watcher got the player's keys first: a new-user trial)
            room = self.model.room
            undo = room is None or room.settings.undo != "off"
            self.push_screen(HelpScreen(screens.help_text(phase, undo)))
            return
        if key == "q":
            await self.quit_key()
            return
        if key == "escape" and self.quit_armed:  # (the next escape drops a picked pile)
            self.stay()
            return
        self.drop_quit()
        phase = self.model.phase
        if self.model.holding:
            await self.results_key(key)
        elif phase == "racing":
            await self.race_key(key)
        elif phase in ("lobby", "countdown"):
            if self.lobby_keys.full():
                self.model.status = "Waiting for the server's answer..."
            else:
                self.lobby_keys.put_nowait(key)
                if not self.lobby_worker_started:
                    self.lobby_worker_started = True
                    self.run_worker(self.lobby_keys_worker(), group="lobby")
        self.refresh_view()

    async def quit_key(self) -> None:
        """q: quit at once where nothing is lost, else ask first (the next q quits)."""
        guests = self.guests()
        # others in the room who would lose their host, or you your seat, for one key (it
        # left at once, host and seat gone, nothing said: a new-user trial)
        # (what shutdown does: it leaves the room, seat and all, in the lobby or the results,
        # whatever is on the screen; a race under way keeps the seat)
        leaving = self.people_left_behind() and self.model.phase in ("lobby", "results")
        if (
            self.quit_armed
            or (self.model.holding and not guests and not leaving)
            or (
                self.model.phase in ("lobby", "results", "gone", "kicked", "connecting")
                and not guests
                and not leaving
            )
        ):
            await self.shutdown()
            self.exit()
            return
        self.quit_armed_in = self.where()
        self.ask_quit(self.quit_question(guests, leaving))
        self.refresh_view()

    def quit_question(self, guests: list[str], leaving: bool) -> str:
        """What a first q asks: what quitting now would cost, and whom."""
        if guests:
            return (
                f"Quit? Press q again: the room closes for {', '.join(guests)} "
                "(its server is inside this program)."
            )
        if self.server is not None:
            return "Quit? Press q again (the race ends: the server inside this program stops)."
        if leaving:
            host = " and the host's part passes on" if self.model.is_host() else ""
            bots = ", your bots leave with you" if self.bots else ""
            return (
                f"Leave the room? Press q again (you give up your seat{host}{bots}; "
                "join again to come back, as a new player)."
            )
        if self.model.seat_released and self.model.phase == "racing":
            # no seat is kept: it was released (it said "your seat is kept 60 s" beside
            # the header's "watching": a review)
            bots = "; your bots leave the race for good" if self.bots else ""
            return f"Quit? Press q again (your seat in this race was released{bots})."
        if self.bots and self.session is not None and not self.session.seat_problem:
            # (how long, and how to come back, as without bots; and that the bots do not
            # come back with you: a race-night trial)
            kept = kept_for(self.model.grace_s)
            return (
                f"Quit? Press q again (your bots leave the race for good; your seat is kept "
                f"{kept}: {self._way_back()})."
            )
        if self.model.role == "spectator":
            return "Quit? Press q again (you stop watching)."
        if self.session is not None and self.session.seat_problem:
            return (
                "Quit? Press q again (your seat could not be saved on this computer: "
                "it cannot be taken back)."
            )
        kept = kept_for(self.model.grace_s)
        return f"Quit? Press q again (your seat is kept {kept}: {self._way_back()})."

    async def results_key(self, key: str) -> None:
        """A key on the results screen (held while the room may have moved on)."""
        room = self.model.room
        if key == "n":
            await self.next_from_results()
        elif key == "s":
            self.start_from_results()
        elif key == "r" and room is not None and room.state != "results":
            # the room is in the lobby already: r is ready there, as n (it did nothing, and
            # the host saw this player "waiting": a verification trial)
            await self.next_from_results()
        elif key == "r":
            self.model.status = "On the results: n asks for a rematch."

    def action_suspend_process(self) -> None:
        """Ctrl+Z: to the shell, but for ``play``, whose server runs in this process: stopped,
        it would stop everyone's race with it (its bots, friends who joined: a review)."""
        if self.server is not None:
            self.model.status = (
                "Ctrl+Z would stop the server inside this program, and the race of everyone in "
                "it: not here (q q quits)."
            )
            self.refresh_view()
            return
        super().action_suspend_process()

    def _way_back(self) -> str:
        """How the quit question says a seat kept is taken back: the command is printed as the
        program ends (:meth:`shutdown`), when there is one to print."""
        session = self.session
        if self.join_hint and session is not None and session.remember:
            return TAKE_IT_BACK
        return "join again"

    async def lobby_keys_worker(self) -> None:
        """The lobby's keys in the order pressed, each after the one before has its answer
        (one worker for the app's life: it waits for the next key)."""
        while True:
            key = await self.lobby_keys.get()
            try:
                await self.lobby_key(key)
            except (ServerError, Disconnected, OSError, TimeoutError) as exc:
                # (the session says most itself; what reaches here is said, not fatal)
                self.model.status = f"That did not work: {exc}."
            finally:
                self.refresh_view()

    def where(self) -> str:
        """The screen shown: the results while they are held, else the room's phase."""
        return "results" if self.model.holding else self.model.phase

    def guests(self) -> list[str]:
        """With the server inside this program (``play``): the people (not bots) connected to
        its room from elsewhere, whom quitting would leave without a room."""
        room = self.model.room
        if self.server is None or room is None:
            return []
        return [
            safe(m.name)
            for m in room.members
            if m.id != self.model.you and m.connected and not m.bot
        ]

    def people_left_behind(self) -> bool:
        """On a server of its own (not ``play``'s): a player with other people (not bots) in
        the room, who would give up their seat, and maybe the host's part, to one key."""
        room = self.model.room
        if self.server is not None or room is None or self.model.role != "player":
            return False
        return any(m.id != self.model.you and not m.bot for m in room.members)

    def start_from_results(self) -> None:
        """The host's ``s`` on the results: the next race, whoever has asked or not (the room
        goes back to the lobby, where those who asked are ready and the others can get ready)."""
        model, session = self.model, self.session
        room = model.room
        if (
            session is None
            or room is None
            or model.phase in ("kicked", "gone")
            or room.state != "results"
            or not model.is_host()
        ):
            return
        me = model.me_member()
        if model.role != "player" and not (me is not None and me.to_race):
            return  # a watcher host who came only to watch: no race to go to
        model.asked_rematch = True  # to the lobby with the room, off the results
        model.status = "Back to the lobby: s starts the next race, once you have set it up."
        self.run_worker(session.start(), group="cmd")

    async def _ask_rematch(self, session: Session) -> None:
        """Ask for a rematch; one that got no answer (a drop) was not asked: n asks again."""
        if await session.rematch() is None:
            me = self.model.me_member()
            if not (me and me.rematch):
                self.model.asked_rematch = False
                self.refresh_view()
        elif self.model.status == ASKING_REMATCH:
            # said once the server has it (it was said at the key, and a frozen link then
            # lost it: the screen claimed a rematch the server never had, a flaky-network trial)
            self.model.status = "You asked for a rematch."
            self.refresh_view()

    async def next_from_results(self) -> None:
        """``n`` on the results: ask for a rematch while the room is still on its results
        (the screen stays until the room moves on), else go where the room is (and get ready
        in the lobby)."""
        model, session = self.model, self.session
        room = model.room
        if session is None or room is None or model.phase in ("kicked", "gone"):
            return  # the room is gone (its results stay up: q leaves them)
        if room.state == "results" and model.role != "player":
            return  # a spectator's n follows the room once it moves on
        if model.role == "player" and room.state == "results":
            if not model.asked_rematch:
                model.asked_rematch = True
                model.status = ASKING_REMATCH
                self.run_worker(self._ask_rematch(session), group="cmd")
            return
        model.leave_results()
        if model.role == "player" and room.state == "lobby":
            me = model.me_member()
            if not (me and me.ready):
                self.run_worker(session.ready(True), group="cmd")
            model.status = "In the lobby, ready for the next race (r: not ready)."

    async def race_key(self, key: str) -> None:
        if self.model.role == "spectator" or self.model.state is None:
            # no board: a player's key does nothing (o switched a watcher's auto-home off for
            # the races it later sat in, unseen: a timed-race trial)
            if key != "escape":
                self.model.status = "You are watching: no board to play here (? lists the keys)."
            return
        session = self.session
        if session is not None and not session.connected and key not in ("h", "o", "escape"):
            # said, not silently lost (a move typed while the server restarts)
            self.model.status = (
                "Not connected: that key was not sent. Your board is as it was; "
                "play on once reconnected."
            )
            return
        if self.keys.pending and key != "h":
            # typed ahead of the server's answer: played once it is in (a move is checked
            # against the board it will be played on), in order
            if len(self.typed_ahead) < TYPE_AHEAD:
                self.typed_ahead.append(key)
            else:
                self.model.status = (
                    "Too many keys ahead of the server's answer: that one was dropped."
                )
            return
        if key == "h":
            self.model.status = (
                "No hints in a race: they are for practice (patience-race practice)."
            )
            return
        if key == "o":
            state = self.model.state
            if state is not None and state.config.game != SPIDER:
                self.model.status = O_IS_FOR_SPIDER
                return
            self.auto_home = not self.auto_home
            self.model.status = (
                f"Complete suits go home automatically: {'on' if self.auto_home else 'off'}."
            )
            if self.auto_home:
                self.maybe_home()
            return
        move = self.keys.press(key)
        if move is not None:
            self.dispatch(move)

    def dispatch(self, move: Move, by_itself: bool = False) -> None:
        """Make ``move`` (checked by the keys, which now wait for it): sent to the server."""
        self.run_worker(self.send_move(move, by_itself), group="move")

    async def send_move(self, move: Move, by_itself: bool = False) -> None:
        """Send ``move`` (``by_itself``: a complete suit sent home by auto-home) and, once it is
        answered, what follows: auto-home, then the keys typed meanwhile."""
        assert self.session is not None
        answer = None
        try:
            answer = await self.session.move(move)
        finally:
            self.keys.answered()
            if answer is None:
                # refused or not connected: keys typed on are moot, and said to be (they went
                # silently: a bad-network trial)
                dropped = len(self.typed_ahead)
                self.typed_ahead.clear()
                if dropped and self.session.unsettled is not None:
                    self.session.typed_dropped = dropped
        if by_itself and isinstance(answer, Moved):
            # said: it is a move, and a card it turns up is where undo stops
            said = "A complete suit went home by itself (o turns that off)"
            if answer.shown:
                said += f"; it turned up {answer.shown[0].card}, so undo stops there"
            self.model.status = said + "."
        state = self.model.state
        if move.kind == Kind.UNDO:
            if self.auto_home and state is not None and auto_home(state) is not None:
                # the undo took a suit back from home: sending it home again at once would
                # make every u a move and an undo that changes nothing
                self.auto_home = False
                self.model.status = SUIT_BACK
        elif move.kind != Kind.FOUNDATION or move.count != 13:
            self.maybe_home()
        while self.typed_ahead and not self.keys.pending and self.model.phase == "racing":
            await self.race_key(self.typed_ahead.popleft())
        if self.model.phase != "racing":
            self.typed_ahead.clear()
        self.refresh_view()

    async def lobby_key(self, key: str) -> None:
        session, model = self.session, self.model
        if session is None or model.room is None or model.phase not in ("lobby", "countdown"):
            return
        if model.role != "player":
            if key == "r" and model.phase == "lobby":
                # a watcher takes a free seat (they had to leave and join again: a trial)
                model.status = "Taking a seat: you race the next one (r: not ready)."
                await session.take_seat(remember=self.plan.url is not None)
            return
        me = model.me_member()
        late = model.countdown_end is not None and time.monotonic() - model.countdown_end >= 1.0
        if model.phase == "countdown" and late:
            # past zero, the start not heard (a stalled link): the countdown is over, nothing
            # stops it now (r said "You stopped the countdown": a trial)
            model.status = "The race should have started: waiting for the server..."
            return
        if key in ("n", "r") and self.kick_choice is not None:
            # "remove whom?" is answered by a number: any other key is "nobody", and does
            # nothing else (r and n, handled here before it, left it armed, and a later 1
            # removed Amy: a review; then they made you ready too: a verification trial)
            self.kick_choice = None
            model.status = "Nobody removed."
            return
        if key == "n" and model.phase == "lobby":
            # the results' "next race" key, pressed again once there: ready, never not ready
            # (one who asked for the rematch, unready by the host's change of settings, pressed
            # n with the others and stayed waiting: a race-night trial)
            model.status = "You are ready (r: not ready)."
            if not (me and me.ready):
                await session.ready(True)
            return
        if key == "r":
            # in the countdown: not ready after all, which stops it
            ready = model.phase == "lobby" and not (me and me.ready)
            # each press says where it leaves you: the line before ("ready for the next race",
            # "the countdown starts by itself...") stayed, no longer true (a trial)
            model.status = (
                "You are ready (r: not ready)."
                if ready
                else "You are not ready (r: ready)."
                if model.phase == "lobby"
                else "You stopped the countdown: not ready (r: ready)."
            )
            await session.ready(ready)
            return
        if not model.is_host():
            if key in HOST_KEYS and model.phase == "lobby":
                model.status = f"Only the host ({model.host_name()}) changes the room: r is yours."
            return
        if await self._kick_key(session, key):
            return
        if key == "s" and model.phase == "lobby":
            await session.start()
            return
        await self._settings_key(session, key)

    async def _kick_key(self, session: Session, key: str) -> bool:
        """The host's k and the number after it (who to remove); whether the key was theirs."""
        model = self.model
        assert model.room is not None
        kick, self.kick_choice = self.kick_choice, None
        shown, self.kick_shown = self.kick_shown, 0
        if kick is not None and key == "k" and len(kick) > shown:
            kick = kick[shown:]  # the next ones
        elif kick is not None:
            i = PILE_KEYS.find(key)  # 1..9, 0 for the tenth
            if 0 <= i < shown:
                who = kick[i]
                model.status = f"Removing {safe(who.name)}..."
                model.removed.add(who.id)  # the room update that follows says so
                await session.command(Kick(seq=0, id=who.id))
            else:
                model.status = "Nobody removed."
            return True
        if kick is None and key == "k" and model.phase == "lobby":
            kick = [m for m in model.room.members if m.id != model.you]
            if not kick:
                model.status = "Nobody else is in the room."
                return True
        if kick is not None and key == "k":
            # as many as the status line shows whole, up to ten, numbered 1 to 0; k again for
            # the next ones (at 60 columns, or with long names, the question was cut)
            self.kick_choice = kick
            model.status, self.kick_shown = screens.kick_question(
                [(m.name, m.role != "player") for m in kick], max(20, self.size.width - 2)
            )
            return True
        return False

    async def _settings_key(self, session: Session, key: str) -> None:
        """A host's key that changes the room's settings (the game, its options, the mode...)."""
        model = self.model
        assert model.room is not None
        sent, at = self._sent_settings
        pending = sent is not None and time.monotonic() - at < 3 and not _taken(model.room, sent)
        new = host_settings(model.room, key, self.kept_options, sent if pending else None)
        room = model.room.settings
        # the deal the host fixed stays through the lobby's other changes (the time, the mode,
        # an option: any key dropped it for a random deal), after a resume too, when the
        # number is not on this side any more; another game, or a certified deal, drops it,
        # and the status line says so
        keep = (
            isinstance(new, Settings)
            and room.fixed_deal
            and new.game == room.game
            and not new.winnable
            and new.deal_number is None
        )
        number = self.plan.settings.deal_number if self.plan.settings is not None else None
        if keep and isinstance(new, Settings) and not session.speaks("1.2"):
            # a 1.1 server knows no keep_deal (it refused the change as a bad message): the
            # number fixed on the command line, as before, or a random deal (a review)
            keep = False
            if number is not None:
                new = new.model_copy(update={"deal_number": number})
        if isinstance(new, str):
            model.status = new
        elif new is not None:
            self._sent_settings = (new, time.monotonic())
            try:
                await session.update_settings(new, keep_deal=keep)
            except Exception:
                self._sent_settings = (None, 0.0)
                raise

    # -- the end ---------------------------------------------------------------------------------

    async def shutdown(self) -> None:
        session = self.session
        if (
            session is not None
            and session.remember
            and self.join_hint
            and self.model.role == "player"
            and self.model.phase in ("countdown", "racing")
            and not self.model.seat_released
        ):
            # the seat stays for a while, and the way back is a code the screen no longer shows
            # (the hint holds the server's room code: one line, escaped, whatever it sent)
            hint = clean(self.join_hint)
            if session.seat_problem:
                # the server keeps it, but without its token on disk nothing can take it back
                self.farewell = (
                    "Your seat could not be saved on this computer, so it cannot be taken back: "
                    f"{clean(session.seat_problem)}."
                )
            else:
                kept = kept_for(self.model.grace_s)
                gone = " (your bots left the race: they run in this program)" if self.bots else ""
                self.farewell = f"Your seat is kept {kept}{gone}. To take it back:\n  {hint}"
        if self.record_tasks:  # a record being fetched to keep: it is a moment's work
            await asyncio.wait(self.record_tasks, timeout=3)
        if session is not None:
            # a spectator leaves at once: nothing of theirs is kept (they stayed a minute as a
            # ghost in the lobby's Watching list, and their name with them)
            if self.model.phase in ("lobby", "results") or self.model.role == "spectator":
                await session.leave()
            await session.close()
        for task in self.bots:
            task.cancel()
        if self.bots:
            # all together, a few seconds at most: one after another, 5 s each, a host's 15
            # bots held the program past the grace its farewell promised (a verification trial)
            await asyncio.wait(self.bots, timeout=BOTS_LEAVE_S)
        if self.server is not None:
            # a friend who joined from another terminal is told the room is gone for good,
            # rather than left reconnecting to a server that will not come back
            await self.server.close_rooms(
                f"{self.model.name} quit patience-race play, whose server this was"
            )
            self._keep_stopped_race(self.server)
            if self.server.store is not None:
                self.server.store.close()
            self.server = None

    def _keep_stopped_race(self, server: RaceServer) -> None:
        """The race this ``play`` quit, stopped as its server closed, kept in a file as every
        race ``play`` finishes is (``patience-race races`` had none: a records trial), and said
        on the terminal."""
        race_id = self.model.race_id
        if not race_id or race_id in self.records_kept or self.model.role != "player":
            return
        record = server.hub.finished.get(race_id)
        if record is None and server.store is not None:
            record = server.store.race_record(race_id)
        if record is None:
            return
        self.records_kept.add(race_id)
        try:
            path = save_race(record, None, race_id)
        except (OSError, ValueError) as exc:
            log.warning("race %s not kept: %s", race_id, exc)
            return
        kept = f"The race you left is kept in {clean(str(path))} ({program()} races lists it)."
        self.farewell = f"{self.farewell}\n{kept}" if self.farewell else kept


BOTS_LEAVE_S = 3.0
"""How long quitting waits, at most, for the bots of this program to leave their rooms."""


def _taken(room: RoomInfo | None, sent: Settings) -> bool:
    """Whether ``room`` has the settings ``sent`` (as far as a room's public settings tell)."""
    return room is None or settings_of(room.settings) == settings_of(sent)
