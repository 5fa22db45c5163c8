"""Who may do what on the dashboard: Streamlit's OIDC login (`st.login`) and three roles.

- viewer: reads every page. Every logged-in user is a viewer.
- operator: imports files (upload, ingest, replay a trace) and deletes runs (the Data page).
- operator also carries out drains, resumes and requeues through Slurm (the Operations page), each recorded in the
  audit log under `identity()`.
- planner: starts simulations (the Planner's Run, Keep as run, Monte-Carlo and sweep; the Incidents page's
  replay with other settings).

Login is off on a loopback address (one person at their own machine: everyone may do everything, as before)
and required on any other address; `goodput dashboard --require-login` turns it on for loopback too. The
launcher (dashboard/serve.py) checks the configuration before the server starts and passes the decision to
the app in `GOODPUT_LOGIN`; the app itself also requires login whenever Streamlit listens beyond loopback,
however it was started (`streamlit run ... --server.address 0.0.0.0`, or no address at all, which listens on
every interface), and then refuses to show anything until login and TLS are configured.

Everything is configured in Streamlit's secrets file (`.streamlit/secrets.toml`, or `--secrets FILE`):

    [auth]                                  # Streamlit's own OIDC settings
    redirect_uri = "https://goodput.example.com/oauth2callback"
    cookie_secret = "64 random hex digits"
    client_id = "..."
    client_secret = "..."
    server_metadata_url = "https://idp.example.com/.well-known/openid-configuration"

    [goodput.roles]
    claim = "groups"                        # the ID-token claim that lists a user's groups (default "groups")
    [goodput.roles.operator]
    emails = ["ana@example.com"]            # matched without regard to case
    groups = ["gpu-oncall"]                 # matched exactly, against the claim's values
    [goodput.roles.planner]
    groups = ["capacity-planning"]

A role is granted by the user's email, only when the provider says it is verified (`email_verified` true, as a
boolean or the string "true"), or by one of their groups.
Roles are worked out on every rerun from the secrets as Streamlit holds them (it re-reads the file when it
changes), so removing someone from a list takes effect at once; group membership is what the provider said at
login.
"""

import functools
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import streamlit as st
from streamlit import runtime

from dashboard.logouts import LEDGER_FILE, LogoutLedger
from engine.act.command import who_acts
from engine.errors import GoodputError

LOGIN_ENV = "GOODPUT_LOGIN"  # "required" when the launcher turned login on; else decided by the address
REQUIRED = "required"
# Set to 1 by `goodput dashboard --behind-tls-proxy` (or by hand, for `streamlit run`): a proxy in front of the
# server terminates TLS, so plain HTTP here is not plain HTTP on the network.
TLS_PROXY_ENV = "GOODPUT_BEHIND_TLS_PROXY"
# Streamlit listens on every interface when no address is given (its default 0.0.0.0, or :: where IPv6 is on).
ALL_INTERFACES = "0.0.0.0"
DEFAULT_GROUPS_CLAIM = "groups"
# Streamlit signs its identity cookie with this; a short key is guessable (Streamlit warns under 14 bytes).
MIN_COOKIE_SECRET_CHARS = 32
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")


class NotAllowed(GoodputError):
    """An action this user's roles do not allow."""


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    PLANNER = "planner"


GRANTED_ROLES = (Role.OPERATOR, Role.PLANNER)  # the roles the configuration hands out; viewer is everyone's


