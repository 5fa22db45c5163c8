"""Login end to end: a real OpenID provider (oidc-provider-mock, from PyPI) and `goodput dashboard
--require-login` on 127.0.0.1, driven by Debian's chromium. A viewer reads, an operator imports and deletes, a
planner runs simulations; a logged-out visitor sees only the login screen; logout ends the session, and a
cookie copied before it no longer logs in. Issue 27's doors: the upload route refuses sessions that may not
import (raw HTTP), the cookie is Secure over TLS, and `streamlit run` on every interface shows nothing. And an
exception on a page shows the browser neither a traceback nor a server path.
"""

import re
import sys

import pytest

from tests.login_site import TIMEOUT_MS, log_in, start_login_site, stop_login_site
from tests.runs import bare_run, make_store, small_run
from tests.serving import CHROMIUM, CHROMIUM_ARGS, ROOT, free_port, start, stop, wait_until

pytestmark = pytest.mark.browser

SMALL, BARE = small_run(), bare_run()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The provider, a store of two runs and the dashboard requiring login; yields (dashboard url, store)."""
    tmp = tmp_path_factory.mktemp("auth")
    store = tmp / "store"
    make_store(store, SMALL, BARE)
    served = start_login_site(tmp, store)
    try:
        yield served.url, store
    finally:
        stop_login_site(served)


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
    """A fresh browser context (no cookies: nobody logged in) per test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


def open_page(page, url: str, heading: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=TIMEOUT_MS)
    page.wait_for_timeout(500)  # the rest of the script's elements follow the title


def test_logged_out_visitors_see_only_the_login_screen(site, page):
    from playwright.sync_api import expect

    url, _ = site
    for path in ("/", f"/data?run={SMALL.run_id}", "/planner", "/incidents"):
        page.goto(url + path)
        expect(page.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)
        expect(page.get_by_test_id("stSidebar")).to_have_count(0)
        expect(page.get_by_test_id("stDataFrame")).to_have_count(0)
        body = page.inner_text("body")
        assert SMALL.name not in body and BARE.run_id not in body and "not found" not in body.lower(), path


def test_a_viewer_reads_runs_but_cannot_import_delete_or_run(site, page):
    from playwright.sync_api import expect

    url, _ = site
    log_in(page, url, "viewer")
    expect(page.get_by_text("Vic Viewer · viewer", exact=True)).to_be_visible()
    open_page(page, f"{url}/data", "Data")
    expect(page.get_by_test_id("stTable").first).to_be_visible(timeout=TIMEOUT_MS)  # the runs: static cells
    for what in ("Importing files and deleting runs", "Starting and stopping watches"):
        expect(page.get_by_text(what, exact=False).filter(has_text="needs the operator role")).to_be_visible()
    for name in ("Delete…", "Ingest into a new run", "Replay into a new run"):
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    expect(page.get_by_test_id("stFileUploader")).to_have_count(0)
    open_page(page, f"{url}/planner?preset=demo", "Planner")
    expect(page.get_by_text("needs the planner role")).to_be_visible()
    expect(page.get_by_role("button", name="Run", exact=True)).to_have_count(0)
    page.get_by_role("tab", name="Monte-Carlo").click()
    expect(page.get_by_role("button", name="Run Monte-Carlo")).to_have_count(0)
    cannot_act(page, url)


def cannot_act(page, url: str) -> None:
    """The Operations page shows a viewer or planner what is recommended, never a control that acts."""
    from playwright.sync_api import expect

    for tab in ("Recommended", "By hand"):
        open_page(page, f"{url}/operations?run={SMALL.run_id}&tab={tab}", "Operations")
        expect(page.get_by_role("tab", name=tab, selected=True)).to_be_visible(timeout=TIMEOUT_MS)
        for name in ("Dry run", "Carry out", "Reject"):
            expect(page.get_by_role("button", name=name)).to_have_count(0)
    expect(page.get_by_text("Carrying out actions needs the operator role")).to_be_visible()


