"""The client's screens around the board, as ``rich.text.Text`` from the plain
:class:`~client.model.RaceModel` (boards are :mod:`client.render`'s, the race panel
:mod:`client.panel`'s):

- :mod:`.bars`: the header above the board and the status line under it, with the keys that
  do something now;
- :mod:`.lobby`: the room before a race, and the countdown;
- :mod:`.results`: the results, the deal's check, the rematch;
- :mod:`.help`: every key;
- :mod:`.fitting`: fitting keys, commands and text to the screen's width and height.

As there, nothing here is markup: names and server messages are other people's text."""

from .bars import (
    STUCK_NOTE,
    footer_keys,
    header,
    kick_question,
    message_screen,
    status_line,
    stuck_with_undo,
    too_small,
)
from .fitting import FIRST_TO_GO, command_text, drawn_lines, fit_keys, fit_lines
from .help import CARDS_HELP, HELP, help_text
from .lobby import big_number, countdown, lobby, watching_line
from .results import RESULT_WORDS, pysolfc_differs, results, results_keys

__all__ = [
    "CARDS_HELP",
    "FIRST_TO_GO",
    "HELP",
    "RESULT_WORDS",
    "STUCK_NOTE",
    "big_number",
    "command_text",
    "countdown",
    "drawn_lines",
    "fit_keys",
    "fit_lines",
    "footer_keys",
    "header",
    "help_text",
    "kick_question",
    "lobby",
    "message_screen",
    "pysolfc_differs",
    "results",
    "results_keys",
    "status_line",
    "stuck_with_undo",
    "too_small",
    "watching_line",
]
