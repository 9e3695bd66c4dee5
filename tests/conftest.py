from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .server_helpers import Lines

# `-n auto` never starts more test processes than this, however many processors there are: every
# process starts its own servers, and past a few the suite is no faster.
MAX_WORKERS = 8


def usable_processors(
    cpu_max: Path = Path("/sys/fs/cgroup/cpu.max"), cfs: Path = Path("/sys/fs/cgroup/cpu")
) -> int:
    """The processors this process may use: its affinity, less a container's CPU quota (cgroup
    v2's ``cpu.max``, or v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` under ``cfs``)."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    usable = count or 1
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        try:  # cgroup v1
            quota = (cfs / "cpu.cfs_quota_us").read_text().strip()
            period = (cfs / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            quota = period = "max"  # no quota here
    with contextlib.suppress(ValueError, ZeroDivisionError):
        if int(quota) > 0:  # ("max" in v2, -1 in v1: none)
            usable = min(usable, math.ceil(int(quota) / int(period)))
    return max(1, usable)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one test process for each processor the suite may use (the count xdist
    makes by itself ignores a container's quota: 64 processes on a share of two), unless
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` says how many, as xdist documents it."""
    wanted = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip()
    if wanted.isdigit():
        return int(wanted)
    return min(usable_processors(), MAX_WORKERS)


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
