"""Doors of issue 27 that the browser tests also walk through, here as plain functions: the upload gate
(dashboard/upload_gate.py), logouts recorded on the server (dashboard/logouts.py), and the app's own refusal
to serve beyond loopback without login and TLS (dashboard/auth.py configuration_problem).
"""

import asyncio
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard import auth, upload_gate
from dashboard.logouts import COOKIE_LIFETIME_S, LogoutLedger, identity
from dashboard.upload_gate import MAX_UPLOADS_IN_FLIGHT, UploadGate
from dashboard.uploads import MAX_UPLOAD_BYTES

SECRET = "0123456789abcdef" * 4


# ----- the upload gate -------------------------------------------------------------------------------------


class FakeStreamlit:
    """The app behind the gate: reads the whole body, then answers 204 (or waits on `hold` first)."""

    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.hold = hold
        self.reached: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        self.reached.append(f"{scope['method']} {scope['path']}")
        while (await receive()).get("more_body"):
            pass
        if self.hold is not None:
            await self.hold.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def call(gate, method: str, path: str, body: bytes = b"", length: int | None = None) -> int:
    """One request through the gate; its status."""
    headers = [] if length is None else [(b"content-length", str(length).encode())]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}
    sent = iter([{"type": "http.request", "body": body, "more_body": False}])
    statuses = []

    async def receive():
        return next(sent, {"type": "http.disconnect"})

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await gate(scope, receive, send)
    return statuses[0]


def upload(gate, session: str, file_id: str, size: int, declare: bool = True) -> int:
    path = f"/_stcore/upload_file/{session}/{file_id}"
    return asyncio.run(call(gate, "PUT", path, b"x" * size, size if declare else None))


@pytest.fixture
def gate():
    upload_gate.LEDGER.__init__()  # a fresh ledger per test: it is the server's, one per process
    app = FakeStreamlit()
    yield UploadGate(app, login_required=lambda: True), app
    upload_gate.LEDGER.__init__()


def test_a_session_without_the_operator_role_cannot_upload(gate):
    gate, app = gate
    assert upload(gate, "never-seen", "f1", 10) == 403  # a session the app never ran: a raw request
    upload_gate.remember("login-screen", False)  # a logged-out visitor or a viewer
    assert upload(gate, "login-screen", "f1", 10) == 403
    upload_gate.remember("olga", True)
    assert upload(gate, "olga", "f1", 10) == 204
    upload_gate.remember("olga", False)  # logged out, or the role taken away: the next run says so
    assert upload(gate, "olga", "f2", 10) == 403
    assert app.reached == ["PUT /_stcore/upload_file/olga/f1"]  # refused uploads never reach Streamlit


def test_without_login_anyone_on_loopback_may_upload_within_the_caps():
    upload_gate.LEDGER.__init__()
    gate = UploadGate(FakeStreamlit(), login_required=lambda: False)
    assert upload(gate, "anyone", "f1", 10) == 204
    assert asyncio.run(call(gate, "PUT", "/_stcore/upload_file/anyone/f2", b"", MAX_UPLOAD_BYTES + 1)) == 413


def test_uploads_declare_their_length_and_a_session_holds_at_most_one_import(gate):
    gate, _ = gate
    upload_gate.remember("olga", True)
    assert upload(gate, "olga", "f1", 10, declare=False) == 411
    assert asyncio.run(call(gate, "PUT", "/_stcore/upload_file/olga/big", b"", MAX_UPLOAD_BYTES + 1)) == 413
    half = MAX_UPLOAD_BYTES // 2
    assert asyncio.run(call(gate, "PUT", "/_stcore/upload_file/olga/a", b"", half)) == 204
    # the body counts, not the declaration: the fake sent no bytes, so held is 0 and a second half fits
    assert upload_gate.LEDGER.held_bytes("olga", "") == 0
    assert upload(gate, "olga", "b", 1000) == 204
    assert upload_gate.LEDGER.held_bytes("olga", "") == 1000
    upload_gate.LEDGER.keep("olga", "b", MAX_UPLOAD_BYTES - 5)
    assert upload(gate, "olga", "c", 10) == 413  # the session already holds nearly an import's worth
    assert upload(gate, "olga", "b", 10) == 204  # replacing a file counts its new size only
    assert asyncio.run(call(gate, "DELETE", "/_stcore/upload_file/olga/b")) == 204
    assert upload_gate.LEDGER.held_bytes("olga", "") == 0


