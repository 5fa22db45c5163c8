"""Login end to end: a real OpenID provider (oidc-provider-mock, from PyPI) and `goodput dashboard
--require-login` on 127.0.0.1, driven by Debian's chromium. A viewer reads, an operator imports and deletes, a
planner runs simulations; a logged-out visitor sees only the login screen; logout ends the session. And an
exception on a page shows the browser neither a traceback nor a server path.
"""

import json
import re
import sys
from pathlib import Path

import pytest

from tests.runs import bare_run, make_store, small_run
from tests.serving import GOODPUT, ROOT, free_port, start, stop, wait_until

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 60_000
# The provider's predefined users: its authorization form has one button per subject.
USERS = {
    "viewer": {"sub": "vic", "email": "vic@example.com", "name": "Vic Viewer"},
    "operator": {"sub": "olga", "email": "OLGA@example.com", "name": "Olga Operator"},
    "planner": {"sub": "pat", "email": "pat@example.com", "name": "Pat Planner", "groups": ["capacity"]},
}
SMALL, BARE = small_run(), bare_run()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The provider, a store of two runs and the dashboard requiring login; yields (dashboard url, store)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    tmp = tmp_path_factory.mktemp("auth")
    store = tmp / "store"
    make_store(store, SMALL, BARE)
    idp_port, port = free_port(), free_port()
    idp_url, url = f"http://127.0.0.1:{idp_port}", f"http://127.0.0.1:{port}"
    users = [a for claims in USERS.values() for a in ("--user-claims", json.dumps(claims))]
    idp = start(
        [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(idp_port), *users],
        tmp / "idp.log",
    )
    secrets = tmp / "secrets.toml"
    secrets.write_text(f"""
[auth]
redirect_uri = "{url}/oauth2callback"
cookie_secret = "{"5e" * 32}"
client_id = "goodput-test"
client_secret = "goodput-test-secret"
server_metadata_url = "{idp_url}/.well-known/openid-configuration"

[goodput.roles.operator]
emails = ["olga@example.com"]
[goodput.roles.planner]
groups = ["capacity"]
""")
    dashboard = None
    try:
        wait_until(f"{idp_url}/.well-known/openid-configuration", idp, tmp / "idp.log", expect=b"issuer")
        dashboard = start(
            [
                str(GOODPUT),
                "dashboard",
                "--require-login",
                "--secrets",
                str(secrets),
                "--store",
                str(store),
                "--port",
                str(port),
            ],
            tmp / "dashboard.log",
            env={"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"},
        )
        wait_until(f"{url}/_stcore/health", dashboard, tmp / "dashboard.log", expect=b"ok")
        yield url, store
    finally:
        if dashboard is not None:
            stop(dashboard)
        stop(idp)


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


def log_in(page, url: str, role: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    page.get_by_role("button", name="Log in").click(timeout=TIMEOUT_MS)
    # the provider's authorization form: one button per predefined user
    page.get_by_role("button", name=USERS[role]["sub"], exact=True).click(timeout=TIMEOUT_MS)
    expect(page.get_by_text(f"{USERS[role]['name']} ·")).to_be_visible(timeout=TIMEOUT_MS)


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
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible(timeout=TIMEOUT_MS)
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


def test_a_planner_runs_a_simulation_but_cannot_delete(site, page):
    from playwright.sync_api import expect

    url, _ = site
    log_in(page, url, "planner")  # by the groups claim
    expect(page.get_by_text("Pat Planner · viewer, planner", exact=True)).to_be_visible()
    open_page(page, f"{url}/planner?preset=demo", "Planner")
    expect(page.get_by_text("needs the planner role")).to_have_count(0)
    page.get_by_role("button", name="Run", exact=True).click(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stMetric").filter(has_text="ETTR (goodput)")).to_be_visible(timeout=120_000)
    page.get_by_role("tab", name="Monte-Carlo").click()
    expect(page.get_by_role("button", name="Run Monte-Carlo")).to_be_visible()

    open_page(page, f"{url}/data", "Data")
    for what in ("Importing files and deleting runs", "Starting and stopping watches"):
        expect(page.get_by_text(what, exact=False).filter(has_text="needs the operator role")).to_be_visible()
    expect(page.get_by_role("button", name="Delete…")).to_have_count(0)


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