@dataclass(frozen=True)
class Grant:
    """Who holds one role: emails (lower-cased) and group names."""

    emails: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RoleRules:
    """How a logged-in user's ID-token claims become roles ([goodput.roles] in the secrets file)."""

    claim: str = DEFAULT_GROUPS_CLAIM
    grants: Mapping[Role, Grant] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: object, where: str = "[goodput.roles]") -> "RoleRules":
        """Parse and check the table; a GoodputError names the key and what is wrong."""
        if table is None:
            return cls()
        if not isinstance(table, Mapping):
            raise GoodputError(f"{where}: must be a table, got {type(table).__name__}")
        unknown = sorted(set(table) - {"claim", *GRANTED_ROLES})
        if unknown:
            raise GoodputError(
                f"{where}: unknown key {unknown[0]!r} (known: claim, operator, planner; every "
                "logged-in user is a viewer)"
            )
        claim = table.get("claim", DEFAULT_GROUPS_CLAIM)
        if not isinstance(claim, str) or not claim:
            raise GoodputError(f"{where}.claim: must be the name of an ID-token claim, got {claim!r}")
        grants = {role: _grant(table[role], f"{where}.{role}") for role in GRANTED_ROLES if role in table}
        return cls(claim=claim, grants=grants)

    def roles_of(self, claims: Mapping[str, object]) -> frozenset[Role]:
        """The roles of a logged-in user with these ID-token claims: viewer, plus what the lists grant."""
        email = claims.get("email")
        verified = email_verified(claims.get("email_verified"))
        trusted_email = email.strip().lower() if isinstance(email, str) and verified else None
        groups = _claim_values(claims.get(self.claim))
        held = {Role.VIEWER}
        for role, grant in self.grants.items():
            if (trusted_email is not None and trusted_email in grant.emails) or groups & grant.groups:
                held.add(role)
        return frozenset(held)


def email_verified(value: object) -> bool:
    """Only a provider's explicit yes verifies an email: the boolean true, or the string "true" that some providers
    send. Absent, false, "false", "0", 1 and anything else do not (a string "false" is truthy in Python)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _grant(value: object, where: str) -> Grant:
    if not isinstance(value, Mapping):
        raise GoodputError(f"{where}: must be a table with emails = [...] and/or groups = [...]")
    unknown = sorted(set(value) - {"emails", "groups"})
    if unknown:
        raise GoodputError(f"{where}: unknown key {unknown[0]!r} (known: emails, groups)")
    lists = {}
    for key in ("emails", "groups"):
        items = value.get(key, [])
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i.strip() for i in items):
            raise GoodputError(f"{where}.{key}: must be a list of non-empty strings, got {items!r}")
        lists[key] = frozenset(i.strip().lower() if key == "emails" else i for i in items)
    return Grant(emails=lists["emails"], groups=lists["groups"])


def _claim_values(value: object) -> frozenset[str]:
    """A groups claim as a set: providers send a list of names, a few a single string."""
    if isinstance(value, str):
        return frozenset([value])
    if isinstance(value, list | tuple):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


# ----- the configuration, checked before the server starts -------------------------------------------------


@dataclass(frozen=True)
class LoginConfig:
    """A secrets file's login settings, checked: the provider to log in with and the role rules."""

    provider: str | None  # None: Streamlit's default provider (the keys directly under [auth])
    rules: RoleRules


