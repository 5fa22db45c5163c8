"""No test depends on the machine's speed (issue 27, 11): a Hypothesis test failed 1 CI run in 3 on a busy
machine through its too_slow health check. Every profile tests/conftest.py registers has no deadline and no
too_slow check, and no test brings either back; how fast things are is bench/'s question."""

import re
from pathlib import Path

from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
A_DEADLINE = re.compile(r"settings\([^)]*\bdeadline\s*=\s*(?!None\b)", re.S)
A_HEALTH_CHECK_LIST = re.compile(r"suppress_health_check\s*=\s*\[([^\]]*)\]", re.S)


def test_every_profile_and_the_loaded_one_have_no_clock():
    for profile in (settings.get_profile("dev"), settings.get_profile("ci"), settings.default):
        assert profile.deadline is None
        assert HealthCheck.too_slow in profile.suppress_health_check


def test_no_test_brings_back_a_deadline_or_the_too_slow_check():
    """A test's @settings(deadline=...) replaces the profile's; so does its suppress_health_check=[...], which
    must therefore name too_slow again beside what it adds."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name in ("conftest.py", Path(__file__).name):
            continue
        text = path.read_text()
        found += [f"{path.name}: deadline" for _ in A_DEADLINE.finditer(text)]
        found += [
            f"{path.name}: suppress_health_check=[{m.group(1)}]"
            for m in A_HEALTH_CHECK_LIST.finditer(text)
            if "too_slow" not in m.group(1)
        ]
    assert found == []


def test_the_checks_see_what_they_look_for():
    assert A_DEADLINE.search("@settings(max_examples=5,\n deadline=200)")
    assert not A_DEADLINE.search("@settings(max_examples=60, deadline=None)")
    assert A_HEALTH_CHECK_LIST.search("@settings(suppress_health_check=[HealthCheck.filter_too_much])")
    listed = A_HEALTH_CHECK_LIST.search("suppress_health_check=[\n    HealthCheck.too_slow,\n]")
    assert "too_slow" in listed.group(1)
