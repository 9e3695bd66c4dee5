"""The project's promises about itself: the README's commands are what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.+?)\n```", text, flags=re.S)


def test_readme_starts_with_two_commands() -> None:
    commands = readme_commands()
    assert len(commands) >= 2
    assert commands[0].startswith("python3 -m venv .venv")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = readme_commands()[1]
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_the_game_module_imports_none_of_the_games() -> None:
    """protocol/game.py imported the games that import it (lazily, inside ``state_class``):
    a registry breaks the circle (a code review, the brief). Each game registers its class,
    and a game nobody registered is an error, not St. Helena's rules."""
    import ast
    import dataclasses

    from protocol.config import GameConfig
    from protocol.game import state_class
    from protocol.helena import HelenaState
    from protocol.spider import SpiderState

    tree = ast.parse((ROOT / "protocol" / "game.py").read_text())
    imported = {
        alias.name if isinstance(node, ast.Import) else (node.module or "")
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {"spider", "helena"} & {name.rsplit(".", 1)[-1] for name in imported}
    assert state_class(GameConfig("spider")) is SpiderState
    assert state_class(GameConfig("louis")) is state_class(GameConfig("st-helena")) is HelenaState
    unknown = dataclasses.replace(GameConfig("louis"))
    object.__setattr__(unknown, "game", "klondike")
    with pytest.raises(KeyError, match="klondike"):
        state_class(unknown)


def test_the_suite_runs_on_the_processors_it_may_use(tmp_path: Path) -> None:
    """`-n auto` counts a container's CPU quota: a share of two processors on a big machine
    gets two test processes, not one for every processor the machine has."""
    from .conftest import MAX_WORKERS, usable_processors

    none = tmp_path / "no such file"
    everything = usable_processors(none, none)
    assert everything >= 1
    quota = tmp_path / "cpu.max"
    for v2, expected in (("150000 100000\n", 2), ("max 100000\n", everything), ("", everything)):
        quota.write_text(v2)
        assert usable_processors(quota, none) == min(everything, expected), v2
    v1 = tmp_path / "cpu"
    v1.mkdir()
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    for cfs, expected in (("50000\n", 1), ("-1\n", everything)):
        (v1 / "cpu.cfs_quota_us").write_text(cfs)
        assert usable_processors(none, v1) == min(everything, expected), cfs
    assert MAX_WORKERS >= 2