def test_an_operator_uploads_and_deletes_but_cannot_run(site, page):
    from playwright.sync_api import expect

    url, store = site
    log_in(page, url, "operator")  # listed by email, in other letter case
    expect(page.get_by_text("Olga Operator · viewer, operator", exact=True)).to_be_visible()
    before = {p.name for p in (store / "runs").glob("*.duckdb")}

    open_page(page, f"{url}/data", "Data")
    page.get_by_role("tab", name="Job trace").click()
    uploader = page.get_by_test_id("stFileUploader").filter(has_text="Job trace")
    uploader.locator("input[type=file]").set_input_files(str(ROOT / "tests/fixtures/replay/small.csv"))
    expect(uploader.get_by_text("small.csv")).to_be_visible(timeout=TIMEOUT_MS)
    page.get_by_role("button", name="Replay into a new run").click()
    expect(page.get_by_text(re.compile(r"Imported .*small\.csv"))).to_be_visible(timeout=TIMEOUT_MS)
    assert len({p.name for p in (store / "runs").glob("*.duckdb")} - before) == 1

    open_page(page, f"{url}/data?run={BARE.run_id}", "Data")  # the run in the URL is the one offered
    page.get_by_role("button", name="Delete…").click()
    page.get_by_role("button", name="Delete permanently").click(timeout=TIMEOUT_MS)
    expect(page.get_by_text(f"Deleted run {BARE.run_id}")).to_be_visible(timeout=TIMEOUT_MS)
    assert not (store / "runs" / f"{BARE.run_id}.duckdb").exists()

    open_page(page, f"{url}/planner?preset=demo", "Planner")
    expect(page.get_by_text("needs the planner role")).to_be_visible()
    expect(page.get_by_role("button", name="Run", exact=True)).to_have_count(0)

    open_page(page, f"{url}/operations?run={SMALL.run_id}&tab=By hand", "Operations")  # an operator may act
    expect(page.get_by_label("Reason (goes to Slurm and the log)")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_text("Carrying out actions needs the operator role")).to_have_count(0)


def test_a_planner_runs_a_simulation_but_cannot_delete(site, page):
    from playwright.sync_api import expect

    url, _ = site
    log_in(page, url, "planner")  # by the groups claim
    expect(page.get_by_text("Pat Planner · viewer, planner", exact=True)).to_be_visible()
    open_page(page, f"{url}/planner?preset=demo", "Planner")
    expect(page.get_by_text("needs the planner role")).to_have_count(0)
    page.get_by_role("button", name="Run", exact=True).click(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stMetric").filter(has_text="ETTR (goodput)")).to_be_visible(timeout=120_000)
    # the next click once the page is done, as a person would. In CI (once, stop 40) the knobs came back at their
    # widgets' minimums after the tab's click; 60 local tries did not reproduce it, and a click landing while a
    # rerun still draws is the likeliest race
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=TIMEOUT_MS)
    page.get_by_role("tab", name="Monte-Carlo").click()
    expect(page.get_by_role("button", name="Run Monte-Carlo")).to_be_visible()

    open_page(page, f"{url}/data", "Data")
    for what in ("Importing files and deleting runs", "Starting and stopping watches"):
        expect(page.get_by_text(what, exact=False).filter(has_text="needs the operator role")).to_be_visible()
    expect(page.get_by_role("button", name="Delete…")).to_have_count(0)
    cannot_act(page, url)


