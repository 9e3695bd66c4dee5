"""Structured logs: every event names the room, the player and what happened; never a token."""

from __future__ import annotations

import json
import logging
import sys
import time


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
    text = str(value)
    return json.dumps(text) if (" " in text or not text) else text


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
