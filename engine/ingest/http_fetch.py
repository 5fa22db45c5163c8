"""One HTTP GET of a scrape endpoint: bounded in time and size, redirected only within its origin, its
credentials never shown.

- A whole-answer deadline: a watchdog shuts the socket down when it passes, however the server dribbles. A
  socket timeout alone restarts with every byte, so one byte a second would hang the scrape loop forever.
- The answer is read up to engine/limits.py MAX_SCRAPE_BYTES; a larger one is refused as it arrives.
- Redirects are followed only to the same scheme, host and port (MAX_REDIRECTS at most): one to elsewhere
  could hand the endpoint's credentials to another host or downgrade https to http, so it is an error.
- Credentials in the URL (http://user:pass@host:9400/metrics) become an HTTP basic Authorization header and
  are never shown: whatever is printed or stored uses `Endpoint.shown` (`http://user:***@host:9400/metrics`).
- Extra headers (`with_headers`: a Thanos/Mimir/Cortex tenant's `X-Scope-OrgID`, a bearer token) go on every
  request, redirects included. Names must be HTTP tokens and values one line; the headers the fetcher sets
  itself are refused, and an Authorization value is a secret like a password.
- `Fetcher.abort()` cuts every fetch in flight at once, so SIGTERM ends the loop while a server hangs.
- Nothing a server sends reaches an error as it was sent: a status names its code and the standard reason phrase
  (never the server's own phrase or body), a failed connection one of a few fixed words (the system's own text
  goes to the log), a redirect elsewhere only the origin it pointed to. What an API's error field says is
  passed through `shown_text` (short, control characters escaped) by the caller that reads it
  (engine/ingest/prometheus/source.py). An endpoint the operator could point anywhere would otherwise read
  back whatever answers there: a metadata service, an admin page on loopback (issue 27).
"""

import base64
import http
import http.client
import logging
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from engine import limits
from engine.errors import GoodputError

MAX_REDIRECTS = 5
REDIRECT_CODES = (301, 302, 303, 307, 308)
READ_BYTES = 64 * 1024
# Encodings a compressed answer may come in: engine/ingest/inflate.py reads them from the body's first bytes.
READABLE_ENCODINGS = ("", "identity", "gzip", "x-gzip", "deflate", "zstd")
_USERINFO = re.compile(r"(?<=//)([^/@:?#]*):[^/@?#]*@")
# RFC 9110 section 5.1: a field name is a token, 1*tchar.
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Headers http.client and the fetcher write themselves (framing, the origin, the identity encoding read here):
# a second value would contradict them, and a wrong Host or Content-Length can smuggle a request.
FETCHER_HEADERS = ("host", "content-length", "accept-encoding", "connection", "transfer-encoding")
# Headers whose values are credentials: scrubbed from every error like a password in the URL.
SECRET_HEADERS = ("authorization", "proxy-authorization")
# How much of a text a server chose (an API's error field) an error may show: a line, never a page.
MAX_SHOWN_CHARS = 200
_log = logging.getLogger(__name__)


def redact(text: str) -> str:
    """Every `//user:password@` in `text` as `//user:***@`."""
    return _USERINFO.sub(r"\1:***@", text)


def shown_text(text: str | bytes, limit: int = MAX_SHOWN_CHARS) -> str:
    """Text a server sent, safe to put in an error: one line of at most `limit` characters (then `…`), every
    control or otherwise unprintable character written as an escape (`\\x1b`, `\\u202e`), so nothing in it
    moves a terminal's cursor, starts a new log line or reorders what is shown. Markdown and HTML are the
    page's to escape (dashboard/text.py md), as for every other text."""
    if isinstance(text, bytes):
        text = text[: limit * 4].decode("utf-8", "replace")
    out = []
    for char in text[: limit + 1]:
        out.append(char if char.isprintable() else ascii(char)[1:-1])
    shown = "".join(out)
    return shown if len(shown) <= limit and len(text) <= limit else shown[:limit] + "…"


