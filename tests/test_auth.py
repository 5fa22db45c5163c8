"""Login and roles (dashboard/auth.py), the launcher's decisions and headers (dashboard/serve.py), and the
refusal to serve an open dashboard on a network address (`goodput dashboard`, the Dockerfile's command).

The browser half, against a real OpenID provider, is tests/test_auth_browser.py.
"""

import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard import auth
from dashboard.auth import Grant, LoginConfig, Role, RoleRules
from dashboard.serve import decide_login, read_secrets, secrets_files, with_security_headers
from engine.errors import GoodputError
from tests.serving import GOODPUT, ROOT, free_port, start, stop, wait_until

SECRET = "0123456789abcdef" * 4

RULES = RoleRules(
    grants={
        Role.OPERATOR: Grant(emails=frozenset({"ops@example.com"}), groups=frozenset({"oncall"})),
        Role.PLANNER: Grant(groups=frozenset({"capacity"})),
    }
)


def valid_secrets(**goodput) -> dict:
    return {
        "auth": {
            "redirect_uri": "https://goodput.example.com/oauth2callback",
            "cookie_secret": SECRET,
            "client_id": "goodput",
            "client_secret": "s3cret",
            "server_metadata_url": "https://idp.example.com/.well-known/openid-configuration",
        },
        "goodput": goodput,
    }


# ----- role rules ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "roles"),
    [
        ({"email": "someone@example.com", "email_verified": True}, {Role.VIEWER}),
        ({"email": "ops@example.com", "email_verified": True}, {Role.VIEWER, Role.OPERATOR}),
        # emails compare without case
        ({"email": " OPS@Example.COM ", "email_verified": True}, {Role.VIEWER, Role.OPERATOR}),
        ({"email": "ops@example.com", "email_verified": False}, {Role.VIEWER}),  # unverified: grants nothing
        # only a boolean true or the string "true" verifies (issue 27: "false" as a string granted operator)
        ({"email": "ops@example.com", "email_verified": "true"}, {Role.VIEWER, Role.OPERATOR}),
        ({"email": "ops@example.com", "email_verified": " TRUE "}, {Role.VIEWER, Role.OPERATOR}),
        ({"email": "ops@example.com", "email_verified": "false"}, {Role.VIEWER}),
        ({"email": "ops@example.com", "email_verified": "False"}, {Role.VIEWER}),
        ({"email": "ops@example.com", "email_verified": 1}, {Role.VIEWER}),
        ({"email": "ops@example.com", "email_verified": "yes"}, {Role.VIEWER}),
        ({"email": "ops@example.com", "email_verified": None}, {Role.VIEWER}),
        ({"email": "ops@example.com"}, {Role.VIEWER}),  # the provider did not say: not verified
        ({"groups": ["capacity"]}, {Role.VIEWER, Role.PLANNER}),
        ({"groups": "capacity"}, {Role.VIEWER, Role.PLANNER}),  # a single group as a string
        ({"groups": ["Capacity"]}, {Role.VIEWER}),  # group names are exact
        ({"groups": ["oncall", "capacity"], "email": "x@example.com"}, set(Role)),
        ({"email_verified": False, "groups": ["oncall"]}, {Role.VIEWER, Role.OPERATOR}),
        ({"groups": [3, None, {"a": 1}]}, {Role.VIEWER}),  # junk in the claim is no group
        ({}, {Role.VIEWER}),
    ],
)
def test_roles_of_claims(claims, roles):
    assert RULES.roles_of(claims) == roles


def test_the_groups_claim_is_configurable():
    rules = RoleRules.from_table({"claim": "roles", "planner": {"groups": ["plan"]}})
    assert rules.roles_of({"roles": ["plan"]}) == {Role.VIEWER, Role.PLANNER}
    assert rules.roles_of({"groups": ["plan"]}) == {Role.VIEWER}


def test_role_table_parses_exactly():
    rules = RoleRules.from_table({"operator": {"emails": ["A@x.org"], "groups": ["g"]}})
    expected = {Role.OPERATOR: Grant(frozenset({"a@x.org"}), frozenset({"g"}))}
    assert rules == RoleRules(claim="groups", grants=expected)
    assert RoleRules.from_table(None) == RoleRules()


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"viewer": {"emails": ["a@x.org"]}}, "unknown key 'viewer'"),
        ({"admin": {}}, "unknown key 'admin'"),
        ({"claim": ""}, "[goodput.roles].claim"),
        ({"operator": ["a@x.org"]}, "[goodput.roles].operator: must be a table"),
        ({"operator": {"emails": "a@x.org"}}, "[goodput.roles].operator.emails: must be a list"),
        ({"planner": {"groups": [""]}}, "[goodput.roles].planner.groups"),
        ({"planner": {"users": []}}, "unknown key 'users'"),
        ("operators", "must be a table"),
    ],
)
def test_bad_role_tables_are_named(table, words):
    with pytest.raises(GoodputError) as err:
        RoleRules.from_table(table)
    assert words in str(err.value)


