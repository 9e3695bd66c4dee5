"""Race records kept on this computer, and where a server publishes them.

Each race this client raced in is fetched when it ends and kept in
``$XDG_STATE_HOME/patience-race/races/RACE_ID.json`` (``~/.local/state/...``), a file
``patience-race replay`` checks and ``patience-race races`` lists: ``play`` runs its server
inside the program, so its races' public records would be gone when it quits, and a race on a
server of its own, public there at ``GET /races/RACE_ID`` (:func:`record_url`), is found again
the next morning without its id."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from protocol.messages import RaceRecord

KEEP = 200
"""Records kept at most: past it the oldest go (a few tens of KB each)."""
MAX_KEPT_BYTES = 4 * 1024 * 1024
"""A record larger than this (as JSON) is not kept: it stays on its server."""
RACE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a race id may be, to name a file: a server's id is not trusted to be a file name."""


def races_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patience-race" / "races"


def save_race(
    record: RaceRecord, directory: Path | None = None, race_id: str | None = None
) -> Path:
    """Write ``record`` (whole, under a temporary name first) as ``RACE_ID.json``; the oldest
    records past :data:`KEEP` go.  ``race_id``: the race asked for, which the record must be
    (a server's record named ``../seats`` replaced the seats file: a review).  ``OSError`` if
    it cannot be written, ``ValueError`` for a record that cannot be kept."""
    wanted = record.race_id if race_id is None else race_id
    if record.race_id != wanted or not RACE_ID.fullmatch(wanted):
        raise ValueError(f"not the record of race {wanted!r}")
    text = record.model_dump_json(indent=1)
    if len(text) > MAX_KEPT_BYTES:
        raise ValueError(f"the record of race {wanted} is too large to keep here")
    directory = directory or races_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{wanted}.json"
    tmp = directory / f".{wanted}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    with contextlib.suppress(OSError):  # (best effort: another play may trim at once)
        aged = []
        for kept in directory.glob("*.json"):
            with contextlib.suppress(OSError):
                aged.append((kept.stat().st_mtime, kept))
        for _, old in sorted(aged)[:-KEEP]:
            with contextlib.suppress(OSError):
                old.unlink()
    return path


def saved_races(directory: Path | None = None) -> list[tuple[Path, RaceRecord]]:
    """The records kept here, the latest first (a file that is not one is left out)."""
    directory = directory or races_dir()
    found = []
    for path in directory.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            if path.stat().st_size <= MAX_KEPT_BYTES:
                found.append((path, RaceRecord.model_validate_json(path.read_bytes())))
    found.sort(key=lambda kept: kept[1].ended_at or kept[1].started_at, reverse=True)
    return found


def record_url(server: str, race_id: str) -> str:
    """Where the server at ``server`` (its ws:// or wss:// URL) publishes a finished race: on
    its host and port, under its path (a server behind a proxy at ``/play/``), never with the
    credentials a URL may hold (the screen shows it)."""
    parts = urlsplit(server)
    scheme = "https" if parts.scheme == "wss" else "http"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}/races/{race_id}"
