"""The dashboard's server: Streamlit in this process (`st.App`), with login decided and headers added.

`goodput dashboard` runs `python -m dashboard.serve ...` from the checkout (where .streamlit/config.toml is).
Before anything listens, this:

- decides whether login is required (any non-loopback --host, or --require-login) and, if so, checks the
  secrets file's [auth] and [goodput.roles] tables (dashboard/auth.py), refusing to start with one line,
  `goodput: error: ...`, and exit status 2 when they are missing or wrong: an open dashboard is never served
  on a network address;
- beyond loopback, refuses plain HTTP too: the server gets a certificate (--tls-cert, --tls-key: Streamlit's
  server.sslCertFile and server.sslKeyFile) or is declared to sit behind a TLS-terminating proxy
  (--behind-tls-proxy, or GOODPUT_BEHIND_TLS_PROXY=1), the redirect address must be https://, and every cookie
  the server sets is marked Secure (Streamlit leaves its identity cookie without it);
- serves the app through `st.App` with ASGI middleware: frame-ancestors protection on every HTTP answer
  (Streamlit has no setting for response headers; `st.App(middleware=...)` is its supported hook), gzip for
  a browser that accepts it (Streamlit's own answers are uncompressed; its websocket messages are deflated
  here too) and the upload gate (dashboard/upload_gate.py: uploads only from sessions allowed to import,
  bounded in size and number);
- pins `client.showErrorDetails` to "none" (browsers get a generic message; the traceback goes to the log),
  whatever a user-level config.toml says.
"""

import argparse
import os
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from dashboard import auth
from engine.errors import GoodputError

APP = Path(__file__).resolve().parent / "streamlit_app.py"
SECRETS_ENV = "GOODPUT_SECRETS"
FRAME_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
)
FRAME_ANCESTORS = b"frame-ancestors 'none'"
# Streamlit serves its scripts uncompressed: a first visit to Jobs fetched 7.95 MB (Plotly's chart module alone
# 4.7 MB), gzip'd 3.03 MB; over an emulated 20 Mbit/s link with 40 ms latency the visit took 5.4 s, 3.5 s gzip'd.
# Level 1 sends the Plotly module as 1.66 MB for 46 ms of one core (level 6: 1.42 MB for 127 ms), once per
# browser: Streamlit marks its scripts immutable for a year. Starlette compresses a body over 128 kB in a
# thread, so the event loop is not held.
GZIP_LEVEL = 1
GZIP_MIN_BYTES = 1024  # below this the gzip header and a round of compression cost more than they save


class SecurityHeaders:
    """Pure ASGI middleware: no page of the dashboard may be framed by another site (clickjacking), on every
    HTTP response, including Streamlit's static files, health check and errors; over TLS every cookie it sets
    is Secure. WebSockets pass untouched."""

    def __init__(self, app, secure_cookies: bool = False) -> None:
        self.app = app
        self.secure_cookies = secure_cookies

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                headers = with_security_headers(list(message.get("headers", [])))
                message["headers"] = with_secure_cookies(headers) if self.secure_cookies else headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def with_security_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The response's headers plus ours: a CSP the response already has gains frame-ancestors, not a rival."""
    names = {name.lower() for name, _ in headers}
    out = [*headers, *((name, value) for name, value in FRAME_HEADERS if name not in names)]
    csp = [i for i, (name, _) in enumerate(out) if name.lower() == b"content-security-policy"]
    if not csp:
        out.append((b"content-security-policy", FRAME_ANCESTORS))
    for i in csp:
        name, value = out[i]
        if b"frame-ancestors" not in value.lower():
            out[i] = (name, value.rstrip(b"; ") + b"; " + FRAME_ANCESTORS)
    return out


