"""The screen a board is played on, with or without a server: its layout, the theme, the status
line and its clickable keys, the quit keys, and the mouse on the board.

:class:`BoardApp` draws nothing of its own: a subclass draws the screen from its
:class:`~client.model.RaceModel` (``_draw``) and makes the moves the keys and clicks check
(``dispatch``).  :class:`~client.app.RaceApp` plays a race on a server (lobby, countdown, race,
results); :class:`~client.practice_app.PracticeApp` a game alone, with no server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.filter import Monochrome, NoColor

from protocol.moves import Move

from . import render, screens
from .grid import PALETTE, Grid
from .keys import PILE_KEYS, Keys, auto_home
from .model import RaceModel
from .widgets import Board, HelpScreen, StatusBar, Steady

O_IS_FOR_SPIDER = (
    "o is for Spider (its complete suits going home by themselves): here f, k or a sends a card "
    "home."
)
SUIT_BACK = (
    "Undone: the suit is back on its pile, and complete suits no longer go home by themselves "
    "(o turns that on again)."
)


class BoardApp(App[None]):
    ENABLE_COMMAND_PALETTE = False  # (ctrl+p: Textual's own commands, none of them the game's)
    BINDINGS: ClassVar[list[BindingType]] = [
        # Textual's ctrl+q quits at once and its ctrl+c says to press ctrl+q: both are the
        # game's q instead, with its confirmation (a guest's room, the race, the seat)
        Binding("ctrl+q", "game_quit", show=False, priority=True),
        Binding("ctrl+c", "game_quit(True)", show=False, priority=True),
        # to the shell, as in any terminal program (it was swallowed: a terminals trial);
        # Textual puts the terminal back on the way out and redraws on fg
        Binding("ctrl+z", "suspend_process", show=False, priority=True),
    ]
    CSS = """
    Screen { layout: vertical; }
    #top { height: 1; background: $boost; }
    #main { height: 1fr; }
    #top { text-wrap: nowrap; text-overflow: ellipsis; }
    #board { width: 1fr; height: 1fr; padding: 0 1; }
    #board.grid { text-wrap: nowrap; text-overflow: clip; }
    #side { width: 32; padding: 0 1; border-left: solid $primary; }
    #side { text-wrap: nowrap; text-overflow: clip; }
    #status { text-wrap: nowrap; text-overflow: ellipsis; }
    #side.wide { width: 40; }
    #status { height: 2; background: $boost; padding: 0 1; }
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        if self.no_color:
            # NO_COLOR: Textual greys every colour by its brightness, and red cards came out
            # dark grey on near black (1.6:1); without colour every card is the terminal's own
            # text colour (the suits are letters; bold and reverse stay)
            self._filters = [NoColor() if isinstance(f, Monochrome) else f for f in self._filters]
        self.model = RaceModel(name=name)
        self.keys = Keys(self.model)
        self.auto_home = True
        """Spider: complete suits go home by themselves (``o`` switches it)."""
        self.footer_shown = ""
        """The keys line as last drawn (a click on an item presses its key)."""
        self.quit_armed = False
        """The first q was pressed: the next quits."""
        self.quit_asked = ""
        """The question the first q asked (taken off the status line when dropped)."""
        self.grid: Grid | None = None
        """The board as last drawn: maps clicks back to cards."""

    def compose(self) -> ComposeResult:
        # kept as attributes: the help overlay is another screen, and the view must still
        # follow the race underneath it
        self.top, self.main_view = Steady(id="top"), Board(id="board")
        self.side, self.status_line = Steady(id="side"), StatusBar(id="status")
        yield self.top
        with Horizontal(id="main"):
            yield self.main_view
            yield self.side
        yield self.status_line

    async def on_mount(self) -> None:
        if not self.current_theme.dark or self.current_theme.ansi:
            # the board is drawn for a background of its own, dark: $TEXTUAL_THEME light (or the
            # terminal's own colours) drew the black cards white on light grey (an appearance
            # trial); a dark theme of one's own is kept
            self.theme = "textual-dark"
        self.ansi_theme_dark = PALETTE
        self.app_resume_signal.subscribe(self, self._resumed)
        self.set_interval(0.2, self.refresh_view)
        self.run_worker(self.setup(), exclusive=True, group="setup")
        self.refresh_view()

    def _resumed(self, _app: object) -> None:
        """Back from ctrl+z (``fg``): the terminal shows nothing of the app, and a widget given
        the text it had drew nothing, so the board stayed blank until something changed (a
        client trial): every widget draws again."""
        for widget in self.query(Steady):
            widget.forget()
        self.refresh_view()

    # -- what a subclass does ---------------------------------------------------------------

    if TYPE_CHECKING:
        # (declared, not defined: Textual calls every class's ``on_key`` along the MRO unless
        # the event's default is prevented, so a base one would run after the subclass's)
        async def on_key(self, event: events.Key) -> None:
            """Every key, the game's own: what it does in this screen."""

    async def setup(self) -> None:
        """Run once the screen is up (a worker): get into a room, say what to do first."""

    async def shutdown(self) -> None:
        """Run as the app goes: leave, close, say goodbye."""

    def _draw(self) -> None:
        """Draw the screen from the model."""
        raise NotImplementedError

    def dispatch(self, move: Move, by_itself: bool = False) -> None:
        """Make ``move``, checked by the keys, which now wait for it (``by_itself``: a complete
        suit sent home by auto-home)."""
        raise NotImplementedError

    def refresh_view(self) -> None:
        """Redraw from the model; a no-op once the screen is gone (a worker may still call)."""
        # (App.is_mounted is a method, ``is_mounted(widget)``, always true as a condition: the
        # app is running from before its mount until its shutdown, which closes the screens)
        if self.is_running:
            self._draw()

    async def on_unmount(self) -> None:
        await self.shutdown()

    # -- drawing ----------------------------------------------------------------------------

    def too_small(self) -> bool:
        """Is the terminal smaller than every game's board needs (it is then not drawn)?"""
        w, h = self.size.width, self.size.height
        return bool(w and h) and (w < render.MIN_WIDTH or h < render.MIN_HEIGHT)

    def draw_status(self, keys: str, reconnecting: bool) -> int:
        """The status line: the last message (two lines when it needs them, the board giving
        one up meanwhile) and the keys; its height."""
        keys = screens.fit_keys(keys, max(20, self.size.width - 2))
        self.footer_shown = "" if reconnecting else keys
        self.status_line.keys_line = self.footer_shown
        text = screens.status_line(self.model, keys, reconnecting, max(20, self.size.width - 2))
        lines = text.plain.count("\n") + 1
        if self.status_line.styles.height != lines:
            self.status_line.styles.height = lines
        self.status_line.update(text)
        return lines

    async def action_game_quit(self, copy: bool = False) -> None:
        """Ctrl+Q and Ctrl+C: the game's own q, through its key handling (so the same
        confirmation); ctrl+c (``copy``) with text selected still copies it."""
        screen = self.screen
        selected = getattr(screen, "get_selected_text", None)
        if copy and selected is not None and selected():
            self.copy_to_clipboard(selected())
            return
        if isinstance(screen, HelpScreen):
            screen.close()  # the confirmation is on the status line, under the help
        await self.on_key(events.Key("q", "q"))

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.refresh_view)

    # -- the mouse ---------------------------------------------------------------------------

    def on_status_bar_key_clicked(self, message: StatusBar.KeyClicked) -> None:
        self.run_worker(self.on_key(events.Key(message.key, message.key)), group="click")

    def on_board_clicked(self, message: Board.Clicked) -> None:
        self.board_click(message.x, message.y, message.put_down)

    def ask_quit(self, question: str) -> None:
        """A first q: the next one quits; ``question`` says what that would cost."""
        self.quit_armed = True
        self.model.status = self.quit_asked = question

    def drop_quit(self) -> None:
        """Another key or a click: the quit question is dropped, and its words with it (they
        stayed, and the next q asked again when it seemed to be the second: a client trial)."""
        if self.quit_armed and self.model.status == self.quit_asked:
            self.model.status = ""
        self.quit_armed = False

    def stay(self) -> None:
        """Escape answers the quit question: no (in a race or a game it blanked the status
        line, where the lobby said "Staying.": a client trial)."""
        self.drop_quit()
        self.model.status = "Staying."
        self.refresh_view()

    def disarm(self) -> None:
        """Drop the question a first press of a two-press key asked (quit)."""
        self.drop_quit()

    def board_click(self, x: int, y: int, put_down: bool = False) -> None:
        """A click on the board: pick a run from a card, drop on a pile or foundation, deal;
        ``put_down`` (a right or middle click): put the picked run down, as escape does."""
        grid, model, keys = self.grid, self.model, self.keys
        if grid is None or model.phase != "racing" or model.holding or model.state is None:
            return
        if put_down:
            self.disarm()  # (another action, as a left click is)
            keys.press("escape")
            self.refresh_view()
            return
        target = grid.at(x, y)
        if target is None:
            return
        # another action: a question asked by a first press (quit) is dropped, as a key drops
        # it (one click on "qq quit" after a card's quit at once: a mouse trial)
        self.disarm()
        move = None
        kind = target[0]
        if kind == "stock":
            move = keys.press("d")
        elif kind == "foundation" and keys.source is None:
            # (nothing happened, nothing said: a mouse trial)
            model.status = "Pick a pile first (click its card), then click the foundation."
        elif kind == "foundation":
            move = keys.home(target[1])
        elif kind == "card" and (keys.source is None or keys.source == target[1]):
            pile, index = target[1], target[2]
            keys.select(pile, len(model.state.piles[pile]) - index)
        elif kind in ("card", "pile"):
            pile = target[1]
            if keys.source == pile:
                keys.source, keys.count = None, 0
                model.status = ""
            else:
                move = keys.press(PILE_KEYS[pile])
        if move is not None:
            self.dispatch(move)
        self.refresh_view()

    def maybe_home(self) -> None:
        state = self.model.state
        if not self.auto_home or state is None or self.keys.pending:
            return
        move = auto_home(state)
        if move is not None:
            self.keys.sent()
            self.dispatch(move, by_itself=True)
