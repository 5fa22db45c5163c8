"""A dashboard that requires login, for browser tests: a real OpenID provider (oidc-provider-mock, from PyPI) on
127.0.0.1, a secrets file pointing at it, and `goodput dashboard` over HTTP or HTTPS (a self-signed certificate
made here). Debian's chromium drives it (`log_in`)."""

import datetime
import json
import ssl
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serving import (
    CHROMIUM,
    GOODPUT,
    START_TIMEOUT_S,
    free_port,
    start,
    stop,
    wait_until,
)

TIMEOUT_MS = 60_000
# The provider's predefined users: its authorization form has one button per subject. Olga's role comes from
# her email, which counts only because the provider says it is verified.
USERS = {
    "viewer": {"sub": "vic", "email": "vic@example.com", "name": "Vic Viewer"},
    "operator": {"sub": "olga", "email": "OLGA@example.com", "email_verified": True, "name": "Olga Operator"},
    "planner": {"sub": "pat", "email": "pat@example.com", "name": "Pat Planner", "groups": ["capacity"]},
}


@dataclass
class LoginSite:
    url: str
    store: Path
    processes: list


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    import ipaddress

    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def wait_for_tls_health(url: str, server, log: Path) -> None:
    """wait_until for an HTTPS server with a self-signed certificate."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"dashboard exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2, context=context) as answer:  # noqa: S310
                if b"ok" in answer.read():
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"{url} did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def start_login_site(tmp: Path, store: Path, tls: bool = False) -> LoginSite:
    """The provider and a dashboard requiring login on 127.0.0.1 (HTTPS with `tls`); stop with stop_login_site."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    idp_port, port = free_port(), free_port()
    idp_url, url = f"http://127.0.0.1:{idp_port}", f"http{'s' if tls else ''}://127.0.0.1:{port}"
    users = [a for claims in USERS.values() for a in ("--user-claims", json.dumps(claims))]
    idp = start(
        [sys.executable, "-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", str(idp_port), *users],
        tmp / "idp.log",
    )
    site = LoginSite(url=url, store=store, processes=[idp])
    secrets = tmp / "secrets.toml"
    secrets.write_text(f"""
[auth]
redirect_uri = "{url}/oauth2callback"
cookie_secret = "{"5e" * 32}"
client_id = "goodput-test"
client_secret = "goodput-test-secret"
server_metadata_url = "{idp_url}/.well-known/openid-configuration"

[goodput.roles.operator]
emails = ["olga@example.com"]
[goodput.roles.planner]
groups = ["capacity"]
""")
    try:
        wait_until(f"{idp_url}/.well-known/openid-configuration", idp, tmp / "idp.log", expect=b"issuer")
        flags = ["--require-login", "--secrets", str(secrets), "--store", str(store), "--port", str(port)]
        if tls:
            cert, key = self_signed_certificate(tmp)
            flags += ["--tls-cert", str(cert), "--tls-key", str(key)]
        dashboard = start(
            [str(GOODPUT), "dashboard", *flags],
            tmp / "dashboard.log",
            env={"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"},
        )
        site.processes.append(dashboard)
        if tls:
            wait_for_tls_health(url, dashboard, tmp / "dashboard.log")
        else:
            wait_until(f"{url}/_stcore/health", dashboard, tmp / "dashboard.log", expect=b"ok")
    except BaseException:
        stop_login_site(site)
        raise
    return site


def stop_login_site(site: LoginSite) -> None:
    for process in reversed(site.processes):
        stop(process)


def log_in(page, url: str, role: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    page.get_by_role("button", name="Log in").click(timeout=TIMEOUT_MS)
    # the provider's authorization form: one button per predefined user
    page.get_by_role("button", name=USERS[role]["sub"], exact=True).click(timeout=TIMEOUT_MS)
    expect(page.get_by_text(f"{USERS[role]['name']} ·")).to_be_visible(timeout=TIMEOUT_MS)
