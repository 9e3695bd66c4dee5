"""Seats this player holds, kept on disk so that quitting and joining again resumes the seat.

``$XDG_STATE_HOME/patience-race/seats.json`` (``~/.local/state/...``), readable by its owner only.
A seat's token is a secret: it is never printed or logged.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path


def seats_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patience-race" / "seats.json"


def _load(path: Path) -> dict[str, dict[str, dict[str, str]]]:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def saved_seat(url: str, code: str, path: Path | None = None) -> dict[str, str] | None:
    seat = _load(path or seats_path()).get(url, {}).get(code.upper().replace("-", ""))
    return seat if isinstance(seat, dict) and "token" in seat else None


def save_seat(url: str, code: str, token: str, name: str, path: Path | None = None) -> None:
    path = path or seats_path()
    data = _load(path)
    data.setdefault(url, {})[code.upper().replace("-", "")] = {"token": token, "name": name}
    # keep the file small: the last 20 rooms per server
    rooms = data[url]
    for old in list(rooms)[:-20]:
        del rooms[old]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.chmod(0o600)
        tmp.replace(path)
    except OSError:
        pass  # resuming after a restart is a convenience; playing goes on without it


def forget_seat(url: str, code: str, path: Path | None = None) -> None:
    path = path or seats_path()
    data = _load(path)
    if data.get(url, {}).pop(code.upper().replace("-", ""), None) is not None:
        with contextlib.suppress(OSError):
            path.write_text(json.dumps(data))
