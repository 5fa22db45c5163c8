"""Running a command as root without root's power over file modes, so tests of unreadable and read-only files
run here and in CI (both root) instead of skipping everywhere.

Root ignores a file's mode through two capabilities, CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. util-linux's
setpriv drops them from the bounding set, so the command it starts keeps uid 0 (and so reaches the checkout's
virtualenv) but is refused a chmod-0 file or a 0555 folder like any user.
"""

import os
import shutil


def as_plain_user(argv: list[str]) -> list[str]:
    """`argv`, run without root's file-mode capabilities when this process is root."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:  # util-linux is part of every Debian system; say so rather than pass vacuously
        raise RuntimeError("setpriv (util-linux) is missing: cannot test file modes as root")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *argv]
