from __future__ import annotations

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from protocol.messages import ProgressUpdate, RaceOver, Settings

from .server_helpers import close_all, host_and_join, move, raw_client, running_server, start_race


async def test_two_players_race_to_results() -> None:
    async with running_server() as server:
        conns, code, _joined = await host_and_join(
            server.url, ["Ann", "Bob"], Settings(game="st-helena")
        )
        starts = await start_race(conns)
        assert starts[0].board is not None and starts[0].board == starts[1].board
        assert len(code) == 8
        # Ann resigns, Bob resigns: the race is over
        await move(conns[0], "resign")
        p = await conns[1].wait_for(ProgressUpdate)
        assert {pl.name for pl in p.players} == {"Ann", "Bob"}
        await move(conns[1], "resign")
        over = await conns[0].wait_for(RaceOver)
        assert over.reason == "all_done"
        assert [s.name for s in over.standings]
        await close_all(conns)


async def test_allowed_origins_keep_other_sites_out_and_let_the_terminal_client_in() -> None:
    """With ``--origins`` set every terminal client (which sends no Origin) was refused with 403,
    said as "cannot reach the race server" (an operator trial)."""
    async with running_server(origins=["https://club.example"]) as server:
        async with raw_client(server.url) as ws:  # no Origin: the terminal client's way
            assert ws.response is not None and ws.response.status_code == 101
        async with connect(server.url, origin=Origin("https://club.example")) as ws:
            await ws.ping()
        with pytest.raises(InvalidStatus) as refused:
            async with connect(server.url, origin=Origin("https://evil.example")):
                pass
        assert refused.value.response.status_code == 403
