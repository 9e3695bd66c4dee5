"""A server the client cannot reach, said for people: which URL, why, and what to do instead
(start one, run ``play``, trust its certificate...), and a quick probe before a full screen
is drawn.
"""

from __future__ import annotations

from .safe import clean
from .terminal import program

UNREACHABLE_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError)


def network_errors() -> tuple[type[BaseException], ...]:
    from websockets.exceptions import InvalidHandshake, InvalidURI

    from .net import Disconnected

    return (*UNREACHABLE_ERRORS, InvalidURI, InvalidHandshake, Disconnected)


def unreachable(url: str, exc: BaseException) -> str:
    """Two lines for a server that cannot be reached: which, why, and what to do instead."""
    import ssl

    from websockets.exceptions import InvalidURI

    if isinstance(exc, ssl.SSLCertVerificationError) and "mismatch" in str(exc.verify_message):
        # trusted, but made for another name: SSL_CERT_FILE cannot help (an operator trial)
        return (
            f"patience-race: the race server at {clean(url)} has a certificate made for another "
            f"name ({clean(exc.verify_message)}).\n"
            "Connect by the name its certificate was made for (ask its host which)."
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"patience-race: the race server at {clean(url)} has a certificate this computer "
            f"does not trust ({clean(exc.verify_message or exc)}).\n"
            "If its host made it (self-signed), ask them for it and run the client with "
            "SSL_CERT_FILE=/path/to/cert.pem."
        )
    from websockets.exceptions import InvalidStatus

    from .net import Disconnected

    if isinstance(exc, Disconnected) and exc.code is not None:
        # it answered, and turned us away (full, restarting, too many from this address):
        # running another server is not the advice
        return (
            f"patience-race: the race server at {clean(url)} turned the connection away "
            f"({clean(exc.reason or str(exc))}).\nTry again in a moment."
        )
    if (
        isinstance(exc, InvalidStatus)
        and exc.response.status_code == 400
        and url.lower().startswith("ws://")
    ):
        # nginx's answer to a plain connection on its TLS port ("The plain HTTP request was
        # sent to HTTPS port"): `--server host:port` is ws:// (an operator trial)
        secure = "wss://" + url[len("ws://") :]
        return (
            f"patience-race: the server at {clean(url)} answered 400 (Bad Request), as a secure "
            f"(TLS) port does to a plain connection.\nIf it is one, use --server {clean(secure)}"
        )
    if isinstance(exc, InvalidStatus) and exc.response.status_code in (502, 503, 504):
        return (
            f"patience-race: the proxy in front of the race server at {clean(url)} answered "
            f"{exc.response.status_code}: the server behind it is down or restarting.\n"
            "Try again in a moment; if it stays so, tell whoever runs it."
        )
    if isinstance(exc, InvalidStatus) and exc.response.status_code != 400:
        # it is running and refused this client (403: an --origins setting or a proxy's rule;
        # the advice was to run a server: an operator trial)
        response = exc.response
        said = f"{response.status_code} {clean(response.reason_phrase)}".strip()
        if response.status_code == 429:
            then = "It is running, and busy with this address: try again in a minute."
        elif response.status_code == 404:
            # (a path nginx routes nowhere: a cluster node removed, a URL mistyped)
            then = "Nothing answers at that address's path: check the URL (--server)."
        else:
            then = "It is running, but turned this client away: tell whoever runs it."
        return (
            f"patience-race: the server at {clean(url)} refused the connection (HTTP {said}).\n"
            + then
        )
    if url.lower().startswith("wss://") and isinstance(exc, (ConnectionResetError, ssl.SSLError)):
        # a plain server's answer to a secure handshake (it read it as a bad request and hung
        # up): running a server was the advice, to someone whose server was running (a trial)
        plain = "ws://" + url[len("wss://") :]
        what = clean(exc.strerror or str(exc)) if isinstance(exc, OSError) else ""
        return (
            f"patience-race: the server at {clean(url)} did not take a secure (TLS) connection"
            f" ({what or type(exc).__name__}).\nIf it takes plain ones, use --server {clean(plain)}"
        )
    if isinstance(exc, ConnectionRefusedError):
        why = "nothing is listening there"
    elif isinstance(exc, TimeoutError):
        why = "it did not answer in time"
    elif isinstance(exc, InvalidURI) and str(getattr(exc, "uri", "")).startswith("https://"):
        # a site that sends plain http to https (nginx's usual set-up): the client followed it
        secure = "wss://" + str(exc.uri).removeprefix("https://").rstrip("/")
        return (
            f"patience-race: the server at {clean(url)} sends its visitors to https, so it "
            f"takes secure connections only.\nUse --server {clean(secure)}"
        )
    elif isinstance(exc, InvalidURI):
        why = "that is not a ws:// or wss:// address"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror.lower()
    else:
        why = str(exc) or type(exc).__name__
    server = program("patience-race-server")
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    # (ws:// on this machine only: the server it names listens on 127.0.0.1, without TLS)
    local = (
        parts is not None and parts.scheme == "ws" and parts.hostname in ("127.0.0.1", "localhost")
    )
    if local and port is not None and port != 8765:
        # the server it would start listens on 8765: the port asked for, else it cannot help
        # (a new-user trial); on this machine only: another's host runs theirs
        server += f" --port {port}"
    if parts is not None and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        # another machine's server: starting one here would not help (the advice was to run
        # one, for a host name mistyped: a trial)
        return (
            f"patience-race: cannot reach the race server at {clean(url)} ({clean(why)}).\n"
            "Check the address (--server) and ask whoever runs it whether it is up; or race "
            f"bots with no server: `{program()} play`."
        )
    return (
        f"patience-race: cannot reach the race server at {clean(url)} ({clean(why)}).\n"
        f"Run one with `{server}`, or race bots with no server: "
        f"`{program()} play`."
    )


def check_server(url: str) -> str | None:
    """None if the server answers a hello; else the message saying it cannot be reached."""
    import asyncio

    from .net import Connection

    async def probe() -> None:
        conn = Connection(url)
        try:
            await conn.open(open_timeout=5)
        finally:
            await conn.close()

    try:
        asyncio.run(probe())
    except network_errors() as exc:
        return unreachable(url, exc)
    return None
