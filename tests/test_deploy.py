"""deploy/: the compose file, the nginx site and the systemd unit are checked without Docker."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def test_compose_file_parses_and_wires_the_server_behind_nginx() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    server, nginx = services["patience-race"], services["nginx"]
    assert server["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / server["build"]["context"] / server["build"]["dockerfile"]).is_file()
    assert any(v.startswith("data:/data") for v in server["volumes"])
    # players reach the server through nginx only: its port is published for a scraper on the
    # host's loopback (the operator trial found /metrics could not be scraped at all)
    assert server["ports"] == ["127.0.0.1:8765:8765"]
    docs = (DEPLOY.parent / "docs" / "operations.md").read_text()
    assert "curl -s http://127.0.0.1:8765/metrics" in docs
    assert nginx["depends_on"]["patience-race"]["condition"] == "service_healthy"
    assert "443:443" in nginx["ports"]
    for volume in nginx["volumes"]:
        source = volume.split(":")[0]
        if source.startswith("./nginx"):
            assert (DEPLOY / source).is_file(), source
    grace = server["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) >= 10


def _mounts(service: dict[str, object]) -> dict[str, tuple[str, str]]:
    """A compose service's bind mounts: target -> (source, mode)."""
    out = {}
    for volume in service.get("volumes", []):  # type: ignore[attr-defined]
        source, target, *mode = str(volume).split(":")
        out[target] = (source, mode[0] if mode else "rw")
    return out


@pytest.mark.parametrize(
    ("compose_file", "site_file"),
    [
        ("compose.yaml", "nginx/patience-race.conf"),
        ("cluster/compose.yaml", "cluster/nginx/site.conf"),
    ],
)
def test_compose_nginx_can_get_and_renew_its_certificate(compose_file: str, site_file: str) -> None:
    """The operator trial: under compose the site answered certbot's challenges from a folder
    the nginx container did not have, links into /etc/letsencrypt did not resolve in it, and
    the container holds port 80, so neither --webroot nor --standalone on the host worked.  The
    container now mounts the host's webroot where the site serves challenges from, and
    /etc/letsencrypt at the same path (read-only both); docs/operations.md gives the commands,
    with a deploy hook that reloads nginx after each renewal."""
    nginx = yaml.safe_load((DEPLOY / compose_file).read_text())["services"]["nginx"]
    site = (DEPLOY / site_file).read_text()
    mounts = _mounts(nginx)
    root = re.search(r"location /\.well-known/acme-challenge/ \{ root (\S+); \}", site)
    assert root is not None, "the site answers certbot's challenges on port 80"
    webroot, mode = mounts.get(root.group(1), ("", ""))
    assert webroot.startswith("/") and mode == "ro", "the challenges' folder, from the host"
    assert mounts.get("/etc/letsencrypt") == ("/etc/letsencrypt", "ro")
    certs = re.search(r"ssl_certificate\s+(\S+)/fullchain\.pem;", site)
    assert certs is not None and mounts[certs.group(1)][1] == "ro"
    assert "80:80" in nginx["ports"] and "443:443" in nginx["ports"]

    docs = (DEPLOY.parent / "docs" / "operations.md").read_text()
    section = docs.split("### With Docker Compose", 1)[1].split("\n## ", 1)[0]
    compose = "/opt/patience-race/deploy/compose.yaml"
    assert f"--webroot -w {webroot} " in section
    hook = f'--deploy-hook "docker compose -f {compose} exec -T nginx nginx -s reload"'
    assert hook in section
    for target in re.findall(r"ln -sf (\S+) deploy/certs/", section):
        assert target.startswith("/etc/letsencrypt/"), "a link the container can follow"


def test_dockerfile_runs_as_a_user_with_exec_form_and_a_health_check() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines()]
    user = [line for line in lines if line.startswith("USER ")]
    assert user and user[-1] != "USER root"
    entry = [line for line in lines if line.startswith("ENTRYPOINT")]
    assert entry == ['ENTRYPOINT ["patience-race-server"]'], (
        "exec form, so SIGTERM reaches the server"
    )
    assert any(line.startswith("HEALTHCHECK") for line in lines) and "/healthz" in text
    assert 'VOLUME ["/data"]' in lines