def is_loopback(host: str) -> bool:
    """Whether a listen address only takes connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve to an outside address


def check_login_config(secrets: Mapping[str, object], source: str) -> LoginConfig:
    """Check that `secrets` (a parsed secrets file) configures an OIDC login Streamlit can use."""
    how = (
        f"add an [auth] table to {source} with redirect_uri, cookie_secret, client_id, client_secret and "
        "server_metadata_url (README, 'Login')"
    )
    auth = secrets.get("auth")
    if not isinstance(auth, Mapping):
        raise GoodputError(f"login is required but {source} has no [auth] table: {how}")
    for key in ("redirect_uri", "cookie_secret"):
        if not isinstance(auth.get(key), str) or not auth[key].strip():
            raise GoodputError(f"{source}: [auth].{key} is missing: {how}")
    if not auth["redirect_uri"].startswith(("https://", "http://")) or not auth["redirect_uri"].rstrip(
        "/"
    ).endswith("/oauth2callback"):
        raise GoodputError(
            f"{source}: [auth].redirect_uri must be the dashboard's address ending in "
            f"/oauth2callback, e.g. https://goodput.example.com/oauth2callback, got "
            f"{auth['redirect_uri']!r}"
        )
    if len(auth["cookie_secret"]) < MIN_COOKIE_SECRET_CHARS:
        raise GoodputError(
            f"{source}: [auth].cookie_secret has {len(auth['cookie_secret'])} characters, "
            f"fewer than {MIN_COOKIE_SECRET_CHARS}: make one with python -c 'import secrets; "
            "print(secrets.token_hex(32))'"
        )
    goodput = secrets.get("goodput", {})
    if not isinstance(goodput, Mapping):
        raise GoodputError(f"{source}: [goodput] must be a table")
    provider = goodput.get("login_provider")
    if provider is not None and not (isinstance(provider, str) and isinstance(auth.get(provider), Mapping)):
        raise GoodputError(f"{source}: [goodput].login_provider = {provider!r} names no [auth.NAME] table")
    section = auth[provider] if provider else auth
    where = f"[auth.{provider}]" if provider else "[auth]"
    for key in PROVIDER_KEYS:
        if not isinstance(section.get(key), str) or not section[key].strip():
            raise GoodputError(f"{source}: {where}.{key} is missing: {how}")
    return LoginConfig(provider=provider, rules=RoleRules.from_table(goodput.get("roles"), "[goodput.roles]"))


def check_redirect_is_https(secrets: Mapping[str, object], source: str) -> None:
    """Beyond loopback the provider must send the browser back over HTTPS: an http:// redirect address would
    carry the authorization code, and then the identity cookie, in the clear."""
    auth = secrets.get("auth")
    uri = auth.get("redirect_uri") if isinstance(auth, Mapping) else None
    if isinstance(uri, str) and not uri.startswith("https://"):
        raise GoodputError(
            f"{source}: [auth].redirect_uri {uri!r} is not https://: beyond loopback the dashboard is reached "
            "over TLS (README, 'Login')"
        )


def served_address() -> str:
    """The address Streamlit listens on in this process (every interface when none was given)."""
    address = st.get_option("server.address")
    return str(address).strip() if address else ALL_INTERFACES


def served_with_tls() -> bool:
    """Whether this server's connections are encrypted: Streamlit's own certificate, or a TLS proxy in front."""
    return bool(st.get_option("server.sslCertFile")) or os.environ.get(TLS_PROXY_ENV) == "1"


def login_required() -> bool:
    """Whether this server requires login: the launcher said so, or it listens beyond loopback (however started:
    the app does not trust its launcher to have checked). A process without Streamlit's runtime serves nothing
    (the app's file imported bare, as a multiprocessing worker re-imports its parent's main script): no address
    to judge, so only the launcher's word counts there."""
    if os.environ.get(LOGIN_ENV) == REQUIRED:
        return True
    return runtime.exists() and not is_loopback(served_address())


def configuration_problem() -> str | None:
    """Why a server that requires login cannot serve yet (no usable [auth], plain HTTP beyond loopback), or None.

    The launcher refuses to start in these cases; this catches a server started some other way."""
    if not login_required():
        return None
    try:
        check_login_config(_secrets(), "the secrets file")
        if not is_loopback(served_address()):
            if not served_with_tls():
                raise GoodputError(
                    f"this server listens on {served_address()}, beyond loopback, over plain HTTP: give it a "
                    f"certificate (server.sslCertFile, server.sslKeyFile) or, behind a TLS proxy, set "
                    f"{TLS_PROXY_ENV}=1"
                )
            check_redirect_is_https(_secrets(), "the secrets file")
    except GoodputError as err:
        if is_loopback(served_address()):
            return str(err)
        return f"it listens on {served_address()}, beyond loopback, where login and TLS are required: {err}"
    return None


@functools.cache
def _ledger_at(path: str) -> LogoutLedger:
    return LogoutLedger(Path(path))