def with_secure_cookies(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Every Set-Cookie marked Secure: the browser then never sends the identity cookie over plain HTTP.
    (Streamlit leaves it off for Safari's sake on localhost; beyond loopback the dashboard is HTTPS only.)"""
    out = []
    for name, value in headers:
        if name.lower() == b"set-cookie" and b"secure" not in [
            a.strip().lower() for a in value.split(b";")[1:]
        ]:
            value = value + b"; Secure"
        out.append((name, value))
    return out


def secrets_files(explicit: str | None) -> list[Path]:
    """The secrets files Streamlit will read: the one named (--secrets or $GOODPUT_SECRETS), else its defaults
    (~/.streamlit/secrets.toml, then .streamlit/secrets.toml in the working directory)."""
    named = explicit or os.environ.get(SECRETS_ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise GoodputError(f"secrets file {named}: not found (mount or write it; README, 'Login')")
        return [path.resolve()]
    return [Path.home() / ".streamlit" / "secrets.toml", Path.cwd() / ".streamlit" / "secrets.toml"]


def read_secrets(files: Sequence[Path]) -> dict:
    """The files merged as Streamlit merges them (later files win, table by table at the top level)."""
    merged: dict = {}
    for path in files:
        if not path.is_file():
            continue
        try:
            merged.update(tomllib.loads(path.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as err:
            raise GoodputError(f"secrets file {path}: cannot be read ({err})") from err
    return merged


def decide_login(
    host: str, require: bool, files: Sequence[Path], tls: bool = False
) -> auth.LoginConfig | None:
    """None when login is off (loopback, not asked for); else the checked configuration. Beyond loopback the
    server must speak TLS (`tls`: a certificate, or a TLS proxy in front) and the redirect address be https."""
    if auth.is_loopback(host) and not require:
        return None
    source = " or ".join(str(p) for p in files) if files else "the secrets file"
    reason = "" if auth.is_loopback(host) else f" on --host {host} (not a loopback address)"
    try:
        secrets = read_secrets(files)
        config = auth.check_login_config(secrets, source)
        if not auth.is_loopback(host):
            if not tls:
                raise GoodputError(
                    "the dashboard would speak plain HTTP: give it a certificate (--tls-cert FILE --tls-key FILE)"
                    " or, when a TLS-terminating proxy is in front, say so with --behind-tls-proxy (README, 'Login')"
                )
            auth.check_redirect_is_https(secrets, source)
        return config
    except GoodputError as err:
        raise GoodputError(f"login is required{reason}: {err}") from err


def check_tls_files(cert: str | None, key: str | None) -> bool:
    """Whether a certificate was given; both files or neither, each a readable file."""
    if (cert is None) != (key is None):
        raise GoodputError("--tls-cert and --tls-key: give both, the certificate and its private key")
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not Path(path).is_file():
            raise GoodputError(f"{flag} {path}: not found")
    return cert is not None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="goodput dashboard", description="serve the dashboard")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--require-login", action="store_true")
    parser.add_argument("--secrets", metavar="FILE")
    parser.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    parser.add_argument(
        "--behind-tls-proxy",
        action="store_true",
        default=os.environ.get(auth.TLS_PROXY_ENV) == "1",
        help=f"a proxy in front terminates TLS (also ${auth.TLS_PROXY_ENV}=1)",
    )
    parser.add_argument("--app", default=str(APP), help=argparse.SUPPRESS)  # tests serve a page of their own
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        own_tls = check_tls_files(args.tls_cert, args.tls_key)
        tls = own_tls or args.behind_tls_proxy
        files = secrets_files(args.secrets)
        login = decide_login(args.host, args.require_login, files, tls=tls)
    except GoodputError as err:
        print(f"goodput: error: {err}", file=sys.stderr)
        return 2
    import streamlit as st

    from dashboard.preload import preload_and_freeze
    from dashboard.uploads import MAX_UPLOAD_MB

    os.environ[auth.LOGIN_ENV] = auth.REQUIRED if login else "off"
    if args.behind_tls_proxy:
        os.environ[auth.TLS_PROXY_ENV] = "1"
    store = os.environ.get("GOODPUT_STORE", "data/store")
    print(
        f"Goodput dashboard on http{'s' if own_tls else ''}://{args.host}:{args.port} (store {store}; login "
        f"{'required' if login else 'off: loopback only'})",
        file=sys.stderr,
    )
    preload_and_freeze()  # long GC pauses held every answer under load (dashboard/preload.py)
    config = {
        "server.port": args.port,
        "server.address": args.host,
        "server.headless": True,
        "browser.gatherUsageStats": False,
        "client.showErrorDetails": "none",
        # watching blocked the event loop per new session (.streamlit/config.toml)
        "server.fileWatcherType": "none",
        "secrets.files": [str(p) for p in files],
        "server.maxUploadSize": MAX_UPLOAD_MB,  # one file at most what one import takes (dashboard/uploads.py)
        # what a page sends over its websocket, deflated (Streamlit's default is off): the GPUs page of 24,576
        # GPUs sends 1.12 MB a visit and again at every change of its filters; deflated, 171 kB for 23 ms of CPU
        # (Jobs 205 -> 35 kB, Racks 330 -> 28 kB): what an operator on a VPN waits for
        "server.enableWebsocketCompression": True,
    }
    if own_tls:
        config |= {"server.sslCertFile": args.tls_cert, "server.sslKeyFile": args.tls_key}
    st.App(args.app, middleware=middleware(tls)).run(config=config)
    return 0


def middleware(tls: bool) -> list:
    """What stands in front of Streamlit, here and where `streamlit run` serves the app (dashboard/streamlit_app.py):
    frame-ancestors protection (and Secure cookies over TLS), gzip, and the upload gate."""
    from starlette.middleware import Middleware
    from starlette.middleware.gzip import GZipMiddleware

    from dashboard.upload_gate import UploadGate

    return [
        Middleware(SecurityHeaders, secure_cookies=tls),
        Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES, compresslevel=GZIP_LEVEL),
        Middleware(UploadGate),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
