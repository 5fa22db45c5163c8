"""The dashboard's server: Streamlit in this process (`st.App`), with login decided and headers added.

`goodput dashboard` runs `python -m dashboard.serve ...` from the checkout (where .streamlit/config.toml is).
Before anything listens, this:

- decides whether login is required (any non-loopback --host, or --require-login) and, if so, checks the
  secrets file's [auth] and [goodput.roles] tables (dashboard/auth.py), refusing to start with one line,
  `goodput: error: ...`, and exit status 2 when they are missing or wrong: an open dashboard is never served
  on a network address;
- serves the app through `st.App` with one ASGI middleware that adds frame-ancestors protection to every HTTP
  answer (Streamlit has no setting for response headers; `st.App(middleware=...)` is its supported hook);
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


class SecurityHeaders:
    """Pure ASGI middleware: no page of the dashboard may be framed by another site (clickjacking), on every
    HTTP response, including Streamlit's static files, health check and errors. WebSockets pass untouched."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = with_security_headers(list(message.get("headers", [])))
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


def decide_login(host: str, require: bool, files: Sequence[Path]) -> auth.LoginConfig | None:
    """None when login is off (loopback, not asked for); else the checked configuration."""
    if auth.is_loopback(host) and not require:
        return None
    source = " or ".join(str(p) for p in files) if files else "the secrets file"
    reason = "" if auth.is_loopback(host) else f" on --host {host} (not a loopback address)"
    try:
        return auth.check_login_config(read_secrets(files), source)
    except GoodputError as err:
        raise GoodputError(f"login is required{reason}: {err}") from err


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="goodput dashboard", description="serve the dashboard")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--require-login", action="store_true")
    parser.add_argument("--secrets", metavar="FILE")
    parser.add_argument("--app", default=str(APP), help=argparse.SUPPRESS)  # tests serve a page of their own
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        files = secrets_files(args.secrets)
        login = decide_login(args.host, args.require_login, files)
    except GoodputError as err:
        print(f"goodput: error: {err}", file=sys.stderr)
        return 2
    import streamlit as st
    from starlette.middleware import Middleware

    from dashboard.preload import preload_and_freeze

    os.environ[auth.LOGIN_ENV] = auth.REQUIRED if login else "off"
    store = os.environ.get("GOODPUT_STORE", "data/store")
    print(
        f"Goodput dashboard on http://{args.host}:{args.port} (store {store}; login "
        f"{'required' if login else 'off: loopback only'})",
        file=sys.stderr,
    )
    preload_and_freeze()  # long GC pauses held every answer under load (dashboard/preload.py)
    st.App(args.app, middleware=[Middleware(SecurityHeaders)]).run(
        config={
            "server.port": args.port,
            "server.address": args.host,
            "server.headless": True,
            "browser.gatherUsageStats": False,
            "client.showErrorDetails": "none",
            # watching blocked the event loop per new session (.streamlit/config.toml)
            "server.fileWatcherType": "none",
            "secrets.files": [str(p) for p in files],
        }
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
