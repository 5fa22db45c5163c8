"""How a watch reaches Prometheus with credentials the pages can use too (engine.ingest.watch.access).

Prometheus itself checks no token, so a small recording proxy stands between the watch and the real test
Prometheus (tests/servers/prometheus.py): it passes every request on and keeps the headers it carried. What is
checked: the headers and credentials sent on every request, a token file read again each cycle, and a stored run
that holds the files' paths but no secret."""

import base64
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import GoodputError
from engine.ingest.watch import PrometheusAccess, loop, prometheus_access, watch_loop
from engine.ingest.watch.access import MAX_CREDENTIAL_BYTES, parse_header
from engine.store import Store

# the servers' session fixtures, used here by name


@pytest.fixture(autouse=True)
def fast_cycles(monkeypatch):
    """Two cycles a fraction of a second apart: the floor for real clusters (loop.MIN_EVERY_S) is lowered in this
    process; tests/test_watch_doors.py checks the real one."""
    monkeypatch.setattr(loop, "MIN_EVERY_S", 0.1)


@contextmanager
def recording_proxy(upstream: str) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """(its URL, the headers of every request so far): a proxy to `upstream` that records what it was sent."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
            try:
                with urllib.request.urlopen(upstream + self.path, timeout=10) as answer:
                    status, body, kind = answer.status, answer.read(), answer.headers.get("Content-Type")
            except urllib.error.HTTPError as err:
                status, body, kind = err.code, err.read(), err.headers.get("Content-Type")
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _stored(store: Store, run_id: str) -> str:
    """Everything of the run's row a page reads (scenario and summary), as text."""
    with store.connect(run_id) as con:
        [(scenario, summary)] = con.sql("SELECT scenario, summary FROM runs").fetchall()
    return f"{scenario}\n{summary}"


def test_headers_and_a_rotated_bearer_token_reach_every_query_and_no_secret_is_stored(
    prometheus_server, tmp_path
):
    token = tmp_path / "token"
    token.write_text("tok-first\n")  # trailing whitespace trimmed, as Prometheus reads its credentials_file
    store = Store(tmp_path / "store")
    with recording_proxy(prometheus_server.url) as (url, seen):
        access = PrometheusAccess(url, headers=(("X-Scope-OrgID", "team-a"),), bearer_token_file=str(token))
        cut: list[int] = []

        def rotate(line: str) -> None:
            if line.startswith("cycle 1 at ") and not cut:
                cut.append(len(seen))
                token.write_text("tok-second")

        result = watch_loop(store, prometheus=access, every_s=0.2, cycles=2, log=rotate, lookback_s=60)
    assert result["cycles"] == 2 and cut
    first, later = seen[: cut[0]], seen[cut[0] :]
    assert first and later
    assert {r["authorization"] for r in first} == {"Bearer tok-first"}
    assert {r["authorization"] for r in later} == {"Bearer tok-second"}
    assert {r["x-scope-orgid"] for r in seen} == {"team-a"}
    assert all(r["path"].startswith("/api/v1/") for r in seen)
    info = store.info(result["run_id"])
    assert info.scenario["prometheus"] == url
    assert info.scenario["prometheus_access"] == {
        "url": url,
        "headers": [["X-Scope-OrgID", "team-a"]],
        "bearer_token_file": str(token),
        "password_file": None,
    }
    # a page uses the token only as the configured endpoint of this URL lends it, never as the run file names it
    assert prometheus_access(info.scenario, [access]) == access
    anonymous = prometheus_access(info.scenario)
    assert (anonymous.url, anonymous.bearer_token_file) == (url, None)
    with pytest.raises(GoodputError, match="pages send credentials only to an endpoint configured"):
        anonymous.source()
    assert "tok-" not in _stored(store, result["run_id"])


def test_basic_auth_from_a_password_file_keeps_the_user_in_the_url(prometheus_server, tmp_path):
    password = tmp_path / "password"
    password.write_text("pa:ss/w0rd@x")  # characters a URL would need escaped
    store = Store(tmp_path / "store")
    with recording_proxy(prometheus_server.url) as (url, seen):
        user_url = url.replace("//", "//admin@")
        result = watch_loop(
            store,
            prometheus=PrometheusAccess(user_url, password_file=str(password)),
            cycles=1,
            lookback_s=60,
            quiet=True,
        )
    expected = "Basic " + base64.b64encode(b"admin:pa:ss/w0rd@x").decode()
    assert seen and {r["authorization"] for r in seen} == {expected}
    info = store.info(result["run_id"])
    assert info.scenario["prometheus_access"]["url"] == user_url
    assert info.scenario["prometheus"] == url  # the base URL pages show: no user either
    stored = _stored(store, result["run_id"])
    assert "pa:ss" not in stored and "w0rd" not in stored


