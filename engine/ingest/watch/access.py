"""How to reach a watched Prometheus, credentials included, in a form a run can store and a page can use.

    access = PrometheusAccess("http://admin@prom:9090", headers=(("X-Scope-OrgID", "team-a"),),
                              password_file="/etc/goodput/prom-password")
    source = access.source()            # reads the password file now: a rotated secret works without a restart
    scenario["prometheus_access"] = access.to_scenario()   # the URL, the shown headers, the files' paths
    prometheus_access(run.scenario, allowed)   # how a page of the run reaches it: credentials from `allowed` only

A secret is never stored, only where to read it: a bearer token file (as Prometheus' own
`authorization.credentials_file`) or a password file for basic auth (the user name stays in the URL). Headers
given in the clear (a tenant's X-Scope-OrgID for Cortex, Mimir or Thanos) are stored and shown, so a header that
carries a credential (Authorization, Cookie) is refused: its value belongs in a file. A password written in the
URL still works for the watch that was given it, but is stored as `***`.

A page never reads a credential because a run file names it: a run file says where to send (its URL), so
trusting its file paths would send the server's token to whatever URL a run file holds. A page's credentials
come only from the endpoints the dashboard's administrator configured (dashboard/watch_endpoints.py), from the
one whose URL is the run's exactly; any other run's Prometheus is asked without credentials, or, where its watch
used some, not at all (the page says how to configure it).
"""

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.ingest.http_fetch import checked_header_name, checked_header_value, redact

if TYPE_CHECKING:
    from engine.ingest.prometheus import PrometheusSource

# A token or password file is read whole each time a source is made. Bearer tokens (JWTs of OIDC providers
# included) are under 4 KiB; a larger file is not a credential, and it is refused before it is read whole.
MAX_CREDENTIAL_BYTES = 16 * 1024
# Headers whose value is a credential: they would be stored and shown in the run, so their place is a file.
SECRET_HEADERS = ("authorization", "proxy-authorization", "cookie")
# What a password written in the URL becomes in the stored URL (engine.ingest.http_fetch.redact).
REDACTED = "***"
_VISIBLE = re.compile(r"^[\x21-\x7e]+$")  # a token or password: printable ASCII, no space, no line break


@dataclass(frozen=True)
class PrometheusAccess:
    """Where a Prometheus is and how to authenticate to it, without holding a secret that would be stored."""

    url: str  # base URL; may hold a user name, never a password (one given here works, but is never stored)
    headers: tuple[tuple[str, str], ...] = ()  # shown headers, e.g. (("X-Scope-OrgID", "team-a"),)
    bearer_token_file: str | None = None  # as Prometheus' own `authorization.credentials_file`
    password_file: str | None = None  # basic auth: the user from the URL, password from file
    endpoint: str | None = None  # the name of the configured endpoint this is (the Data page's watches)
    # set on a run's access with its credentials taken away (prometheus_access): its source() says why
    unconfigured_credentials: bool = False

    def __post_init__(self) -> None:
        parts = _split(self.url)
        for name, value in self.headers:
            _check_header(name, value)
        if self.bearer_token_file is not None and self.password_file is not None:
            raise GoodputError(
                "--prometheus-bearer-token-file and --prometheus-password-file: give one way to authenticate"
            )
        if self.password_file is not None:
            if not parts.username:
                raise GoodputError(
                    f"--prometheus-password-file: {redact(self.url)!r} names no user: write it in the URL"
                    " (http://user@host:9090)"
                )
            if parts.password is not None:
                raise GoodputError(
                    f"--prometheus-password-file: {redact(self.url)!r} already holds a password; give one of them"
                )
        if self.bearer_token_file is not None and parts.password is not None:
            raise GoodputError(
                f"--prometheus-bearer-token-file: {redact(self.url)!r} holds a password; give one way to"
                " authenticate"
            )

    @property
    def shown_url(self) -> str:
        """The URL as printed: a password replaced by ***."""
        return redact(self.url)

    @property
    def credentials_not_stored(self) -> bool:
        """True for an access read back from a run whose watch was given its password in the URL."""
        return _split(self.url).password == REDACTED

    def source(self, timeout_s: float = 10.0) -> "PrometheusSource":
        """A PrometheusSource with the credentials read from their files now (a rotated token is picked up by
        the next source made). A GoodputError names a file that cannot be read or holds no credential."""
        from engine.ingest.prometheus import PrometheusSource

        if self.unconfigured_credentials:
            raise GoodputError(
                f"Prometheus ({self.shown_url}): the run's watch used credentials, and pages send credentials only"
                " to an endpoint configured in the dashboard's secrets file: add [goodput.watch.endpoints.NAME]"
                " with this url and its bearer_token_file or password_file (README, 'Watch a real cluster')"
            )
        if self.credentials_not_stored:
            raise GoodputError(
                f"Prometheus ({self.shown_url}): the watch was given its password in the URL, which Goodput does"
                " not store; configure the endpoint with its password_file in the dashboard's secrets file"
            )
        headers = dict(self.headers)
        url = self.url
        if self.bearer_token_file is not None:
            token = read_credential(
                self.bearer_token_file, "--prometheus-bearer-token-file", "a bearer token"
            )
            headers["Authorization"] = f"Bearer {token}"
        if self.password_file is not None:
            password = read_credential(self.password_file, "--prometheus-password-file", "a password")
            url = _with_password(url, password)
        return PrometheusSource(url, timeout_s, headers=headers)

    def to_scenario(self) -> dict:
        """What a run stores: the URL without its password, the shown headers, the files' paths (and the configured
        endpoint's name, for a watch started on the Data page); no secret."""
        stored = {
            "url": _without_password(self.url),
            "headers": [[name, value] for name, value in self.headers],
            "bearer_token_file": self.bearer_token_file,
            "password_file": self.password_file,
        }
        return stored | ({"endpoint": self.endpoint} if self.endpoint is not None else {})

    @property
    def needs_credentials(self) -> bool:
        """Whether this access authenticates (a token or password file, or a password in the URL)."""
        return (
            self.bearer_token_file is not None
            or self.password_file is not None
            or _split(self.url).password is not None
        )

    def anonymous(self) -> "PrometheusAccess":
        """This access without credentials: the URL without user or password, the shown headers, no files;
        marked so that its source() refuses when credentials were used (Prometheus would answer 401)."""
        parts = _split(self.url)
        url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        return PrometheusAccess(url, self.headers, unconfigured_credentials=self.needs_credentials)

    @classmethod
    def from_scenario(cls, scenario: dict) -> "PrometheusAccess | None":
        """The access a watched run stored ("prometheus_access"); a run watched before credentials were stored
        has only the base URL ("prometheus"); None for a run of no Prometheus."""
        stored = scenario.get("prometheus_access")
        if stored is None:
            url = scenario.get("prometheus")
            return cls(url) if isinstance(url, str) and url else None
        if not isinstance(stored, dict) or not isinstance(stored.get("url"), str):
            raise GoodputError("the run's scenario key prometheus_access is not an object with a url")
        headers = stored.get("headers") or []
        if not isinstance(headers, list) or not all(
            isinstance(h, list) and len(h) == 2 and all(isinstance(x, str) for x in h) for h in headers
        ):
            raise GoodputError(
                "the run's scenario key prometheus_access.headers is not a list of [name, value]"
            )
        files = {key: stored.get(key) for key in ("bearer_token_file", "password_file", "endpoint")}
        for key, value in files.items():
            if value is not None and not isinstance(value, str):
                raise GoodputError(f"the run's scenario key prometheus_access.{key} is not a text")
        return cls(stored["url"], tuple((name, value) for name, value in headers), **files)


