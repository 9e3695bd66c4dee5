"""Deals certified winnable, ready before anyone asks: a small pool for each game and options.

A room with ``winnable`` set draws its secret deal from here.  The pool holds a few random deal
numbers the solver (``protocol.solver``) has won, with the solution, for each game and option set
a room has asked for (and, at start, the usual ones).  A worker *process* fills it in the
background at a low priority: racing never waits on the solver, and the event loop never runs
it.  :meth:`DealPool.take` is what the hub calls: a deal at once, or None if the pool for that game
is still empty (the host is told to try again in a few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
from collections import OrderedDict, deque
from concurrent.futures import Future, ProcessPoolExecutor

from protocol.config import GameConfig

log = logging.getLogger("patience_race.server")

Key = tuple[str, tuple[tuple[str, int | str], ...], str]

DEFAULT_CONFIGS = (
    ("spider", {"suits": 1}),
    ("spider", {"suits": 2}),
    ("spider", {"suits": 4}),
    ("st-helena", {}),
    ("louis", {}),
)


def key_of(config: GameConfig) -> Key:
    return (config.game, tuple(sorted(config.options.items())), config.numbering)


def certify(
    game: str, options: dict[str, int | str], numbering: str, seconds: float
) -> tuple[int, list[str]] | None:
    """In the worker process: a random deal of that game, and the solver's solution if it won it
    within ``seconds``."""
    from protocol.solver import solve_deal

    from .race import random_number

    config = GameConfig(game, options, numbering)
    number = random_number(config)
    result = solve_deal(config, number, seconds=seconds)
    return (number, list(result.moves)) if result.solved else None


def _lower_priority() -> None:
    with contextlib.suppress(OSError):
        os.nice(10)


class DealPool:
    """Certified deals by game and options; bounded in games, deals and workers."""

    def __init__(
        self,
        size: int = 3,
        seconds: float = 20.0,
        workers: int = 1,
        max_games: int = 16,
        prefill: bool = True,
    ) -> None:
        self.size = size
        self.seconds = seconds
        self.workers = workers
        self.max_games = max_games
        self.ready: dict[Key, deque[tuple[int, list[str]]]] = {}
        self.wanted: OrderedDict[Key, GameConfig] = OrderedDict()
        self.running: dict[Key, int] = {}
        self.tried = 0
        self.certified = 0
        self._executor: ProcessPoolExecutor | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        if prefill:
            for game, options in DEFAULT_CONFIGS:
                self.want(GameConfig(game, options))

    # -- what the hub calls (sync, at once) -----------------------------------------------

    def want(self, config: GameConfig) -> None:
        """Keep deals of ``config`` ready from now on (the least recently wanted game is let go
        past ``max_games``)."""
        key = key_of(config)
        self.wanted[key] = config
        self.wanted.move_to_end(key)
        while len(self.wanted) > self.max_games:
            old, _ = self.wanted.popitem(last=False)
            self.ready.pop(old, None)
        self._wake.set()

    def take(self, config: GameConfig) -> tuple[int, list[str]] | None:
        """A certified deal of ``config`` (number, solution), or None if none is ready yet."""
        self.want(config)
        ready = self.ready.get(key_of(config))
        return ready.popleft() if ready else None

    def count(self, config: GameConfig) -> int:
        return len(self.ready.get(key_of(config), ()))

    # -- the background side -----------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._fill_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _needs(self) -> list[Key]:
        return [
            k
            for k in reversed(self.wanted)  # the most recently wanted first
            if len(self.ready.get(k, ())) + self.running.get(k, 0) < self.size
        ]

    async def _fill_forever(self) -> None:
        loop = asyncio.get_running_loop()
        pending: set[asyncio.Future[tuple[int, list[str]] | None]] = set()
        owner: dict[asyncio.Future[tuple[int, list[str]] | None], Key] = {}
        while True:
            for key in self._needs():
                if len(pending) >= self.workers:
                    break
                config = self.wanted[key]
                job: Future[tuple[int, list[str]] | None] = self._pool().submit(
                    certify, config.game, dict(config.options), config.numbering, self.seconds
                )
                fut = asyncio.wrap_future(job, loop=loop)
                pending.add(fut)
                owner[fut] = key
                self.running[key] = self.running.get(key, 0) + 1
            self._wake.clear()
            waiter = asyncio.ensure_future(self._wake.wait())
            done, _ = await asyncio.wait({*pending, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            for fut in done - {waiter}:
                pending.discard(fut)
                key = owner.pop(fut)
                self.running[key] -= 1
                self.tried += 1
                try:
                    got = fut.result()
                except Exception:
                    log.exception("certify failed", extra={"fields": {"event": "solver_error"}})
                    await asyncio.sleep(1.0)
                    continue
                if got is not None and key in self.wanted:
                    self.ready.setdefault(key, deque()).append(got)
                    self.certified += 1

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_lower_priority,
            )
        return self._executor
