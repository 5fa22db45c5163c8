"""Starting and stopping real servers on 127.0.0.1 for tests: `goodput dashboard`, the launcher, an OpenID
provider. Each runs in its own process group, so stopping it stops all it started."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOODPUT = Path(sys.executable).parent / "goodput"
START_TIMEOUT_S = 60
# Debian's chromium for the browser tests, with the flags this machine's closed network wants (DESIGN "Known
# facts about the tools"): no background connections, no QUIC, no sandbox as root.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command: Sequence[str], log: Path, env: dict | None = None) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            list(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )


def wait_until(url: str, server: subprocess.Popen, log: Path, expect: bytes | None = None) -> None:
    """Until `url` answers 200 (with `expect` in the body when given); fail with the log if it never does."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"{server.args[:3]} exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (a local test server)
                if expect is None or expect in response.read():
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"{url} did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def stop(server: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """Politely (SIGTERM to its process group), then for sure (SIGKILL); closes its stdout pipe if it has one.
    The group is signalled even when its leader has ended, so nothing it started outlives it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=timeout_s)
    if server.stdout is not None:
        server.stdout.close()


# dashboard/lazy.below_fold's caption where a section waits for the reader to scroll to it
WAITING_FOR_SCROLL = "loaded as you scroll down"


def scroll_through(page, timeout_ms: int) -> None:
    """Scroll Streamlit's main pane (what scrolls, not the window) down as a reader would until no section waits
    for a scroll (dashboard/lazy.below_fold; one drawn can hold another), and the reruns that drew them have
    finished; then back to the top."""
    from playwright.sync_api import expect

    main = page.get_by_test_id("stMain")
    waiting = main.get_by_text(WAITING_FOR_SCROLL)
    for _ in range(4):
        if waiting.count() == 0:
            break
        box = main.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        for _ in range(8):
            page.mouse.wheel(0, 800)
            page.wait_for_timeout(200)
        expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=timeout_ms)
    expect(waiting).to_have_count(0, timeout=timeout_ms)
    main.evaluate("element => element.scrollTo(0, 0)")
