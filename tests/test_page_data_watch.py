"""Data page: an operator starts and stops a watch inside the dashboard server (dashboard/watch_runner.py)
of an endpoint the secrets file configures ([goodput.watch], dashboard/watch_endpoints.py), against the real test
Prometheus; a first cycle that fails shows its error and writes nothing; a viewer sees the watches but neither the
form nor the buttons; one watch per name, at most MAX_RUNNING at once. The attacks on the form are in
tests/test_watch_doors.py."""

import socket
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import watch_runner
from dashboard.text import md
from dashboard.watch_endpoints import WatchConfig
from engine.errors import GoodputError
from engine.ingest.watch import loop
from engine.store import Store
from tests.serving import free_port

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
OPERATOR_EMAIL = "olga@example.com"
ROLES = {"goodput": {"roles": {"operator": {"emails": [OPERATOR_EMAIL]}}}}
AUTH = {  # login required needs an [auth] table, though AppTest logs its user in by itself
    "redirect_uri": "https://goodput.example.com/oauth2callback",
    "cookie_secret": "0" * 64,
    "client_id": "goodput",
    "client_secret": "s3cret",
    "server_metadata_url": "https://idp.example.com/.well-known/openid-configuration",
}


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    """Cycles a fraction of a second apart: the floor for real clusters (loop.MIN_EVERY_S) is lowered in this
    process, which AppTest's pages run in; tests/test_watch_doors.py checks the real one."""
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


@pytest.fixture(autouse=True)
def no_watch_outlives_its_test():
    """Every watch a test started is stopped and dropped, so no thread runs into the next test."""
    yield
    for w in watch_runner.watches():
        watch_runner.stop(w.key)
        watch_runner.forget(w.key)
    assert not watch_threads()


def watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(watch_runner.THREAD_PREFIX)]


def watch_table(endpoints: dict[str, str | dict] | None = None, slurm: dict | None = None) -> dict:
    """A [goodput.watch] table: endpoints by name (a URL, or the whole entry), and [goodput.watch.slurm]."""
    table: dict = {
        "endpoints": {k: v if isinstance(v, dict) else {"url": v} for k, v in (endpoints or {}).items()}
    }
    return table | ({"slurm": slurm} if slurm is not None else {})


def config(url: str) -> WatchConfig:
    return WatchConfig.from_table(watch_table({"test": url}))