def logout_ledger() -> LogoutLedger:
    """The logouts of this store's dashboards (dashboard/logouts.py): beside the runs, shared by its servers."""
    from dashboard.state import (
        store,
    )  # here, not at the top: the launcher imports this module without Streamlit's runtime

    return _ledger_at(str(store().root / LEDGER_FILE))


# ----- in the app -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    """What the person in this session may do."""

    login_required: bool
    logged_in: bool
    who: str | None  # a name to show (as text): name, else email, else subject
    roles: frozenset[Role]

    def can(self, role: Role) -> bool:
        return not self.login_required or role in self.roles


def current() -> Access:
    """This session's access: everything when login is off, else what the user's claims grant."""
    if not login_required():
        return Access(login_required=False, logged_in=False, who=None, roles=frozenset(Role))
    claims = st.user.to_dict()
    if not claims.get("is_logged_in") or logout_ledger().revoked(claims):
        # a cookie from before a logout of this identity is no login (dashboard/logouts.py)
        return Access(login_required=True, logged_in=False, who=None, roles=frozenset())
    who = next((str(claims[k]) for k in ("name", "email", "sub") if claims.get(k)), None)
    return Access(login_required=True, logged_in=True, who=who, roles=_rules().roles_of(claims))


def can(role: Role) -> bool:
    return current().can(role)


def identity() -> str:
    """Who acts, as the audit log records it: the login's verified email, else its subject (the provider's id),
    else, with login off (one person at their own machine), the operating-system user and host."""
    if login_required():
        claims = st.user.to_dict()
        verified = claims.get("email_verified") in (True, "true")
        for key, ok in (("email", verified), ("sub", True)):
            if claims.get(key) and ok:
                return str(claims[key])
        raise NotAllowed("this login has no verified email or subject to record actions under")
    return f"{who_acts()} (login off)"


def require(role: Role) -> None:
    """Refuse an action outright (a callback reached without its button, a stale session): the UI hides what a
    role may not do, and this keeps the rule where the work starts as well."""
    if not can(role):
        raise NotAllowed(f"this needs the {role} role, which this login does not have")


def missing(role: Role, what: str) -> None:
    """Say, where the controls would be, why they are not."""
    st.caption(f"{what} needs the **{role}** role; ask whoever runs this dashboard to grant it.")


def _secrets() -> Mapping[str, object]:
    try:
        return st.secrets.to_dict()
    except FileNotFoundError:
        return {}


def _goodput_table() -> Mapping[str, object]:
    table = _secrets().get("goodput")
    return table if isinstance(table, Mapping) else {}


def _rules() -> RoleRules:
    """The role rules as configured now; a table broken since start-up grants nothing beyond viewer."""
    try:
        return RoleRules.from_table(_goodput_table().get("roles"))
    except GoodputError:
        return RoleRules()


def login_screen() -> None:
    """All a logged-out visitor sees."""
    provider = _goodput_table().get("login_provider")
    st.title("Goodput")
    st.write("Log in to see the cluster. Your organisation's sign-in page opens, then brings you back here.")
    st.button(
        "Log in",
        type="primary",
        icon=":material/login:",
        key="auth_login",
        on_click=st.login,
        args=(provider,) if provider else (),
    )


def sidebar_user(access: Access) -> None:
    """Who is logged in (as text: a name is data), their roles, and the way out."""
    if not access.logged_in:
        return
    st.sidebar.text(f"{access.who or 'signed in'} · {', '.join(r for r in Role if r in access.roles)}")
    st.sidebar.button("Log out", icon=":material/logout:", key="auth_logout", on_click=log_out)


def log_out() -> None:
    """Record the logout on the server first (every cookie of this identity issued until now stops working),
    then let Streamlit clear this browser's cookie and, where the provider has one, end its session there."""
    logout_ledger().record(st.user.to_dict())
    st.logout()