def status_phrase(status: int) -> str:
    """The standard reason phrase of an HTTP status (`Internal Server Error`); "" for a code without one. The
    server's own phrase is its text, never shown."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def failure_words(err: BaseException) -> str:
    """A failed connection in a few fixed words: the system's message (which may quote what a server sent, a
    certificate's names, a proxy's answer) goes to the log only."""
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, socket.gaierror):
        return "host name not found"
    if isinstance(err, ssl.SSLCertVerificationError):
        return "TLS certificate not trusted"
    if isinstance(err, ssl.SSLError):
        return "TLS failed"
    if isinstance(err, ConnectionResetError | BrokenPipeError):
        return "connection reset"
    if isinstance(err, http.client.HTTPException):
        return "not an HTTP answer"
    return "connection failed"


class Header(NamedTuple):
    """One extra request header, sent as given (its name and value checked by `with_headers`)."""

    name: str
    value: str


@dataclass(frozen=True)
class Endpoint:
    url: str  # without credentials: what is requested
    shown: str  # what is printed and stored
    host: str  # host[:port], the host name of series without a Hostname label
    authorization: str | None = field(default=None, repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)
    headers: tuple[Header, ...] = field(default=(), repr=False)  # sent on every request, redirects too

    def scrub(self, text: str) -> str:
        """`text` (an error from below) with this endpoint's password replaced, however it was spelled."""
        text = redact(text)
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def endpoint(url: str) -> Endpoint:
    """Check an http(s) URL and split its credentials off; a GoodputError shows it redacted."""
    shown = redact(url)
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise GoodputError(f"--scrape: {shown!r} is not a URL ({redact(str(err))})") from err
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GoodputError(f"--scrape: {shown!r} is not an http(s) URL")
    netloc = parts.netloc.rpartition("@")[2]
    plain = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    authorization, secrets = None, ()
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        authorization = f"Basic {token}"
        secrets = tuple(s for s in {parts.password or "", password, token} if len(s) >= 3)
    host = parts.hostname if port is None else f"{parts.hostname}:{port}"
    return Endpoint(plain, shown, host, authorization, secrets)


def with_headers(ep: Endpoint, headers: Mapping[str, str] | None, flag: str = "--scrape") -> Endpoint:
    """`ep` that also sends `headers` ({name: value}); a GoodputError naming `flag` and the header otherwise.

    An Authorization header replaces the URL's user:password and is a secret (never shown, scrubbed from every
    error); so is Proxy-Authorization. Other values are plain settings (a tenant id) and may be shown."""
    extra: list[Header] = []
    seen: set[str] = set()
    for name, value in (headers or {}).items():
        key = checked_header_name(name, flag)
        if key in seen:
            raise GoodputError(f"{flag}: header {name!r} is given twice (header names ignore case)")
        seen.add(key)
        text = checked_header_value(name, value, flag)
        if key == "authorization":
            secret = text.partition(" ")[2].strip() or text  # the token without its scheme, too
            ep = replace(ep, authorization=text, secrets=_secrets(ep, text, secret))
        elif key in SECRET_HEADERS:
            extra.append(Header(name, text))
            ep = replace(ep, secrets=_secrets(ep, text, text.partition(" ")[2].strip()))
        else:
            extra.append(Header(name, text))
    return replace(ep, headers=(*ep.headers, *extra))


def checked_header_name(name: object, flag: str) -> str:
    """The header's name in lower case, once it is an HTTP token the fetcher does not set itself."""
    if not isinstance(name, str) or not _TOKEN.match(name):
        raise GoodputError(
            f"{flag}: header name {name!r} is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)"
        )
    key = name.lower()
    if key in FETCHER_HEADERS:
        raise GoodputError(f"{flag}: header {name!r} is set by Goodput's HTTP client itself; leave it out")
    return key


def checked_header_value(name: str, value: object, flag: str) -> str:
    """The value without surrounding blanks (RFC 9110 5.5), once it is one line; the value is never echoed, since
    it may be a credential."""
    if not isinstance(value, str):
        raise GoodputError(f"{flag}: header {name!r}: the value must be text (got {type(value).__name__})")
    for char, what in (("\r", "a carriage return"), ("\n", "a line feed"), ("\0", "a NUL character")):
        if char in value:
            raise GoodputError(f"{flag}: header {name!r}: the value contains {what}; give it on one line")
    return value.strip(" \t")


