"""The run store: a folder of DuckDB files, one file a run.

Why a file a run: a run is written under a temporary name and renamed into place only once complete, so it
is in the store whole or not at all, even if the writer is killed with SIGKILL; the dashboard opens finished
files read-only, so it keeps reading while the command line writes new runs; deleting a run is removing a file.

    <store>/runs/<run_id>.duckdb          finished runs
    <store>/runs/.partial-<run_id>.*       a run being written (ignored by readers; engine.store.partials sweeps a
                                           dead writer's at the next use of the store)

A file in runs/ that is not a readable run (a name that is not a run id, a file that is not DuckDB, a DuckDB
file without the runs table, one this user cannot read) never breaks a listing: `scan` reports it as a
`SkippedFile`, with why, beside every readable run; a FIFO, socket, device or symbolic link named like a run is
skipped without being opened. A store whose runs/ cannot be listed at all (not a folder, unreadable) raises a
StoreError that says so, rather than looking empty.

Each file holds the tables of `engine.store.schema` plus `meta(key, value)` with the schema version.
"""

import contextlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from engine import __version__
from engine.errors import GoodputError
from engine.store.partials import locked_partial, sweep
from engine.store.regular_files import kind_of
from engine.store.run import Run
from engine.store.schema import SCHEMA_VERSION, SPARSE_COLUMNS, TABLES, create_statement, polars_schema

DEFAULT_STORE = Path(__file__).resolve().parents[2] / "data" / "store"
STORE_ENV = "GOODPUT_STORE"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class StoreError(GoodputError):
    """The store or one of its files cannot be used."""


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    kind: str
    name: str
    seed: int | None
    started_at: datetime
    duration_s: float
    created_at: datetime
    engine_version: str
    scenario: dict
    summary: dict

    def as_json(self) -> dict:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "started_at": self.started_at.isoformat(),
            "duration_s": self.duration_s,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class SkippedFile:
    """A file in runs/ that is not a readable run: listed with why, never deleted by a reader."""

    name: str  # the file's name in runs/
    run_id: str | None  # None when the name is not a run id (then only renaming or removing it by hand helps)
    reason: str

    def warning(self) -> str:
        return f"skipped runs/{self.name}: {self.reason}"


def resolve_store_dir(store: str | os.PathLike | None = None) -> Path:
    """`--store DIR`, else $GOODPUT_STORE, else data/store in the project."""
    if store:
        return Path(store)
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    return DEFAULT_STORE


