"""The project's promises about itself: the README's commands are what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

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
