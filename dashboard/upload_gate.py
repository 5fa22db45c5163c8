"""Who may upload, and how much: a gate in front of Streamlit's upload route.

Streamlit takes files at `PUT /_stcore/upload_file/<session id>/<file id>` from any session that exists, a
logged-out visitor's login screen included, and keeps them in the server's memory: eight 190 MiB uploads from the
login screen took a server from 0.5 to 2 GiB in seven seconds. The pages hide the uploaders from whoever may not
import, but a route does not read pages. So this ASGI middleware answers the route itself:

- where login is required, only a session whose last run found the operator role may upload (the app records
  each session's right on every run: `remember(session_id, may_upload)`), else 403; a session it never saw, or
  one that logged out, has none;
- an upload declares its length (411 otherwise); at most MAX_UPLOADS_IN_FLIGHT uploads are read at once in the
  whole server (else 429, "try again"), each at most MAX_UPLOAD_BYTES (Streamlit's `server.maxUploadSize`,
  pinned by the launcher to the same figure);
- one session holds at most MAX_UPLOAD_BYTES of uploaded files at a time, the most one import takes (else 413):
  a file removed from its uploader frees its share;
- the bytes that arrive are counted, not only declared: a body longer than its Content-Length (chunked encoding
  with a `Content-Length: 100` beside it carried 5 MiB) is cut off as soon as it passes it, with 413.

WebSockets and every other route pass untouched.

`goodput dashboard` (dashboard/serve.py) puts the gate in front of Streamlit, and so does `streamlit run
dashboard/streamlit_app.py` (that file defines the app it serves). Served any other way beyond loopback, the app
shows no page and stops its server (`refuse_if_ungated`).
"""

import logging
import os
import re
import signal
import threading
from collections import OrderedDict

from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from dashboard.uploads import MAX_UPLOAD_BYTES

LOG = logging.getLogger(__name__)

# Uploads being received at once, in the whole server: each is read into memory whole by Streamlit.
MAX_UPLOADS_IN_FLIGHT = 2
# Sessions whose upload right is remembered; the least recently seen are forgotten past this (they may upload
# again after their next run, which records them afresh).
MAX_SESSIONS = 10_000
UPLOAD_PATH = re.compile(r"^(?:/[^/]+)*/_stcore/upload_file/(?P<session>[^/]+)/(?P<file>[^/]+)/?$")


