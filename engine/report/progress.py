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


LINE_WIDTH = 60  # wide enough to cover the longest earlier line of StoreProgress


class StoreProgress:
    """The rows written to the store so far, on one line of stderr redrawn after each block (the telemetry of a
    llama3-405b run is most of its 15 s); `finish` ends the line. Made by `store_progress`."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, table: str, rows: int) -> None:
        self.rows += rows
        line = f"writing the run: {self.rows:,} rows ({table})"
        print(f"\r{line:<{LINE_WIDTH}}", end="", file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.rows:
            print(file=sys.stderr, flush=True)


def store_progress(as_json: bool) -> StoreProgress | None:
    """A StoreProgress where a progress bar would show (a terminal, no `--json`), else None."""
    if as_json or not sys.stderr.isatty():
        return None
    return StoreProgress()
