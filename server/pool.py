"""Deals certified winnable, ready before anyone asks: a small pool for each game and options.

A room with ``winnable`` set draws its secret deal from here.  The pool holds a few random deal
numbers the solver (``protocol.solver``) has won, with the solution, for each game and option set
a room has asked for (and, at start, the usual ones).  A worker *process* fills it in the
background at a low priority: racing never waits on the solver, and the event loop never runs
it.  :meth:`DealPool.take` is what the hub calls: a deal at once, or None if the pool for that game
is still empty (the room is told, and starts by itself once one is ready).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import signal
import sys
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

from protocol.config import NUMBERINGS, OPTIONS, GameConfig

log = logging.getLogger("patience_race.server")

Key = tuple[str, tuple[tuple[str, int | str], ...], str]

DEFAULT_CONFIGS: tuple[tuple[str, dict[str, int | str]], ...] = (
    ("spider", {"suits": 1}),
    ("spider", {"suits": 2}),
    ("spider", {"suits": 4}),
    ("st-helena", {}),
    ("louis", {}),
)


ALL_GAMES = sum(
    math.prod(len(values) for values in OPTIONS[game].values()) * len(NUMBERINGS[game])
    for game in OPTIONS
)
"""Every game, option set and numbering there is (24): the pool's table holds them all, so that
no one naming game after game pushes out the deals another room is waiting for."""


def key_of(config: GameConfig) -> Key:
    return (config.game, tuple(sorted(config.options.items())), config.numbering)


async def certify(
    game: str, options: dict[str, int | str], numbering: str, seconds: float
) -> tuple[int, list[str]] | None:
    """A random deal of that game and the solver's solution, if it won it within ``seconds``:
    in a process of its own (``server.certify``), at a low priority."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.certify",
        game,
        json.dumps(options),
        numbering,
        str(seconds),
        cwd=str(Path(__file__).resolve().parents[1]),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), seconds * 2 + 30)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise
    code = proc.returncode
    assert code is not None  # (communicate() returns once the process has exited)
    if code != 0:
        if code < 0:
            why = f"was killed by {signal.Signals(-code).name}"
            if -code == signal.SIGSYS:  # a seccomp filter: systemd's SystemCallFilter, say
                why += " (a system-call filter refused it a call: allow setpriority)"
        else:
            why = f"exited {code}"
        raise RuntimeError(f"server.certify {why}")
    got = json.loads(out)
    return (int(got["number"]), list(got["solution"])) if got["solution"] else None


