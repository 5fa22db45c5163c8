"""One action at a time reaches Slurm, across every process that acts (the dashboard's sessions and each `goodput
act` alike), so that N actions started at once act as N one after another would.

The guard-rails (engine.act.guard) are read from the audit log, and the log's write lock made each check and its
approval atomic; but the command ran after that lock was let go, and an action still waiting for Slurm's answer
was in no count. Ten `goodput act resume` started together against an scontrol that fails after 3 s all reached
Slurm where the breaker (breaker_errors = 3) stops the fourth one after another; six drains at once on 40 nodes
at max_drain_share = 0.05 drained six where two may go (issue 45). So the whole of an approval, from asking Slurm
what it has now to logging its answer, runs holding an exclusive flock on `<store>/actions.lock`: the next action
reads the cluster, the caps and the breaker with the previous one's answer in the log and in Slurm.

flock, not a row in the log: the kernel lets it go when its process ends, crashed or killed, so a dead action
never blocks the rest (its approval stays in the log without an answer, in flight, as before). A waiter gives up
after WAIT_S with a clear error rather than hanging behind a Slurm that does not answer.
"""

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from engine.errors import GoodputError
from engine.store.regular_files import kind_of

LOCK_FILE = "actions.lock"
# An action takes at most two Slurm calls of 30 s each (engine.ingest.slurm.SlurmSource.timeout_s: the reading,
# then the command) and a few log writes: a waiter gives up after twice that, when something else is wrong.
WAIT_S = 150.0
POLL_S = 0.05


@contextlib.contextmanager
def acting_alone(store_root: Path, wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the store's action lock for the block; a GoodputError when it cannot be had within wait_s, or the
    lock file cannot be made (a read-only store) or is no regular file."""
    path = Path(store_root) / LOCK_FILE
    try:
        Path(store_root).mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as err:
        raise GoodputError(f"{path}: cannot be opened to act ({err.strerror or err}); nothing sent") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise GoodputError(f"{path}: {kind_of(mode)}, not a regular file; nothing sent")
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise GoodputError(
                        f"another action has held {path.name} for over {wait_s:g} s (Slurm slow to answer?);"
                        " nothing sent: try again once it is done (goodput act log shows it in flight)"
                    ) from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor lets the lock go
