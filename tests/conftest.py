from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's own saved seats or database."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("PATIENCE_RACE_SERVER", raising=False)
    # servers started as commands keep no pool of certified deals (its solver process would
    # take a core for minutes): tests/test_certified.py turns it on where it is tested
    monkeypatch.setenv("PATIENCE_RACE_CERTIFIED_DEALS", "0")