names = st.sampled_from(["ops@example.com", "a@x.org", "oncall", "capacity", "x", ""])
claims_strategy = st.fixed_dictionaries(
    {},
    optional={
        "email": st.one_of(names, st.integers(), st.none()),
        "email_verified": st.one_of(st.booleans(), st.none(), st.text(max_size=3)),
        "groups": st.one_of(names, st.lists(st.one_of(names, st.integers()), max_size=4), st.none()),
    },
)


@given(claims_strategy, st.lists(names, max_size=3))
def test_everyone_is_a_viewer_and_more_groups_never_take_a_role_away(claims, extra):
    roles = RULES.roles_of(claims)
    assert Role.VIEWER in roles and roles <= set(Role)
    groups = claims.get("groups")
    more = [*(groups if isinstance(groups, list) else [groups] if isinstance(groups, str) else []), *extra]
    assert roles <= RULES.roles_of({**claims, "groups": more})


@given(claims_strategy)
def test_without_rules_a_logged_in_user_is_only_a_viewer(claims):
    assert RoleRules().roles_of(claims) == {Role.VIEWER}


table_keys = st.sampled_from(["claim", "operator", "planner", "emails", "groups", "x"])
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(table_keys, inner, max_size=4)),
    max_leaves=12,
)


@given(json_values)
def test_any_role_table_parses_or_is_refused_with_a_goodput_error(table):
    try:
        rules = RoleRules.from_table(table)
    except GoodputError as err:
        assert "[goodput.roles]" in str(err)
    else:
        assert set(rules.grants) <= {Role.OPERATOR, Role.PLANNER}


def test_access_without_login_can_do_everything_and_with_login_only_its_roles():
    assert all(auth.Access(False, False, None, frozenset()).can(r) for r in Role)
    viewer = auth.Access(True, True, "Vic", frozenset({Role.VIEWER}))
    assert viewer.can(Role.VIEWER) and not viewer.can(Role.OPERATOR) and not viewer.can(Role.PLANNER)
    assert not auth.Access(True, False, None, frozenset()).can(Role.VIEWER)


# ----- the login configuration --------------------------------------------------------------------------


def test_a_complete_configuration_passes():
    assert auth.check_login_config(valid_secrets(), "s.toml") == LoginConfig(provider=None, rules=RoleRules())
    named = valid_secrets(login_provider="okta", roles={"planner": {"groups": ["p"]}})
    named["auth"] = {k: v for k, v in named["auth"].items() if k in ("redirect_uri", "cookie_secret")}
    named["auth"]["okta"] = {"client_id": "c", "client_secret": "s", "server_metadata_url": "https://o/.wk"}
    checked = auth.check_login_config(named, "s.toml")
    assert checked.provider == "okta" and checked.rules.grants[Role.PLANNER].groups == {"p"}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda s: s.pop("auth"), "has no [auth] table"),
        (lambda s: s["auth"].pop("redirect_uri"), "[auth].redirect_uri is missing"),
        (lambda s: s["auth"].pop("cookie_secret"), "[auth].cookie_secret is missing"),
        (lambda s: s["auth"].pop("client_id"), "[auth].client_id is missing"),
        (lambda s: s["auth"].pop("client_secret"), "[auth].client_secret is missing"),
        (lambda s: s["auth"].pop("server_metadata_url"), "[auth].server_metadata_url is missing"),
        (lambda s: s["auth"].update(client_id="  "), "[auth].client_id is missing"),
        (lambda s: s["auth"].update(cookie_secret="short"), "has 5 characters, fewer than 32"),
        (
            lambda s: s["auth"].update(redirect_uri="https://goodput.example.com/"),
            "ending in /oauth2callback",
        ),
        (lambda s: s["auth"].update(redirect_uri="goodput/oauth2callback"), "ending in /oauth2callback"),
        (lambda s: s.update(goodput={"login_provider": "okta"}), "names no [auth.NAME] table"),
        (lambda s: s.update(goodput={"roles": {"viewer": {}}}), "unknown key 'viewer'"),
        (lambda s: s.update(goodput="x"), "[goodput] must be a table"),
    ],
)
def test_an_incomplete_configuration_is_named(change, words):
    secrets = valid_secrets()
    change(secrets)
    with pytest.raises(GoodputError) as err:
        auth.check_login_config(secrets, "s.toml")
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("goodput.example.com", False),
        ("", False),
    ],
)
def test_loopback_addresses(host, loopback):
    assert auth.is_loopback(host) is loopback