def test_at_most_a_few_uploads_are_received_at_once():
    upload_gate.LEDGER.__init__()

    async def scenario() -> list[int]:
        hold = asyncio.Event()
        gate = UploadGate(FakeStreamlit(hold), login_required=lambda: False)
        slow = [
            asyncio.create_task(call(gate, "PUT", f"/_stcore/upload_file/s/{i}", b"x", 1))
            for i in range(MAX_UPLOADS_IN_FLIGHT)
        ]
        await asyncio.sleep(0.05)  # the first ones are inside Streamlit, waiting
        refused = await call(gate, "PUT", "/_stcore/upload_file/s/late", b"x", 1)
        hold.set()
        done = await asyncio.gather(*slow)
        after = await call(gate, "PUT", "/_stcore/upload_file/s/after", b"x", 1)
        return [*done, refused, after]

    *done, refused, after = asyncio.run(scenario())
    assert done == [204] * MAX_UPLOADS_IN_FLIGHT and refused == 429 and after == 204
    assert upload_gate.LEDGER.in_flight == 0


def test_other_routes_and_preflights_pass_untouched(gate):
    gate, app = gate
    assert asyncio.run(call(gate, "GET", "/_stcore/health")) == 204
    assert asyncio.run(call(gate, "OPTIONS", "/_stcore/upload_file/x/y")) == 204
    assert app.reached == ["GET /_stcore/health", "OPTIONS /_stcore/upload_file/x/y"]


def test_the_gate_matches_the_upload_route_under_a_base_path():
    match = upload_gate.UPLOAD_PATH.match("/goodput/_stcore/upload_file/abc/def")
    assert match and (match["session"], match["file"]) == ("abc", "def")
    assert upload_gate.UPLOAD_PATH.match("/_stcore/upload_file/abc") is None


# ----- logouts ---------------------------------------------------------------------------------------------


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def claims(iat: float | None, sub: str = "vic", provider: str = "default") -> dict:
    out = {"sub": sub, "email": f"{sub}@example.com", "provider": provider, "is_logged_in": True}
    return out if iat is None else out | {"iat": iat}


def test_a_cookie_from_before_a_logout_is_refused_and_a_new_login_is_not(tmp_path):
    clock = Clock(1_000_000.0)
    ledger = LogoutLedger(tmp_path / "auth" / "logouts.json", clock)
    before = claims(iat=999_000)
    assert not ledger.revoked(before)
    clock.now = 1_000_500.7
    ledger.record(before)
    assert ledger.revoked(before)
    assert ledger.revoked(claims(iat=1_000_500))  # issued in the second of the logout: may predate it
    assert not ledger.revoked(claims(iat=1_000_501))  # logged in again afterwards
    assert not ledger.revoked(claims(iat=999_000, sub="someone-else"))
    assert not ledger.revoked(claims(iat=999_000, provider="okta"))  # the same subject at another provider
    assert ledger.revoked(claims(iat=None))  # an undated cookie of an identity that logged out: refused


def test_logouts_are_shared_by_the_servers_of_a_store_and_survive_a_restart(tmp_path):
    path = tmp_path / "logouts.json"
    clock = Clock(2_000_000.0)
    one, two = LogoutLedger(path, clock), LogoutLedger(path, clock)
    one.record(claims(iat=1_999_000))
    assert two.revoked(claims(iat=1_999_000))
    assert LogoutLedger(path, clock).revoked(claims(iat=1_999_000))  # a restarted server
    assert json.loads(path.read_text()) == {identity(claims(None)): 2_000_000.0}
    assert [p.name for p in tmp_path.iterdir()] == ["logouts.json"]  # no temporary file left


