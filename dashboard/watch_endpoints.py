"""What the dashboard may watch and query, as its administrator configured it: `[goodput.watch]` in the secrets
file (the one dashboard/auth.py reads), like Grafana's data sources.

    [goodput.watch.endpoints.prod]                  # the Data page offers "prod"
    url = "https://prometheus.example.com"
    bearer_token_file = "/etc/goodput/prom-token"   # or password_file, with the user in the url
    org_id = "team-a"                               # optional: sent as X-Scope-OrgID (Cortex, Mimir, Thanos)
    headers = { "X-Grafana-Org-Id" = "7" }          # optional: more headers, none that carries a credential

    [goodput.watch.slurm]                           # optional: the Data page may read Slurm
    conf = "/etc/slurm/slurm.conf"                  # optional: else Slurm's own default

Why a list and not a URL field: a watch runs on the dashboard's server, so a URL typed into the page is a
request the server makes on the operator's behalf: to the cloud's metadata address, to the identity provider or
the dashboard itself on loopback, to any private address (issue 27). Production Prometheus lives on private
networks, so refusing private addresses is no answer; the administrator names what may be read, each endpoint
with its own credentials, and a credential is only ever sent to the endpoint it belongs to. Pages of a watched
run use these entries too: the one whose URL is the run's lends its credentials (engine.ingest.watch.access).

The table is read again on every rerun (Streamlit re-reads the file when it changes); a mistake is a
GoodputError that names the key.
"""

import os
import stat
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from engine.errors import GoodputError
from engine.ingest.http_fetch import redact
from engine.ingest.watch import PrometheusAccess
from engine.ingest.watch import prometheus_access as access_of_run

WHERE = "[goodput.watch]"
ORG_ID_HEADER = "X-Scope-OrgID"  # the tenant of a Cortex, Mimir or Thanos query URL
ENDPOINT_KEYS = ("url", "bearer_token_file", "password_file", "org_id", "headers")
SLURM_KEYS = ("conf",)
SLURM_CONF_NAME = "slurm.conf"
EXAMPLE = """\
[goodput.watch.endpoints.prod]
url = "https://prometheus.example.com"
bearer_token_file = "/etc/goodput/prom-token"   # or password_file, with the user in the url
org_id = "team-a"                               # optional: X-Scope-OrgID

[goodput.watch.slurm]                           # lets the Data page read Slurm
conf = "/etc/slurm/slurm.conf"                  # optional: else Slurm's default
"""


@dataclass(frozen=True)
class WatchEndpoint:
    """One Prometheus the dashboard may read, with its credentials (files read when a query is made)."""

    name: str
    access: PrometheusAccess

    @property
    def shown(self) -> str:
        """`prod (https://prometheus.example.com)`: what the page lists."""
        return f"{self.name} ({self.access.shown_url})"


@dataclass(frozen=True)
class WatchConfig:
    """The endpoints by name, and whether (and which) Slurm the Data page may read."""

    endpoints: Mapping[str, WatchEndpoint] = field(default_factory=dict)
    slurm: bool = False
    slurm_conf: str | None = None  # None: Slurm's default configuration

    @property
    def empty(self) -> bool:
        return not self.endpoints and not self.slurm

    def endpoint(self, name: str) -> WatchEndpoint:
        """The endpoint named `name`; a GoodputError for any other name."""
        found = self.endpoints.get(name)
        if found is None:
            raise GoodputError(f"Prometheus: {name!r} is not an endpoint configured in {WHERE}.endpoints")
        return found

    def allowed(self) -> tuple[PrometheusAccess, ...]:
        """Every endpoint's access, for engine.ingest.watch.prometheus_access."""
        return tuple(e.access for e in self.endpoints.values())

    @classmethod
    def from_table(cls, table: object) -> "WatchConfig":
        """Parse and check `[goodput.watch]` (None: nothing configured); a GoodputError names the key."""
        if table is None:
            return cls()
        if not isinstance(table, Mapping):
            raise GoodputError(f"{WHERE}: must be a table, got {type(table).__name__}")
        _known(table, ("endpoints", "slurm"), WHERE)
        endpoints = table.get("endpoints", {})
        if not isinstance(endpoints, Mapping):
            raise GoodputError(f"{WHERE}.endpoints: must be a table of [{WHERE[1:-1]}.endpoints.NAME] tables")
        parsed = {str(name): _endpoint(str(name), value) for name, value in endpoints.items()}
        slurm = table.get("slurm")
        conf = None
        if slurm is not None:
            where = f"{WHERE[:-1]}.slurm]"
            if not isinstance(slurm, Mapping):
                raise GoodputError(f'{where}: must be a table (conf = "/etc/slurm/slurm.conf", or empty)')
            _known(slurm, SLURM_KEYS, where)
            if "conf" in slurm:
                conf = _absolute(slurm["conf"], f"{where}.conf")
                if Path(conf).name != SLURM_CONF_NAME:
                    raise GoodputError(f"{where}.conf: {conf} is not a file named {SLURM_CONF_NAME}")
        return cls(endpoints=parsed, slurm=slurm is not None, slurm_conf=conf)