class DealPool:
    """Certified deals by game and options; bounded in games, deals and workers."""

    def __init__(
        self,
        size: int = 3,
        seconds: float = 20.0,
        workers: int = 1,
        max_games: int = ALL_GAMES,
        prefill: bool = True,
    ) -> None:
        self.size = size
        self.seconds = seconds
        self.workers = workers
        self.max_games = max_games
        self.ready: dict[Key, deque[tuple[int, list[str]]]] = {}
        self.wanted: OrderedDict[Key, GameConfig] = OrderedDict()
        self.running: dict[Key, int] = {}
        self.starved: OrderedDict[Key, None] = OrderedDict()
        """Games a room asked a deal of when none was ready, the first asked first: the solver
        works for them before any game only named (a room's settings), whoever names what."""
        self.tried = 0
        self.certified = 0
        self.failed = 0
        """Solver processes that failed (crashed, were killed, printed nonsense)."""
        self._failing = 0
        """Failures in a row: the pool waits longer after each (up to a minute), and logs the
        whole story only at the 1st, 2nd, 4th, 8th... of them."""
        self._wake = asyncio.Event()
        self._pending: set[asyncio.Future[tuple[int, list[str]] | None]] = set()
        """Solver processes under way."""
        self._task: asyncio.Task[None] | None = None
        if prefill:
            for game, options in DEFAULT_CONFIGS:
                self.want(GameConfig(game, options))

    # -- what the hub calls (sync, at once) -----------------------------------------------

    def want(self, config: GameConfig) -> None:
        """Keep deals of ``config`` ready from now on.  Past ``max_games`` (only if it is set
        below :data:`ALL_GAMES`) the least recently wanted game no room waits for is let go."""
        key = key_of(config)
        self.wanted[key] = config
        self.wanted.move_to_end(key)
        while len(self.wanted) > self.max_games:
            old = next((k for k in self.wanted if k not in self.starved and k != key), None)
            if old is None:
                break
            del self.wanted[old]
            self.ready.pop(old, None)
        self._wake.set()

    def take(self, config: GameConfig) -> tuple[int, list[str]] | None:
        """A certified deal of ``config`` (number, solution), or None if none is ready yet (the
        game is then the solver's first work, after those asked for before it)."""
        self.want(config)
        key = key_of(config)
        ready = self.ready.get(key)
        if ready:
            return ready.popleft()
        self.starved.setdefault(key, None)
        return None

    def awaited(self, config: GameConfig) -> None:
        """A room is waiting for a deal of ``config`` (and starts once one is ready): the game
        keeps its place among those the solver works for first, even if another room took the
        deal made for it."""
        key = key_of(config)
        if self.ready.get(key):
            return
        if key not in self.wanted:
            self.want(config)
        if key not in self.starved:
            self.starved[key] = None
            self._wake.set()

    def give_back(self, config: GameConfig, number: int, solution: list[str]) -> None:
        """A deal taken for a countdown that was stopped before the race began: no card of it
        was shown (its commitment's salt is the race's own), so the next room gets it; a
        countdown started and stopped again and again does not drain the pool."""
        key = key_of(config)
        if key not in self.wanted:
            return
        ready = self.ready.setdefault(key, deque())
        ready.appendleft((number, solution))
        while len(ready) > self.size:
            ready.pop()
        self.starved.pop(key, None)

    def count(self, config: GameConfig) -> int:
        return len(self.ready.get(key_of(config), ()))

    # -- the background side -----------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:  # once, whoever starts it first
            self._task = asyncio.get_running_loop().create_task(self._fill_forever())

    async def stop(self) -> None:
        """The filling stops, and every solver process under way is ended."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for fut in list(self._pending):
            fut.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
        self._pending.clear()

    def _needs(self) -> list[Key]:
        """Games short of deals: those a room waits for, the first asked first (a game whose
        try failed goes to the back of them: a room waiting for Louis, which the solver seldom
        wins, must not hold up one waiting for Spider), then the others, the most recently
        wanted first."""
        order = [k for k in self.starved if k in self.wanted]
        order += [k for k in reversed(self.wanted) if k not in self.starved]
        return [k for k in order if len(self.ready.get(k, ())) + self.running.get(k, 0) < self.size]

    async def _fill_forever(self) -> None:
        pending = self._pending
        owner: dict[asyncio.Future[tuple[int, list[str]] | None], Key] = {}
        while True:
            for key in self._needs():
                if len(pending) >= self.workers:
                    break
                config = self.wanted[key]
                task = asyncio.ensure_future(
                    certify(config.game, dict(config.options), config.numbering, self.seconds)
                )
                pending.add(task)
                owner[task] = key
                self.running[key] = self.running.get(key, 0) + 1
            self._wake.clear()
            waiter = asyncio.ensure_future(self._wake.wait())
            waiting: set[asyncio.Future[Any]] = {*pending, waiter}
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            for fut in pending & done:  # (every one done but the waiter)
                pending.discard(fut)
                key = owner.pop(fut)
                self.running[key] -= 1
                self.tried += 1
                if key in self.starved and (fut.cancelled() or fut.exception() or not fut.result()):
                    self.starved.move_to_end(key)  # not won: the other waiting games first
                try:
                    got = fut.result()
                except Exception as exc:
                    self.failed += 1
                    self._failing += 1
                    wait = min(60.0, 2.0 ** (self._failing - 1))
                    fields = {"event": "solver_error", "failures": self._failing, "retry_s": wait}
                    if isinstance(exc, TimeoutError):
                        # no fault to trace: the machine was busy, or the server was paused
                        # (SIGSTOP, a laptop asleep) while the solver ran, and its time ran out
                        log.warning(
                            "certify took longer than %.0f s: tried again later",
                            self.seconds * 2 + 30,
                            extra={"fields": fields},
                        )
                    elif self._failing & (self._failing - 1) == 0:
                        log.exception("certify failed", extra={"fields": fields})
                    else:
                        log.error("certify failed: %s", exc, extra={"fields": fields})
                    await asyncio.sleep(wait)
                    continue
                self._failing = 0
                if got is not None and key in self.wanted:
                    self.ready.setdefault(key, deque()).append(got)
                    self.starved.pop(key, None)
                    self.certified += 1
