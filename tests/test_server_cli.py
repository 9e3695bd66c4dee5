"""patience-race-server's configuration: flags, the same names as environment variables, --schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from protocol.messages import PROTOCOL_VERSION
from server.cli import build_parser, main


def test_environment_variables_set_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATIENCE_RACE_PORT", "9123")
    monkeypatch.setenv("PATIENCE_RACE_GRACE", "12.5")
    monkeypatch.setenv("PATIENCE_RACE_LOG_FORMAT", "json")
    monkeypatch.setenv("PATIENCE_RACE_ORIGINS", "https://club.example")
    monkeypatch.setenv("PATIENCE_RACE_TRUSTED_PROXIES", "127.0.0.1")
    monkeypatch.setenv("PATIENCE_RACE_MAX_PER_ADDRESS", "7")
    monkeypatch.setenv("PATIENCE_RACE_DB", "/tmp/x.sqlite3")
    args = build_parser().parse_args([])
    assert (args.port, args.grace, args.log_format) == (9123, 12.5, "json")
    assert args.origins == "https://club.example" and args.trusted_proxies == "127.0.0.1"
    assert args.max_per_address == 7 and args.db == "/tmp/x.sqlite3"
    # a flag wins over the environment
    assert build_parser().parse_args(["--port", "1"]).port == 1


@pytest.mark.parametrize(
    ("var", "value", "said"),
    [
        ("PATIENCE_RACE_GRACE", "abc", "PATIENCE_RACE_GRACE='abc' is not a number"),
        ("PATIENCE_RACE_PORT", "80.5", "PATIENCE_RACE_PORT='80.5' is not a whole number"),
        ("PATIENCE_RACE_CERTIFIED_DEALS", "three", "is not a whole number"),
    ],
)
def test_a_bad_environment_variable_is_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    var: str,
    value: str,
    said: str,
) -> None:
    """A mistake in /etc/patience-race/env is refused as the same mistake in a flag is: one
    line naming the variable, exit 2, no traceback."""
    monkeypatch.setenv(var, value)
    assert main(["--db", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_a_flag_wins_over_a_bad_environment_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """operations.md says the flag wins: a bad PATIENCE_RACE_GRACE stopped a server started
    with --grace 30 all the same (operator trial)."""
    monkeypatch.setenv("PATIENCE_RACE_GRACE", "abc")
    assert build_parser().parse_args(["--grace", "30"]).grace == 30.0
    assert main(["--grace", "30", "--db", ":memory:", "--schema"]) == 0
    assert "PATIENCE_RACE_GRACE" not in capsys.readouterr().err


def test_loop_uvloop_without_uvloop_is_a_bad_setting(capsys: pytest.CaptureFixture[str]) -> None:
    """Exit status 2, as every other bad setting (it was 1, a crash to a service manager)."""
    import importlib.util

    from server.cli import loop_factory

    if importlib.util.find_spec("uvloop") is not None:
        pytest.skip("uvloop is installed here")
    with pytest.raises(SystemExit) as done:
        loop_factory("uvloop")
    assert done.value.code == 2
    assert "--loop uvloop needs uvloop" in capsys.readouterr().err


def test_loop_uvloop_without_uvloop_creates_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before the database is opened (it was created, and its lock file; review)."""
    import importlib.util

    if importlib.util.find_spec("uvloop") is not None:
        pytest.skip("uvloop is installed here")
    db = tmp_path / "x.sqlite3"
    assert main(["--loop", "uvloop", "--db", str(db), "--port", "0"]) == 2
    assert "--loop uvloop needs uvloop" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_defaults_without_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PORT", "HOST", "DB", "GRACE"):
        monkeypatch.delenv(f"PATIENCE_RACE_{name}", raising=False)
    args = build_parser().parse_args([])
    assert (args.host, args.port, args.grace) == ("127.0.0.1", 8765, 60.0)
    assert args.db.endswith("patience-race/races.sqlite3")


def test_schema_prints_both_directions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["protocol_version"] == PROTOCOL_VERSION == "1.4"
    client = json.dumps(schema["client_to_server"])
    server = json.dumps(schema["server_to_client"])
    for name in ("Hello", "CreateRoom", "JoinRoom", "Resume", "MoveCmd", "Rematch", "GetRace"):
        assert name in client
    for name in ("Welcome", "Joined", "Moved", "ProgressUpdate", "RaceOver", "Snapshot", "Notice"):
        assert name in server