def _secrets(ep: Endpoint, *more: str) -> tuple[str, ...]:
    # a secret shorter than 3 characters would scrub ordinary words out of every error
    return (*ep.secrets, *(s for s in more if len(s) >= 3 and s not in ep.secrets))


class HttpStatusError(GoodputError):
    """An answer other than 200 (or a redirect): its status, the standard reason phrase and, where the fetcher
    keeps it, the start of its body (an API such as Prometheus' says there what was wrong). The message names
    the status alone; the body is for a caller that knows the API's error shape, and is never shown whole."""

    def __init__(self, message: str, status: int, reason: str, body: bytes) -> None:
        super().__init__(message)
        self.status, self.reason, self.body = status, reason, body


class Fetcher:
    """GETs with a whole-answer deadline; `abort()` cuts every one in flight (and every later one).

    `accept` is the Accept header (exposition text for scrapes, JSON for an API); `error_body_bytes` how much of
    a non-200 answer's body HttpStatusError keeps; `failing` the words for a connection that fails."""

    def __init__(
        self,
        deadline_s: float,
        max_bytes: int | None = None,
        *,
        accept: str = "text/plain",
        error_body_bytes: int = 0,
        failing: str = "cannot scrape",
    ) -> None:
        self.deadline_s = deadline_s
        self.max_bytes = limits.MAX_SCRAPE_BYTES if max_bytes is None else max_bytes
        self.accept, self.error_body_bytes, self.failing = accept, error_body_bytes, failing
        self._lock = threading.Lock()
        self._open: set[_Watched] = set()
        self.aborted = False

    def abort(self) -> None:
        with self._lock:
            self.aborted = True
            watched = list(self._open)
        for one in watched:
            one.cut()

    def get(self, ep: Endpoint) -> bytes:
        """The body of a 200 answer, following same-origin redirects; a GoodputError naming `ep.shown`."""
        deadline = time.monotonic() + self.deadline_s
        url = ep.url
        for _ in range(MAX_REDIRECTS + 1):
            status, reason, location, body = self._once(ep, url, deadline)
            if status == 200:
                return body
            if status not in REDIRECT_CODES:
                phrase = status_phrase(status)
                raise HttpStatusError(f"{ep.shown}: HTTP {status} {phrase}".rstrip(), status, phrase, body)
            url = _same_origin(ep, url, location)
        raise GoodputError(f"{ep.shown}: more than {MAX_REDIRECTS} redirects")

    def _once(self, ep: Endpoint, url: str, deadline: float) -> tuple[int, str, str | None, bytes]:
        parts = urllib.parse.urlsplit(url)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._late(ep)
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=remaining, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=remaining)
        watched = _Watched(conn)
        timer = threading.Timer(remaining, watched.cut)
        timer.daemon = True
        with self._lock:
            if self.aborted:
                raise GoodputError(f"{ep.shown}: stopped")
            self._open.add(watched)
        timer.start()
        try:
            conn.connect()
            watched.hold(conn.sock)
            if watched.was_cut:  # cut while connecting, before there was a socket to shut
                raise OSError("connection cut")
            conn.request(
                "GET",
                urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, "")),
                headers=self._headers(ep),
            )
            response = conn.getresponse()
            if response.status in REDIRECT_CODES:
                return response.status, response.reason, response.getheader("Location"), b""
            if response.status != 200:
                kept = response.read(self.error_body_bytes) if self.error_body_bytes else b""
                return response.status, response.reason, None, kept
            body = self._body(ep, response)
            if watched.was_cut:  # an answer without a length ends when its socket is shut: it is cut short
                raise OSError("connection cut")
            return 200, response.reason, None, body
        except (OSError, http.client.HTTPException) as err:
            if self.aborted:
                raise GoodputError(f"{ep.shown}: stopped") from err
            if watched.was_cut or time.monotonic() >= deadline:
                raise self._late(ep) from err
            _log.info("%s: %s (%s)", ep.shown, self.failing, ep.scrub(f"{type(err).__name__}: {err}"))
            raise GoodputError(f"{ep.shown}: {self.failing} ({failure_words(err)})") from err
        finally:
            timer.cancel()
            with self._lock:
                self._open.discard(watched)
            watched.close()

    def _headers(self, ep: Endpoint) -> dict[str, str | bytes]:
        """What every request of `ep` sends: the fetcher's own headers, credentials, then the extra ones (an
        Accept given there replaces the fetcher's). Values go as UTF-8 bytes: http.client would refuse
        anything outside Latin-1 with an error that is no GoodputError."""
        headers: dict[str, str | bytes] = {"Accept": self.accept, "Accept-Encoding": "identity"}
        if ep.authorization:
            headers["Authorization"] = ep.authorization.encode("utf-8")
        for extra in ep.headers:
            headers = {k: v for k, v in headers.items() if k.lower() != extra.name.lower()}
            headers[extra.name] = extra.value.encode("utf-8")
        return headers

    def _body(self, ep: Endpoint, response: http.client.HTTPResponse) -> bytes:
        encoding = (response.getheader("Content-Encoding") or "").strip().lower()
        if encoding not in READABLE_ENCODINGS:
            raise GoodputError(
                f"{ep.shown}: answer in {shown_text(encoding, 40)!r} encoding, which Goodput does not read"
            )
        length = response.getheader("Content-Length") or ""
        if length.strip().isdigit() and int(length) > self.max_bytes:
            raise self._large(ep)
        chunks, total = [], 0
        while chunk := response.read1(READ_BYTES):
            total += len(chunk)
            if total > self.max_bytes:
                raise self._large(ep)
            chunks.append(chunk)
        return b"".join(chunks)

    def _late(self, ep: Endpoint) -> GoodputError:
        return GoodputError(f"{ep.shown}: no complete answer within {self.deadline_s:g} s")

    def _large(self, ep: Endpoint) -> GoodputError:
        return GoodputError(
            f"{ep.shown}: answer larger than {self.max_bytes:,} bytes, over Goodput's limit"
            " (engine/limits.py MAX_SCRAPE_BYTES)"
        )