CLIENT_ONLY = {"textual"}
"""Dependencies the server never imports: the images leave them out."""


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "cluster/Dockerfile"])
def test_the_images_install_every_dependency_the_server_needs(dockerfile: str) -> None:
    """The images install the package without its dependencies (no Textual), then the server's
    own: every one pyproject.toml declares but the client's, with the same bounds."""
    import re
    import tomllib

    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["project"]
    needed = [d for d in project["dependencies"] if re.split(r"[<>=!~ ]", d)[0] not in CLIENT_ONLY]
    if dockerfile.startswith("cluster"):
        needed += project["optional-dependencies"]["cluster"]
    text = (DEPLOY / dockerfile).read_text().replace("\\\n", " ")
    installs = re.findall(r"pip install [^\n&]*", text)
    assert any("--no-deps ." in line for line in installs)
    listed = {spec for line in installs for spec in re.findall(r'"([^"]+)"', line)}
    assert sorted(set(needed) - listed) == [], f"{dockerfile} leaves out what the server imports"


def test_the_server_does_not_import_the_client_only_dependencies() -> None:
    code = (
        "import sys, server.cli, server.app, server.hub, server.pool, server.certify, "
        "server.cluster, protocol.names; "
        "protocol.names.skeleton('Ann'); "
        f"print(sorted(m for m in {sorted(CLIENT_ONLY)!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=DEPLOY.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_nginx_accepts_the_site(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
    )
    if nginx is None:
        pytest.skip(
            "nginx is not installed (.ci/run installs it from Debian's packages when it can)"
        )
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed: no certificate to test the TLS site with")
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(certs / "privkey.pem"), "-out", str(certs / "fullchain.pem")],
        check=True, capture_output=True,
    )  # fmt: skip
    # The site as shipped, with its absolute paths pointed into the test folder.
    site = (DEPLOY / "nginx" / "patience-race.conf").read_text()
    site = site.replace("/etc/nginx/certs/", f"{certs}/")
    site = site.replace(
        "/etc/nginx/patience-race-upstream.conf", str(DEPLOY / "nginx" / "upstream-local.conf")
    )
    (tmp_path / "site.conf").write_text(site)
    (tmp_path / "logs").mkdir()
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/logs/error.log;\nevents {{}}\n"
        f"http {{\n access_log off;\n include {tmp_path}/site.conf;\n}}\n"
    )
    result = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr


def test_nginx_site_proxies_websockets_correctly() -> None:
    site = (DEPLOY / "nginx" / "patience-race.conf").read_text()
    assert "proxy_set_header Upgrade $http_upgrade;" in site
    assert "proxy_set_header Connection $connection_upgrade;" in site
    assert "proxy_http_version 1.1;" in site
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in site, (
        "overwrite, not $proxy_add_x_forwarded_for"
    )
    timeout = int(site.split("proxy_read_timeout", 1)[1].split("s;", 1)[0])
    assert timeout > 40, "longer than the server's ping interval and timeout"


def test_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    unit = (DEPLOY / "systemd" / "patience-race.service").read_text()
    assert "ExecStart=/opt/patience-race/.venv/bin/patience-race-server" in unit
    assert "KillSignal=SIGTERM" in unit and "Restart=on-failure" in unit
    verify_unit(analyze, tmp_path, unit, "patience-race.service")


@pytest.mark.parametrize(
    "unit", ["systemd/patience-race.service", "cluster/systemd/patience-race-server@.service"]
)
def test_the_system_call_filter_lets_the_solver_lower_its_priority(unit: str) -> None:
    """The deal solver's process calls os.nice (setpriority), which ``@resources`` holds: the
    filter gives it back after taking that group away (systemd applies the lines in order), and
    a refused call fails with EPERM rather than killing the process (SIGSYS)."""
    lines = [line.strip() for line in (DEPLOY / unit).read_text().splitlines()]
    filters = [line.split("=", 1)[1] for line in lines if line.startswith("SystemCallFilter=")]
    taken = next(i for i, f in enumerate(filters) if f.startswith("~") and "@resources" in f)
    assert any("setpriority" in f.split() for f in filters[taken + 1 :] if not f.startswith("~"))
    assert "SystemCallErrorNumber=EPERM" in lines


