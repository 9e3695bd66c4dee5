"""Helpers for tests against a real server on 127.0.0.1, port 0."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from client.net import Connection
from protocol import cards
from protocol.codec import decode
from protocol.messages import (
    CreateRoom,
    Joined,
    JoinRoom,
    MoveCmd,
    Moved,
    RaceStart,
    Ready,
    Settings,
    WireMove,
)
from server.app import RaceServer
from server.limits import Limits
from server.store import Store


def fast_limits(**kw: Any) -> Limits:
    base = {"countdown_ms": 50, "grace_s": 5.0, "progress_interval_s": 0.02, "tick_s": 0.01}
    base.update(kw)
    return Limits(**base)  # type: ignore[arg-type]


@asynccontextmanager
async def running_server(
    limits: Limits | None = None, store: Store | None = None
) -> AsyncIterator[RaceServer]:
    server = RaceServer(
        "127.0.0.1", 0, limits=limits or fast_limits(), store=store or Store(":memory:")
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
        if server.store is not None:
            server.store.close()


class Recorder(Connection):
    """A connection that keeps every raw frame it received, for fairness scans."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.frames: list[bytes] = []

    async def open(self, **kw: Any) -> Any:
        welcome = await super().open(**kw)
        assert self.ws is not None
        original = self.ws.recv_messages.get  # keep the frames as they arrive

        def tap(*a: Any, **k: Any) -> Any:
            frame = original(*a, **k)
            if isinstance(frame, bytes):
                self.frames.append(frame)
            return frame

        self.ws.recv_messages.get = tap  # type: ignore[method-assign]
        return welcome

    def decoded(self) -> list[Any]:
        return [decode(f) for f in self.frames]


async def host_and_join(
    url: str, names: Iterable[str], settings: Settings, conn_cls: type[Connection] = Connection
) -> tuple[list[Connection], str, list[Joined]]:
    conns: list[Connection] = []
    joined: list[Joined] = []
    names = list(names)
    host = conn_cls(url)
    await host.open()
    j = await host.request(CreateRoom(seq=0, name=names[0], settings=settings))
    assert isinstance(j, Joined)
    conns.append(host)
    joined.append(j)
    code = j.room.code
    for name in names[1:]:
        c = conn_cls(url)
        await c.open()
        jj = await c.request(JoinRoom(seq=0, code=code, name=name))
        assert isinstance(jj, Joined)
        conns.append(c)
        joined.append(jj)
    return conns, code, joined


async def start_race(conns: list[Connection]) -> list[RaceStart]:
    for c in conns:
        await c.request(Ready(seq=0))
    return [await c.wait_for(RaceStart) for c in conns]


async def move(conn: Connection, kind: str, src: int = -1, dst: int = -1, count: int = 0) -> Moved:
    answer = await conn.request(
        MoveCmd(seq=0, move=WireMove(kind=kind, src=src, dst=dst, count=count))
    )  # type: ignore[arg-type]
    assert isinstance(answer, Moved)
    return answer


async def close_all(conns: Iterable[Connection]) -> None:
    await asyncio.gather(*(c.close() for c in conns))


def hidden_names(state: Any) -> set[str]:
    """Names of cards that are face down or in the stock, and appear nowhere face up."""
    hidden = [c for p, d in zip(state.piles, state.down, strict=True) for c in p[:d]] + list(
        state.stock
    )
    return {cards.name(c) for c in hidden}
