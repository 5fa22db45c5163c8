"""Issue 27, item 2: the watch form was a server-side request forgery. Each attack, against real servers on
loopback, with the door that now stays closed:

- the form fetched any URL typed into it: it offers only the endpoints [goodput.watch] configures, by name;
- error pages came back to the operator (200 bytes of any non-200 body, whole Prometheus error texts): errors
  name the status and at most a short, escaped Prometheus `error` field, on the page, in the CLI and in
  `ingest --scrape`;
- a token from the credentials folder went to the URL the operator typed: a credential goes only to the
  endpoint it is configured for, also when a page of a run queries the run's Prometheus;
- a 1 ms interval was accepted: cycles are at least engine.ingest.watch.loop.MIN_EVERY_S apart;
- a slurm.conf that is a symbolic link was read: it is refused.
"""

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import watch_runner
from dashboard.watch_endpoints import WatchConfig
from engine.cli import main
from engine.errors import GoodputError
from engine.ingest import live
from engine.ingest.http_fetch import MAX_SHOWN_CHARS, shown_text
from engine.ingest.prometheus import PrometheusSource
from engine.ingest.watch import loop, prometheus_access
from engine.store import Store
from tests.serving import free_port

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "streamlit_app.py")
SECRET = "AKIAIOSFODNN7EXAMPLE-metadata-secret"  # what a metadata service or an admin page would hand back
HTML_PAGE = f"<html><body><h1>Oops</h1><pre>aws_secret_access_key={SECRET}</pre></body></html>"


@dataclass
class Hostile:
    """A server on loopback: `answer(handler)` writes each answer; every request's path and headers are kept."""

    answer: Callable[[BaseHTTPRequestHandler], None]
    seen: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


