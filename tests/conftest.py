"""Fixtures every test file may use."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from streamlit import config as streamlit_config

# The real servers' session fixtures (tests/servers), registered here once: a fixture imported into two test
# modules would be two fixtures, and the second Slurm of one session would wait for the first's lock forever.
from tests.servers.prometheus import prometheus_server  # noqa: F401
from tests.servers.slurm import slurm_cluster  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
# No test depends on the machine's speed (budgets are bench/'s): Hypothesis gets no deadline and no too_slow
# health check, which failed 1 CI run in 3 on a busy 2-core machine (issue 27). Two profiles with the same
# clock-free settings: "ci" (where $CI is set) also prints the blob that reproduces a failure; "dev" for the rest.
# HYPOTHESIS_PROFILE picks one by name. A test's own @settings still sets its number of examples.
NO_CLOCK = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.large_base_example]}
settings.register_profile("dev", **NO_CLOCK)
settings.register_profile("ci", **NO_CLOCK, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
# Pages run under AppTest as if served on loopback: the app requires login whenever Streamlit's address is
# beyond loopback, and an unset address means every interface (dashboard/auth.py login_required). This sets the
# option in this process only (Streamlit reads STREAMLIT_* variables in its command line, not here); servers the
# tests start get their address from --host.
streamlit_config.set_option("server.address", "127.0.0.1")
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (real samples); tests that need it skip cleanly where it is absent."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"real data samples not present at {path}")
    return path


@pytest.fixture
def shared_reference() -> Path:
    path = SHARED / "reference"
    if not path.is_dir():
        pytest.skip(f"reference figures not present at {path}")
    return path


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty store folder, also exported as GOODPUT_STORE for code that reads the environment."""
    path = tmp_path / "store"
    monkeypatch.setenv("GOODPUT_STORE", str(path))
    return path


@pytest.fixture(autouse=True)
def draw_below_the_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages run in process (AppTest) draw what sits below the fold at once: there is no browser to scroll to
    it (dashboard/lazy.py below_fold). Servers the browser tests start keep the deferral; tests of the deferral
    itself set it back."""
    from dashboard import lazy

    monkeypatch.setattr(lazy, "DEFER_BELOW_FOLD", False)
