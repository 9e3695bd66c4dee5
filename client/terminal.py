"""This process and its terminal: whether it can draw the game's full screen (checked before it
tries), and how the person at it runs the project's commands (:func:`program`).

Textual reads keys from standard input and draws on standard error.  Without a terminal on
both, the screen went into a file or a pipe (half a megabyte of escape codes in 20 s) and no key
ever arrived; on ``TERM=dumb`` (Emacs' shell, some IDE consoles) the escape codes were drawn as
text; and where the terminal's encoding cannot write the screen's characters (a Latin-1 or ASCII
locale), every card back, bar and border came out as ``\\u2592``-style escapes.  Each is said in
one line instead, with what to do.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

GLYPHS = "▒█░…→↑↓·│─╭╮╰╯"
"""Characters the screens draw (card backs, bars, the big countdown digits, clipped text,
arrows, borders): a terminal whose encoding cannot write them cannot show the game."""


def terminal_problem(
    keys: TextIO | None, screen: TextIO | None, env: Mapping[str, str]
) -> str | None:
    """Why a full-screen game cannot run with ``keys`` (standard input) and ``screen``
    (standard error) in ``env``, in one line; None if it can."""
    if keys is None or screen is None or not keys.isatty() or not screen.isatty():
        return (
            "this draws a full screen and needs a terminal for its keys and its screen "
            "(standard input and standard error): not a pipe or a file (over ssh: ssh -t)"
        )
    term = env.get("TERM", "")
    if term in ("dumb", "unknown"):
        return f"TERM={term}: this terminal cannot draw a full screen; run it in a terminal window"
    encoding = getattr(screen, "encoding", None) or "ascii"
    try:
        GLYPHS.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return (
            f"this terminal's encoding ({encoding}) cannot show the game's cards and lines: "
            "run it in a UTF-8 locale (for example LANG=C.UTF-8)"
        )
    return None


def program(name: str = "patience-race", argv0: str | None = None) -> str:
    """How to run command ``name`` from the shell this program was started in: its bare name
    when that finds this installation's, else its path beside this program
    (``.venv/bin/patience-race`` as the README runs it: the commands the screens print, to join
    from another terminal, said ``patience-race join ...``, "command not found")."""
    started = Path(argv0 if argv0 is not None else sys.argv[0])
    beside = started.with_name(name)
    if not beside.is_file():
        return name  # not started as an installed command (python -m, tests)
    found = shutil.which(name)
    if found is not None and Path(found).resolve() == beside.resolve():
        return name
    return shlex.quote(str(beside))