def test_bad_trusted_proxies_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--trusted-proxies", "not-a-network", "--db", ":memory:"]) == 2
    assert "trusted-proxies" in capsys.readouterr().err
    # every address in two halves (it started: an operator trial), or most of them
    for wide in ("0.0.0.0/1,128.0.0.0/1", "10.0.0.0/7", "::/1", "fc00::/6"):
        assert main(["--trusted-proxies", wide, "--db", ":memory:"]) == 2, wide
        assert "too wide" in capsys.readouterr().err
    # or together: every /8 one by one, every IPv4 address mapped into IPv6 (a review)
    for many in (",".join(f"{i}.0.0.0/8" for i in range(1, 256)), "::ffff:0:0/96"):
        assert main(["--trusted-proxies", many, "--db", ":memory:"]) == 2
        assert "too many addresses together" in capsys.readouterr().err
    from server.cli import _networks

    assert _networks("172.16.0.0/12,10.0.0.0/8,192.168.0.0/16,fc00::/7") is None  # compose's


def test_progress_interval_flag_and_its_bounds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PATIENCE_RACE_PROGRESS_MS", raising=False)
    assert build_parser().parse_args([]).progress_ms == 250
    monkeypatch.setenv("PATIENCE_RACE_PROGRESS_MS", "100")
    assert build_parser().parse_args([]).progress_ms == 100
    for bad in ("5", "60000"):
        assert main(["--progress-ms", bad, "--db", ":memory:"]) == 2
        assert "--progress-ms" in capsys.readouterr().err