def configured() -> WatchConfig:
    """The configuration in the secrets file as Streamlit holds it now; a GoodputError names what is wrong."""
    try:
        secrets = st.secrets.to_dict()
    except FileNotFoundError:
        return WatchConfig()
    goodput = secrets.get("goodput")
    return WatchConfig.from_table(goodput.get("watch") if isinstance(goodput, Mapping) else None)


def run_access(scenario: dict) -> PrometheusAccess | None:
    """How a page reaches a watched run's Prometheus: with the credentials of the configured endpoint whose URL
    is the run's, else without any (engine.ingest.watch.prometheus_access). A GoodputError for a broken
    configuration or run."""
    return access_of_run(scenario, configured().allowed())


def checked_slurm_conf(path: str) -> str:
    """`path` when it is a regular file itself, not a symbolic link (a link can be turned to any file the server
    reads, and Slurm's errors quote the lines of a file that is no slurm.conf); a GoodputError otherwise."""
    where = f"{WHERE[:-1]}.slurm].conf"
    try:
        info = os.lstat(path)
    except OSError:
        raise GoodputError(f"{where}: {path} does not exist or cannot be read") from None
    if stat.S_ISLNK(info.st_mode):
        raise GoodputError(f"{where}: {path} is a symbolic link; name the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise GoodputError(f"{where}: {path} is not a regular file")
    return path


def _endpoint(name: str, value: object) -> WatchEndpoint:
    where = f"{WHERE[:-1]}.endpoints.{name}]"
    if not name.strip():
        raise GoodputError(f"{where}: an endpoint needs a name")
    if not isinstance(value, Mapping):
        raise GoodputError(f'{where}: must be a table with url = "https://prometheus:9090"')
    _known(value, ENDPOINT_KEYS, where)
    url = value.get("url")
    if not isinstance(url, str) or not url.strip():
        raise GoodputError(f'{where}.url: give the Prometheus base URL, e.g. "https://prometheus:9090"')
    try:
        parts = urllib.parse.urlsplit(url.strip())
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError:
        raise GoodputError(f"{where}.url: {redact(url)!r} is not a URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise GoodputError(f"{where}.url: {redact(url)!r} is not an http(s) URL")
    if parts.password is not None:
        raise GoodputError(f"{where}.url: holds a password; put it in a file and name it with password_file")
    if parts.query or parts.fragment:
        raise GoodputError(f"{where}.url: {redact(url)!r} has a query or fragment; give the base URL")
    files = {
        key: _absolute(value[key], f"{where}.{key}") if key in value else None
        for key in ("bearer_token_file", "password_file")
    }
    headers = []
    org_id = value.get("org_id")
    if org_id is not None:
        if not isinstance(org_id, str) or not org_id.strip():
            raise GoodputError(f"{where}.org_id: must be the tenant's name, as text")
        headers.append((ORG_ID_HEADER, org_id.strip()))
    extra = value.get("headers", {})
    if not isinstance(extra, Mapping) or not all(isinstance(v, str) for v in extra.values()):
        raise GoodputError(f"{where}.headers: must be a table of header names to text values")
    headers += [(str(k), v) for k, v in extra.items()]
    try:
        access = PrometheusAccess(url.strip(), tuple(headers), endpoint=name, **files)
    except GoodputError as err:
        raise GoodputError(f"{where}: {err}") from None
    return WatchEndpoint(name, access)


def _absolute(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or not Path(value.strip()).is_absolute():
        raise GoodputError(f"{where}: must be an absolute path on the dashboard's server")
    return value.strip()


def _known(table: Mapping, keys: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in set(table) - set(keys))
    if unknown:
        raise GoodputError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(keys)})")
