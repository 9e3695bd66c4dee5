"""A bare websockets echo server: the physical limit the race server is measured against.

    python bench/echo_server.py [--port 0] [--loop asyncio|uvloop]

Prints ``listening ws://HOST:PORT`` on standard error, then echoes every frame back until SIGTERM.
It uses the same websockets settings as the race server (asyncio API, same frame limit, pings).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from websockets.asyncio.server import ServerConnection, serve


async def echo(ws: ServerConnection) -> None:
    async for frame in ws:
        await ws.send(frame)


async def main(port: int) -> None:
    async with serve(
        echo,
        "127.0.0.1",
        port,
        max_size=64 * 1024,
        ping_interval=20,
        ping_timeout=20,
        compression=None,
    ) as server:
        sock = next(iter(server.sockets))
        print(f"listening ws://127.0.0.1:{sock.getsockname()[1]}", file=sys.stderr, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        await stop.wait()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--loop", default="asyncio", choices=("asyncio", "uvloop"))
    args = ap.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop  # type: ignore[import-not-found]

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(main(args.port))