def test_login_is_off_on_loopback_and_checked_elsewhere(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert decide_login("127.0.0.1", False, [empty]) is None
    with pytest.raises(GoodputError, match=r"login is required on --host 0\.0\.0\.0 \(not a loopback"):
        decide_login("0.0.0.0", False, [empty])  # noqa: S104 (the address under test)
    with pytest.raises(GoodputError, match="has no \\[auth\\] table"):
        decide_login("127.0.0.1", True, [empty])
    good = tmp_path / "good.toml"
    good.write_text(toml(valid_secrets()))
    assert decide_login("10.1.2.3", False, [good], tls=True) == LoginConfig(provider=None, rules=RoleRules())
    assert decide_login("127.0.0.1", True, [good]) == LoginConfig(provider=None, rules=RoleRules())


def test_beyond_loopback_the_dashboard_speaks_tls_and_redirects_to_https(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text(toml(valid_secrets()))
    with pytest.raises(GoodputError, match=r"plain HTTP.*--tls-cert FILE --tls-key FILE.*--behind-tls-proxy"):
        decide_login("10.1.2.3", False, [good])  # login configured, but no TLS: refused
    plain = valid_secrets()
    plain["auth"]["redirect_uri"] = "http://goodput.example.com/oauth2callback"
    good.write_text(toml(plain))
    with pytest.raises(
        GoodputError, match=r"redirect_uri 'http://goodput\.example\.com/oauth2callback' is not https"
    ):
        decide_login("10.1.2.3", False, [good], tls=True)
    # on loopback (login asked for with --require-login) an http:// address is the only one there is
    assert decide_login("127.0.0.1", True, [good]) is not None


def test_tls_files_come_in_pairs_and_exist(tmp_path):
    from dashboard.serve import check_tls_files

    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("y")
    assert check_tls_files(None, None) is False
    assert check_tls_files(str(cert), str(key)) is True
    with pytest.raises(GoodputError, match="give both"):
        check_tls_files(str(cert), None)
    with pytest.raises(GoodputError, match="--tls-key .*absent.pem: not found"):
        check_tls_files(str(cert), str(tmp_path / "absent.pem"))


def test_over_tls_every_cookie_is_secure():
    from dashboard.serve import with_secure_cookies

    headers = [
        (b"set-cookie", b"_streamlit_user=abc; HttpOnly; Max-Age=2592000; Path=/; SameSite=lax"),
        (b"Set-Cookie", b"_streamlit_xsrf=2|x; Path=/; Secure"),
        (b"content-type", b"text/html"),
    ]
    out = with_secure_cookies(headers)
    assert out[0] == (
        b"set-cookie",
        b"_streamlit_user=abc; HttpOnly; Max-Age=2592000; Path=/; SameSite=lax; Secure",
    )
    assert out[1:] == headers[1:]  # already Secure: unchanged; other headers untouched


def test_secrets_files_named_or_streamlits_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("GOODPUT_SECRETS", raising=False)
    with pytest.raises(GoodputError, match="not found"):
        secrets_files(str(tmp_path / "absent.toml"))
    named = tmp_path / "s.toml"
    named.write_text("")
    assert secrets_files(str(named)) == [named.resolve()]
    monkeypatch.setenv("GOODPUT_SECRETS", str(named))
    assert secrets_files(None) == [named.resolve()]
    monkeypatch.delenv("GOODPUT_SECRETS")
    monkeypatch.chdir(tmp_path)
    assert secrets_files(None)[-1] == tmp_path / ".streamlit" / "secrets.toml"


def test_later_secrets_files_win_table_by_table(tmp_path):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text('[auth]\nclient_id = "a"\n[goodput]\nx = 1\n')
    second.write_text('[auth]\nclient_id = "b"\n')
    assert read_secrets([first, second, tmp_path / "absent.toml"]) == {
        "auth": {"client_id": "b"},
        "goodput": {"x": 1},
    }
    second.write_text("[auth\n")
    with pytest.raises(GoodputError, match="b.toml: cannot be read"):
        read_secrets([second])


def toml(data: dict) -> str:
    import tomli_w

    return tomli_w.dumps(data)


# ----- headers ---------------------------------------------------------------------------------------------


def test_security_headers_are_added_once():
    out = dict(with_security_headers([(b"content-type", b"text/html")]))
    assert out[b"x-frame-options"] == b"DENY"
    assert out[b"content-security-policy"] == b"frame-ancestors 'none'"
    assert out[b"x-content-type-options"] == b"nosniff"
    kept = with_security_headers(
        [(b"X-Frame-Options", b"SAMEORIGIN"), (b"Content-Security-Policy", b"default-src 'self';")]
    )
    assert kept.count((b"X-Frame-Options", b"SAMEORIGIN")) == 1 and len(kept) == 3  # nosniff added only
    assert (b"Content-Security-Policy", b"default-src 'self'; frame-ancestors 'none'") in kept
    strict = [(b"content-security-policy", b"frame-ancestors 'self'")]
    assert with_security_headers(strict)[0] == strict[0]  # a stricter or other choice already made stays


def test_every_http_answer_of_a_running_dashboard_forbids_framing(tmp_path):
    port = free_port()
    log = tmp_path / "dashboard.log"
    server = start([str(GOODPUT), "dashboard", "--store", str(tmp_path / "store"), "--port", str(port)], log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(f"{base}/_stcore/health", server, log, expect=b"ok")
        for path, status in (
            ("/", 200),
            ("/_stcore/health", 200),
            ("/data", 200),
            ("/_stcore/host-config", 200),
            ("/media/absent.png", 404),
            ("/%2e%2e/etc/passwd", 400),
        ):
            try:
                with urllib.request.urlopen(base + path, timeout=10) as r:  # noqa: S310 (local)
                    code, headers = r.status, r.headers
            except urllib.error.HTTPError as err:
                code, headers = err.code, err.headers
            assert code == status, path
            assert headers["X-Frame-Options"] == "DENY", path
            assert headers["Content-Security-Policy"] == "frame-ancestors 'none'", path
        assert "login off" in log.read_text()
    finally:
        stop(server)


# ----- refusing to serve an open dashboard ---------------------------------------------------------------


def refuse(command: list[str], env: dict | None = None) -> str:
    """Run a command that must refuse at once: exit 2 and one line on stderr, and no server left behind."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{command} started a server instead of refusing")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("goodput: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_dashboard_on_a_network_address_without_login_refuses_to_start(tmp_path):
    empty = tmp_path / "secrets.toml"
    empty.write_text('[goodput]\nnote = "no [auth] here"\n')
    line = refuse(
        [
            str(GOODPUT),
            "dashboard",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),  # noqa: S104
            "--secrets",
            str(empty),
            "--store",
            str(tmp_path / "store"),
        ]
    )
    assert "login is required on --host 0.0.0.0" in line and "[auth]" in line and "README" in line
    partial = tmp_path / "partial.toml"
    without_secret = {k: v for k, v in valid_secrets()["auth"].items() if k != "client_secret"}
    partial.write_text(toml({"auth": without_secret}))
    line = refuse(
        [
            str(GOODPUT),
            "dashboard",
            "--host",
            "10.0.0.1",
            "--port",
            str(free_port()),
            "--secrets",
            str(partial),
        ]
    )
    assert "[auth].client_secret is missing" in line
    complete = tmp_path / "complete.toml"
    complete.write_text(toml(valid_secrets()))
    line = refuse(
        [
            str(GOODPUT),
            "dashboard",
            "--host",
            "10.0.0.1",
            "--port",
            str(free_port()),
            "--secrets",
            str(complete),
        ]
    )
    assert "plain HTTP" in line and "--behind-tls-proxy" in line  # login alone is not enough off loopback


def test_require_login_on_loopback_refuses_without_auth(tmp_path):
    line = refuse(
        [
            str(GOODPUT),
            "dashboard",
            "--require-login",
            "--port",
            str(free_port()),
            "--secrets",
            str(tmp_path / "absent.toml"),
        ]
    )
    assert "absent.toml: not found" in line


def dockerfile_command() -> list[str]:
    """The Dockerfile's CMD (exec form)."""
    [line] = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD ")]
    return json.loads(line[4:])


def test_the_docker_image_refuses_to_serve_without_mounted_secrets(tmp_path):
    command = dockerfile_command()
    assert command[:2] == ["goodput", "dashboard"]
    assert command[command.index("--host") + 1] == "0.0.0.0"  # the image serves the network
    secrets = command[command.index("--secrets") + 1]
    assert secrets.startswith("/run/secrets/") and not Path(secrets).exists()  # nothing mounted here
    env = {**os.environ, "GOODPUT_STORE": str(tmp_path / "store"), "HOME": str(tmp_path)}
    line = refuse([str(GOODPUT), *command[1:], "--port", str(free_port())], env=env)
    assert f"secrets file {secrets}: not found" in line


def test_the_readme_secrets_example_is_a_valid_configuration():
    import tomllib

    readme = (ROOT / "README.md").read_text()
    login = readme[readme.index("## Login") :]
    start = login.index("```toml") + len("```toml")
    example = tomllib.loads(login[start : login.index("```", start)])
    example["auth"]["cookie_secret"] = SECRET  # the README leaves the secret to make
    rules = auth.check_login_config(example, "README.md").rules
    assert rules.roles_of({"email": "Ana@example.com", "email_verified": True}) == {
        Role.VIEWER,
        Role.OPERATOR,
    }
    assert rules.roles_of({"groups": ["capacity-planning", "gpu-oncall"]}) == set(Role)
    assert rules.roles_of({"email": "bob@example.com"}) == {Role.VIEWER}