def data_page(user: dict | None = None, watch: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    goodput: dict = {}
    if user is not None:
        at.user = user
        at.secrets["auth"] = AUTH
        goodput |= ROLES["goodput"]
    if watch is not None:
        goodput["watch"] = watch
    if goodput:
        at.secrets["goodput"] = goodput
    at.run()
    return at.switch_page("app_pages/data.py").run()


def fill(
    at: AppTest, *, name: str, endpoint: str | None = "test", every: str = "1m", since: str = "1h"
) -> AppTest:
    if not at.selectbox(key="watch_endpoint").disabled:  # disabled when no endpoint is configured
        at.selectbox(key="watch_endpoint").set_value(endpoint)
    at.text_input(key="watch_every").input(every)
    at.text_input(key="watch_since").input(since)
    at.text_input(key="watch_name").input(name)
    return at.button(key="watch_start").click().run()


def wait_for(condition, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout_s} s: {condition}")


def listed(at: AppTest, name: str) -> str:
    [line] = [m.value for m in at.markdown if m.value.startswith(f"**{name}** · ")]
    return line


def test_an_operator_starts_a_watch_sees_its_cycles_and_stops_it(store_dir, prometheus_server):
    at = data_page(watch=watch_table({"test": prometheus_server.url}))
    assert at.selectbox(key="watch_endpoint").options == [f"test ({prometheus_server.url})"]
    fill(at, name="rack 7", every="200ms")
    assert not at.exception and not at.error
    [(state)] = watch_runner.watches(store_dir)
    [started] = [s.value for s in at.success if s.value.startswith("Watching")]
    assert started == f"Watching **rack 7**: the first cycle wrote run `{state.run_id}`."
    assert Store(store_dir).info(state.run_id).name == "rack 7"
    wait_for(lambda: watch_runner.watches(store_dir)[0].cycles >= 3)
    at.run()
    line = listed(at, "rack 7")
    cycles = int(line.split(" · ")[2].split()[0])
    assert cycles >= 3 and "running" in line and f"run `{state.run_id}`" in line
    assert (
        f"Prometheus {md(f'test ({prometheus_server.url})')}, every 200 ms" in line
    )  # the endpoint, by name
    assert [watch_threads()[0].name] == [f"{watch_runner.THREAD_PREFIX} rack 7"]
    # the store's watched run lists its Prometheus as reachable, under the same name
    assert any("reachable, last read" in s.value for s in at.success)

    at.button(key="watch_stop:rack 7").click().run()
    assert not at.exception
    assert not watch_threads()
    [stopped] = watch_runner.watches(store_dir)
    assert (stopped.running, stopped.error) == (False, None)
    assert "· ended ·" in listed(at, "rack 7")
    committed = Store(store_dir).info(state.run_id).summary["cycles"]
    assert committed == stopped.cycles  # every cycle the page counted is in the run, and no more came
    at.button(key="watch_forget:rack 7").click().run()
    assert watch_runner.watches(store_dir) == []
    assert watch_runner.stop(state.key) is None  # a Stop another session still shows does nothing
    assert not [m for m in at.markdown if m.value.startswith("**rack 7** · ")]


def test_a_bad_url_shows_the_first_cycles_error_and_writes_nothing(store_dir):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    at = data_page(watch=watch_table({"test": url}))
    fill(at, name="nowhere", every="1s")
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith(
        f"The watch did not start: Prometheus (`{url}`): unreachable since "
    )  # copies whole
    assert "(connection refused)" in error and error.endswith("nothing was written")
    assert Store(store_dir).run_ids() == []
    assert watch_runner.watches() == [] and not watch_threads()  # the name is free for a corrected start


def test_form_errors_name_their_field_and_start_nothing(store_dir, prometheus_server):
    at = data_page(watch=watch_table({"test": prometheus_server.url}, slurm={}))
    fill(at, name="x", every="5")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Every: '5' has no unit")
    fill(at, name="x", every="1m", since="soon")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Look back: expected a duration")
    fill(at, name="x", endpoint=None)
    [error] = [e.value for e in at.error]
    assert error == "The watch was not started: Sources: choose a Prometheus endpoint, read Slurm, or both"
    fill(at, name=" ")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Run name: give the watched run a name")
    assert watch_runner.watches() == [] and Store(store_dir).run_ids() == []


def test_a_second_watch_of_the_same_name_is_refused(store_dir, prometheus_server):
    at = data_page(watch=watch_table({"test": prometheus_server.url}))
    fill(at, name="fleet", every="1h")
    assert not at.error
    fill(at, name="fleet", every="1h")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Run name: a watch named 'fleet' already runs")
    assert len(watch_runner.watches(store_dir)) == 1 and len(Store(store_dir).run_ids()) == 1
    # the same name in another store is another watch
    other = watch_runner.start(
        store_dir.parent / "other",
        watch_runner.WatchSettings("fleet", "test", every_s=3600),
        config(prometheus_server.url),
    )
    assert watch_runner.wait_first_cycle(other, 30).run_id is not None


def test_no_more_than_max_running_watches_at_once(store_dir, prometheus_server):
    keys = [
        watch_runner.start(
            store_dir,
            watch_runner.WatchSettings(f"w{i}", "test", every_s=3600),
            config(prometheus_server.url),
        )
        for i in range(watch_runner.MAX_RUNNING)
    ]
    for key in keys:
        assert watch_runner.wait_first_cycle(key, 30).run_id is not None
    at = data_page(watch=watch_table({"test": prometheus_server.url}))
    fill(at, name="one more")
    [error] = [e.value for e in at.error]
    assert error.startswith(f"The watch was not started: {watch_runner.MAX_RUNNING} watches already run")
    assert len(watch_threads()) == watch_runner.MAX_RUNNING
    at.button(key="watch_stop:w0").click().run()  # one stopped: room for one more
    fill(at, name="one more")
    assert not at.error
    assert sorted(w.name for w in watch_runner.watches(store_dir) if w.running) == [
        "one more",
        "w1",
        "w2",
        "w3",
    ]


def test_a_viewer_sees_the_watches_but_no_form_or_buttons(store_dir, prometheus_server, monkeypatch):
    monkeypatch.setenv("GOODPUT_LOGIN", "required")
    watch = watch_table({"test": prometheus_server.url})
    key = watch_runner.start(
        store_dir, watch_runner.WatchSettings("seen", "test", every_s=3600), config(prometheus_server.url)
    )
    assert watch_runner.wait_first_cycle(key, 30).run_id is not None
    viewer = data_page({"is_logged_in": True, "email": "vic@example.com", "name": "Vic"}, watch)
    assert not viewer.exception
    assert "running" in listed(viewer, "seen")
    assert not [t for t in viewer.text_input if t.key and t.key.startswith("watch_")]
    assert not [t for t in viewer.selectbox if t.key and t.key.startswith("watch_")]
    assert not [b for b in viewer.button if b.key and b.key.startswith("watch_")]
    assert any("Starting and stopping watches needs the **operator** role" in c.value for c in viewer.caption)
    operator = data_page(
        {"is_logged_in": True, "email": OPERATOR_EMAIL, "email_verified": True, "name": "Olga"}, watch
    )
    assert operator.button(key="watch_stop:seen") and operator.text_input(key="watch_name")


def test_names_and_errors_are_shown_as_text(store_dir, prometheus_server):
    at = data_page(watch=watch_table({"test": prometheus_server.url}))
    name = "**bold** [x](http://evil.example/i.png)"
    fill(at, name=name, every="1h")
    assert not at.error
    assert "running" in listed(at, md(name))  # escaped: the name reads as itself, no link, no bold


def test_a_configured_tenant_and_token_file_are_used_and_only_their_paths_stored(
    store_dir, prometheus_server, tmp_path
):
    token = tmp_path / "prom-token"
    token.write_text("s3cret-token\n")
    entry = {"url": prometheus_server.url, "org_id": "team-a", "bearer_token_file": str(token)}
    at = data_page(watch=watch_table({"tenant": entry}))
    fill(at, name="tenant", endpoint="tenant", every="1h")
    assert not at.exception and not at.error, [e.value for e in at.error]
    [run_id] = Store(store_dir).run_ids()
    stored = Store(store_dir).info(run_id).scenario["prometheus_access"]
    assert stored == {
        "url": prometheus_server.url,
        "headers": [["X-Scope-OrgID", "team-a"]],
        "bearer_token_file": str(token),
        "password_file": None,
        "endpoint": "tenant",
    }
    assert "s3cret-token" not in str(Store(store_dir).info(run_id).scenario)
    assert f"Prometheus {md(f'tenant ({prometheus_server.url})')}" in listed(at, "tenant")


def test_without_configured_endpoints_the_page_says_how_to_configure_them(store_dir):
    at = data_page()
    assert not at.exception
    assert not [w for w in (*at.text_input, *at.selectbox) if w.key and w.key.startswith("watch_")]
    assert any("none is configured yet" in i.value for i in at.info)
    assert any("[goodput.watch.endpoints.prod]" in c.value for c in at.code)


def test_a_broken_configuration_is_named_and_offers_no_form(store_dir):
    at = data_page(watch={"endpoints": {"prod": {"url": "http://prom:9090", "token": "x"}}})
    [error] = [e.value for e in at.error]
    assert "wrong, so no watch can start here" in error and "unknown key 'token'" in error
    assert not [w for w in at.selectbox if w.key and w.key.startswith("watch_")]
    with pytest.raises(GoodputError, match="'other' is not an endpoint configured"):
        watch_runner.start(store_dir, watch_runner.WatchSettings("x", "other"), config("http://prom:9090"))


def test_a_missing_slurm_conf_fails_the_first_cycle_and_slurm_needs_its_table(store_dir, tmp_path):
    missing = tmp_path / "absent" / "slurm.conf"
    at = data_page(watch=watch_table(slurm={"conf": str(missing)}))
    at.checkbox(key="watch_slurm").check()
    fill(at, name="slurm", endpoint=None)
    [error] = [e.value for e in at.error]
    assert error == md(
        f"The watch was not started: [goodput.watch.slurm].conf: {missing} does not exist or cannot be read"
    )
    assert Store(store_dir).run_ids() == [] and watch_runner.watches() == []
    at = data_page(watch=watch_table({"test": "http://127.0.0.1:9"}))
    assert at.checkbox(key="watch_slurm").disabled  # no [goodput.watch.slurm]: no Slurm from the page
    with pytest.raises(GoodputError, match=r"Read Slurm: .* has no \[goodput.watch.slurm\]"):
        watch_runner.start(
            store_dir, watch_runner.WatchSettings("s", slurm=True), config("http://127.0.0.1:9")
        )


@pytest.mark.xdist_group("slurm")
def test_an_operator_watches_the_real_slurm(store_dir, slurm_cluster):
    at = data_page(watch=watch_table(slurm={"conf": slurm_cluster.conf}))
    at.checkbox(key="watch_slurm").check()
    fill(at, name="slurm", endpoint=None, every="1h")
    assert not at.exception and not at.error
    [run_id] = Store(store_dir).run_ids()
    [source] = Store(store_dir).info(run_id).summary["sources"]
    assert (source["source"], source["target"], source["reachable"]) == ("slurm", slurm_cluster.conf, True)
    assert f"Slurm ({md(slurm_cluster.conf)})" in listed(at, "slurm")


def test_a_hanging_source_is_listed_while_it_reads_and_stop_cuts_it(store_dir, monkeypatch):
    """A Prometheus that accepts connections but never answers: Start returns after FIRST_CYCLE_WAIT_S with the
    watch still reading; Stop ends it at once, and nothing was written."""
    monkeypatch.setattr(watch_runner, "FIRST_CYCLE_WAIT_S", 0.5)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        at = data_page(watch=watch_table({"test": url}))
        fill(at, name="silent")
        assert not at.exception and not at.error
        [info] = [i.value for i in at.info if i.value.startswith("Watching")]
        assert info.startswith("Watching **silent**: its first cycle is still reading the sources")
        assert "· running · 0 cycles · no run yet ·" in listed(at, "silent")
        at.button(key="watch_stop:silent").click().run()
        # the stop ended it within Stop's join (the request's own 10 s deadline would outlast that); no clock
        # around the page's rerun, which a busy machine slows
        assert not watch_threads()
    [error] = [e.value for e in at.error]
    assert error == "Ended: stopped before the first cycle completed; nothing was written"
    assert "· ended · 0 cycles · no run yet ·" in listed(at, "silent")
    assert Store(store_dir).run_ids() == []
