"""Stable pseudonyms for hostnames, job names and ids, and users, so an incident report can leave the team.

A pseudonym is a keyed hash (HMAC-SHA256) of the kind and the value: the same input gives the same pseudonym
within an export and across exports of the same store, and nobody without the key can test a guess ("was it
host gpu-a17-03?") against it, which a plain hash would allow. The key is random, one per store, kept in the
store folder as `anonymise.key` and created on first use (atomically: two writers racing keep one key).
"""

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

import polars as pl

from engine.errors import GoodputError

KEY_FILE = "anonymise.key"
KEY_BYTES = 32
DIGEST_CHARS = 10  # 40 bits: collisions stay unlikely below ~1 million distinct names of one kind
PREFIX = {"host": "host-", "job": "job-", "user": "user-", "run": "run-"}


def store_key(store_root: str | os.PathLike) -> bytes:
    """The store's anonymisation key, created (random, 32 bytes) the first time it is needed."""
    root = Path(store_root)
    path = root / KEY_FILE
    if not path.exists():
        root.mkdir(parents=True, exist_ok=True)
        temp = root / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        temp.write_bytes(secrets.token_bytes(KEY_BYTES))
        os.chmod(temp, 0o600)
        try:
            os.link(temp, path)  # fails if another writer got there first: then its key is the key
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
    key = path.read_bytes()
    if len(key) < 16:
        raise GoodputError(
            f"{path}: the anonymisation key is too short ({len(key)} bytes); delete the file to"
            " make a new one (earlier pseudonyms will then change)"
        )
    return key


def pseudonym(key: bytes, kind: str, value: str) -> str:
    """`host-3f9a0c21b7` for (`host`, `h0001`): the same for the same key, kind and value."""
    digest = hmac.new(key, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()
    return PREFIX[kind] + digest[:DIGEST_CHARS]


def _mapping(key: bytes, kind: str, values: pl.Series) -> dict[str, str]:
    # one HMAC per distinct value (a few thousand at most), not per row
    return {v: pseudonym(key, kind, v) for v in values.drop_nulls().unique().to_list()}


# Columns of an incidents export that name a host, a job or a user (scalars or lists of them).
COLUMNS = {"hostname": "host", "job_ids": "job", "job_names": "job", "users": "user"}


def anonymise_frame(frame: pl.DataFrame, key: bytes, columns: dict[str, str] | None = None) -> pl.DataFrame:
    """Replace every value of `columns` ({column: kind}; default COLUMNS, those present) by its pseudonym.

    Job ids and job names share the kind `job`, so a job named like another's id maps to the same pseudonym
    (both say the same thing about it). Integer ids (host_id, gpu_id) stay: they are positions in the
    simulated or observed cluster, not names, and replay needs them.
    """
    columns = {c: k for c, k in (columns or COLUMNS).items() if c in frame.columns}
    replaced = []
    for column, kind in columns.items():
        series = frame[column]
        if series.dtype == pl.List(pl.String):
            mapping = _mapping(key, kind, series.explode())
            replaced.append(
                pl.col(column).list.eval(
                    pl.element().replace_strict(mapping, default=None, return_dtype=pl.String)
                )
            )
        else:
            mapping = _mapping(key, kind, series.cast(pl.String))
            replaced.append(
                pl.col(column).cast(pl.String).replace_strict(mapping, default=None, return_dtype=pl.String)
            )
    return frame.with_columns(replaced) if replaced else frame


def anonymise_scenario(scenario: dict, key: bytes) -> dict:
    """The run's scenario with the flagship job's name replaced (the only name a scenario holds)."""
    training = dict(scenario.get("training") or {})
    if training.get("name"):
        training["name"] = pseudonym(key, "job", str(training["name"]))
    return {**scenario, "training": training} if training else dict(scenario)
