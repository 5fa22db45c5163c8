"""Extra request headers (engine/ingest/http_fetch.py `with_headers`, PrometheusSource(headers=...)): a
multi-tenant Thanos, Mimir or Cortex needs `X-Scope-OrgID` on every request.

Prometheus ignores headers it does not know, so what goes on the wire is read by a small local HTTP server that
records every request's headers (and redirects within its origin); the real Prometheus then still answers with
the headers set.
"""

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from polars.testing import assert_frame_equal

from engine.errors import GoodputError
from engine.ingest.http_fetch import Endpoint, Fetcher, Header, endpoint, with_headers
from engine.ingest.prometheus import PrometheusError, PrometheusSource, gpu_series
from tests.servers.prometheus import PrometheusServer

EMPTY_VECTOR = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
TOKEN = "Bearer tok3n-s3cret"


@dataclass
class Recorder:
    url: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # path, headers as sent

    def headers_of(self, prefix: str) -> list[dict[str, str]]:
        return [headers for path, headers in self.requests if path.startswith(prefix)]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """/api/v1/query answers an empty vector; /tenant/... redirects there (same origin); /denied/... answers 401
    with a body that repeats the Authorization header, as a careless proxy might."""
    seen: list[tuple[str, dict[str, str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            seen.append((self.path, dict(self.headers.items())))
            if self.path.startswith("/tenant/"):
                self.send_response(302)
                self.send_header("Location", self.path.removeprefix("/tenant"))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status, body = 200, EMPTY_VECTOR
            if self.path.startswith("/denied/"):
                status, body = 401, f"no entry for {self.headers.get('Authorization')}".encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Recorder(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()


def ask(source: PrometheusSource) -> dict:
    return source.get("query", {"query": "vector(1)"}, "query 'vector(1)'")


def test_every_header_goes_on_the_wire(recorder: Recorder) -> None:
    source = PrometheusSource(recorder.url, headers={"X-Scope-OrgID": "tenant-a", "Authorization": TOKEN})
    assert ask(source) == {"resultType": "vector", "result": []}
    (sent,) = recorder.headers_of("/api/v1/query")
    assert sent["X-Scope-OrgID"] == "tenant-a" and sent["Authorization"] == TOKEN
    assert sent["Accept"] == "application/json" and sent["Accept-Encoding"] == "identity"
    # a page may show the tenant, never the token
    assert source.headers == {"X-Scope-OrgID": "tenant-a"}
    assert "tok3n" not in repr(source) and "tok3n" not in repr(source._endpoint)


def test_a_redirect_keeps_the_headers(recorder: Recorder) -> None:
    source = PrometheusSource(recorder.url + "/tenant", headers={"X-Scope-OrgID": "tenant-b"})
    ask(source)
    assert [path.partition("?")[0] for path, _ in recorder.requests] == [
        "/tenant/api/v1/query",
        "/api/v1/query",
    ]
    assert [headers["X-Scope-OrgID"] for _, headers in recorder.requests] == ["tenant-b", "tenant-b"]


def test_user_password_and_headers_together(recorder: Recorder) -> None:
    """The URL's user:password is basic auth; an Authorization header given as well replaces it."""
    host = recorder.url.removeprefix("http://")
    ask(PrometheusSource(f"http://ops:pa55word@{host}", headers={"X-Scope-OrgID": "t"}))
    ask(PrometheusSource(f"http://ops:pa55word@{host}", headers={"authorization": TOKEN}))
    first, second = recorder.headers_of("/api/v1/query")
    assert first["Authorization"] == "Basic b3BzOnBhNTV3b3Jk" and first["X-Scope-OrgID"] == "t"
    assert second["Authorization"] == TOKEN


def test_an_accept_header_replaces_the_fetchers(recorder: Recorder) -> None:
    ep = with_headers(endpoint(recorder.url + "/api/v1/query"), {"accept": "application/json; q=1"})
    Fetcher(5, accept="text/plain").get(ep)
    (sent,) = recorder.headers_of("/api/v1/query")
    assert sent["accept"] == "application/json; q=1" and "text/plain" not in sent.values()


def test_the_authorization_value_is_scrubbed_from_errors(recorder: Recorder) -> None:
    source = PrometheusSource(
        recorder.url + "/denied", headers={"Authorization": TOKEN, "X-Scope-OrgID": "t"}
    )
    with pytest.raises(PrometheusError) as err:
        ask(source)
    text = str(err.value)
    # the body (which echoes the token) is not shown at all: the status alone (tests/test_watch_doors.py)
    assert text == f"{recorder.url}/denied: query 'vector(1)': HTTP 401 Unauthorized"
    assert "tok3n" not in text


def test_headers_are_typed_on_the_endpoint() -> None:
    ep = with_headers(
        endpoint("http://prom:9090/"), {"X-Scope-OrgID": " tenant-a\t", "Proxy-Authorization": TOKEN}
    )
    assert ep.headers == (Header("X-Scope-OrgID", "tenant-a"), Header("Proxy-Authorization", TOKEN))
    assert isinstance(ep, Endpoint) and ep.headers[0].name == "X-Scope-OrgID"
    assert ep.scrub(f"proxy said {TOKEN}") == "proxy said ***"  # a proxy's credentials are secret too
    assert with_headers(ep, None) == ep


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("X Scope", "header name 'X Scope' is not an HTTP token"),
        ("X-Org:ID", "header name 'X-Org:ID' is not an HTTP token"),
        ("", "header name '' is not an HTTP token"),
        ("Tenant-é", "header name 'Tenant-é' is not an HTTP token"),
        ("Host", "header 'Host' is set by Goodput's HTTP client itself"),
        ("content-length", "header 'content-length' is set by Goodput's HTTP client itself"),
        ("Accept-Encoding", "header 'Accept-Encoding' is set by"),
        ("Connection", "header 'Connection' is set by"),
        ("Transfer-Encoding", "header 'Transfer-Encoding' is set by"),
    ],
)
def test_bad_header_names_are_refused(name: str, match: str) -> None:
    with pytest.raises(GoodputError, match="^--prometheus: " + match):
        PrometheusSource("http://prom:9090", headers={name: "x"})


@pytest.mark.parametrize(
    ("value", "what"), [("a\r\nX-Evil: 1", "a carriage return"), ("a\nb", "a line feed"), ("a\0b", "a NUL")]
)
def test_values_must_be_one_line_and_are_never_echoed(value: str, what: str) -> None:
    for name in ("X-Scope-OrgID", "Authorization"):
        with pytest.raises(GoodputError) as err:
            PrometheusSource("http://prom:9090", headers={name: f"Bearer {value}"})
        assert str(err.value).startswith(f"--prometheus: header {name!r}: the value contains {what}")
        assert "Bearer" not in str(err.value) and "Evil" not in str(err.value)


def test_twice_the_same_header_or_a_value_that_is_no_text_is_refused() -> None:
    with pytest.raises(GoodputError, match="header 'x-scope-orgid' is given twice"):
        PrometheusSource("http://prom:9090", headers={"X-Scope-OrgID": "a", "x-scope-orgid": "b"})
    with pytest.raises(GoodputError, match="header 'X-Scope-OrgID': the value must be text"):
        PrometheusSource("http://prom:9090", headers={"X-Scope-OrgID": 7})


def test_the_real_prometheus_answers_with_headers_set(prometheus_server: PrometheusServer) -> None:
    s = prometheus_server
    plain = gpu_series(PrometheusSource(s.url), "DCGM_FI_DEV_GPU_TEMP", s.at(0), s.at(5), points=5)
    tenant = PrometheusSource(s.url, headers={"X-Scope-OrgID": "tenant-a", "Authorization": TOKEN})
    assert_frame_equal(gpu_series(tenant, "DCGM_FI_DEV_GPU_TEMP", s.at(0), s.at(5), points=5), plain)
    assert plain.height == 4 * 8 * 6
