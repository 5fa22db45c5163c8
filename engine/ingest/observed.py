"""Turn parsed DCGM scrapes and kernel logs into the tables of an observed run (kind `ingest`).

The same tables a simulated run has, where the data allows (DESIGN "The store"): hosts, gpus, gpu_samples,
xid_events, incidents for fatal XIDs, host_states. `Observer` keeps what must stay stable as data arrives in
batches (ids of hosts and GPUs, the last value of the XID gauge, open incidents), so a live scrape loop feeds it
one scrape at a time and a file ingest feeds it everything at once, and both give the same tables.
"""

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from engine import limits
from engine.errors import GoodputError
from engine.ingest.dcgm import COLUMNS, XID_METRIC, DcgmSamples
from engine.ingest.kernel_log import KernelEvents, normalise_pci
from engine.reference import CAUSE_BY_KEY, XIDS
from engine.store.run import UNKNOWN_START
from engine.store.schema import polars_schema

RACKS_PER_ROW = 16  # hosts of unknown position are laid out one a rack, 16 racks a row (a simple floor plan)
# A burst of fatal XIDs on one GPU within one health-check period is one failure: Meta checks every 5 minutes
# (Kokolis et al., HPCA 2025; ../shared/reference/README.md §3).
INCIDENT_MERGE_S = 300.0
FATAL_XIDS = [x.xid for x in XIDS if x.fatal]
# The Llama 3 cause (engine.reference.CAUSES) a fatal XID points to; HBM faults for the ECC and row-remap
# codes, the GPU system processor (GSP) for 119/120, a faulty GPU otherwise (79 fell off the bus, 74 NVLink,
# 61/62 micro-controller).
XID_CAUSE = {
    48: "gpu_hbm3",
    64: "gpu_hbm3",
    95: "gpu_hbm3",
    119: "gpu_system_processor",
    120: "gpu_system_processor",
}
DEFAULT_FATAL_CAUSE = "faulty_gpu"

SAMPLE_TYPES = polars_schema("gpu_samples")
XID_TYPES = polars_schema("xid_events")
GPU_TYPES = polars_schema("gpus") | {"pci": pl.String}  # the bus id, kept to match kernel-log lines to GPUs


@dataclass
class Batch:
    """The rows one batch adds to each table, and what was read."""

    tables: dict[str, pl.DataFrame]
    samples: int = 0
    xid_events: int = 0
    skipped: Counter = field(default_factory=Counter)
    other_lines: int = 0


