"""Seats this user holds, kept on disk so that quitting and joining again resumes the seat.

``$XDG_STATE_HOME/patience-race/seats.json`` (``~/.local/state/...``), readable by its owner only:
``{server URL: {room code: {name key: {"token": ..., "name": ...}}}}``.  A seat is found by server,
room *and* name, so two people sharing one account (Ann hosts, Bob joins from another terminal)
each keep their own seat.  Several clients may write at once: every change takes an exclusive lock
(``seats.json.lock``), re-reads the file, changes it and replaces it atomically, so none loses
another's seat.  A file that cannot be read is left as it is and said (:class:`SeatsError`): the
seat is then not saved, and the client says quitting would lose it.  A seat's token is a secret: it is never printed or logged.

A client sitting in a seat *holds* it (:func:`hold_seat`): an exclusive lock on a file of its own
under ``held/``, kept while the client runs and dropped by the system when it ends, however it
ends.  ``join CODE`` with no name then never offers a seat another terminal of this account is
sitting in (:func:`seat_in_use`): taking it would cut that person off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no lock, the atomic replace still holds
    fcntl = None  # type: ignore[assignment]

ROOMS_PER_SERVER = 20
SERVERS = 10
MAX_BYTES = 1 << 20
"""A seats file past this is not read (a full one, 10 servers of 20 rooms, is a few tens of KB):
reading it would hold up the game, and it is nothing this program wrote."""

Seat = dict[str, str]
Seats = dict[str, dict[str, dict[str, Seat]]]


def seats_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "patience-race" / "seats.json"


def room_key(code: str) -> str:
    return code.upper().replace("-", "").replace(" ", "")


def name_key(name: str) -> str:
    """Names as the server compares them, near enough: NFKC, case-folded, spaces trimmed."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


class SeatsError(Exception):
    """The seats file cannot be read or written: the message names it, says why and what to do.
    A file that cannot be read is never written over: the seats in it may be someone's way back
    into a race, and a hand edit gone wrong can be mended."""

    def __init__(self, path: Path, why: str) -> None:
        # what to do first: behind a long parser's reason it was cut off the status line at 80
        # columns (a records trial)
        super().__init__(f"fix or move aside {path}, which cannot be used ({why})")
        self.path = path
        self.why = why


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return f"not JSON: {exc}"