def verify_unit(
    analyze: str, folder: Path, unit: str, file: str, instance: str | None = None
) -> None:
    """``systemd-analyze verify`` on ``unit`` written as ``folder/file`` (an ``instance`` of a
    template), with the install path of docs/operations.md pointed at this checkout's server."""
    server = Path(sys.executable).parent / "patience-race-server"
    assert server.exists()
    (folder / file).write_text(
        unit.replace("/opt/patience-race/.venv/bin/patience-race-server", str(server))
    )
    result = subprocess.run(
        [analyze, "verify", str(folder / (instance or file))],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
    )
    name = file.split("@")[0]
    problems = [line for line in (result.stdout + result.stderr).splitlines() if name in line]
    assert result.returncode == 0 and not problems, result.stdout + result.stderr


def _locations(conf: str) -> list[str]:
    """The text of each ``location ... { }`` block of an nginx file (braces matched)."""
    out = []
    for start in [i for i in range(len(conf)) if conf.startswith("location ", i)]:
        depth, i = 0, conf.index("{", start)
        for j in range(i, len(conf)):
            depth += {"{": 1, "}": -1}.get(conf[j], 0)
            if depth == 0:
                out.append(conf[start : j + 1])
                break
    return out


@pytest.mark.parametrize(
    "name", ["nginx/patience-race.conf", "cluster/nginx/site.conf", "cluster/nginx/locations.conf"]
)
def test_every_proxied_location_sets_the_client_address_itself(name: str) -> None:
    """nginx passes a location none of the server's proxy_set_header once it has one of its
    own, and none at all where only `location /` set them: the port-80 /healthz passed a
    client's made-up X-Forwarded-For to the server, which believes it from the proxy, and an
    attacker named any address to lock it out and have fail2ban ban it (an operator trial).
    Every proxying location overwrites the header; /healthz answers local probes only."""
    conf = (DEPLOY / name).read_text()
    proxy_conf = (DEPLOY / "cluster" / "nginx" / "proxy.conf").read_text()
    blocks = [b for b in _locations(conf) if "proxy_pass" in b]
    assert blocks, name
    for block in blocks:
        text = block.replace("include /etc/nginx/patience-race/proxy.conf;", proxy_conf)
        assert "proxy_set_header X-Forwarded-For $remote_addr;" in text, block
        if "/healthz" in block.split("{", 1)[0] or "/metrics" in block.split("{", 1)[0]:
            assert "deny all;" in block, block


def test_the_tls_key_is_never_committed_nor_sent_to_a_build() -> None:
    """The documented steps put privkey.pem in deploy/certs, which git showed as untracked
    (one `git add -A` from a commit) and compose's build context (the repository) sent to the
    builder (an operator trial)."""
    root = DEPLOY.parent
    assert "deploy/certs/" in (root / ".gitignore").read_text().split()
    ignored = [
        line.strip()
        for line in (root / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "deploy/certs" in ignored and ".git" in ignored and ".venv" in ignored
    for needed in ("pyproject.toml", "README.md", "protocol", "server", "client"):
        assert not any(needed == p or needed.startswith(p + "/") for p in ignored), needed


@pytest.mark.parametrize("name", ["compose.yaml", "cluster/compose.yaml"])
def test_every_container_keeps_a_bounded_log(name: str) -> None:
    """Docker's default json-file log grows without bound (an operator trial)."""
    services = yaml.safe_load((DEPLOY / name).read_text())["services"]
    for service, spec in services.items():
        options = spec.get("logging", {}).get("options", {})
        assert options.get("max-size") and options.get("max-file"), service
