"""``patience-race practice``: the race screen's board and keys, alone, with no server.

The board, the keys and the mouse are those of every game played on a board
(:class:`~client.board_app.BoardApp`, :class:`~client.keys.Keys`); moves go to a local
:class:`~client.practice.Practice` instead of a server.  Practice adds ``h`` (a hint, worked out
by the strong bot from what the player sees) and an undo that goes back as far as you like; the
results say how many hints and undos the game took and where its record was saved.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from rich.text import Text
from textual import events

from protocol.config import SPIDER, GameConfig
from protocol.moves import IllegalMove, Kind, Move
from protocol.notation import format_move

from . import render, screens
from .board_app import O_IS_FOR_SPIDER, SUIT_BACK, BoardApp
from .grid import DIM, plain
from .keys import auto_home
from .practice import Practice, describe, picked_count, practice_dir
from .terminal import program
from .text import plural, safe
from .widgets import HelpScreen, escape_and_key

PRACTICE_HELP = (
    """Practice keys  (the rules of each game: docs/rules.md)
  1-9 0 - =   pick a pile, then the pile to move onto (0 is pile 10,
              - 11, = 12);  ↑ / ↓: more / fewer cards of a Spider run
  f           the picked pile home;  k / a: to its king / ace foundation
  d           deal
  r r         redeal (St. Helena, Louis)
  h           a hint: the strong bot's move, from what you can see
  u           undo, as far back as you like (practice only)
  o           Spider: full suits go home by themselves (on/off)
  x x         resign          n n   a new deal
  escape      drop the picked pile
  mouse       click a card: pick the run from it; click a pile: drop
              there; click a foundation: home; click the stock: deal;
              click a key on the bottom line (rr redeal, u undo...);
              a right click puts the picked run down
  q q         quit;  ctrl+z  to the shell (fg comes back)
"""
    + screens.CARDS_HELP
    + """
