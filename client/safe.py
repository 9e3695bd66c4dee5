"""Text from other people, made safe to print on a terminal.

A name or message from a record file or a server may hold escape sequences (``\\x1b]0;pwned\\x07``
retitles the window, ``\\x1b[2J`` clears the screen) or invisible characters that reorder or hide
what follows.  :func:`clean` writes every such character as a visible escape (``\\x1b``,
``\\u202e``), so what is printed is exactly what was sent, and nothing more happens.
"""

from __future__ import annotations

import unicodedata

_SAFE_FORMAT = frozenset({"\u200d"})
"""Format characters left as they are: the zero-width joiner inside emoji sequences."""


def _escape(ch: str) -> str:
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def clean(text: object, keep: frozenset[str] = _SAFE_FORMAT) -> str:
    """``text`` with control, format, line/paragraph separator and unassigned characters escaped
    (but the format characters in ``keep``)."""
    s = str(text)
    out = []
    for ch in s:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cs", "Co", "Cn", "Zl", "Zp") or (cat == "Cf" and ch not in keep):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def clean_lines(text: object) -> str:
    """:func:`clean` line by line: the line breaks of a message of our own (a farewell with the
    command to type on its own line) stay line breaks; every other character as :func:`clean`."""
    return "\n".join(clean(line) for line in str(text).split("\n"))