def test_logouts_older_than_the_cookie_lifetime_are_forgotten(tmp_path):
    clock = Clock(3_000_000.0)
    ledger = LogoutLedger(tmp_path / "logouts.json", clock)
    ledger.record(claims(iat=1, sub="old"))
    clock.now += COOKIE_LIFETIME_S + 1
    ledger.record(claims(iat=1, sub="new"))
    assert set(json.loads((tmp_path / "logouts.json").read_text())) == {identity(claims(None, sub="new"))}


def test_an_unwritable_ledger_still_holds_the_logout_on_this_server(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ledger = LogoutLedger(blocker / "logouts.json", Clock(5_000.0))  # its folder cannot be made
    ledger.record(claims(iat=4_000))
    assert ledger.revoked(claims(iat=4_000))
    assert "cannot be written" in caplog.text


def test_a_damaged_ledger_file_is_read_as_nothing_but_logged(tmp_path, caplog):
    path = tmp_path / "logouts.json"
    path.write_text("{not json")
    assert not LogoutLedger(path).revoked(claims(iat=1))
    assert "cannot be read" in caplog.text
    path.write_text(json.dumps({identity(claims(None)): "yesterday", 3: 4}))
    assert not LogoutLedger(path).revoked(claims(iat=1))


@given(
    iat=st.one_of(st.none(), st.integers(0, 2**40), st.floats(allow_nan=True)), logout=st.integers(0, 2**40)
)
def test_no_cookie_issued_before_its_logout_survives(tmp_path_factory, iat, logout):
    ledger = LogoutLedger(tmp_path_factory.mktemp("l") / "logouts.json", Clock(float(logout)))
    ledger.record(claims(iat=0))
    cookie = claims(iat=iat)
    if iat is None or not (iat == iat) or iat <= logout:  # undated, NaN, or from before: refused
        assert ledger.revoked(cookie)


# ----- the app's own refusal beyond loopback ---------------------------------------------------------------


def serving(monkeypatch, address, secrets: dict, cert: str | None = None, proxy: bool = False) -> None:
    options = {"server.address": address, "server.sslCertFile": cert}
    monkeypatch.setattr(auth.st, "get_option", options.__getitem__)
    monkeypatch.setattr(auth.runtime, "exists", lambda: True)  # a served app: Streamlit's runtime is up
    monkeypatch.setattr(auth, "_secrets", lambda: secrets)
    monkeypatch.delenv(auth.LOGIN_ENV, raising=False)
    if proxy:
        monkeypatch.setenv(auth.TLS_PROXY_ENV, "1")
    else:
        monkeypatch.delenv(auth.TLS_PROXY_ENV, raising=False)


def good_secrets(redirect: str = "https://goodput.example.com/oauth2callback") -> dict:
    return {
        "auth": {
            "redirect_uri": redirect,
            "cookie_secret": SECRET,
            "client_id": "goodput",
            "client_secret": "s3cret",
            "server_metadata_url": "https://idp.example.com/.well-known/openid-configuration",
        }
    }


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "10.0.0.7", None, ""])
def test_the_app_requires_login_beyond_loopback_however_it_was_started(monkeypatch, address):
    serving(monkeypatch, address, {})  # `streamlit run ... --server.address 0.0.0.0`, no launcher, no secrets
    assert auth.login_required()
    problem = auth.configuration_problem()
    assert problem and "no [auth] table" in problem


def test_the_app_on_loopback_needs_nothing(monkeypatch):
    serving(monkeypatch, "127.0.0.1", {})
    assert not auth.login_required() and auth.configuration_problem() is None
    monkeypatch.setenv(auth.LOGIN_ENV, auth.REQUIRED)  # --require-login
    assert auth.login_required() and "no [auth] table" in auth.configuration_problem()


def test_the_app_beyond_loopback_needs_tls_and_an_https_redirect(monkeypatch):
    serving(monkeypatch, "0.0.0.0", good_secrets())
    assert "plain HTTP" in auth.configuration_problem()
    serving(monkeypatch, "0.0.0.0", good_secrets(), cert="/etc/goodput/cert.pem")
    assert auth.configuration_problem() is None
    serving(monkeypatch, "0.0.0.0", good_secrets(), proxy=True)
    assert auth.configuration_problem() is None
    serving(monkeypatch, "0.0.0.0", good_secrets("http://goodput.example.com/oauth2callback"), proxy=True)
    assert "is not https://" in auth.configuration_problem()