def _same_origin(ep: Endpoint, url: str, location: str | None) -> str:
    """The redirect's target when it keeps scheme, host and port; a GoodputError otherwise."""
    if not location:
        raise GoodputError(f"{ep.shown}: a redirect without a Location")
    target = urllib.parse.urljoin(url, location.strip())
    here, there = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
    try:
        same = (
            there.scheme == here.scheme
            and (there.hostname or "") == (here.hostname or "")
            and _port(there) == _port(here)
        )
    except ValueError:
        same = False
    if not same:  # the target's origin alone: its path and query are the server's text
        origin = f"{there.scheme}://{there.netloc.rpartition('@')[2]}" if there.netloc else there.scheme
        raise GoodputError(
            f"{ep.shown}: redirected to {shown_text(origin, 100)!r}, another scheme, host or port;"
            " Goodput follows redirects only within the same origin"
        )
    # userinfo in the Location is dropped: the endpoint's own credentials stay the only ones sent
    return urllib.parse.urlunsplit(
        (there.scheme, there.netloc.rpartition("@")[2], there.path or "/", there.query, "")
    )


def _port(parts: urllib.parse.SplitResult) -> int:
    return parts.port or {"http": 80, "https": 443}[parts.scheme]


class _Watched:
    """A connection the deadline or an abort may cut: shutting its socket down wakes a blocked read at once."""

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.was_cut = False
        self.closed = False

    def hold(self, sock: socket.socket | None) -> None:
        """Keep the socket itself: the connection drops its reference once an answer without a length
        begins (the answer reads on through its own file object), and that is just when a cut is needed."""
        with self.lock:
            self.sock = sock

    def cut(self) -> None:
        with self.lock:
            self.was_cut = True
            if self.sock is not None and not self.closed:
                try:
                    self.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed by the other side

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.conn.close()