class Store:
    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = resolve_store_dir(root)
        self.runs_dir = self.root / "runs"
        self._info_cache: dict[str, tuple[float, RunInfo]] = {}

    # ----- paths -------------------------------------------------------------------------------------
    def path_of(self, run_id: str) -> Path:
        if not _RUN_ID.match(run_id):
            raise StoreError(f"not a run id: {run_id!r}")
        return self.runs_dir / f"{run_id}.duckdb"

    def run_file(self, run_id: str) -> Path:
        """The path of a run's file, which exists and is a regular file (a FIFO there would block whoever opens
        it: it is refused, never opened)."""
        path = self.path_of(run_id)
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            raise StoreError(f"no run {run_id!r} in store {self.root} (see `goodput runs`)") from None
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path}: {kind_of(mode)}, not a run file: it is never opened")
        wal = _odd_wal(path)
        if wal is not None:
            raise StoreError(f"{path}: {wal}: the run is never opened")
        return path

    # ----- writing -----------------------------------------------------------------------------------
    def write_run(self, run: Run, progress: Callable[[str, int], None] | None = None) -> str:
        """Write `run` atomically and return its id. Nothing is visible until the final rename. `progress` is
        called with a table and the rows of each block of it written (the command line counts them)."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            self.sweep_partials()
            final = self.path_of(run.run_id)
            if final.exists():
                raise StoreError(f"run {run.run_id!r} already exists in {self.root}")
            with self._replacing(final) as con:
                _write_tables(con, run, progress)
        except (
            OSError
        ) as err:  # a store that became unwritable (the CLI checks it first; the dashboard cannot)
            raise StoreError(
                f"store {self.root}: cannot write run {run.run_id} ({err.strerror or err})"
            ) from err
        except duckdb.Error as err:  # DuckDB's own writes failing: a full disk, a file size limit
            raise StoreError(f"store {self.root}: cannot write run {run.run_id} ({_io_reason(err)})") from err
        return run.run_id

    def append_to_run(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame],
        *,
        duration_s: float | None = None,
        summary: dict | None = None,
        replace: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        """Add rows to a finished run, atomically: copy, append, rename over (copy-on-write).

        For live ingestion (a scrape a commit) and watching (engine.ingest.watch). `replace` names, for some
        tables, key columns: rows whose keys match a new row are deleted first (a job that ended replaces its
        running row), in the same commit. Readers that hold the old file keep reading it; new readers see the
        new version whole. Cost grows with the run's size, which suits observed runs of modest size.
        """
        final = self.run_file(run_id)
        self.sweep_partials()
        replace = replace or {}
        # the columns each table has in the file, kept up to date as inserts add sparse ones
        present: dict[str, set[str]] = {}
        try:
            with self._replacing(final, copy_of=final) as con:
                check_schema_version(con, final)
                upgrade_file(con)
                for table, frame in tables.items():
                    if table not in TABLES or table == "runs":
                        raise StoreError(f"run {run_id}: cannot append to table {table!r}")
                    if not frame.height:
                        continue
                    keys = replace.get(table, ())
                    unknown = [k for k in keys if k not in TABLES[table] or k not in frame.columns]
                    if unknown:
                        raise StoreError(f"run {run_id}: cannot replace rows of {table} by {unknown}")
                    if keys:
                        new_keys = frame.select(*keys).to_arrow()  # noqa: F841 (read by DuckDB's replacement scan)
                        match = " AND ".join(f't."{k}" = n."{k}"' for k in keys)
                        con.execute(f'DELETE FROM "{table}" t USING new_keys n WHERE {match}')  # noqa: S608 (schema names)
                    if table not in present:
                        present[table] = file_columns(con, table)
                    _insert_frame(con, table, frame, present[table])
                if duration_s is not None:
                    con.execute("UPDATE runs SET duration_s = ?", [duration_s])
                if summary is not None:
                    con.execute("UPDATE runs SET summary = ?", [json.dumps(summary, default=str)])
        except OSError as err:  # the disk filled or the store became read-only: the run stays as it was
            raise StoreError(
                f"store {self.root}: cannot append to run {run_id} ({err.strerror or err})"
            ) from err
        except duckdb.Error as err:
            raise StoreError(f"store {self.root}: cannot append to run {run_id} ({_io_reason(err)})") from err
        self._info_cache.pop(run_id, None)

    @contextlib.contextmanager
    def _replacing(self, final: Path, copy_of: Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to a partial file that becomes `final` by rename only if the block succeeds.

        The partial file starts empty or as a copy of `copy_of`; it is fsynced before the rename and the
        folder after it, so a crash leaves either the old file or the new one, never half of one. The partial
        file is written under a lock (engine.store.partials) that tells other processes its writer is alive, so
        they sweep it only once the writer is gone, however it ended.
        """
        with locked_partial(self.runs_dir, final.stem) as partial:
            if copy_of is not None:
                shutil.copyfile(copy_of, partial)
            con = duckdb.connect(str(partial))
            # one checkpoint, at close, instead of one every 16 MB of log: a llama3-405b run's 31.8 M gpu_samples
            # rows insert in a quarter less time (6.2 s -> 4.7 s on 2 cores); the partial file is renamed only once
            # closed anyway, so a checkpoint before then makes nothing safer
            con.execute("SET checkpoint_threshold = '1GB'")
            try:
                yield con
            finally:
                con.close()
            _fsync(partial)
            os.replace(partial, final)
            _fsync(self.runs_dir)

    def delete_run(self, run_id: str) -> None:
        """Remove a run's file (or whatever odd file took its name: removing opens nothing)."""
        path = self.path_of(run_id)
        if not os.path.lexists(path):
            raise StoreError(f"no run {run_id!r} in store {self.root} (see `goodput runs`)")
        if path.is_dir() and not path.is_symlink():
            raise StoreError(f"{path}: a folder, not a run file: remove it by hand")
        try:
            path.unlink()
        except OSError as err:
            raise StoreError(f"{path}: cannot be removed ({err.strerror or err})") from err
        self._info_cache.pop(run_id, None)

    def sweep_partials(self) -> list[Path]:
        """Remove what killed writers left in runs/ (never a live writer's files); return what went."""
        return sweep(self.runs_dir)

    # ----- reading -----------------------------------------------------------------------------------
    def _run_files(self) -> list[Path]:
        """Every regular `*.duckdb` file in runs/ but partial files, newest first."""
        return self._listing()[0]

    def _listing(self) -> tuple[list[Path], list[SkippedFile]]:
        """Regular `*.duckdb` files in runs/ (newest first), and the others named like them: a FIFO, a socket, a
        device or a symbolic link is never opened (opening a FIFO waits for a writer forever: `goodput runs` and
        every page listing runs hung on one)."""
        names = self._names_in_runs()
        dated, odd = [], []
        for path in (self.runs_dir / name for name in names if name.endswith(".duckdb")):
            if path.name.startswith("."):
                continue
            try:
                info = path.lstat()
            except FileNotFoundError:  # deleted between listing and looking
                continue
            wal = _odd_wal(path) if stat.S_ISREG(info.st_mode) else None
            if stat.S_ISREG(info.st_mode) and wal is None:
                dated.append((info.st_mtime, path.name, path))
            elif wal is not None:
                run_id = path.stem if _RUN_ID.match(path.stem) else None
                odd.append(SkippedFile(path.name, run_id, f"{wal}: never opened"))
            else:
                run_id = path.stem if _RUN_ID.match(path.stem) else None
                odd.append(
                    SkippedFile(path.name, run_id, f"{kind_of(info.st_mode)}, not a run file: never opened")
                )
        return [path for _, _, path in sorted(dated, reverse=True)], sorted(odd, key=lambda f: f.name)

    def _names_in_runs(self) -> list[str]:
        """The names in runs/, or none in a store not made yet; a StoreError when runs/ cannot be listed (not a
        folder, unreadable), so a store that cannot be read says so instead of looking empty. Nothing is opened
        but the folder: stat, never open, tells what runs/ is (runs/ may be a symbolic link to a folder)."""
        try:
            mode = os.stat(self.root).st_mode
        except FileNotFoundError:
            return []  # a store not made yet: the first write makes it
        except OSError as err:
            raise StoreError(f"store {self.root}: cannot be read ({err.strerror or err})") from err
        if not stat.S_ISDIR(mode):
            raise StoreError(
                f"store {self.root}: {kind_of(mode, 'a file')}, not a folder: no run can be listed"
            )
        try:
            mode = os.stat(self.runs_dir).st_mode
        except FileNotFoundError:
            return []
        except OSError as err:
            raise StoreError(f"store {self.root}: runs/ cannot be read ({err.strerror or err})") from err
        if not stat.S_ISDIR(mode):
            raise StoreError(
                f"store {self.root}: runs/ is {kind_of(mode, 'a file')}, not a folder: no run can be listed"
            )
        try:
            return os.listdir(self.runs_dir)
        except OSError as err:  # unreadable (EACCES for a user other than its owner), an I/O error
            raise StoreError(f"store {self.root}: runs/ cannot be listed ({err.strerror or err})") from err

    def run_ids(self) -> list[str]:
        """Finished runs, newest first (run ids sort by creation time); files not named by a run id left out."""
        return [p.stem for p in self._run_files() if _RUN_ID.match(p.stem)]

    def scan(self) -> tuple[list[RunInfo], list[SkippedFile]]:
        """Every readable run, newest first, and every other file in runs/ with why it was skipped.

        Also the moment a dead writer's partial files are swept: every listing is a use of the store.
        """
        self.sweep_partials()
        good: list[RunInfo] = []
        files, skipped = self._listing()
        for path in files:
            run_id = path.stem
            if not _RUN_ID.match(run_id):
                skipped.append(
                    SkippedFile(
                        path.name,
                        None,
                        "the name is not a run id (letters, digits, '_', '.' and '-', no spaces)",
                    )
                )
                continue
            try:
                good.append(self.info(run_id))
            except (
                StoreError,
                OSError,
                duckdb.Error,
                ValueError,
                TypeError,
            ) as err:  # whatever a stranger raises
                if path.exists():  # else deleted between listing and reading: not an odd file
                    skipped.append(SkippedFile(path.name, run_id, _without_path(str(err), path)))
        return good, skipped

    def list_runs(self) -> list[RunInfo]:
        """Every readable run, newest first (`scan` says which files were skipped and why)."""
        return self.scan()[0]

    def info(self, run_id: str) -> RunInfo:
        path = self.run_file(run_id)
        mtime = path.stat().st_mtime
        cached = self._info_cache.get(run_id)
        if cached and cached[0] == mtime:
            return cached[1]
        with self.connect(run_id) as con:
            try:
                rows = con.execute(
                    "SELECT run_id, kind, name, seed, started_at, duration_s, created_at, engine_version,"
                    " scenario, summary FROM runs LIMIT 1"
                ).fetchall()
            except duckdb.Error as err:
                raise StoreError(
                    f"{path}: not a Goodput run file (no readable runs table: {_first_line(err)})"
                ) from err
        if not rows:
            raise StoreError(f"{path}: the runs table is empty")
        row = rows[0]
        try:
            info = RunInfo(*row[:8], scenario=json.loads(row[8] or "{}"), summary=json.loads(row[9] or "{}"))
        except (TypeError, ValueError) as err:  # a runs row written by something else than Goodput
            raise StoreError(f"{path}: the runs table's row is not a Goodput run's ({err})") from err
        self._info_cache[run_id] = (mtime, info)
        return info

    @contextlib.contextmanager
    def connect(self, run_id: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection to one run's file, closed on exit."""
        con = self.open(run_id)
        try:
            yield con
        finally:
            con.close()

    def open(self, run_id: str) -> duckdb.DuckDBPyConnection:
        """A read-only connection to one run's file, its schema version checked. The caller closes it."""
        path = self.run_file(run_id)
        try:
            con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error as err:
            raise StoreError(f"{path}: cannot open as a Goodput run ({_first_line(err)})") from err
        try:
            check_schema_version(con, path)
        except BaseException:
            con.close()
            raise
        return con

    def table(
        self, run_id: str, table: str, sql_filter: str = "", params: list | None = None
    ) -> pl.DataFrame:
        """One table of one run as a Polars frame. `sql_filter` is a WHERE clause with `?` parameters."""
        if table not in TABLES:
            raise StoreError(f"unknown table {table!r}")
        with self.connect(run_id) as con:
            present = file_columns(con, table)
            if not present:  # a file written before the table existed: it has no rows of it
                return pl.DataFrame(schema=polars_schema(table))
            # a column added to the schema after the file was written reads as NULL
            select = ", ".join(
                f'"{name}"' if name in present else f'CAST(NULL AS {sql}) AS "{name}"'
                for name, sql in TABLES[table].items()
            )
            query = f'SELECT {select} FROM "{table}"' + (f" WHERE {sql_filter}" if sql_filter else "")  # noqa: S608 (names from the schema)
            return query_frame(con, query, params)


def file_columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    """The columns `table` has in a run's file (empty: the file predates the table). Files keep the schema they
    were written with; tables and nullable columns added since are absent from older files."""
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_catalog = current_database() AND table_name = ?",
        [table],
    ).fetchall()
    return {name for (name,) in rows}