def test_the_server_process_collects_garbage_rarely() -> None:
    import gc

    from server.cli import GC_THRESHOLDS, tune_gc

    before = gc.get_threshold()
    try:
        frozen = tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() == frozen > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_port_it_cannot_listen_on_is_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    monkeypatch.setenv("PATIENCE_RACE_CERTIFIED_DEALS", "0")
    assert main(["--port", "70000", "--db", ":memory:"]) == 2
    assert "--port 70000: must be between 0 and 65535" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["--port", str(port), "--db", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("PATIENCE_RACE_LOG_LEVEL", "verbose"),
        ("PATIENCE_RACE_LOG_FORMAT", "xml"),
        ("PATIENCE_RACE_LOOP", "trio"),
        ("PATIENCE_RACE_MAX_PER_ADDRESS", "-1"),
        ("PATIENCE_RACE_GRACE", "-5"),
        ("PATIENCE_RACE_GRACE", "nan"),
        ("PATIENCE_RACE_RATE", "0"),
        ("PATIENCE_RACE_MAX_CONNECTIONS", "0"),
        ("PATIENCE_RACE_CERTIFIED_DEALS", "-3"),
        ("PATIENCE_RACE_KEEP_DAYS", "-1"),
        ("PATIENCE_RACE_PORT", "70000"),
        ("PATIENCE_RACE_TRUSTED_PROXIES", "not-a-network"),
    ],
)
def test_a_nonsense_environment_variable_is_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    var: str,
    value: str,
) -> None:
    monkeypatch.setenv(var, value)
    assert main(["--db", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"patience-race-server: {var}={value!r}"), err


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--log-level", "verbose", "must be one of debug, info, warning, error"),
        ("--max-per-address", "-1", "must be at least 1"),
        ("--grace", "-5", "must be more than 0"),
        ("--rate", "0", "must be at least 0.01"),
        ("--rate", "1e-300", "must be at least 0.01"),
        ("--host", "", "must name an address"),
        ("--countdown-ms", "100000000000000000000", "must be at most 60000"),
        ("--grace", "1e300", "must be at most 86400"),
        ("--open-timeout", "1e300", "must be at most 600"),
        ("--trusted-proxies", "10.0.0.1,0.0.0.0/0", "0.0.0.0/0 is every address"),
        ("--trusted-proxies", "::/0", "::/0 is every address"),
        ("--max-connections", "0", "must be at least 1"),
        ("--certified-deals", "-3", "must be at least 0"),
        ("--race-idle", "-1", "must be at least 0"),
        ("--race-idle", "100000", "must be at most 86400"),
        ("--slow-timeout", "100000", "must be at most 3600"),
        ("--certify-seconds", "1e9", "must be at most 3600"),
    ],
)
def test_a_nonsense_flag_is_said_in_one_line(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    assert main([flag, value, "--db", ":memory:"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"patience-race-server: {flag} ") and said in err, err
    assert len(err.strip().splitlines()) == 1


def test_zero_stays_valid_where_it_means_something(monkeypatch: pytest.MonkeyPatch) -> None:
    from server.cli import config_problem

    for var in ("CERTIFIED_DEALS", "KEEP_DAYS", "RACE_IDLE", "COUNTDOWN_MS", "PORT"):
        monkeypatch.setenv(f"PATIENCE_RACE_{var}", "0")
    monkeypatch.setenv("PATIENCE_RACE_LOG_LEVEL", "WARNING")
    args = build_parser().parse_args([])
    assert config_problem(args) is None
    assert (args.certified_deals, args.keep_days, args.race_idle, args.log_level) == (
        0,
        0.0,
        0.0,
        "warning",
    )


def test_every_limit_flag_reaches_the_servers_limits() -> None:
    """A flag parsed and checked but not handed on is silently the default: ``--max-db-mb``
    and ``--keep-days`` decide what the server deletes."""
    from server.cli import limits_from_args

    args = build_parser().parse_args(
        [
            *("--grace", "7", "--countdown-ms", "1500", "--max-rooms", "11"),
            *("--max-rooms-per-address", "3", "--rooms-per-minute", "6"),
            *("--joins-per-minute", "12", "--resumes-per-minute", "18"),
            *("--races-per-minute", "24", "--connects-per-second", "2.5"),
            *("--max-connections", "77", "--max-per-address", "5", "--rate", "9"),
            *("--burst", "13", "--idle-timeout", "33", "--race-idle", "44"),
            *("--progress-ms", "250", "--keep-days", "3.5", "--max-db-mb", "123"),
            *("--slow-timeout", "21", "--open-timeout", "8", "--record-rate", "64"),
        ]
    )
    limits = limits_from_args(args)
    assert (limits.keep_days, limits.max_db_mb) == (3.5, 123)
    assert (limits.grace_s, limits.countdown_ms, limits.max_rooms) == (7, 1500, 11)
    assert limits.max_rooms_per_address == 3
    assert (limits.room_create_rate, limits.join_rate) == (6 / 60, 12 / 60)
    assert (limits.resume_rate, limits.race_rate) == (18 / 60, 24 / 60)
    assert (limits.connect_rate, limits.max_connections, limits.max_per_address) == (2.5, 77, 5)
    assert (limits.rate, limits.burst, limits.idle_timeout_s, limits.race_idle_s) == (9, 13, 33, 44)
    assert limits.progress_interval_s == 0.25
    assert (limits.slow_timeout_s, limits.open_timeout_s) == (21, 8)
    assert (limits.record_rate, limits.record_burst) == (64 * 1024, 64 * 4096)


def test_the_trusted_proxies_flag_reaches_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a proxy not handed on, every player is the proxy's address: one budget for all
    of them, and the logs name nobody."""
    import server.cli

    given: dict[str, object] = {}

    async def serve(*args: object) -> int:
        given["proxies"] = args[5]
        return 0

    monkeypatch.setattr(server.cli, "serve", serve)
    monkeypatch.setattr(server.cli, "setup_logging", lambda *a: None)
    flags = ["--trusted-proxies", "127.0.0.1, 10.1.0.0/16", "--certified-deals", "0"]
    assert main([*flags, "--db", ":memory:"]) == 0
    assert [p.strip() for p in given["proxies"]] == ["127.0.0.1", "10.1.0.0/16"]  # type: ignore[attr-defined]


def test_a_node_named_after_a_host_with_capitals_is_taken_in_lower_case() -> None:
    """The systemd template names a node %H-%i: a host called Web1 is node web1-01, at
    /n/web1-01/ (node names are lower-case)."""
    from server.cli import cluster_config

    args = build_parser().parse_args(["--node", "Web1.Example-01"])
    config = cluster_config(args)
    assert config.node == "web1.example-01"
    assert config.advertised(8701) == "/n/web1.example-01/"
    with pytest.raises(ValueError):
        cluster_config(build_parser().parse_args(["--node", "web 1"]))


def test_schema_cut_short_by_its_reader_is_no_traceback() -> None:
    """``patience-race-server --schema | head``: the reader goes; no BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)  # the reader is gone before a line is written
    proc = subprocess.run(
        [sys.executable, "-m", "server.cli", "--schema"],
        stdout=w, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
    )  # fmt: skip
    os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
