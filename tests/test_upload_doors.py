"""The upload route of real servers (issue 27's doors, found open again by the second attack):

- started as the reviewer did, `streamlit run dashboard/streamlit_app.py --server.address 0.0.0.0`, the server has
  the upload gate in front as `goodput dashboard` has (the file defines the app `streamlit run` serves): the
  logged-out visitor's uploads are refused and nothing is kept, with or without login configured; served any
  other way beyond loopback (Streamlit's bootstrap called by a script), the app shows no page and stops;
- a body longer than it declared (chunked, with `Content-Length: 100`) is cut off at the gate with 413, not
  carried whole to a session that may upload.

Each server is reached at 127.0.0.1; Debian's chromium opens the page to get a session (its id and XSRF cookie),
and the uploads are raw HTTP, as an attacker's script sends them.
"""

import re
import socket
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.runs import make_store, small_run
from tests.serving import CHROMIUM, CHROMIUM_ARGS, GOODPUT, ROOT, free_port, start, stop, wait_until

pytestmark = pytest.mark.browser

TIMEOUT_MS = 60_000
SMALL = small_run()
EVERY_INTERFACE = "0.0.0.0"  # noqa: S104 (the address under test: the reviewer's)
SECRETS = f"""
[auth]
redirect_uri = "https://goodput.example.com/oauth2callback"
cookie_secret = "{"5e" * 32}"
client_id = "goodput-test"
client_secret = "goodput-test-secret"
server_metadata_url = "https://idp.example.com/.well-known/openid-configuration"
"""


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def serve(command: list[str], tmp: Path, env: dict | None = None):
    """Start `command` (a server on a free port, given as {port}) with a store of one run; (process, url, log)."""
    store = tmp / "store"
    if not store.exists():
        make_store(store, SMALL)
    port = free_port()
    log = tmp / f"server-{port}.log"
    server = start(
        [part.replace("{port}", str(port)) for part in command],
        log,
        env={"GOODPUT_STORE": str(store), "HOME": str(tmp), "GOODPUT_LOGIN": "", **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(f"{url}/_stcore/health", server, log, expect=b"ok")
    except BaseException:
        stop(server)
        raise
    return server, url, log


def streamlit_run(tmp: Path, secrets: Path | None):
    """`streamlit run` on every interface, as the reviewer started it (with a configured login and a TLS proxy
    declared when `secrets` is given)."""
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "streamlit_app.py")]
    command += ["--server.address", EVERY_INTERFACE, "--server.port", "{port}", "--server.headless", "true"]
    if secrets is not None:
        command += ["--secrets.files", str(secrets)]
    return serve(command, tmp, {"GOODPUT_BEHIND_TLS_PROXY": "1" if secrets else ""})


def session_of(page, url: str) -> str:
    """Open `url` and return the id Streamlit gave this page's session (from its first message)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    found: list[str] = []

    def read(frame) -> None:
        if isinstance(frame, bytes | bytearray):
            msg = ForwardMsg.FromString(bytes(frame))
            if msg.WhichOneof("type") == "new_session" and msg.new_session.initialize.session_id:
                found.append(msg.new_session.initialize.session_id)

    page.on("websocket", lambda ws: ws.on("framereceived", read))
    page.goto(url)
    for _ in range(600):
        if found:
            return found[-1]
        page.wait_for_timeout(100)
    raise AssertionError("no session id from the server")


def xsrf_of(page) -> str:
    return next((c["value"] for c in page.context.cookies() if c["name"] == "_streamlit_xsrf"), "")


def put_file(page, url: str, session: str, size: int, file_id: str = "attack") -> tuple[int, str]:
    """PUT a file to Streamlit's upload route for `session`, its length declared, as a script would."""
    answer = page.request.put(
        f"{url}/_stcore/upload_file/{session}/{file_id}",
        multipart={"file": {"name": "jobs.csv", "mimeType": "text/csv", "buffer": b"x" * size}},
        headers={"X-Xsrftoken": xsrf_of(page)},
    )
    return answer.status, answer.text()


def put_more_than_declared(url: str, session: str, xsrf: str, declared: int, size: int) -> tuple[int, str]:
    """A raw PUT whose chunked body carries `size` bytes of file while its Content-Length says `declared`."""
    host, port = url.removeprefix("http://").split(":")
    boundary = "goodputboundary"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="jobs.csv"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    request = (
        f"PUT /_stcore/upload_file/{session}/lying HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Transfer-Encoding: chunked\r\nContent-Length: {declared}\r\n"
        f"X-Xsrftoken: {xsrf}\r\nCookie: _streamlit_xsrf={xsrf}\r\nConnection: close\r\n\r\n"
    ).encode()
    piece = 64 * 1024
    chunks = [head, *(b"x" * min(piece, size - at) for at in range(0, size, piece)), tail]
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        try:
            conn.sendall(request)
            for chunk in chunks:
                conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            conn.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server may answer and close before the whole lie is sent
        answer = b""
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                break
            if not data:
                break
            answer += data
    status = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    assert status, answer[:200]
    return int(status[1]), answer.decode("latin-1")