def upgrade_file(con: duckdb.DuckDBPyConnection) -> None:
    """Give a writable run file written by an older Goodput the tables and columns added to the schema since
    (all nullable, so its rows read as before), so new rows can be appended to it. Sparse columns
    (engine.store.schema.SPARSE_COLUMNS) are left to the insert that first has a value in one."""
    for table, columns in TABLES.items():
        present = file_columns(con, table)
        if not present:
            con.execute(create_statement(table, sparse=True))
            continue
        for name, sql in columns.items():
            if name not in present and name not in SPARSE_COLUMNS.get(table, ()):
                con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {sql}')


def query_frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pl.DataFrame:
    """Run `sql` with bound `params` and return a Polars frame (the one way pages and engine read tables)."""
    return con.sql(sql, params=params or None).pl()


def check_schema_version(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    try:
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    except duckdb.Error as err:
        raise StoreError(f"{path}: not a Goodput run file (no meta table)") from err
    try:
        version = int(rows[0][0]) if rows else None
    except (TypeError, ValueError):
        version = rows[0][0]
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{path}: schema version {version} is not one this Goodput ({__version__}) reads"
            f" (it reads version {SCHEMA_VERSION}); re-create the run with a matching Goodput"
        )


def _write_tables(
    con: duckdb.DuckDBPyConnection, run: Run, progress: Callable[[str, int], None] | None = None
) -> None:
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute(
        "INSERT INTO meta VALUES ('schema_version', ?), ('engine_version', ?)",
        [str(SCHEMA_VERSION), __version__],
    )
    for table in TABLES:
        con.execute(create_statement(table, sparse=True))
    unknown = set(run.tables) - set(TABLES) - {"runs"}
    if unknown:
        raise StoreError(f"run {run.run_id}: unknown tables {sorted(unknown)}")
    con.execute(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            run.run_id,
            run.kind,
            run.name,
            json.dumps(run.scenario, default=str),
            run.seed,
            run.started_at,
            run.duration_s,
            datetime.now(UTC),
            __version__,
            json.dumps(run.summary, default=str),
        ],
    )
    for table, frames in run.tables.items():
        present = set(TABLES[table]) - set(SPARSE_COLUMNS.get(table, ()))
        for frame in [frames] if isinstance(frames, pl.DataFrame) else frames:
            if frame.height == 0:
                continue
            _insert_frame(con, table, frame, present)
            if progress is not None:
                progress(table, frame.height)


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, present: set[str]) -> None:
    """Insert `frame`'s rows into `table`, whose columns in the file are `present`: a sparse column the file
    lacks is added once a row has a value in it (and `present` updated), else left out."""
    extra = [c for c in frame.columns if c not in TABLES[table]]
    if extra:
        raise StoreError(
            f"table {table}: columns {extra} are not in the schema (add them to engine/store/schema.py)"
        )
    absent = [c for c in frame.columns if c not in present]
    frame = frame.drop(c for c in absent if frame[c].null_count() == frame.height)
    for name in frame.columns:
        if name not in present:
            con.execute(f'ALTER TABLE "{table}" ADD COLUMN "{name}" {TABLES[table][name]}')
            present.add(name)
    arrow = frame.to_arrow()  # noqa: F841 (read by DuckDB's replacement scan below)
    columns = ", ".join(f'"{c}"' for c in frame.columns)
    con.execute(f'INSERT INTO "{table}" ({columns}) SELECT {columns} FROM arrow')  # noqa: S608 (names from the schema)


def _odd_wal(path: Path) -> str | None:
    """Why the write-ahead log beside a run's file would hang or fool DuckDB, which opens it with the run (a FIFO
    there hung `goodput runs`); None when it is absent or a regular file."""
    wal = path.with_name(path.name + ".wal")
    try:
        mode = wal.lstat().st_mode
    except FileNotFoundError:
        return None
    return None if stat.S_ISREG(mode) else f"its {wal.name} is {kind_of(mode)}"


def _io_reason(err: BaseException) -> str:
    """Why DuckDB could not write, in a few words: the OS's reason where its message carries one."""
    text = _first_line(err)
    for reason in (
        "No space left on device",
        "File too large",
        "Disk quota exceeded",
        "Read-only file system",
    ):
        if reason.lower() in text.lower():
            return reason.lower()
    return text


def _first_line(err: BaseException) -> str:
    """DuckDB's messages can run to several lines; a warning is one."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _without_path(message: str, path: Path) -> str:
    """`message` without the file's path (a skipped file is named by its file name beside it; a dashboard shows
    no server paths)."""
    return message.removeprefix(f"{path}: ").replace(str(path), path.name)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