class Observer:
    """Assigns ids and derives events, incidents and host states, batch after batch."""

    def __init__(self) -> None:
        self.origin_us: int | None = None
        self.start_known = (
            True  # False: only since-boot stamps, the run's date unknown (engine.store.run.UNKNOWN_START)
        )
        self.hosts = pl.DataFrame(schema={"host_id": pl.Int32, "hostname": pl.String})
        self.gpus = pl.DataFrame(schema={**GPU_TYPES, "key": pl.String})
        self.last_xid = pl.DataFrame(schema={"gpu_id": pl.Int32, "value": pl.Float64})
        self.last_fatal = pl.DataFrame(
            schema={"gpu_id": pl.Int32, "t_s": pl.Float64, "incident_id": pl.Int32}
        )
        self.first_seen = pl.DataFrame(schema={"host_id": pl.Int32, "t_s": pl.Float64})
        self.down_since = pl.DataFrame(schema={"host_id": pl.Int32, "t_s": pl.Float64})
        self.next_incident = 0
        self.end_s = 0.0

    # ----- one batch ------------------------------------------------------------------------------------------
    def add(self, dcgm: DcgmSamples | None = None, logs: KernelEvents | None = None) -> Batch:
        """The rows `dcgm` and `logs` add. All or nothing: a batch refused (a limit passed) leaves the observer
        as it was, so a live loop that skips a bad scrape carries on with consistent ids."""
        saved = dict(vars(self))  # frames are immutable: keeping the references is the whole snapshot
        try:
            return self._add(dcgm, logs)
        except BaseException:
            vars(self).update(saved)
            raise

    def _add(self, dcgm: DcgmSamples | None, logs: KernelEvents | None) -> Batch:
        if self.origin_us is None:
            self.origin_us, self.start_known = _origin_us(dcgm, logs)
        known_hosts = self.hosts.height
        known_gpus = self.gpus.height
        series = self._add_dcgm_gpus(dcgm) if dcgm is not None else None
        events = self._resolve_log_events(logs) if logs is not None else None

        samples = self._samples(dcgm, series) if dcgm is not None else _empty(SAMPLE_TYPES)
        gauge_events = self._gauge_events(dcgm, series) if dcgm is not None else _empty(XID_TYPES)
        log_events = events if events is not None else _empty(XID_TYPES)
        xid_events = pl.concat([gauge_events, log_events]).sort("t_s", "host_id", maintain_order=True)
        xid_events, incidents = self._incidents(xid_events)
        self._observe_times(self._dcgm_times(dcgm, series) if dcgm is not None else None, xid_events)

        batch = Batch(
            tables={
                "hosts": hosts_table(self.hosts.slice(known_hosts)),
                "gpus": self.gpus.slice(known_gpus).drop("key", "pci"),
                "gpu_samples": samples,
                "xid_events": xid_events,
                "incidents": incidents,
            },
            samples=dcgm.samples.height if dcgm is not None else 0,
            xid_events=xid_events.height,
            skipped=Counter(dcgm.skipped) if dcgm is not None else Counter(),
            other_lines=logs.other_lines if logs is not None else 0,
        )
        return batch

    def host_states(self, from_s: float, to_s: float) -> pl.DataFrame:
        """Each known host's state over [from_s, to_s): healthy once seen, down from its first fatal XID."""
        hosts = (
            self.first_seen.rename({"t_s": "seen"})
            .join(self.down_since.rename({"t_s": "down"}), on="host_id", how="left")
            .with_columns(start=pl.max_horizontal(pl.col("seen"), pl.lit(from_s)), end=pl.lit(to_s))
        )
        healthy_end = pl.min_horizontal(pl.col("down").fill_null(to_s), pl.col("end"))
        healthy = hosts.select(
            "host_id",
            pl.lit("healthy").alias("state"),
            pl.col("start").alias("start_s"),
            healthy_end.alias("end_s"),
        )
        down = hosts.filter(pl.col("down").is_not_null()).select(
            "host_id",
            pl.lit("down").alias("state"),
            pl.max_horizontal(pl.col("down"), pl.col("start")).alias("start_s"),
            pl.col("end").alias("end_s"),
        )
        return (
            pl.concat([healthy, down])
            .filter(pl.col("end_s") > pl.col("start_s"))
            .with_columns(pl.lit(None, pl.String).alias("job_id"))
            .cast({"host_id": pl.Int32, "start_s": pl.Float64, "end_s": pl.Float64})
            .sort("host_id", "start_s")
        )

    # ----- hosts and GPUs -------------------------------------------------------------------------------------
    def _host_ids(self, hostnames: pl.Series) -> None:
        new = hostnames.drop_nulls().unique().sort()
        new = new.filter(~new.is_in(self.hosts["hostname"].implode()))
        if (
            self.hosts.height + new.len() > limits.MAX_HOSTS
        ):  # files are checked line by line; this is the sum
            raise GoodputError(
                f"the inputs name {self.hosts.height + new.len():,} hosts, over Goodput's limit of"
                f" {limits.MAX_HOSTS:,} (engine/limits.py MAX_HOSTS)"
            )
        if new.len():
            ids = pl.int_range(self.hosts.height, self.hosts.height + new.len(), dtype=pl.Int32, eager=True)
            self.hosts = pl.concat([self.hosts, pl.DataFrame({"host_id": ids, "hostname": new})])

    def _add_dcgm_gpus(self, dcgm: DcgmSamples) -> pl.DataFrame:
        """GPUs of the scrapes (one per host and UUID, or host and index): the series-to-GPU map."""
        self._host_ids(dcgm.series["hostname"])
        series = dcgm.series.with_columns(
            key=pl.concat_str(
                pl.col("hostname"),
                pl.lit("\x00"),
                pl.coalesce(pl.col("uuid"), pl.lit("#") + pl.col("gpu").cast(pl.String)),
            ),
            pci=normalise_pci(pl.col("pci_bus_id")),
        ).join(self.hosts, on="hostname", how="left")
        found = series.group_by("key", maintain_order=True).agg(
            pl.col("host_id").first(),
            pl.col("gpu").drop_nulls().first().alias("index"),
            pl.col("uuid").drop_nulls().first(),
            pl.col("model").drop_nulls().first(),
            pl.col("pci").drop_nulls().first(),
        )
        self._append_gpus(found)
        return series.join(self.gpus.select("key", "gpu_id"), on="key", how="left").select("series", "gpu_id")

    def _append_gpus(self, found: pl.DataFrame) -> None:
        new = found.join(self.gpus.select("key"), on="key", how="anti").sort("host_id", "index", "key")
        if new.height:
            self._check_gpu_counts(new)
            ids = pl.int_range(self.gpus.height, self.gpus.height + new.height, dtype=pl.Int32, eager=True)
            new = new.with_columns(gpu_id=ids).select(*GPU_TYPES, "key").cast(GPU_TYPES)
            self.gpus = pl.concat([self.gpus, new])

    def _check_gpu_counts(self, new: pl.DataFrame) -> None:
        """Each file was checked alone; together (or scrape after scrape) they may still pass a limit."""
        if self.gpus.height + new.height > limits.MAX_CLUSTER_GPUS:
            raise GoodputError(
                f"the inputs name {self.gpus.height + new.height:,} GPUs, over Goodput's limit of"
                f" {limits.MAX_CLUSTER_GPUS:,} (engine/limits.py MAX_CLUSTER_GPUS)"
            )
        per_host = (
            pl.concat([self.gpus.select("host_id"), new.select(pl.col("host_id").cast(pl.Int32))])
            .group_by("host_id")
            .len()
            .filter(pl.col("len") > limits.MAX_GPUS_PER_HOST)
        )
        if per_host.height:
            host_id = per_host["host_id"][0]
            name = self.hosts.filter(pl.col("host_id") == host_id)["hostname"][0]
            raise GoodputError(
                f"host {name!r}: {per_host['len'][0]} GPUs across the inputs, over Goodput's limit"
                f" of {limits.MAX_GPUS_PER_HOST} (engine/limits.py MAX_GPUS_PER_HOST)"
            )

    def _resolve_log_events(self, logs: KernelEvents) -> pl.DataFrame:
        """Each XID line to a host and GPU: by UUID, else by the host's PCI bus id, else a new GPU."""
        events = self._log_events_on_hosts(logs)
        gpu_lines = self._gpu_lines(events.filter(pl.col("kind") == "xid"))
        switch_lines = events.filter(pl.col("kind") == "sxid").with_columns(gpu_id=pl.lit(None, pl.Int32))
        frame = pl.concat([gpu_lines.select(switch_lines.columns), switch_lines], how="vertical_relaxed")
        frame = _seconds(frame.with_columns(t_us=pl.col("t_abs_us") - self.origin_us), "t_us", "t_abs_s")
        t_s = pl.coalesce(pl.col("t_abs_s"), pl.col("t_rel_s"))
        message = (
            pl.when(pl.col("kind") == "sxid")
            .then(
                pl.concat_str(
                    pl.lit("SXid "),
                    pl.col("device"),
                    pl.lit(" (PCI:"),
                    pl.col("pci"),
                    pl.lit("): "),
                    pl.col("message"),
                )
            )
            .otherwise(pl.col("message"))
        )
        return frame.select(
            t_s.alias("t_s"),
            "gpu_id",
            "host_id",
            pl.col("code").alias("xid"),
            pl.lit(None, pl.Int32).alias("incident_id"),
            message.alias("message"),
        ).cast(XID_TYPES)

    def _log_events_on_hosts(self, logs: KernelEvents) -> pl.DataFrame:
        """The log's events with their hostname (the line's, else the file's), host_id and UUID (by bus id)."""
        default = {i: self._default_host(logs, i, source.stem) for i, source in enumerate(logs.sources)}
        defaults = pl.DataFrame(
            {"source": list(default), "default_host": list(default.values())},
            schema={"source": pl.UInt32, "default_host": pl.String},
        )
        events = logs.events.join(defaults, on="source", how="left").with_columns(
            pl.coalesce("host", "default_host").alias("hostname")
        )
        uuids = (
            logs.uuids.join(defaults, on="source", how="left")
            .select(pl.coalesce("host", "default_host").alias("hostname"), "pci", "uuid")
            .unique(["hostname", "pci"])
        )
        self._host_ids(events["hostname"])
        return events.join(self.hosts, on="hostname", how="left").join(
            uuids, on=["hostname", "pci"], how="left"
        )

    def _gpu_lines(self, gpu_lines: pl.DataFrame) -> pl.DataFrame:
        """XID lines with their gpu_id: by UUID, else by the host's PCI bus id, else a GPU added for them."""
        by_uuid = self.gpus.select(pl.col("uuid").str.to_lowercase(), pl.col("gpu_id").alias("by_uuid"))
        by_pci = self.gpus.select("host_id", "pci", pl.col("gpu_id").alias("by_pci")).unique(
            ["host_id", "pci"]
        )
        gpu_lines = (
            gpu_lines.with_columns(uuid_key=pl.col("uuid").str.to_lowercase())
            .join(
                by_uuid.drop_nulls().rename({"uuid": "uuid_key"}).unique("uuid_key"),
                on="uuid_key",
                how="left",
            )
            .join(by_pci, on=["host_id", "pci"], how="left")
        )
        unknown = gpu_lines.filter(pl.col("by_uuid").is_null() & pl.col("by_pci").is_null())
        if unknown.height:
            # nvidia-smi numbers GPUs in PCI bus order, so a GPU known only from its bus id gets its rank there.
            counts = self.gpus.group_by("host_id").len("known")
            found = (
                unknown.group_by("host_id", "pci")
                .agg(pl.col("uuid").drop_nulls().first())
                .join(counts, on="host_id", how="left")
                .with_columns(
                    index=pl.col("known").fill_null(0) + pl.col("pci").rank("dense").over("host_id") - 1,
                    model=pl.lit(None, pl.String),
                    key=pl.concat_str(pl.col("host_id").cast(pl.String), pl.lit("\x00pci:"), pl.col("pci")),
                )
            )
            self._append_gpus(found)
        by_key = self.gpus.select("key", pl.col("gpu_id").alias("by_key"))
        return (
            gpu_lines.with_columns(
                key=pl.concat_str(pl.col("host_id").cast(pl.String), pl.lit("\x00pci:"), pl.col("pci"))
            )
            .join(by_key, on="key", how="left")
            .with_columns(gpu_id=pl.coalesce("by_uuid", "by_pci", "by_key"))
        )

    def _default_host(self, logs: KernelEvents, source: int, stem: str) -> str:
        """The host of a log whose lines name none: the DCGM host of a GPU it names by UUID, the file's name
        where a scrape has that host, the only scraped host, else the file's name."""
        uuids = logs.uuids.filter(pl.col("source") == source)["uuid"].str.to_lowercase()
        known = self.gpus.filter(pl.col("uuid").str.to_lowercase().is_in(uuids.implode()))
        if known.height:
            host_id = known["host_id"][0]
            return self.hosts.filter(pl.col("host_id") == host_id)["hostname"][0]
        scraped = self.hosts.filter(pl.col("host_id").is_in(self.gpus["host_id"].unique().implode()))
        if stem in scraped["hostname"].to_list() or scraped.height != 1:
            return stem
        return scraped["hostname"][0]

    # ----- samples and events ---------------------------------------------------------------------------------
    def _samples(self, dcgm: DcgmSamples, series: pl.DataFrame) -> pl.DataFrame:
        wanted = dcgm.samples.filter(pl.col("metric").is_in(list(COLUMNS))).select(
            "t_ms", "series", "metric", "value"
        )
        if wanted.height == 0:
            return _empty(SAMPLE_TYPES)
        # Pivot on the categorical metric names and rename the columns after (renaming 800k strings first costs
        # more than the pivot).
        wide = wanted.join(series, on="series", how="left").pivot(
            on="metric", index=["t_ms", "gpu_id"], values="value", aggregate_function="first"
        )
        wide = _seconds(wide.with_columns(t_us=pl.col("t_ms") * 1000 - self.origin_us), "t_us", "t_s")

        # each column from its metric, or the first of its names a scrape has (field 112's two names), else NULL
        def column(name: str) -> pl.Expr:
            names = [m for m, c in COLUMNS.items() if c == name and m in wide.columns]
            return pl.coalesce(names) if names else pl.lit(None, SAMPLE_TYPES[name])

        keys = ("t_s", "gpu_id")
        return (
            wide.select(*keys, *(column(c).alias(c) for c in SAMPLE_TYPES if c not in keys))
            .select(*SAMPLE_TYPES)
            .cast(SAMPLE_TYPES)
            .sort("t_s", "gpu_id")
        )

    def _gauge_events(self, dcgm: DcgmSamples, series: pl.DataFrame) -> pl.DataFrame:
        """An XID event where DCGM_FI_DEV_XID_ERRORS changes (it holds the last XID and never resets)."""
        gauge = (
            dcgm.samples.filter(pl.col("metric") == XID_METRIC)
            .join(series, on="series", how="left")
            .select(pl.col("gpu_id"), pl.col("t_ms"), "value")
        )
        if gauge.height == 0:
            return _empty(XID_TYPES)
        prior = self.last_xid.with_columns(t_ms=pl.lit(None, pl.Int64)).select(gauge.columns)
        ordered = pl.concat([prior, gauge]).sort("gpu_id", "t_ms", nulls_last=False, maintain_order=True)
        ordered = ordered.with_columns(before=pl.col("value").shift(1).over("gpu_id"))
        self.last_xid = ordered.group_by("gpu_id").agg(pl.col("value").last()).cast({"gpu_id": pl.Int32})
        changes = ordered.filter(
            pl.col("t_ms").is_not_null()
            & pl.col("before").is_not_null()
            & (pl.col("value") != pl.col("before"))
            & (pl.col("value") > 0)
        )
        changes = _seconds(changes.with_columns(t_us=pl.col("t_ms") * 1000 - self.origin_us), "t_us", "t_s")
        return (
            changes.join(self.gpus.select("gpu_id", "host_id"), on="gpu_id", how="left")
            .select(
                "t_s",
                "gpu_id",
                "host_id",
                pl.col("value").cast(pl.Int32).alias("xid"),
                pl.lit(None, pl.Int32).alias("incident_id"),
                pl.format(
                    f"{XID_METRIC} changed from {{}} to {{}}",
                    pl.col("before").cast(pl.Int64),
                    pl.col("value").cast(pl.Int64),
                ).alias("message"),
            )
            .cast(XID_TYPES)
        )

    def _incidents(self, events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """One incident per burst of fatal XIDs on a GPU; the events of a burst carry its incident_id."""
        fatal = events.with_row_index("row").filter(
            pl.col("xid").is_in(FATAL_XIDS) & pl.col("gpu_id").is_not_null()
        )
        prior = self.last_fatal.select(
            "gpu_id", pl.col("t_s").alias("prior_t"), pl.col("incident_id").alias("prior")
        )
        fatal = (
            fatal.sort("gpu_id", "t_s", "row")
            .join(prior, on="gpu_id", how="left")
            .with_columns(prev_t=pl.col("t_s").shift(1).over("gpu_id"))
        )
        fatal = fatal.with_columns(prev_t=pl.coalesce("prev_t", "prior_t"))
        opens = pl.col("prev_t").is_null() | (pl.col("t_s") - pl.col("prev_t") > INCIDENT_MERGE_S)
        fatal = fatal.with_columns(opens=opens).with_columns(number=pl.col("opens").cum_sum().over("gpu_id"))
        # Bursts continuing an incident of an earlier batch keep its id; new bursts get new ids in time order.
        starts = (
            fatal.filter(pl.col("opens"))
            .sort("t_s", "gpu_id")
            .with_columns(
                incident_id=pl.int_range(self.next_incident, self.next_incident + pl.len(), dtype=pl.Int32)
            )
        )
        self.next_incident += starts.height
        fatal = fatal.join(
            starts.select("gpu_id", "number", pl.col("incident_id").alias("new_id")),
            on=["gpu_id", "number"],
            how="left",
        ).with_columns(incident_id=pl.coalesce("new_id", "prior").cast(pl.Int32))
        events = (
            events.with_row_index("row")
            .join(fatal.select("row", pl.col("incident_id").alias("iid")), on="row", how="left")
            .with_columns(incident_id=pl.coalesce("iid", "incident_id"))
            .select(*XID_TYPES)
        )
        if fatal.height:
            latest = fatal.group_by("gpu_id").agg(pl.col("t_s").max(), pl.col("incident_id").last())
            self.last_fatal = pl.concat(
                [
                    self.last_fatal.join(latest, on="gpu_id", how="anti"),
                    latest.cast({"gpu_id": pl.Int32, "incident_id": pl.Int32}),
                ]
            )
            downs = starts.group_by("host_id").agg(pl.col("t_s").min()).cast({"host_id": pl.Int32})
            self.down_since = pl.concat(
                [self.down_since, downs.join(self.down_since, on="host_id", how="anti")]
            )
        incidents = xid_incidents(starts).sort("incident_id")
        return events, incidents

    def _dcgm_times(self, dcgm: DcgmSamples, series: pl.DataFrame) -> pl.DataFrame:
        """First and last time each host answered, over every metric read (not only those with a column)."""
        return (
            dcgm.samples.group_by("series")
            .agg(first=pl.col("t_ms").min(), last=pl.col("t_ms").max())
            .join(series, on="series")
            .join(self.gpus.select("gpu_id", "host_id"), on="gpu_id")
            .group_by("host_id")
            .agg(pl.col("first").min(), pl.col("last").max())
            .pipe(
                lambda f: _seconds(f.with_columns(pl.col("first") * 1000 - self.origin_us), "first", "first")
            )
            .pipe(lambda f: _seconds(f.with_columns(pl.col("last") * 1000 - self.origin_us), "last", "last"))
            .select("host_id", "first", "last")
        )

    def _observe_times(self, scraped: pl.DataFrame | None, events: pl.DataFrame) -> None:
        times = events.select("host_id", pl.col("t_s").alias("first"), pl.col("t_s").alias("last"))
        if scraped is not None:
            times = pl.concat([scraped, times], how="vertical_relaxed")
        seen = (
            times.group_by("host_id")
            .agg(pl.col("first").min().alias("t_s"))
            .cast({"host_id": pl.Int32, "t_s": pl.Float64})
        )
        self.first_seen = pl.concat([self.first_seen, seen.join(self.first_seen, on="host_id", how="anti")])
        if times.height:
            self.end_s = max(self.end_s, float(times["last"].max()))


def _origin_us(dcgm: DcgmSamples | None, logs: KernelEvents | None) -> tuple[int, bool]:
    """Wall-clock time of the earliest sample, and whether it is known. Logs stamped only since boot carry no
    wall clock, and a file's modification time says when it was copied as often as when it was written: with
    nothing else dated, the run starts at UNKNOWN_START (its date unknown) and counts from the log's first line."""
    candidates = []
    if dcgm is not None and dcgm.samples.height:
        candidates.append(int(dcgm.samples["t_ms"].min()) * 1000)
    if logs is not None and logs.events["t_abs_us"].drop_nulls().len():
        candidates.append(int(logs.events["t_abs_us"].min()))
    if candidates:
        return min(candidates), True
    return round(UNKNOWN_START.timestamp() * 1e6), False


def since_boot_sources(logs: KernelEvents | None) -> list[str]:
    """The logs whose XID lines are stamped only in seconds since boot (dmesg, /dev/kmsg), by name."""
    if logs is None:
        return []
    indices = logs.events.filter(pl.col("t_rel_s").is_not_null())["source"].unique().sort().to_list()
    return [logs.sources[i].name for i in indices]


def hosts_table(hosts: pl.DataFrame) -> pl.DataFrame:
    """The hosts table of hosts whose place is unknown (host_id, hostname): one a rack, RACKS_PER_ROW racks a
    row, as every observed run (ingest, watch) lays them out."""
    host_id = pl.col("host_id")
    return hosts.select(
        host_id,
        "hostname",
        host_id.alias("rack_id"),
        pl.lit(0).alias("pod_id"),
        (host_id // RACKS_PER_ROW).alias("row"),
        (host_id % RACKS_PER_ROW).alias("position"),
        pl.lit(0).alias("slot"),
    ).cast(dict.fromkeys(("host_id", "rack_id", "pod_id", "row", "position", "slot"), pl.Int32))


def _seconds(frame: pl.DataFrame, micros: str, name: str) -> pl.DataFrame:
    """Integer microseconds to seconds by true division (NumPy's), so a time has one spelling in every table:
    Polars divides some columns by multiplying with the reciprocal, which can differ in the last bit."""
    seconds = frame[micros].cast(pl.Float64).to_numpy() / 1e6
    return frame.with_columns(pl.Series(name, seconds, dtype=pl.Float64).fill_nan(None))  # nulls came as NaN


def _empty(types: dict) -> pl.DataFrame:
    return pl.DataFrame(schema=types)


def xid_incidents(starts: pl.DataFrame) -> pl.DataFrame:
    """The incident rows of fatal XIDs (`starts`: incident_id, t_s, xid, host_id, gpu_id): detected when logged,
    the cause and category the XID implies, not yet mitigated or repaired, no link, jobs not yet joined. Shared
    with the watch loop (engine.ingest.watch), which joins the jobs itself."""
    cause = pl.col("xid").replace_strict(XID_CAUSE, default=DEFAULT_FATAL_CAUSE, return_dtype=pl.String)
    categories = {key: c.category for key, c in CAUSE_BY_KEY.items()}
    return starts.select(
        "incident_id",
        "t_s",
        pl.col("t_s").alias("detected_s"),
        pl.lit(None, pl.Float64).alias("mitigated_s"),
        pl.lit(None, pl.Float64).alias("repaired_s"),
        cause.alias("cause"),
        cause.replace_strict(categories, return_dtype=pl.String).alias("category"),
        pl.lit(False).alias("planned"),
        pl.col("xid").cast(pl.Int32),
        pl.col("host_id").cast(pl.Int32),
        pl.col("gpu_id").cast(pl.Int32),
        pl.lit(None, pl.Int32).alias("link_id"),
        pl.lit(None, pl.Int32).alias("jobs_hit"),
        pl.lit(None, pl.Float64).alias("gpu_hours_lost"),
    )