Spider's score is xpat2's (0-1000); aisleriot's (0-96) is in brackets
(on a narrow screen with a long deal number, in the results only).
Hints and undos are counted, and the results and the saved record say
so. In a race there are no hints, and undo stops at the last card
turned up, deal or redeal.
?  this help: ↑↓ j k space scroll it, any other key goes back."""
)


class PracticeHelp(HelpScreen):
    TEXT = PRACTICE_HELP


class PracticeApp(BoardApp):
    TITLE = "Patience Race: practice"

    def __init__(self, config: GameConfig, number: int | None = None) -> None:
        super().__init__("you")
        self.practice = Practice(config, number)
        self.thinking = False
        self.new_armed = False
        self._sync()

    # -- the model the race screen draws ------------------------------------------------------

    def _sync(self) -> None:
        """Point the race model at the practice game (the board is drawn from it)."""
        m = self.model
        m.phase = "racing"
        m.role = "player"
        m.config = self.practice.config
        m.state = self.practice.state
        m.started = self.practice.started

    async def setup(self) -> None:  # no server, no room
        self._sync()
        p = self.practice
        # (the deal's number whole, to replay it, however narrow the header: it goes last there)
        self.model.status = (
            f"Practice: {p.config.title} #{p.number}. h for a hint, u undoes as far back as "
            "you like, ? for keys."
        )
        self.refresh_view()

    def disarm(self) -> None:
        super().disarm()
        self.new_armed = False

    # -- drawing --------------------------------------------------------------------------------

    def _draw(self) -> None:
        p = self.practice
        self.top.update(self.header())
        main = self.main_view
        status_h = self.draw_status(self.footer(), False)
        width = max(20, main.content_region.width or (self.size.width - 2))
        height = max(8, self.size.height - 1 - status_h if self.size.height else 18)
        self.side.display = False
        main.set_class(not p.game.finished and not self.too_small(), "grid")
        if p.game.finished:
            self.grid = None
            main.update(self.results())
        elif self.too_small():
            self.grid = None
            main.update(
                screens.too_small(self.size.width, self.size.height, "practice", "the game goes on")
            )
        else:
            self.model.screen = (self.size.width, self.size.height)
            self.grid = render.board_grid(self.model, self.keys, height, width)
            main.update(self.grid.text())

    def header(self) -> Text:
        """Counters, auto-home, then the game and its deal number; on a narrow screen the words
        give way first (the second score's name, "auto-"), then the game and its number (to
        replay it) go first; a long deal number (a random one has 20 digits) goes last of all, to
        the end of the line, where it is cut rather than the undos and auto-home (a trial: the
        record and the results keep it whole)."""
        t = self._header("aisleriot ", "auto-home", True)
        for second, home, label in (
            ("", "auto-home", True),
            ("", "home", True),
            ("", "home", False),
            (None, "home", False),  # the second score last (in the results, and ? names it)
            (None, "home", None),
        ):
            if t.cell_len <= self.size.width:
                return t
            t = self._header(second, home, label)
        if t.cell_len > self.size.width:
            # the game's name and number alone, when that fits: its options gave way (a
            # 100-column header cut "Spider (4 suits, relaxed 2, xpat2 numbering) #1234" to
            # "#…": a rules trial); else the number is cut at the end, as above
            short = self._header(None, "home", "short")
            if short.cell_len <= self.size.width:
                return short
        return t

    def _header(self, second: str | None, home: str, label: bool | str | None) -> Text:
        """``label``: "Practice" first and the game and number last (True), the game and number
        first (False), the game first and its number last (None), or the game's name without
        its options but the first, and the number, first ("short")."""
        p = self.practice
        s = p.state
        t = Text(no_wrap=True, overflow="ellipsis")
        title = f"{p.config.title} #{p.number}"
        # (the first option kept, Spider's suits above all: "Spider (4 suits, …)"; the others
        # marked as left out: "St. Helena (build any)" read as spaces none, a trial)
        short = p.config.title.split(",")[0] + (", …)" if "," in p.config.title else "")
        short += f" #{p.number}"
        first = {True: "Practice", False: title, None: p.config.title, "short": short}[label]
        t.append(f" {first} ", style="bold")
        minutes, seconds = divmod(int(p.elapsed()), 60)
        t.append(f" {minutes}:{seconds:02d}", style="yellow")
        t.append(f"  score {s.score()}", style="bold green")
        if s.score2() is not None and second is not None:
            t.append(f" ({second}{s.score2()})", style="green")
        # the hints first of the counters: what practice keeps count of, and where a long deal
        # number leaves the counters to be cut, the last one goes (the hints went)
        t.append(f"  {plural(p.game.hints, 'hint')}", style="magenta")
        t.append(f"  {plural(s.moves, 'move')}  {plural(s.undos, 'undo')}")
        if s.config.game == SPIDER:
            t.append(f"  {home} {'on' if self.auto_home else 'off'}", style=DIM)
        if label is True:
            t.append(f"  {title}", style="bold")
        elif label is None:
            t.append(f"  #{p.number}", style="bold")
        return t

    def footer(self) -> str:
        if self.practice.game.finished:
            return "n: a new deal   q: quit   ?: help"
        state = self.practice.state
        if state.config.game == SPIDER:
            return "1-0 pick  ↑↓ run  f home  d deal  h hint  u undo  xx resign  qq quit  ? help"
        more = "d deal  " if state.deals_left else "rr redeal  " if state.redeals_left else ""
        return f"1-0 -= pick  f/k/a home  {more}h hint  u undo  xx resign  qq quit  ? help"

    def results(self) -> Text:
        p = self.practice
        s = p.state
        t = Text()
        t.append(f"Practice: {p.config.title} #{p.number}\n\n", style="bold")
        t.append(p.summary() + "\n", style="bold yellow" if s.won else "bold")
        score = f"Score {s.score()}"
        if s.score2() is not None:
            score += f" (aisleriot {s.score2()})"
        t.append(score + "\n")
        if p.game.hints:
            t.append(f"Hints were used ({p.game.hints}): the record says so.\n", style="magenta")
        else:
            t.append("No hints used.\n", style=DIM)
        if p.saved is not None:
            t.append(f"\nThe record is saved (check it with {program()} replay FILE):\n")
            # under the home directory as ~/...: the shell reads it back, and it is shorter
            # (a path longer than the screen is wide was cut in the middle of its file name)
            shown = str(p.saved)
            with contextlib.suppress(ValueError, RuntimeError):
                shown = "~/" + str(p.saved.relative_to(Path.home()))
            t.append_text(plain(safe(shown), "cyan"))
            t.append("\n")
        t.append("\nn: a new deal    q: quit\n", style="bold")
        return t

    # -- keys -----------------------------------------------------------------------------------

    async def on_key(self, event: events.Key) -> None:
        split = escape_and_key(event)
        if split:
            for key_event in split:
                await self.on_key(key_event)
            return
        key = event.character if event.character and event.character.isprintable() else event.key
        event.stop()
        event.prevent_default()
        m, p = self.model, self.practice
        if key != "x":  # any other key plays on: a half-pressed resign or redeal is dropped
            self.keys.confirm_resign = False  # (practice's own keys, n h o ?, kept it: a review)
        if key != "r":
            self.keys.confirm_redeal = False
        if key in ("?", "question_mark"):
            self.push_screen(PracticeHelp())
            return
        if key == "q":
            stuck = p.state.stuck and not p.game.finished
            if self.quit_armed or p.game.finished:
                if stuck:
                    # no move left, and left so: over, saved as stuck (as the README says; it
                    # was saved only if resigned: a St. Helena trial)
                    self._save()
                self.exit()
                return
            self.ask_quit(
                "Quit? Press q again (no move is left: the game is saved as stuck)."
                if stuck
                else "Quit? Press q again (the game is not saved unless it is over)."
            )
            self.refresh_view()
            return
        if key == "escape" and self.quit_armed:  # (the next escape drops a picked pile)
            self.stay()
            return
        self.drop_quit()
        if key == "n":
            if p.game.finished or self.new_armed:
                self.new_armed = False
                if p.state.stuck and not p.game.finished:
                    self._save()  # over, as on quitting: saved as stuck
                p.new_game()
                self.keys.source, self.keys.count = None, 0
                # (an x or r half-pressed on the old deal resigned or redealt the new one)
                self.keys.confirm_resign = self.keys.confirm_redeal = False
                self._sync()
                m.status = f"A new deal: {p.config.title} #{p.number}."
            else:
                self.new_armed = True
                m.status = (
                    "A new deal? Press n again (no move is left: this game is saved as stuck)."
                    if p.state.stuck
                    else "A new deal? Press n again (this game is dropped)."
                )
            self.refresh_view()
            return
        self.new_armed = False
        if p.game.finished:
            self.refresh_view()
            return
        if key == "h":
            self.ask_hint()
        elif key == "u":
            self.keys.source, self.keys.count = None, 0
            self.keys.confirm_resign = self.keys.confirm_redeal = False
            if self.play(Move(Kind.UNDO)) and self.auto_home and auto_home(p.state) is not None:
                # the undo took a suit back from home: the next move sent it home again at
                # once, the undo quietly cancelled (a rules trial); as in a race
                self.auto_home = False
                m.status = SUIT_BACK
        elif key == "o" and p.config.game != SPIDER:
            m.status = O_IS_FOR_SPIDER
        elif key == "o":
            self.auto_home = not self.auto_home
            m.status = f"Complete suits go home automatically: {'on' if self.auto_home else 'off'}."
            if self.auto_home:
                self.maybe_home()
        else:
            move = self.keys.press(key)
            if move is not None:
                self.dispatch(move)
        self.refresh_view()

    def ask_hint(self) -> None:
        if self.thinking:
            return
        self.thinking = True
        self.model.status = "Thinking about a hint..."
        self.run_worker(self._hint(), group="hint")

    async def _hint(self) -> None:
        p = self.practice
        before = p.state
        try:
            move = await asyncio.to_thread(p.hint)
        finally:
            self.thinking = False
        if p.state is not before:
            return  # the player moved meanwhile: that hint is stale
        if move is None and p.circling:
            self.model.status = (
                "Hint: the hints only go round in circles from here: undo (u) as far back as "
                "you like, try a move of your own, or resign (x x)."
            )
        elif move is None:
            self.model.status = (
                "Hint: nothing helps from here: undo (u) as far back as you like, or resign (x x)."
            )
        elif move.kind in (Kind.TABLEAU, Kind.FOUNDATION):
            # its pile (and the part of its run) picked: the player presses the target
            self.keys.source, self.keys.count = move.src, picked_count(move, before)
            self.model.status = describe(move, before, picked=True)
        else:
            self.keys.source, self.keys.count = None, 0
            self.model.status = describe(move, before)
        self.refresh_view()

    def play(self, move: Move) -> bool:
        p, m = self.practice, self.model
        before = p.state
        try:
            change = p.play(move)
        except IllegalMove as exc:
            m.status = f"Not allowed: {exc}."
            return False
        self._sync()
        if move.kind == Kind.UNDO:
            m.status = "Undone (practice: as far back as you like)."
        elif move.kind == Kind.RESIGN:
            m.status = "You resigned."
        else:
            m.status = format_move(change.move, before)
        if p.game.finished:
            if p.state.won:
                m.status = "You won!"  # (the winning move's notation stayed: a client trial)
            self._save()
        elif p.state.stuck:
            m.status = "No move left: u undoes (as far back as you like), x x resigns."
        return True

    def _save(self) -> None:
        """Save the game's record, or say why it could not be."""
        try:
            self.practice.save_record()
        except OSError as exc:
            self.model.status = (
                f"Could not save the record in {safe(str(practice_dir()))}: {exc.strerror or exc}."
            )

    def dispatch(self, move: Move, by_itself: bool = False) -> None:
        """Made at once: there is no server to wait for (made in a worker, the keys typed
        before it ran were dropped as "waiting for the server", and a target key lost left its
        pile picked, pairing the next keys into moves never typed: from a trial)."""
        try:
            self.play(move)
        finally:
            self.keys.answered()
        if move.kind != Kind.FOUNDATION or move.count != 13:
            self.maybe_home()
        self.refresh_view()

    async def send_move(self, move: Move, by_itself: bool = False) -> None:
        self.dispatch(move, by_itself)