def prometheus_access(
    run_scenario: dict, allowed: Iterable[PrometheusAccess] = ()
) -> PrometheusAccess | None:
    """How a page reaches the Prometheus of a watched run (None: the run reads none).

    `allowed` are the endpoints the dashboard's administrator configured, each with its credentials. The one
    whose URL is the run's (exactly, a trailing slash aside) is used as configured; otherwise the run's URL is
    asked without credentials, and one whose watch used credentials is not asked at all (its source() says
    so): a credential file named in a run file is never read, so no run file can send one elsewhere."""
    stored = PrometheusAccess.from_scenario(run_scenario)
    if stored is None:
        return None
    for access in allowed:
        if same_url(access.url, stored.url):
            return access
    return stored.anonymous()


def same_url(a: str, b: str) -> bool:
    """Whether two base URLs are the same, user included: only a trailing slash and surrounding blanks may
    differ (a password in either compares as written; a stored one is `***`, so it never matches)."""
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def credential_file(path: str | None) -> str | None:
    """A credential file's path as a run stores it: absolute (the dashboard runs elsewhere), links kept as
    given, since a mounted secret (Kubernetes' `..data` link) is rotated by moving its link."""
    return None if path is None else str(Path(path).expanduser().absolute())


def parse_header(text: str) -> tuple[str, str]:
    """`--prometheus-header 'X-Scope-OrgID: team-a'` as (name, value)."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise GoodputError(f"--prometheus-header: {text!r} is not 'Name: value'")
    name, value = name.strip(), value.strip()
    _check_header(name, value)
    return name, value


def read_credential(path: str, flag: str, what: str) -> str:
    """The credential in `path`, surrounding whitespace trimmed (as Prometheus reads its credentials_file);
    errors name the flag and the file, never its content."""
    data = read_bounded(path, what, limit=MAX_CREDENTIAL_BYTES, source=f"{flag} {path}")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise GoodputError(
            f"{flag} {path}: is not UTF-8 text, so it holds no {what.partition(' ')[2]}"
        ) from None
    if not text:
        raise GoodputError(f"{flag} {path}: is empty")
    if not _VISIBLE.match(text):
        raise GoodputError(
            f"{flag} {path}: holds spaces, line breaks or characters outside printable ASCII; it must hold"
            f" {what} alone"
        )
    return text


def _check_header(name: str, value: str) -> None:
    """A header the fetcher can send (engine.ingest.http_fetch's checks) that carries no credential."""
    checked_header_name(name, "--prometheus-header")
    checked_header_value(name, value, "--prometheus-header")
    if name.lower() in SECRET_HEADERS:
        raise GoodputError(
            f"--prometheus-header: {name} carries a credential, and headers are stored with the run and shown;"
            " give it with --prometheus-bearer-token-file or --prometheus-password-file"
        )


def _split(url: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError as err:
        raise GoodputError(f"--prometheus: {redact(url)!r} is not a URL ({redact(str(err))})") from None
    return parts


def _netloc(parts: urllib.parse.SplitResult, password: str | None) -> str:
    host = parts.netloc.rpartition("@")[2]
    if parts.username is None:
        return host
    user = parts.netloc.rpartition("@")[0].partition(":")[0]  # as written (percent-encoded)
    return f"{user}:{password}@{host}" if password is not None else f"{user}@{host}"


def _without_password(url: str) -> str:
    parts = _split(url)
    if parts.password is None:
        return url.strip()
    return urllib.parse.urlunsplit(parts._replace(netloc=_netloc(parts, REDACTED)))


def _with_password(url: str, password: str) -> str:
    parts = _split(url)
    netloc = _netloc(parts, urllib.parse.quote(password, safe=""))
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
