from __future__ import annotations

from protocol.messages import ProgressUpdate, RaceOver, Settings

from .server_helpers import close_all, host_and_join, move, running_server, start_race


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
