"""Data page: an operator starts and stops a watch inside the dashboard server (dashboard/watch_runner.py)
against the real test Prometheus; a first cycle that fails shows its error and writes nothing; a viewer sees the
watches but neither the form nor the buttons; one watch per name, at most MAX_RUNNING at once."""

import socket
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import watch_runner
from dashboard.text import md
from engine.errors import GoodputError
from engine.store import Store
from tests.serving import free_port

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
OPERATOR_EMAIL = "olga@example.com"
ROLES = {"goodput": {"roles": {"operator": {"emails": [OPERATOR_EMAIL]}}}}


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


def data_page(user: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if user is not None:
        at.user = user
        at.secrets.update(ROLES)
    at.run()
    return at.switch_page("app_pages/data.py").run()


def fill(at: AppTest, *, name: str, url: str = "", every: str = "1m", since: str = "1h") -> AppTest:
    at.text_input(key="watch_prometheus").input(url)
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
    at = data_page()
    fill(at, name="rack 7", url=prometheus_server.url, every="200ms")
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
    assert f"Prometheus {md(prometheus_server.url)}, every 200 ms" in line  # the sources, as settings say
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
    at = data_page()
    fill(at, name="nowhere", url=url, every="1s")
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith(f"The watch did not start: Prometheus ({md(url)}): unreachable since ")
    assert "Connection refused" in error and error.endswith("nothing was written")
    assert Store(store_dir).run_ids() == []
    assert watch_runner.watches() == [] and not watch_threads()  # the name is free for a corrected start


def test_form_errors_name_their_field_and_start_nothing(store_dir, prometheus_server):
    at = data_page()
    fill(at, name="x", url=prometheus_server.url, every="5")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Every: '5' has no unit")
    fill(at, name="x", url=prometheus_server.url, every="1m", since="soon")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Look back: expected a duration")
    fill(at, name="x", url="")
    [error] = [e.value for e in at.error]
    assert error == "The watch was not started: Sources: give a Prometheus URL, read Slurm, or both"
    fill(at, name="x", url="prometheus:9090")
    [error] = [e.value for e in at.error]
    assert error == "The watch did not start: \\--prometheus: 'prometheus:9090/' is not an http(s) URL"
    fill(at, name=" ", url=prometheus_server.url)
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Run name: give the watched run a name")
    assert watch_runner.watches() == [] and Store(store_dir).run_ids() == []


def test_a_second_watch_of_the_same_name_is_refused(store_dir, prometheus_server):
    at = data_page()
    fill(at, name="fleet", url=prometheus_server.url, every="1h")
    assert not at.error
    fill(at, name="fleet", url=prometheus_server.url, every="1h")
    [error] = [e.value for e in at.error]
    assert error.startswith("The watch was not started: Run name: a watch named 'fleet' already runs")
    assert len(watch_runner.watches(store_dir)) == 1 and len(Store(store_dir).run_ids()) == 1
    # the same name in another store is another watch
    other = watch_runner.start(
        store_dir.parent / "other", watch_runner.WatchSettings("fleet", prometheus_server.url, every_s=3600)
    )
    assert watch_runner.wait_first_cycle(other, 30).run_id is not None


def test_no_more_than_max_running_watches_at_once(store_dir, prometheus_server):
    keys = [
        watch_runner.start(
            store_dir, watch_runner.WatchSettings(f"w{i}", prometheus_server.url, every_s=3600)
        )
        for i in range(watch_runner.MAX_RUNNING)
    ]
    for key in keys:
        assert watch_runner.wait_first_cycle(key, 30).run_id is not None
    at = data_page()
    fill(at, name="one more", url=prometheus_server.url)
    [error] = [e.value for e in at.error]
    assert error.startswith(f"The watch was not started: {watch_runner.MAX_RUNNING} watches already run")
    assert len(watch_threads()) == watch_runner.MAX_RUNNING
    at.button(key="watch_stop:w0").click().run()  # one stopped: room for one more
    fill(at, name="one more", url=prometheus_server.url)
    assert not at.error
    assert sorted(w.name for w in watch_runner.watches(store_dir) if w.running) == [
        "one more",
        "w1",
        "w2",
        "w3",
    ]


def test_a_viewer_sees_the_watches_but_no_form_or_buttons(store_dir, prometheus_server, monkeypatch):
    monkeypatch.setenv("GOODPUT_LOGIN", "required")
    key = watch_runner.start(
        store_dir, watch_runner.WatchSettings("seen", prometheus_server.url, every_s=3600)
    )
    assert watch_runner.wait_first_cycle(key, 30).run_id is not None
    viewer = data_page({"is_logged_in": True, "email": "vic@example.com", "name": "Vic"})
    assert not viewer.exception
    assert "running" in listed(viewer, "seen")
    assert not [t for t in viewer.text_input if t.key and t.key.startswith("watch_")]
    assert not [b for b in viewer.button if b.key and b.key.startswith("watch_")]
    assert any("Starting and stopping watches needs the **operator** role" in c.value for c in viewer.caption)
    operator = data_page({"is_logged_in": True, "email": OPERATOR_EMAIL, "name": "Olga"})
    assert operator.button(key="watch_stop:seen") and operator.text_input(key="watch_name")


def test_names_and_errors_are_shown_as_text(store_dir, prometheus_server):
    at = data_page()
    name = "**bold** [x](http://evil.example/i.png)"
    fill(at, name=name, url=prometheus_server.url, every="1h")
    assert not at.error
    assert "running" in listed(at, md(name))  # escaped: the name reads as itself, no link, no bold


def test_a_tenant_and_a_token_file_from_the_credentials_folder_are_used_and_stored(
    store_dir, prometheus_server, tmp_path, monkeypatch
):
    folder = tmp_path / "credentials"
    folder.mkdir()
    (folder / "prom-token").write_text("s3cret-token\n")
    (tmp_path / "elsewhere").write_text("not-for-the-page\n")
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv(watch_runner.CREDENTIALS_ENV, str(folder))
    at = data_page()
    for outside in (tmp_path / "elsewhere", folder / "link", folder / ".." / "elsewhere"):
        at.text_input(key="watch_token_file").input(str(outside))
        fill(at, name="tenant", url=prometheus_server.url)
        [error] = [e.value for e in at.error]
        assert error.startswith(f"The watch was not started: Bearer token file: {md(outside)} is not inside")
    assert Store(store_dir).run_ids() == []
    at.text_input(key="watch_org_id").input("team-a")
    at.text_input(key="watch_token_file").input(str(folder / "prom-token"))
    fill(at, name="tenant", url=prometheus_server.url, every="1h")
    assert not at.exception and not at.error, [e.value for e in at.error]
    [run_id] = Store(store_dir).run_ids()
    stored = Store(store_dir).info(run_id).scenario["prometheus_access"]
    assert stored == {
        "url": prometheus_server.url,
        "headers": [["X-Scope-OrgID", "team-a"]],
        "bearer_token_file": str(folder / "prom-token"),
        "password_file": None,
    }
    assert "s3cret-token" not in str(Store(store_dir).info(run_id).scenario)
    assert f"({md('X-Scope-OrgID')} team-a)" in listed(at, "tenant")


def test_without_a_credentials_folder_the_token_field_is_off(store_dir, monkeypatch):
    monkeypatch.delenv(watch_runner.CREDENTIALS_ENV, raising=False)
    at = data_page()
    assert at.text_input(key="watch_token_file").disabled
    with pytest.raises(GoodputError, match=r"Bearer token file: the person running this dashboard"):
        watch_runner.start(
            store_dir, watch_runner.WatchSettings("t", "http://127.0.0.1:1", bearer_token_file="x")
        )


def test_slurm_conf_must_be_a_slurm_conf_and_a_missing_one_fails_the_first_cycle(store_dir, tmp_path):
    at = data_page()
    at.text_input(key="watch_slurm_conf").input("/etc/passwd")
    fill(at, name="slurm")
    [error] = [e.value for e in at.error]
    assert error.startswith(
        "The watch was not started: slurm.conf: /etc/passwd is not a file named slurm.conf"
    )
    missing = tmp_path / "absent" / "slurm.conf"
    at.text_input(key="watch_slurm_conf").input(str(missing))
    fill(at, name="slurm")
    [error] = [e.value for e in at.error]
    assert error.startswith(f"The watch did not start: Slurm ({md(missing)}): unreachable since ")
    assert "is not a readable file" in error and error.endswith("nothing was written")
    assert Store(store_dir).run_ids() == [] and watch_runner.watches() == []


@pytest.mark.xdist_group("slurm")
def test_an_operator_watches_the_real_slurm(store_dir, slurm_cluster):
    at = data_page()
    at.checkbox(key="watch_slurm").check()
    at.text_input(key="watch_slurm_conf").input(slurm_cluster.conf)
    fill(at, name="slurm", every="1h")
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
        at = data_page()
        fill(at, name="silent", url=url)
        assert not at.exception and not at.error
        [info] = [i.value for i in at.info if i.value.startswith("Watching")]
        assert info.startswith("Watching **silent**: its first cycle is still reading the sources")
        assert "· running · 0 cycles · no run yet ·" in listed(at, "silent")
        started = time.monotonic()
        at.button(key="watch_stop:silent").click().run()
        assert time.monotonic() - started < watch_runner.STOP_JOIN_S and not watch_threads()
    [error] = [e.value for e in at.error]
    assert error == "Ended: stopped before the first cycle completed; nothing was written"
    assert "· ended · 0 cycles · no run yet ·" in listed(at, "silent")
    assert Store(store_dir).run_ids() == []