def test_logout_returns_to_the_login_screen(site, page):
    from playwright.sync_api import expect

    url, _ = site
    log_in(page, url, "viewer")
    page.get_by_role("button", name="Log out").click()
    # the provider's end-session page (Streamlit sends the user there), which sends them back
    page.get_by_role("button", name="End session").click(timeout=TIMEOUT_MS)
    expect(page.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
    page.goto(f"{url}/data")  # the identity cookie is gone, not only this session's view
    expect(page.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stSidebar")).to_have_count(0)


def test_an_exception_on_a_page_shows_no_traceback_or_server_path(page, tmp_path):
    from playwright.sync_api import expect

    port = free_port()
    log = tmp_path / "serve.log"
    app = ROOT / "tests" / "fixtures" / "auth" / "raising_app.py"
    server = start([sys.executable, "-m", "dashboard.serve", "--port", str(port), "--app", str(app)], log)
    try:
        wait_until(f"http://127.0.0.1:{port}/_stcore/health", server, log, expect=b"ok")
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.get_by_role("heading", name="A page that fails")).to_be_visible(timeout=TIMEOUT_MS)
        error = page.get_by_test_id("stException")
        expect(error).to_be_visible(timeout=TIMEOUT_MS)
        shown = page.inner_text("body")
        for secret in (
            "secret-detail",
            "Traceback",
            "RuntimeError",
            str(ROOT),
            "raising_app.py",
            "/home",
            "site-packages",
        ):
            assert secret not in shown, secret
        assert "secret-detail" in log.read_text()  # the details went to the server's log instead
    finally:
        stop(server)


def test_a_cookie_copied_before_logout_no_longer_logs_in(site, browser):
    from playwright.sync_api import expect

    url, _ = site
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    log_in(page, url, "viewer")
    copied = context.cookies()  # what a stolen profile, a proxy's log or a shared machine keeps
    assert any(c["name"].startswith("_streamlit_user") for c in copied)
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="End session").click(timeout=TIMEOUT_MS)
    expect(page.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
    context.close()

    thief = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        thief.add_cookies(copied)
        stolen = thief.new_page()
        stolen.goto(f"{url}/data")
        expect(stolen.get_by_role("button", name="Log in")).to_be_visible(timeout=TIMEOUT_MS)
        stolen.wait_for_timeout(500)
        expect(stolen.get_by_test_id("stSidebar")).to_have_count(0)
        assert SMALL.name not in stolen.inner_text("body")
        log_in(stolen, url, "viewer")  # logging in again is a new login, which works
    finally:
        thief.close()


def session_id_of(page, url: str) -> str:
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
    page.wait_for_function("() => true")
    for _ in range(200):
        if found:
            return found[-1]
        page.wait_for_timeout(100)
    raise AssertionError("no session id from the server")


def raw_upload(page, url: str, session: str, size: int = 64) -> int:
    """PUT a file to Streamlit's upload route for `session`, as a script would (no uploader widget)."""
    xsrf = next((c["value"] for c in page.context.cookies() if c["name"] == "_streamlit_xsrf"), "")
    answer = page.request.put(
        f"{url}/_stcore/upload_file/{session}/attack-{size}",
        multipart={"file": {"name": "jobs.csv", "mimeType": "text/csv", "buffer": b"x" * size}},
        headers={"X-Xsrftoken": xsrf},
    )
    return answer.status


def test_the_upload_route_refuses_sessions_that_may_not_import(site, browser):
    url, _ = site
    for role in (None, "viewer", "planner", "operator"):
        context = browser.new_context()
        try:
            page = context.new_page()
            if role is not None:
                log_in(page, url, role)
            session = session_id_of(page, f"{url}/data")
            page.wait_for_timeout(1000)  # the page's run records what the session may do
            expected = 204 if role == "operator" else 403
            assert raw_upload(page, url, session) == expected, role
        finally:
            context.close()


def test_streamlit_run_on_every_interface_shows_nothing_without_login(page, tmp_path):
    """Started without the launcher, on every interface and with no secrets: the app itself refuses to show
    anything (only loopback is reached here)."""
    from playwright.sync_api import expect

    store = tmp_path / "store"
    make_store(store, SMALL)
    port = free_port()
    log = tmp_path / "streamlit.log"
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "dashboard" / "streamlit_app.py")]
    flags = ["--server.address", "0.0.0.0", "--server.port", str(port), "--server.headless", "true"]  # noqa: S104
    env = {
        "GOODPUT_STORE": str(store),
        "HOME": str(tmp_path),
        "GOODPUT_LOGIN": "",
        "GOODPUT_BEHIND_TLS_PROXY": "",
    }
    server = start([*command, *flags], log, env=env)
    try:
        wait_until(f"http://127.0.0.1:{port}/_stcore/health", server, log, expect=b"ok")
        page.goto(f"http://127.0.0.1:{port}/data")
        expect(page.get_by_text("This dashboard cannot be shown yet")).to_be_visible(timeout=TIMEOUT_MS)
        page.wait_for_timeout(500)
        body = page.inner_text("body")
        assert "requires login" in body or "[auth]" in body, body
        assert SMALL.name not in body and SMALL.run_id not in body
        expect(page.get_by_test_id("stSidebar")).to_have_count(0)
        expect(page.get_by_test_id("stFileUploader")).to_have_count(0)
    finally:
        stop(server)


def test_over_tls_the_identity_cookie_is_secure(browser, tmp_path):
    from playwright.sync_api import expect

    store = tmp_path / "store"
    make_store(store, SMALL)
    served = start_login_site(tmp_path, store, tls=True)
    context = browser.new_context(ignore_https_errors=True)  # the certificate is self-signed
    try:
        page = context.new_page()
        log_in(page, served.url, "viewer")
        expect(page.get_by_text("Vic Viewer · viewer", exact=True)).to_be_visible()
        cookies = {c["name"]: c for c in context.cookies() if "127.0.0.1" in c["domain"]}
        assert any(name.startswith("_streamlit_user") for name in cookies), sorted(cookies)
        assert all(c["secure"] for c in cookies.values()), {n: c["secure"] for n, c in cookies.items()}
    finally:
        context.close()
        stop_login_site(served)