def test_without_streamlits_runtime_nothing_is_served_so_only_the_launcher_decides(monkeypatch):
    """The app's file imported bare (a multiprocessing worker re-imports its parent's main script) serves
    nothing: it must not stop there for want of login."""
    monkeypatch.setattr(
        auth.st, "get_option", {"server.address": None, "server.sslCertFile": None}.__getitem__
    )
    monkeypatch.setattr(auth.runtime, "exists", lambda: False)
    monkeypatch.delenv(auth.LOGIN_ENV, raising=False)
    assert not auth.login_required()
    monkeypatch.setenv(auth.LOGIN_ENV, auth.REQUIRED)
    assert auth.login_required()


# ----- the second attack ---------------------------------------------------------------------------------------
# Issue 3: a server beyond loopback without the gate (`streamlit run ... --server.address 0.0.0.0`) took uploads;
# `streamlit run` now serves the app with the gate in front (tests/test_upload_doors.py), any other way stops.
# Issue 13: the gate trusted the declared length. Issue 8: a FIFO as the logout ledger hung every logged-in page.
# tests/test_upload_doors.py walks issues 3 and 13 through real servers.


def test_served_beyond_loopback_without_the_gate_the_app_shows_nothing_and_stops_its_server(monkeypatch):
    """Served neither by `goodput dashboard` nor by `streamlit run` (which both put the gate in front): a page
    cannot close Streamlit's upload route, so the server is stopped, once, after the screen has said why."""
    import signal
    import time

    serving(monkeypatch, "0.0.0.0", good_secrets(), proxy=True)  # noqa: S104  login and TLS in order
    monkeypatch.setattr(upload_gate, "_GATE_SEEN", False)  # e.g. Streamlit's bootstrap called by a script
    monkeypatch.setattr(upload_gate, "_STOPPING", False)
    monkeypatch.setattr(upload_gate, "STOP_GRACE_S", 0.01)
    stops = []
    monkeypatch.setattr(upload_gate, "_terminate", lambda: stops.append(signal.SIGTERM))
    problem = upload_gate.refuse_if_ungated()
    assert problem and "without the upload gate" in problem and "goodput dashboard" in problem
    assert upload_gate.refuse_if_ungated() == problem  # every run says so; the server is stopped once
    for _ in range(500):
        if stops:
            break
        time.sleep(0.01)
    time.sleep(0.05)
    assert stops == [signal.SIGTERM]


def test_a_gated_or_loopback_server_serves(monkeypatch):
    monkeypatch.setattr(upload_gate, "_STOPPING", False)
    monkeypatch.setattr(upload_gate, "_terminate", lambda: pytest.fail("the server was stopped"))
    serving(monkeypatch, "127.0.0.1", {})
    monkeypatch.setattr(upload_gate, "_GATE_SEEN", False)
    assert upload_gate.refuse_if_ungated() is None  # on loopback: one person, no login, everyone may upload
    serving(monkeypatch, "0.0.0.0", {})  # noqa: S104
    asyncio.run(
        call(UploadGate(FakeStreamlit()), "GET", "/_stcore/health")
    )  # the server's requests pass a gate
    assert upload_gate.refuse_if_ungated() is None
    assert not upload_gate._STOPPING


async def call_in_chunks(gate, path: str, chunks: list[bytes], declared: int):
    """A PUT whose body arrives in `chunks` while its Content-Length says `declared`; (statuses, bodies, chunks
    the gate read from the client)."""
    scope = {
        "type": "http",
        "method": "PUT",
        "path": path,
        "headers": [(b"content-length", str(declared).encode())],
    }
    read = 0
    statuses, bodies = [], []

    async def receive():
        nonlocal read
        if read < len(chunks):
            read += 1
            return {"type": "http.request", "body": chunks[read - 1], "more_body": read < len(chunks)}
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])
        elif message["type"] == "http.response.body":
            bodies.append(message.get("body", b""))

    await gate(scope, receive, send)
    return statuses, b"".join(bodies), read


