"""Logouts recorded on the server, so that an identity cookie taken before a logout no longer logs anyone in.

Streamlit's identity cookie is signed, lives 30 days and holds the ID token's claims; its logout only asks the
browser to forget it. A copy taken before (a stolen laptop's profile, a proxy's log, a shared machine) would keep
working for the rest of the 30 days. So a logout is written down here, per identity (the provider and the
subject), with its time; a cookie whose ID token was issued (`iat`) at or before that time is refused, in every
session and on every server sharing the store. Logging in again issues a new ID token, which is accepted.

    ledger = LogoutLedger(store_root / LEDGER_FILE)
    ledger.record(claims)              # the Log out button
    ledger.revoked(claims)             # True for any claims issued before that logout

A logout ends every session of that identity whose login came before it (the safe reading of "log out" on a
shared account). Entries older than the cookie's lifetime are dropped: no cookie from before them is still valid.
The file is written atomically (temporary file, then rename); when it cannot be written the logout still holds
in this server's memory, and the log says so. It is read only as a regular file of its own: a FIFO put there kept
every logged-in page from rendering (opening it waits for a writer) while health said ok, so the ledger is opened
without following a link and without blocking, checked on the open descriptor, and read up to MAX_FILE_BYTES;
anything else is one line in the log (once, until the path changes), and the logouts of this server still hold.
"""

import json
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from engine.errors import GoodputError
from engine.store.regular_files import read_regular

LOG = logging.getLogger(__name__)
LEDGER_FILE = Path(".auth") / "logouts.json"  # in the store's folder, beside the runs (README: The store)
# Streamlit's identity cookie lives 30 days (AUTH_COOKIE_MAX_AGE_SECONDS); a logout older than that can refuse
# no valid cookie, so it is forgotten.
COOKIE_LIFETIME_S = 30 * 24 * 3600
# Identities remembered at once: far above the people of one organisation; the oldest are dropped past it.
MAX_ENTRIES = 100_000
# The ledger file is re-read when it changes; one larger than this is not ours and is ignored (with a warning).
MAX_FILE_BYTES = 16 * 1024 * 1024


def identity(claims: Mapping[str, object]) -> str | None:
    """Whose cookie this is: the provider's name and the ID token's subject (unique per provider), else email."""
    provider = str(claims.get("provider") or "default")
    for key in ("sub", "email"):
        value = claims.get(key)
        if isinstance(value, str) and value:
            return f"{provider}:{key}:{value}"
    return None


def issued_at(claims: Mapping[str, object]) -> float | None:
    """The ID token's `iat` (seconds since the epoch), when the cookie carries one."""
    value = claims.get("iat")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


class LogoutLedger:
    """Identities and the time each last logged out, kept in one JSON file shared by the servers of a store."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, float] = {}
        self._seen: tuple[int, ...] | None = None  # what the path was when last read (see _reload)

    def record(self, claims: Mapping[str, object]) -> None:
        """Write down that this identity logged out now."""
        who = identity(claims)
        if who is None:
            return
        with self._lock:
            self._reload()
            self._entries[who] = self.clock()
            self._prune()
            self._write()

    def revoked(self, claims: Mapping[str, object]) -> bool:
        """Whether these claims come from a login at or before the identity's last logout.

        A cookie without `iat` cannot be dated: once its identity has logged out it is refused (fail closed).
        """
        who = identity(claims)
        if who is None:
            return False
        with self._lock:
            self._reload()
            logged_out = self._entries.get(who)
        if logged_out is None:
            return False
        issued = issued_at(claims)
        # iat has whole seconds: a token issued in the second of the logout may predate it, so it is refused too
        return issued is None or issued <= math.floor(logged_out)

    def _prune(self) -> None:
        horizon = self.clock() - COOKIE_LIFETIME_S
        self._entries = {k: t for k, t in self._entries.items() if t >= horizon}
        if len(self._entries) > MAX_ENTRIES:
            newest = sorted(self._entries.items(), key=lambda kv: kv[1])[-MAX_ENTRIES:]
            self._entries = dict(newest)

    def _reload(self) -> None:
        """Merge the file's entries when it changed since last read (another server of the store logged out)."""
        try:
            seen = _identity(os.lstat(self.path))
        except FileNotFoundError:
            return
        except OSError as err:
            seen = (err.errno or 0,)
        if seen == self._seen:
            return
        self._seen = seen  # also when it cannot be read: said once, not on every run of every page
        try:
            raw = read_regular(self.path, MAX_FILE_BYTES)  # a link or a FIFO is refused, never waited on
            loaded = json.loads(raw.decode("utf-8")) if raw is not None else {}
        except (GoodputError, ValueError) as err:
            LOG.warning("logout ledger %s cannot be read (%s): logouts of this server only", self.path, err)
            return
        if not isinstance(loaded, dict):
            return
        for who, when in loaded.items():
            if isinstance(who, str) and isinstance(when, int | float) and not isinstance(when, bool):
                self._entries[who] = max(float(when), self._entries.get(who, float("-inf")))

    def _write(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".logouts-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(self._entries, out)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._seen = _identity(os.lstat(self.path))
        except OSError as err:
            LOG.warning(
                "logout ledger %s cannot be written (%s): this logout holds on this server only",
                self.path,
                err,
            )


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """Which file a path holds and which version of it: a rename puts another inode there, a write moves mtime."""
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns)