def _load(path: Path) -> Seats:
    """The seats saved in ``path`` (none if there is no file); :class:`SeatsError` if it
    cannot be read, is too large, or is not a JSON object."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SeatsError(path, _why(exc)) from None
    if len(raw) > MAX_BYTES:
        raise SeatsError(path, f"larger than {MAX_BYTES >> 20} MiB")
    if not raw.strip():
        return {}  # (an empty file: nothing saved yet, or a write cut short before this one)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise SeatsError(path, _why(exc)) from None
    if not isinstance(data, dict):
        raise SeatsError(path, "not a JSON object")
    seats: Seats = {}
    for url, rooms in data.items():
        if not isinstance(rooms, dict):
            continue
        for code, held in rooms.items():
            if not isinstance(held, dict):
                continue
            if "token" in held:  # the old layout: one seat per room, whoever it was
                held = {name_key(str(held.get("name", ""))): held}
            for key, seat in held.items():
                if isinstance(seat, dict) and isinstance(seat.get("token"), str):
                    kept = {"token": seat["token"], "name": str(seat.get("name", ""))}
                    if isinstance(seat.get("id"), str) and seat["id"].isdigit():
                        kept["id"] = seat["id"]
                    seats.setdefault(url, {}).setdefault(code, {})[key] = kept
    return seats


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def _write(path: Path, data: Seats) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _change(path: Path | None, change: Callable[[Seats], bool]) -> None:
    """Lock, re-read, change and write back (if ``change`` says it changed anything);
    :class:`SeatsError` if the file cannot be read (it is then left as it is) or written."""
    path = path or seats_path()
    try:
        with _locked(path):
            data = _load(path)
            if change(data):
                _write(path, data)
    except OSError as exc:
        raise SeatsError(path, _why(exc)) from None


def saved_seats(url: str, code: str, path: Path | None = None) -> list[Seat]:
    """Every seat saved for this room on this server (each with its ``name``);
    :class:`SeatsError` if the seats file cannot be read."""
    held = _load(path or seats_path()).get(url, {}).get(room_key(code), {})
    return list(held.values())


def saved_seat(url: str, code: str, name: str, path: Path | None = None) -> Seat | None:
    """The seat saved for ``name`` in this room, if any; :class:`SeatsError` if the seats file
    cannot be read."""
    held = _load(path or seats_path()).get(url, {}).get(room_key(code), {})
    return held.get(name_key(name))


def save_seat(
    url: str, code: str, token: str, name: str, path: Path | None = None, member: int | None = None
) -> None:
    """Save the seat, with the ``member`` id it has in the room (:class:`SeatsError` if it
    cannot be: quitting would then lose it)."""

    dropped: list[tuple[str, str, str]] = []

    def change(data: Seats) -> bool:
        # the newest last: move this server and this room to the end, then trim the oldest
        rooms = data.pop(url, {})
        held = rooms.pop(room_key(code), {})
        seat = {"token": token, "name": name}
        if member is not None:
            seat["id"] = str(member)
        held[name_key(name)] = seat
        rooms[room_key(code)] = held
        data[url] = rooms
        for old in list(rooms)[:-ROOMS_PER_SERVER]:
            dropped.extend((url, old, key) for key in rooms.pop(old))
        for old in list(data)[:-SERVERS]:
            dropped.extend(
                (old, room, key) for room, seats in data.pop(old).items() for key in seats
            )
        return True

    _change(path, change)
    _sweep(dropped, path)


def forget_seat(url: str, code: str, name: str, path: Path | None = None) -> None:
    """Forget a seat that is gone; a seats file that cannot be used keeps it (no error: a seat
    left behind is refused by the server when tried, and forgotten then)."""
    _forget(url, code, lambda held: [name_key(name)] if name_key(name) in held else [], path)


def forget_gone(url: str, code: str, members: set[int], path: Path | None = None) -> None:
    """Forget the seats saved for this room whose member is no longer in it (``members``: the
    ids the room has): released after the grace, removed or left, whichever terminal of this
    account held them (a bare join listed seats released half an hour before: a trial).  Seats
    saved without their id are kept; a seats file that cannot be used is left alone."""
    _forget(
        url,
        code,
        lambda held: [
            key
            for key, seat in held.items()
            if seat.get("id", "").isdigit() and int(seat["id"]) not in members
        ],
        path,
    )


def _forget(
    url: str, code: str, which: Callable[[dict[str, Seat]], list[str]], path: Path | None
) -> None:
    """Forget the seats ``which`` picks among those saved for this room (their name keys); a
    seats file that cannot be used is left as it is."""

    dropped: list[tuple[str, str, str]] = []

    def change(data: Seats) -> bool:
        rooms = data.get(url, {})
        held = rooms.get(room_key(code), {})
        gone = which(held)
        for key in gone:
            del held[key]
            dropped.append((url, room_key(code), key))
        if not gone:
            return False
        if not held:
            del rooms[room_key(code)]
        if not rooms:
            del data[url]
        return True

    with contextlib.suppress(SeatsError):
        _change(path, change)
    _sweep(dropped, path)


# -- seats in use by a running client ---------------------------------------------------------


def _held_path(url: str, code: str, name: str, path: Path | None) -> Path:
    return _lock_file(url, room_key(code), name_key(name), path)


def _lock_file(url: str, room: str, key: str, path: Path | None) -> Path:
    """The lock file of the seat saved under these keys (the seats file's own)."""
    key = "\0".join((url, room, key))
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return (path or seats_path()).parent / "held" / f"{digest}.lock"


def _sweep(dropped: list[tuple[str, str, str]], path: Path | None) -> None:
    """Remove the lock files of seats no longer saved (trimmed by the caps, or forgotten), so
    that ``held/`` stays as small as the seats file; a lock a running client holds is left."""
    if fcntl is None:  # pragma: no cover - not on POSIX: no lock files
        return
    for url, room, key in dropped:
        lock = _lock_file(url, room, key, path)
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink()
        except OSError:
            pass  # held by a running client (it goes when that client forgets it), or gone
        finally:
            os.close(fd)


class HeldSeat:
    """The lock a running client holds on its seat; :meth:`release` (or the process ending)
    lets it go."""

    def __init__(
        self,
        fd: int | None,
        path: Path | None = None,
        seat: tuple[str, str, str, Path | None] | None = None,
    ) -> None:
        self._fd = fd
        self._path = path
        self._seat = seat
        """(url, code, name, seats file): to see whether the seat is still saved."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self, forget: bool = False) -> None:
        """Let the seat go; ``forget``: the seat is gone for good, its lock file goes too (as
        it does when the seats file no longer has it: dropped by its caps while this client
        held it, the sweep left the file to it, a review)."""
        if self._fd is not None:
            if not forget and self._seat is not None:
                url, code, name, seats = self._seat
                with contextlib.suppress(SeatsError, OSError):
                    forget = saved_seat(url, code, name, seats) is None
            if forget and self._path is not None:
                with contextlib.suppress(OSError):
                    self._path.unlink()
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _try_lock(
    url: str, code: str, name: str, path: Path | None, create: bool = True
) -> tuple[int | None, bool]:
    """``(fd holding the seat's lock or None, whether another process holds it)``; with
    ``create`` False, a seat with no lock file is simply free (a probe leaves no file)."""
    if fcntl is None:  # pragma: no cover - not on POSIX: seats are never marked in use
        return None, False
    lock = _held_path(url, code, name, path)
    try:
        if create:
            lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        else:
            fd = os.open(lock, os.O_RDWR)
    except OSError:
        return None, False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None, True
    except OSError:
        os.close(fd)
        return None, False
    return fd, False


def hold_seat(url: str, code: str, name: str, path: Path | None = None) -> HeldSeat:
    """Mark the seat as in use by this process until :meth:`HeldSeat.release`.  Never blocks:
    a seat another client holds is left to it (``held`` is then False)."""
    fd, _ = _try_lock(url, code, name, path)
    return HeldSeat(fd, _held_path(url, code, name, path), (url, code, name, path))


def claim_seat(url: str, code: str, name: str, path: Path | None = None) -> HeldSeat | None:
    """Mark the seat as in use by this process before taking it back; None if another running
    client holds it (two bare joins at once: the second must not cut the first off)."""
    fd, taken = _try_lock(url, code, name, path)
    return (
        None if taken else HeldSeat(fd, _held_path(url, code, name, path), (url, code, name, path))
    )


def seat_in_use(url: str, code: str, name: str, path: Path | None = None) -> bool:
    """Whether another running client (of this account, on this machine) sits in the seat."""
    fd, taken = _try_lock(url, code, name, path, create=False)
    if fd is not None:
        os.close(fd)
    return taken