def test_a_password_in_the_url_works_for_the_watch_but_is_not_stored(prometheus_server, tmp_path):
    store = Store(tmp_path / "store")
    with recording_proxy(prometheus_server.url) as (url, seen):
        result = watch_loop(
            store, prometheus_url=url.replace("//", "//admin:s3cret@"), cycles=1, lookback_s=60, quiet=True
        )
    assert {r["authorization"] for r in seen} == {"Basic " + base64.b64encode(b"admin:s3cret").decode()}
    scenario = store.info(result["run_id"]).scenario
    assert "s3cret" not in _stored(store, result["run_id"])
    stored = PrometheusAccess.from_scenario(scenario)
    assert stored.url == url.replace("//", "//admin:***@") and stored.credentials_not_stored
    with pytest.raises(GoodputError, match="which Goodput does not store"):
        stored.source()
    access = prometheus_access(scenario)  # what a page gets: no user, no password, and it says why
    assert access.url == url and access.unconfigured_credentials
    with pytest.raises(GoodputError, match="pages send credentials only to an endpoint configured"):
        access.source()


def test_the_command_line_flags_store_absolute_paths(prometheus_server, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("token").write_text("tok-cli")
    with recording_proxy(prometheus_server.url) as (url, seen):
        code = main(
            [
                "watch",
                "--prometheus",
                url,
                "--prometheus-header",
                "X-Scope-OrgID: team-b",
                "--prometheus-header",
                "X-Grafana-Org-Id:7",
                "--prometheus-bearer-token-file",
                "token",
                "--cycles",
                "1",
                "--since",
                "1m",
                "--json",
                "--store",
                "store",
            ]
        )
    assert code == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    stored = Store(tmp_path / "store").info(run_id).scenario["prometheus_access"]
    assert stored["bearer_token_file"] == str(tmp_path / "token")
    assert stored["headers"] == [["X-Scope-OrgID", "team-b"], ["X-Grafana-Org-Id", "7"]]
    assert {(r["x-scope-orgid"], r["x-grafana-org-id"], r["authorization"]) for r in seen} == {
        ("team-b", "7", "Bearer tok-cli")
    }


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--prometheus-header", "X-Scope-OrgID team-a"], "is not 'Name: value'"),
        (["--prometheus-header", "Authorization: Bearer abc"], "carries a credential"),
        (["--prometheus-bearer-token-file", "missing"], "--prometheus-bearer-token-file "),
        (["--prometheus-password-file", "pw"], "names no user"),
        (["--checkpoint-metric", "not a metric"], "is not a Prometheus metric name"),
        (
            ["--checkpoint-metric", "m", "--checkpoint-job-label", "__name__"],
            "is not a Prometheus label name",
        ),
    ],
)
def test_bad_access_flags_are_errors_before_anything_is_written(
    tmp_path, monkeypatch, capsys, flags, message
):
    monkeypatch.chdir(tmp_path)
    Path("pw").write_text("secret")
    code = main(["watch", "--prometheus", "http://127.0.0.1:9", *flags, "--cycles", "1", "--store", "store"])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert "secret" not in err and "abc" not in err.replace("Authorization: Bearer abc", "")
    assert not (tmp_path / "store" / "runs").exists() or Store(tmp_path / "store").run_ids() == []


def test_flags_that_need_prometheus_say_so(tmp_path, capsys):
    code = main(["watch", "--slurm", "--checkpoint-metric", "m", "--store", str(tmp_path)])
    assert code == 2 and "--checkpoint-metric: needs --prometheus URL" in capsys.readouterr().err


def test_credential_files_are_bounded_and_must_hold_one_credential(tmp_path):
    big, empty, spaced = tmp_path / "big", tmp_path / "empty", tmp_path / "spaced"
    big.write_bytes(b"x" * (MAX_CREDENTIAL_BYTES + 1))
    empty.write_text(" \n")
    spaced.write_text("two words")
    for path, message in ((big, "larger than Goodput's limit"), (empty, "is empty"), (spaced, "spaces")):
        with pytest.raises(GoodputError, match=message) as caught:
            PrometheusAccess("http://prom:9090", bearer_token_file=str(path)).source()
        assert str(path) in str(caught.value) and "two words" not in str(caught.value)


def test_access_round_trips_through_the_scenario_and_refuses_what_it_cannot_store():
    access = PrometheusAccess(
        "http://grafana@prom:9090/prom", headers=(("X-Scope-OrgID", "a"),), password_file="/etc/goodput/pw"
    )
    assert PrometheusAccess.from_scenario({"prometheus_access": access.to_scenario()}) == access
    # a run watched before credentials were stored: the base URL alone
    assert prometheus_access({"source": "watch", "prometheus": "http://prom:9090"}) == PrometheusAccess(
        "http://prom:9090"
    )
    assert prometheus_access({"source": "watch", "prometheus": None}) is None
    assert parse_header("  X-Scope-OrgID :  team a ") == ("X-Scope-OrgID", "team a")
    with pytest.raises(GoodputError, match="one way to authenticate"):
        PrometheusAccess("http://u@prom:9090", bearer_token_file="/t", password_file="/p")
    with pytest.raises(GoodputError, match="already holds a password"):
        PrometheusAccess("http://u:p@prom:9090", password_file="/p")
    with pytest.raises(GoodputError, match="carriage return"):
        PrometheusAccess("http://prom:9090", headers=(("X-Scope-OrgID", "a\r\nX-Evil: 1"),))
    with pytest.raises(GoodputError, match="prometheus_access.headers"):
        PrometheusAccess.from_scenario({"prometheus_access": {"url": "http://prom:9090", "headers": "x"}})
