"""Structured logs: every event names the room, the player and what happened; never a token."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections import OrderedDict
from typing import Any


class _Fields(logging.Formatter):
    def fields(self, record: logging.LogRecord) -> dict[str, object]:
        fields = getattr(record, "fields", None)
        return dict(fields) if isinstance(fields, dict) else {"event": record.getMessage()}


class JsonFormatter(_Fields):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, object] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        data.update(self.fields(record))
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class TextFormatter(_Fields):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        fields = self.fields(record)
        event = fields.pop("event", record.getMessage())
        rest = " ".join(f"{k}={_show(v)}" for k, v in fields.items())
        line = f"{stamp} {record.levelname:<7} {event}" + (f" {rest}" if rest else "")
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _show(value: object) -> str:
    """A field's value as one token of the line: bare when it is plain, else quoted as JSON,
    non-ASCII letters kept as they are (``player="8:Ann ☕"``: an operator greps for the name as
    players write it, and it came out as ``\\u2615`` only when it had a space: a text trial),
    anything that does not print escaped."""
    text = str(value)
    if text and text.isprintable() and not any(ch in text for ch in ' "='):
        return text
    quoted = json.dumps(text, ensure_ascii=False)
    return "".join(ch if ch.isprintable() else _escaped(ch) for ch in quoted)


def _escaped(ch: str) -> str:
    """``ch`` as JSON writes it: past U+FFFF, as its two UTF-16 halves (``\\ue0001`` read as
    U+E000 and "1": a review)."""
    return json.dumps(ch)[1:-1]


def setup_logging(fmt: str = "text", level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("patience_race")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    ws = logging.getLogger("websockets")
    ws.handlers[:] = [handler]
    ws.setLevel(logging.WARNING)
    ws.propagate = False


OWED_LINES = 5
"""Lines owed (refusals counted without a line) written each time they are paid
(:meth:`RefusalLog.flush`), the most refused first."""


class RefusalLog:
    """One ``refused`` line per client address, reason and ``every_s`` at most, for an operator's
    tools (fail2ban): connections closed for bad input (4400) or flooding (4429), refused at the
    connection limit (1013, or dropped before their handshake), HTTP 429s.

    A flood cannot flood the log: an address refused again for the same reason within
    ``every_s`` of its last line for it is only counted, and that count is written in a line of
    its own once ``every_s`` is over (:meth:`flush`, from the server's clock tick, or the
    address's next refusal); at most ``per_second`` lines a second go out in all (a flood from
    many addresses); and at most ``addresses`` (address, reason) pairs are remembered, the
    longest unlogged forgotten first.  A line for each reason: a refusal for bad input within a
    minute of one at the connection limit was only counted, under the other reason, and never
    written if the address stopped there (operator trial), so fail2ban never saw the 4400.
    The address is the client's budget key (an IPv6 client's /64); never a token."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        every_s: float = 60.0,
        addresses: int = 10_000,
        per_second: int = 20,
    ) -> None:
        self.log = logger
        self.every_s = every_s
        self.max_addresses = addresses
        self.per_second = per_second
        self.seen: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()
        """(address, reason) -> [when its last line went out, refusals since, their code]"""
        self._second = 0.0
        self._lines = 0
        self._owed_at = -math.inf
        self.skipped = 0
        """Refusals not logged at once (counted in a later line, if any)."""

    def note(self, address: str, reason: str, now: float, code: int | None = None) -> bool:
        """``address`` was refused for ``reason`` (with close or status ``code``) at ``now``
        (monotonic); whether a line went out."""
        if not address:
            return False
        key = (address, reason)
        entry = self.seen.get(key)
        if entry is not None and now - entry[0] < self.every_s:
            entry[1] += 1
            entry[2] = code
            self.skipped += 1
            return False
        if not self._may_write(now):
            # over the lines a second: remembered and counted all the same, so that decoys
            # using up each second's lines cannot keep an address out of the log for good
            if entry is None:
                entry = self._remember(key, [-math.inf, 0, code])
            entry[1] += 1
            entry[2] = code
            self.skipped += 1
            self.flush(now)
            return False
        self._line(address, reason, (entry[1] if entry is not None else 0) + 1, code)
        self._remember(key, [now, 0, code])
        return True

    def _may_write(self, now: float) -> bool:
        if now - self._second >= 1.0:
            self._second, self._lines = now, 0
        if self._lines >= self.per_second:
            return False
        self._lines += 1
        return True

    def _line(self, address: str, reason: str, count: int, code: int | None = None) -> None:
        fields: dict[str, object] = {"event": "refused", "address": address, "reason": reason}
        if code is not None:
            fields["code"] = code
        fields["count"] = count
        self.log.warning("refused", extra={"fields": fields})

    def _remember(self, key: tuple[str, str], entry: list[Any]) -> list[Any]:
        self.seen[key] = entry
        self.seen.move_to_end(key)
        while len(self.seen) > self.max_addresses:
            self.seen.popitem(last=False)
        return entry

    def flush(self, now: float) -> None:
        """At most every ``every_s / 6``: the lines owed, for the few (address, reason) pairs
        refused most without a line for ``every_s`` or more (counted within their minute, or
        past the lines a second), whatever else fills each second."""
        if now - self._owed_at < self.every_s / 6:
            return
        self._owed_at = now
        owed = sorted(
            ((e[1], k, e[2]) for k, e in self.seen.items() if e[1] and now - e[0] >= self.every_s),
            key=lambda o: o[0],
            reverse=True,
        )[:OWED_LINES]
        for count, (address, why), code in owed:
            self._line(address, why, int(count), code)
            self._remember((address, why), [now, 0, code])  # (the newest: forgotten last)
