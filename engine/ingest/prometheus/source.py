"""Where the API is and one request to it: PrometheusSource, PrometheusError and the answer's envelope.

An error names the URL, the query and the status; of what the server sent it shows at most Prometheus' own
`error` field (and `errorType`), cut short and with control characters escaped (http_fetch.shown_text), and only
when the answer has the shape of Prometheus' JSON error. Any other body (an HTML error page, a metadata
service's answer, a proxy's text) is never shown."""

import json
import urllib.parse
from dataclasses import replace

from engine.errors import GoodputError
from engine.ingest.http_fetch import (
    Endpoint,
    Fetcher,
    HttpStatusError,
    endpoint,
    redact,
    shown_text,
    with_headers,
)

API = "/api/v1"
# The body of an HTTP error kept to read Prometheus' error field from (its errors are a line or two); the field
# is shown cut to http_fetch.MAX_SHOWN_CHARS, the rest of the body never.
MAX_ERROR_BYTES = 64 * 1024
MAX_ERROR_TYPE_CHARS = 40  # Prometheus' errorType: bad_data, timeout, execution, ...
FLAG = "--prometheus"


class PrometheusError(GoodputError):
    """Prometheus (or what stands in its place) could not answer a query: says which URL, which query, why."""


class PrometheusSource:
    """Where the API is: `url` may be the server (`http://prom:9090`), a path prefix (`http://thanos/thanos`,
    VictoriaMetrics' `http://vm:8481/select/0/prometheus`) or any API URL below it: everything before `/api/v1`
    is the base. user:password in the URL is basic auth. `headers` go on every request: `Authorization` (a
    bearer token, a secret never shown), a tenant's `X-Scope-OrgID` (Thanos, Mimir, Cortex), any other."""

    def __init__(self, url: str, timeout_s: float = 10.0, headers: dict[str, str] | None = None) -> None:
        if not timeout_s > 0:
            raise GoodputError(f"{FLAG}: the timeout must be greater than 0 (got {timeout_s})")
        parts = urllib.parse.urlsplit(url.strip())
        if parts.query or parts.fragment:
            raise GoodputError(f"{FLAG}: {redact(url)!r} has a query or fragment; give the server's base URL")
        path = parts.path
        if API in path:
            path = path[: path.index(API)]
        base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))
        try:
            ep = endpoint(base + "/")
        except GoodputError as err:
            raise GoodputError(str(err).replace("--scrape", FLAG, 1)) from None
        ep = with_headers(ep, headers, FLAG)
        self.base = ep.url.rstrip("/")
        self.shown = ep.shown.rstrip("/")
        self.timeout_s = timeout_s
        self._endpoint = ep
        self.fetcher = Fetcher(
            timeout_s, accept="application/json", error_body_bytes=MAX_ERROR_BYTES, failing="unreachable"
        )

    def __repr__(self) -> str:
        return f"PrometheusSource({self.shown!r})"

    @property
    def headers(self) -> dict[str, str]:
        """The extra headers sent, without the secret ones (Authorization, Proxy-Authorization): what a page may
        show."""
        return {h.name: h.value for h in self._endpoint.headers if h.name.lower() != "proxy-authorization"}

    def abort(self) -> None:
        """Cut every request in flight (and every later one): a watch loop's SIGTERM ends at once."""
        self.fetcher.abort()

    def get(self, path: str, params: dict[str, str], what: str) -> dict:
        """The `data` of a successful API answer; a PrometheusError naming the URL and `what` otherwise."""
        return decode_answer(self, self.get_body(path, params, what), what)

    def get_body(self, path: str, params: dict[str, str], what: str) -> bytes:
        """The body of a 200 answer of `path` below the API (`query_range`, ...); a PrometheusError otherwise."""
        query = urllib.parse.urlencode(params)
        ep = replace(self._endpoint, url=f"{self.base}{API}/{path}" + (f"?{query}" if query else ""))
        try:
            return self.fetcher.get(ep)
        except HttpStatusError as err:
            raise PrometheusError(f"{self.shown}: {what}: {_error_text(ep, err)}") from None
        except GoodputError as err:
            text = str(err).removeprefix(ep.shown).removeprefix(": ")
            raise PrometheusError(f"{self.shown}: {what}: {ep.scrub(text)}") from None


def decode_answer(source: PrometheusSource, body: bytes, what: str) -> dict:
    """The `data` of an API answer read whole (small answers); a PrometheusError for anything but success."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise PrometheusError(
            f"{source.shown}: {what}: the answer is not JSON (is this Prometheus' API?)"
        ) from None
    if not isinstance(answer, dict):
        raise PrometheusError(f"{source.shown}: {what}: the answer is not a Prometheus API answer")
    if answer.get("status") != "success":
        raise PrometheusError(f"{source.shown}: {what}: {_status_error(answer)}")
    data = answer.get("data")
    return data if isinstance(data, dict) else {"result": data}


def _status_error(answer: dict) -> str:
    """`Prometheus answered bad_data: ...` from an error answer's own fields, each cut short and escaped; fields
    that are not text are not shown."""
    kind, text = answer.get("errorType"), answer.get("error")
    kind = shown_text(kind, MAX_ERROR_TYPE_CHARS) if isinstance(kind, str) and kind else "an error"
    text = shown_text(text) if isinstance(text, str) and text else "no error text"
    return f"Prometheus answered {kind}: {text}"


def _error_text(ep: Endpoint, err: HttpStatusError) -> str:
    """The status, and Prometheus' error field where the body is Prometheus' JSON error; never the body."""
    head = f"HTTP {err.status} {err.reason}".rstrip()
    try:
        answer = json.loads(err.body)
    except (ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict) and answer.get("status") == "error":
        return ep.scrub(f"{head}, {_status_error(answer)}")
    return head
