"""CI installs its Debian packages at pinned versions (issue 45, 14): .ci/run read them unpinned, so CI could
change under the project with any Debian update. Every package a test needs is pinned in .ci/debian-pins.txt, the
script installs exactly the pins, and where the tests run the installed versions are the pinned ones."""

import re
import subprocess
from pathlib import Path

from tests.servers import slurm

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / ".ci" / "debian-pins.txt"


def pins() -> dict[str, str]:
    lines = [line.strip() for line in PINS.read_text().splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_every_package_the_tests_need_is_pinned():
    needed = {"chromium", "prometheus", *slurm.PACKAGES.split()}
    assert needed <= set(pins()), needed - set(pins())
    assert all(re.fullmatch(r"[0-9][A-Za-z0-9.+~:-]*", version) for version in pins().values())


def test_the_ci_script_installs_the_pins_and_nothing_else():
    script = (ROOT / ".ci" / "run").read_text()
    assert ".ci/debian-pins.txt" in script and "make test" in script
    for line in script.splitlines():
        if "apt-get install" in line:  # every install takes the pinned list, never a bare name
            assert re.search(r'"\$\{(browser|servers)\[@\]\}"', line), line


def test_the_installed_versions_are_the_pinned_ones():
    for package, version in pins().items():
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0 and done.stdout == version, (package, version, done.stdout, done.stderr)
