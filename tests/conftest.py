from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from .server_helpers import Lines


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's own saved seats or database."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("PATIENCE_RACE_SERVER", raising=False)
    # servers started as commands keep no pool of certified deals (its solver process would
    # take a core for minutes): tests/test_certified.py turns it on where it is tested
    monkeypatch.setenv("PATIENCE_RACE_CERTIFIED_DEALS", "0")


@pytest.fixture
def lines() -> Iterator[Lines]:
    """The structured fields of every line the server's logger writes, while the test runs."""
    logger = logging.getLogger("patience_race.server")
    handler = Lines()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
