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
  a file removed from its uploader frees its share.

WebSockets and every other route pass untouched.
"""

import re
import threading
from collections import OrderedDict

from streamlit.runtime.scriptrunner import get_script_run_ctx

from dashboard.uploads import MAX_UPLOAD_BYTES

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


class UploadGate:
    """Pure ASGI middleware for Streamlit's upload route (see the module's docstring)."""

    def __init__(self, app, login_required=None) -> None:
        from dashboard import auth

        self.app = app
        self.login_required = login_required or auth.login_required

    async def __call__(self, scope, receive, send) -> None:
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
        received = 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        status = 0

        async def watching_send(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        finally:
            with LEDGER.lock:
                LEDGER.in_flight -= 1
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
