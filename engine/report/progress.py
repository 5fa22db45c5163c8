"""The command line's progress bar: one line on stderr, redrawn as work completes."""

import sys
from collections.abc import Callable

BAR_WIDTH = 30


def progress_bar(as_json: bool) -> Callable[[float], None] | None:
    """A one-line progress bar on stderr when it is a terminal; none with `--json`, whose contract is the JSON
    object on stdout and nothing on stderr but an error (a script may capture both streams as one)."""
    if as_json or not sys.stderr.isatty():
        return None

    def show(fraction: float) -> None:
        filled = int(fraction * BAR_WIDTH)
        end = "\n" if fraction >= 1 else ""
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        print(f"\r[{bar}] {fraction:4.0%}", end=end, file=sys.stderr, flush=True)

    return show