class StarletteLikeStreamlit(FakeStreamlit):
    """Reads the body as Starlette's Request.stream does: a disconnect mid-body raises ClientDisconnect."""

    async def __call__(self, scope, receive, send) -> None:
        from starlette.requests import ClientDisconnect

        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientDisconnect()
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize("app", [FakeStreamlit, StarletteLikeStreamlit])
def test_a_body_longer_than_it_declared_is_cut_off_with_413(app):
    upload_gate.LEDGER.__init__()
    gate = UploadGate(app(), login_required=lambda: False)  # loopback: a session that may upload
    chunks = [b"x" * 1024] * (5 * 1024)  # 5 MiB, chunked, declared as 100 bytes
    statuses, body, read = asyncio.run(call_in_chunks(gate, "/_stcore/upload_file/s/lie", chunks, 100))
    assert statuses == [413] and b"more than it declared" in body  # one answer: the app's is not sent
    assert read == 1  # stopped at the first chunk past the declared length, not at the end of the body
    assert upload_gate.LEDGER.held_bytes("s", "") == 0 and upload_gate.LEDGER.in_flight == 0
    exact = [b"x" * 50, b"x" * 50]
    assert asyncio.run(call_in_chunks(gate, "/_stcore/upload_file/s/ok", exact, 100))[0] == [204]
    assert upload_gate.LEDGER.held_bytes("s", "") == 100


# a page's run and the ledger's reader, each given this long before it counts as hung
PROMPT_S = 10


def within(seconds: float, work):
    """`work()`'s result, which must come within `seconds` (run in a thread, so a hang fails the test)."""
    import threading

    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("value", work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return out.get("value")


@pytest.fixture
def fifo_ledger(tmp_path):
    """A FIFO where the logout ledger lives; afterwards any reader stuck opening it is let go."""
    import contextlib
    import os

    path = tmp_path / "store" / ".auth" / "logouts.json"
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):  # ENXIO: nobody is waiting on it (the fix), or it is a file by now
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_as_the_logout_ledger_is_an_error_not_a_hang(fifo_ledger, caplog):
    ledger = LogoutLedger(fifo_ledger, Clock(6_000.0))
    assert within(PROMPT_S, lambda: ledger.revoked(claims(iat=1))) is False
    assert (
        within(PROMPT_S, lambda: ledger.revoked(claims(iat=1))) is False
    )  # and again: said once, not per run
    said = [r.getMessage() for r in caplog.records if "logouts.json" in r.getMessage()]
    assert len(said) == 1 and "not a regular file" in said[0] and "\n" not in said[0], said
    within(PROMPT_S, lambda: ledger.record(claims(iat=1)))  # a logout still holds: the FIFO is replaced
    assert fifo_ledger.is_file() and ledger.revoked(claims(iat=1))


def test_a_link_as_the_logout_ledger_is_not_followed(tmp_path, caplog):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({identity(claims(None)): 7_000.0}))
    path = tmp_path / "logouts.json"
    path.symlink_to(elsewhere)
    assert not LogoutLedger(path, Clock(7_000.0)).revoked(claims(iat=1))
    assert "cannot be read" in caplog.text


def test_a_logged_in_page_renders_beside_a_fifo_ledger(fifo_ledger, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("GOODPUT_STORE", str(fifo_ledger.parent.parent))
    monkeypatch.setenv(auth.LOGIN_ENV, auth.REQUIRED)
    at = AppTest.from_file(str(Path(auth.__file__).with_name("streamlit_app.py")), default_timeout=PROMPT_S)
    at.user = {"is_logged_in": True, "sub": "vic", "email": "vic@example.com", "name": "Vic Viewer", "iat": 1}
    at.secrets["auth"] = good_secrets()["auth"]
    within(PROMPT_S * 3, at.run)  # the first run of the router imports the pages' modules
    assert not at.exception
    assert "Vic Viewer · viewer" in [t.value for t in at.sidebar.text]