class _Ledger:
    """The sessions' upload rights and the bytes each holds, behind one lock (pages run in threads, the
    middleware on the event loop)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.may_upload: OrderedDict[str, bool] = OrderedDict()
        self.held: dict[str, dict[str, int]] = {}  # session -> file id -> bytes
        self.in_flight = 0

    def remember(self, session_id: str, may_upload: bool) -> None:
        with self.lock:
            self.may_upload[session_id] = may_upload
            self.may_upload.move_to_end(session_id)
            while len(self.may_upload) > MAX_SESSIONS:
                gone, _ = self.may_upload.popitem(last=False)
                self.held.pop(gone, None)

    def allowed(self, session_id: str) -> bool:
        with self.lock:
            return self.may_upload.get(session_id, False)

    def held_bytes(self, session_id: str, except_file: str) -> int:
        with self.lock:
            files = self.held.get(session_id, {})
            return sum(size for file_id, size in files.items() if file_id != except_file)

    def keep(self, session_id: str, file_id: str, size: int) -> None:
        with self.lock:
            self.held.setdefault(session_id, {})[file_id] = size

    def drop(self, session_id: str, file_id: str) -> None:
        with self.lock:
            self.held.get(session_id, {}).pop(file_id, None)


LEDGER = _Ledger()
# Whether a gate has seen a request of this process's server (refuse_if_ungated): where one is in front of Streamlit,
# everything passes it, the server's start (lifespan) and each session's websocket before the session's first run.
_GATE_SEEN = False
# Served beyond loopback without a gate, the first run stops the server this long after its screen says why.
STOP_GRACE_S = 2.0
_STOPPING = False
_STOP_LOCK = threading.Lock()


def remember(session_id: str, may_upload: bool) -> None:
    """Record whether this session may upload now (the app calls this on every run of every session)."""
    LEDGER.remember(session_id, may_upload)


def remember_this_session(may_upload: bool) -> None:
    """`remember` for the session whose script runs now; nothing outside a script run of Streamlit's server
    (a test importing the app, a worker process re-importing it).

    The upload route names a session by Streamlit's own id, which no public API tells a script: this is the
    one place the dashboard reads Streamlit's script-run context (tests/test_dashboard_shell.py), beside the
    route layout above that is Streamlit's too.
    """
    context = get_script_run_ctx()
    if context is not None:
        remember(context.session_id, may_upload)


def refuse_if_ungated() -> str | None:
    """Why this server shows no page and is stopping, or None: a gate is in front of Streamlit, or the server
    listens on loopback only (where login is off and everyone may upload anyway). The app calls this on every run.

    `goodput dashboard` and `streamlit run dashboard/streamlit_app.py` both serve the app with the gate in front
    (the latter through the `app` that file defines). Served some other way beyond loopback (a script calling
    Streamlit's bootstrap, an ASGI host of its own), Streamlit's upload route would keep in memory whatever any
    session sends, a logged-out visitor's too, and a page cannot close a route: so no page is shown, the log says
    why, and the server is stopped (SIGTERM to this process) once the first visitor's screen has had time to say
    so. Uploads sent before that die with the process.
    """
    from dashboard import auth

    address = auth.served_address()
    if _GATE_SEEN or not runtime.exists() or auth.is_loopback(address):
        return None
    _stop_this_server(address)
    return (
        f"it listens on {address}, beyond loopback, without the upload gate that `goodput dashboard`"
        " and `streamlit run dashboard/streamlit_app.py` put in front of Streamlit, so it stops"
    )


def _stop_this_server(address: str) -> None:
    """Once per process: say why in the log, then end the process after STOP_GRACE_S."""
    global _STOPPING
    with _STOP_LOCK:
        if _STOPPING:
            return
        _STOPPING = True
    LOG.error(
        "goodput: served on %s without the upload gate (start it with `goodput dashboard`, README 'Login'): "
        "stopping in %g s",
        address,
        STOP_GRACE_S,
    )
    timer = threading.Timer(STOP_GRACE_S, _terminate)
    timer.daemon = True
    timer.start()


def _terminate() -> None:
    """As `kill PID` would: Streamlit's server (and uvicorn) stop cleanly on SIGTERM."""
    os.kill(os.getpid(), signal.SIGTERM)


class UploadGate:
    """Pure ASGI middleware for Streamlit's upload route (see the module's docstring)."""

    def __init__(self, app, login_required=None) -> None:
        from dashboard import auth

        self.app = app
        self.login_required = login_required or auth.login_required

    async def __call__(self, scope, receive, send) -> None:
        global _GATE_SEEN
        _GATE_SEEN = True  # this server's requests pass through a gate (refuse_if_ungated)
        match = UPLOAD_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        session_id, file_id = match["session"], match["file"]
        if self.login_required() and not LEDGER.allowed(session_id):
            await _refuse(send, 403, "uploads need a logged-in session with the operator role")
            return
        if scope["method"] == "DELETE":
            LEDGER.drop(session_id, file_id)
            await self.app(scope, receive, send)
            return
        if scope["method"] != "PUT":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is None:  # browsers send the length of a file upload; a stream of unknown size is refused
            await _refuse(send, 411, "an upload must declare its Content-Length")
            return
        if declared + LEDGER.held_bytes(session_id, file_id) > MAX_UPLOAD_BYTES:
            await _refuse(
                send, 413, f"at most {MAX_UPLOAD_BYTES // 2**20} MB of uploads per session at a time"
            )
            return
        with LEDGER.lock:
            busy = LEDGER.in_flight >= MAX_UPLOADS_IN_FLIGHT
            if not busy:
                LEDGER.in_flight += 1
        if busy:
            await _refuse(send, 429, "other uploads are being received; try again in a moment")
            return
        # The declared length passed the limits above (declared + held <= MAX_UPLOAD_BYTES), so a body that stays
        # within it stays within them; past it, nothing more is read.
        received = 0
        over = False

        async def counting_receive():
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > declared:
                    # Streamlit is told the client left (it stops reading and keeps nothing); the answer is ours
                    over = True
                    return {"type": "http.disconnect"}
            return message

        status = 0
        started = False

        async def watching_send(message) -> None:
            nonlocal status, started
            if over:
                return  # Streamlit's answer to a "disconnect": the client gets the gate's 413 instead
            if message["type"] == "http.response.start":
                status, started = message["status"], True
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except Exception:
            if not over:
                raise
            # Starlette's request stream raises ClientDisconnect at the disconnect the gate handed it
        finally:
            with LEDGER.lock:
                LEDGER.in_flight -= 1
        if over:
            if not started:
                await _refuse(
                    send, 413, f"the upload sent more than it declared (Content-Length: {declared}): refused"
                )
            return
        if 200 <= status < 300:
            LEDGER.keep(session_id, file_id, received)


def _content_length(scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send, status: int, reason: str) -> None:
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