@contextmanager
def hostile(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[Hostile]:
    server_state = Hostile(answer)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            server_state.seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
            server_state.answer(self)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server_state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield server_state
    finally:
        server.shutdown()
        server.server_close()


def send(
    handler: BaseHTTPRequestHandler, status: int, body: str, reason: str | None = None, **headers
) -> None:
    data = body.encode()
    handler.send_response(status, reason)
    for name, value in {"Content-Type": "text/html", **headers}.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def prometheus_ok(handler: BaseHTTPRequestHandler) -> None:
    """An empty but valid answer to every query: enough for a watch's first cycle."""
    body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    if "/api/v1/query?" in handler.path:
        body["data"] = {"resultType": "vector", "result": []}
    send(handler, 200, json.dumps(body), Content_Type="application/json")


def error_of(source: PrometheusSource) -> str:
    with pytest.raises(GoodputError) as caught:
        source.get("query", {"query": "up"}, "query 'up'")
    return str(caught.value)


# ----- errors: the status and a short escaped Prometheus error field, never a body ---------------------------


def test_an_html_error_page_never_reaches_the_error():
    with hostile(lambda h: send(h, 500, HTML_PAGE, reason=f"Broken {SECRET}")) as server:
        message = error_of(PrometheusSource(server.url))
    assert message == f"{server.url}: query 'up': HTTP 500 Internal Server Error"
    assert SECRET not in message and "Oops" not in message  # neither the body nor the server's reason phrase


def test_a_prometheus_error_field_is_cut_short_and_escaped():
    field_text = "bad_data: \x1b[31mparse error\x1b[0m\nsecond line \u202eevil" + "x" * 5000 + SECRET
    body = json.dumps({"status": "error", "errorType": "bad_data\x07", "error": field_text})
    with hostile(lambda h: send(h, 400, body, Content_Type="application/json")) as server:
        message = error_of(PrometheusSource(server.url))
        # a 200 answer that says error is read the same way
        server.answer = lambda h: send(h, 200, body, Content_Type="application/json")
        message_200 = error_of(PrometheusSource(server.url))
    head = f"{server.url}: query 'up': HTTP 400 Bad Request, Prometheus answered bad_data\\x07: "
    assert message.startswith(head)
    assert message == head + shown_text(field_text)
    assert message_200 == f"{server.url}: query 'up': Prometheus answered bad_data\\x07: " + shown_text(
        field_text
    )
    for text in (message, message_200):
        assert "\x1b" not in text and "\n" not in text and "\u202e" not in text and "\x07" not in text
        assert "\\x1b[31mparse error" in text and "\\u202eevil" in text
        assert SECRET not in text and text.endswith("…")
        assert len(text) < len(head) + MAX_SHOWN_CHARS + 10


def test_a_redirect_elsewhere_names_only_the_origin():
    target = f"http://169.254.169.254/latest/meta-data/iam/{SECRET}"
    with hostile(lambda h: send(h, 302, "", Location=target)) as server:
        message = error_of(PrometheusSource(server.url))
    assert "'http://169.254.169.254', another scheme, host or port" in message
    assert SECRET not in message and "meta-data" not in message


def test_connection_errors_are_fixed_words():
    url = f"http://127.0.0.1:{free_port()}"
    message = error_of(PrometheusSource(url))
    assert message == f"{url}: query 'up': unreachable (connection refused)"


def test_the_watch_command_shows_no_body(tmp_path, capsys):
    with hostile(lambda h: send(h, 503, HTML_PAGE)) as server:
        code = main(["watch", "--prometheus", server.url, "--cycles", "1", "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "HTTP 503 Service Unavailable" in err
    assert SECRET not in err and "Oops" not in err


@pytest.mark.parametrize("status", [200, 500])
def test_ingest_scrape_shows_no_body(tmp_path, capsys, status):
    """A scrape of a page that is no exporter's: the parse error names the line, not its text; a 500 its
    status."""
    with hostile(lambda h: send(h, status, f"{SECRET} {{not metrics}}\n" + HTML_PAGE)) as server:
        code = main(
            [
                "ingest",
                "dcgm",
                "--scrape",
                server.url + "/metrics",
                "--scrapes",
                "1",
                "--store",
                str(tmp_path),
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and SECRET not in err and "Oops" not in err, err
    if status == 500:
        assert err.strip().endswith("/metrics: HTTP 500 Internal Server Error")
    else:
        assert "/metrics, line 1: not DCGM exporter metrics" in err


# ----- the form offers only configured endpoints; credentials go only where they belong ----------------------


@pytest.fixture
def served_on_loopback():
    """Pages run as if served on loopback (no login)."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    yield
    config.set_option("server.address", before)


@pytest.fixture(autouse=True)
def no_watch_outlives_its_test():
    yield
    for w in watch_runner.watches():
        watch_runner.stop(w.key)
        watch_runner.forget(w.key)


def data_page(watch: dict | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if watch is not None:
        at.secrets["goodput"] = {"watch": watch}
    at.run()
    return at.switch_page("app_pages/data.py").run()


def test_the_form_offers_only_configured_endpoints_and_their_token_goes_only_there(
    store_dir, tmp_path, served_on_loopback
):
    token = tmp_path / "prom-token"
    token.write_text("tok-for-a-only\n")
    with hostile(prometheus_ok) as a, hostile(prometheus_ok) as b:
        table = {"endpoints": {"a": {"url": a.url, "bearer_token_file": str(token)}, "b": {"url": b.url}}}
        at = data_page(table)
        assert not at.exception
        assert at.selectbox(key="watch_endpoint").options == [f"a ({a.url})", f"b ({b.url})"]
        # nothing free-form that names a place: no URL, token, header or file field
        assert sorted(t.key for t in at.text_input if t.key.startswith("watch_")) == [
            "watch_every",
            "watch_name",
            "watch_since",
        ]
        for endpoint, name in (("a", "watch a"), ("b", "watch b")):
            at.selectbox(key="watch_endpoint").set_value(endpoint)
            at.text_input(key="watch_every").input("1h")
            at.text_input(key="watch_name").input(name)
            at.button(key="watch_start").click().run()
            assert not at.exception and not at.error, [e.value for e in at.error]
    assert a.seen and {r.get("authorization") for r in a.seen} == {"Bearer tok-for-a-only"}
    assert b.seen and {r.get("authorization") for r in b.seen} == {None}
    runs = [Store(store_dir).info(r).scenario["prometheus_access"] for r in Store(store_dir).run_ids()]
    assert sorted(s["endpoint"] for s in runs) == ["a", "b"]
    assert "tok-for-a-only" not in json.dumps(runs)


def test_without_configuration_the_form_shows_how_to_configure_it(store_dir, served_on_loopback):
    at = data_page(None)
    assert not at.exception
    assert not [
        w for w in (*at.text_input, *at.selectbox, *at.button) if w.key and w.key.startswith("watch_")
    ]
    assert any("[goodput.watch.endpoints.prod]" in c.value for c in at.code)


def test_a_page_sends_a_credential_only_to_the_endpoint_configured_for_it(tmp_path):
    """A run file says where its Prometheus is and which token file its watch used: a page asks that URL with
    the configured endpoint's credentials when the URLs match, and never reads a file the run names."""
    token = tmp_path / "prom-token"
    token.write_text("tok-for-a-only")
    with hostile(prometheus_ok) as a, hostile(prometheus_ok) as b:
        config = WatchConfig.from_table({"endpoints": {"a": {"url": a.url, "bearer_token_file": str(token)}}})

        def scenario(url: str, token_file: str | None) -> dict:
            access = {"url": url, "headers": [], "bearer_token_file": token_file, "password_file": None}
            return {"source": "watch", "prometheus_access": access}

        own = prometheus_access(scenario(a.url + "/", None), config.allowed())
        own.source().get("query", {"query": "up"}, "up")
        plain = prometheus_access(scenario(b.url, None), config.allowed())
        plain.source().get("query", {"query": "up"}, "up")
        forged = prometheus_access(scenario(b.url, str(token)), config.allowed())
        with pytest.raises(GoodputError, match="pages send credentials only to an endpoint configured"):
            forged.source()
    assert [r.get("authorization") for r in a.seen] == ["Bearer tok-for-a-only"]
    assert [r.get("authorization") for r in b.seen] == [None]


def test_configuration_mistakes_name_their_key():
    cases = [
        (
            {"endpoints": {"p": {"url": "http://u:pw@prom:9090"}}},
            r"\[goodput.watch.endpoints.p\].url: holds a password",
        ),
        (
            {"endpoints": {"p": {"url": "file:///etc/passwd"}}},
            r"\[goodput.watch.endpoints.p\].url: .* not an http",
        ),
        (
            {"endpoints": {"p": {"url": "http://prom", "bearer_token_file": "rel"}}},
            r"bearer_token_file: must be an abs",
        ),
        (
            {"endpoints": {"p": {"url": "http://prom", "headers": {"Authorization": "Bearer x"}}}},
            "carries a credential",
        ),
        ({"endpoints": {"p": {"url": "http://prom", "token": "x"}}}, r"unknown key 'token'"),
        (
            {"slurm": {"conf": "/etc/passwd"}},
            r"\[goodput.watch.slurm\].conf: /etc/passwd is not a file named",
        ),
        ({"urls": []}, r"\[goodput.watch\]: unknown key 'urls'"),
    ]
    for table, message in cases:
        with pytest.raises(GoodputError, match=message):
            WatchConfig.from_table(table)


# ----- the interval's floor -------------------------------------------------------------------------------------


def test_the_interval_has_a_floor_on_the_page_and_the_command_line(store_dir, tmp_path, capsys):
    assert loop.MIN_EVERY_S == 10.0 and live.MIN_EVERY_S == 1.0
    config = WatchConfig.from_table({"endpoints": {"p": {"url": "http://127.0.0.1:9"}}})
    with pytest.raises(GoodputError, match=r"^Every: at least 10s between cycles"):
        watch_runner.start(store_dir, watch_runner.WatchSettings("x", "p", every_s=0.001), config)
    assert watch_runner.watches() == []
    code = main(["watch", "--prometheus", "http://127.0.0.1:9", "--every", "1ms", "--store", str(tmp_path)])
    assert code == 2 and "--every: the time between cycles must be at least 10 s" in capsys.readouterr().err
    code = main(
        ["ingest", "dcgm", "--scrape", "http://127.0.0.1:9/m", "--every", "1ms", "--store", str(tmp_path)]
    )
    assert code == 2 and "--every: the scrape interval must be at least 1 s" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists() or Store(tmp_path).run_ids() == []


# ----- slurm.conf -----------------------------------------------------------------------------------------------


def test_a_slurm_conf_that_is_a_link_or_no_file_is_refused(store_dir, tmp_path):
    (tmp_path / "secret.txt").write_text("root:x:0:0\n")
    link = tmp_path / "linked" / "slurm.conf"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "secret.txt")
    folder = tmp_path / "folder" / "slurm.conf"
    folder.mkdir(parents=True)
    for conf, message in ((link, "is a symbolic link"), (folder, "is not a regular file")):
        config = WatchConfig.from_table({"slurm": {"conf": str(conf)}})
        with pytest.raises(GoodputError, match=rf"^\[goodput.watch.slurm\].conf: {conf} {message}"):
            watch_runner.start(store_dir, watch_runner.WatchSettings("s", slurm=True), config)
    assert watch_runner.watches() == [] and Store(store_dir).run_ids() == []


def test_the_examples_of_the_readme_and_the_page_are_valid_configurations():
    import tomllib

    from dashboard.watch_endpoints import EXAMPLE

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    watch = readme[readme.index("## Watch a real cluster") :]
    start = watch.index("```toml") + len("```toml")
    for text in (watch[start : watch.index("```", start)], EXAMPLE):
        config = WatchConfig.from_table(tomllib.loads(text)["goodput"]["watch"])
        prod = config.endpoint("prod")
        assert prod.access.bearer_token_file == "/etc/goodput/prom-token"
        assert ("X-Scope-OrgID", "team-a") in prod.access.headers
        assert config.slurm and config.slurm_conf == "/etc/slurm/slurm.conf"