def kept_upload_bytes(url: str) -> int:
    """What the server holds of uploaded files (Streamlit's own metric), in bytes."""
    with urllib.request.urlopen(f"{url}/_stcore/metrics?families=cache_memory_bytes", timeout=30) as answer:  # noqa: S310
        text = answer.read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if "UploadedFileManager" in line
    )


# ----- issue 3: however it is launched, no upload without the gate ---------------------------------------------


def goodput_dashboard(tmp: Path, secrets: Path):
    command = [str(GOODPUT), "dashboard", "--host", EVERY_INTERFACE, "--port", "{port}", "--behind-tls-proxy"]
    return serve([*command, "--secrets", str(secrets)], tmp)


@pytest.mark.parametrize(
    "launch",
    ["streamlit-run", "streamlit-run-login-set", "goodput-dashboard-login-set"],
)
def test_beyond_loopback_a_logged_out_visitor_cannot_upload_however_the_app_is_launched(
    page, tmp_path, launch
):
    """The reviewer's `streamlit run ... --server.address 0.0.0.0` (no login set: the app's lock screen; login
    and a TLS proxy set: the login screen) and `goodput dashboard` on the same address: the visitor's session is
    real, and its uploads are refused by the gate, as are those of a session that does not exist."""
    from playwright.sync_api import expect

    secrets = tmp_path / "secrets.toml"
    secrets.write_text(SECRETS)
    if launch == "streamlit-run":
        server, url, log = streamlit_run(tmp_path, None)
    elif launch == "streamlit-run-login-set":
        server, url, log = streamlit_run(tmp_path, secrets)
    else:
        server, url, log = goodput_dashboard(tmp_path, secrets)
    try:
        session = session_of(page, f"{url}/data")
        if launch == "streamlit-run":
            expect(page.get_by_text("This dashboard cannot be shown yet")).to_be_visible(timeout=TIMEOUT_MS)
        else:
            expect(page.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("stSidebar")).to_have_count(0)
        for file_id in ("a", "b", "c"):  # the reviewer sent 6 x 150 MiB; 3 x 2 MiB make the point
            status, text = put_file(page, url, session, 2 * 2**20, file_id)
            assert (status, text) == (403, "uploads need a logged-in session with the operator role"), log
        assert put_file(page, url, "no-such-session", 1024)[0] == 403
        assert kept_upload_bytes(url) == 0
        assert server.poll() is None  # and it keeps serving
    finally:
        stop(server)


def test_served_another_way_beyond_loopback_the_app_shows_nothing_and_its_server_stops(page, tmp_path):
    """Streamlit's bootstrap called by a script (no `streamlit run`, so no gate in front): the first visitor is
    told why, and the server stops rather than keep serving an open upload route."""
    from playwright.sync_api import expect

    launch = (
        "import sys; from streamlit.web import bootstrap; "
        f"flags = {{'server_address': '{EVERY_INTERFACE}', 'server_port': int(sys.argv[2]), 'server_headless': True}}; "
        "bootstrap.load_config_options(flags); bootstrap.run(sys.argv[1], False, [], flags)"
    )
    command = [sys.executable, "-c", launch, str(ROOT / "dashboard" / "streamlit_app.py"), "{port}"]
    server, url, log = serve(command, tmp_path)
    try:
        page.goto(f"{url}/data")
        expect(page.get_by_text("This dashboard cannot be shown yet")).to_be_visible(timeout=TIMEOUT_MS)
        assert "without the upload gate" in page.inner_text("body")
        server.wait(timeout=30)  # stopped by itself, as `kill` would
        assert "without the upload gate" in log.read_text()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=5)  # noqa: S310
    finally:
        stop(server)


# ----- issue 13: the gate counts the bytes that arrive -----------------------------------------------------------


def test_a_body_longer_than_declared_is_cut_off_at_the_gate(page, tmp_path):
    """On loopback (login off) every session may upload: an honest upload is kept, a lying one is refused."""
    from playwright.sync_api import expect

    server, url, _ = serve([str(GOODPUT), "dashboard", "--port", "{port}"], tmp_path)
    try:
        session = session_of(page, f"{url}/data")
        expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible(timeout=TIMEOUT_MS)
        assert put_file(page, url, session, 1000, "honest")[0] == 204
        kept = kept_upload_bytes(url)
        assert kept == 1000
        status, answer = put_more_than_declared(url, session, xsrf_of(page), declared=100, size=5 * 2**20)
        assert status == 413, answer[:500]
        assert "more than it declared" in answer
        assert kept_upload_bytes(url) == kept  # nothing of the 5 MiB kept
        assert put_file(page, url, session, 1000, "honest-again")[0] == 204  # the gate is not left stuck
    finally:
        stop(server)
