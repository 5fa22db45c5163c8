"""What a watch stores of NIC ports (nic_samples): each port's values when the watch first sees it (so the fleet's
nominal rate is known from every port, not only the troubled ones), then only the steps at which a port's rate
changed or an error counter rose, with the step before each (engine.ingest.prometheus.nic.nic_events), so the rows
alone say which counter rose, by how much and when. Like the GPUs' series, the raw port series stay in Prometheus.
A row at or before the latest stored time of its port is not stored again (a window's start is the last one's
end)."""

import polars as pl

from engine.store.schema import polars_schema

NIC_TYPES = polars_schema("nic_samples")
PORT_KEYS = ["host", "device", "port"]


def known_ports() -> pl.DataFrame:
    """host, device, port and the latest t (epoch s) stored of each port the run holds."""
    return pl.DataFrame(schema={"host": pl.String, "device": pl.String, "port": pl.Int32, "t": pl.Float64})


def nic_rows(
    events: pl.DataFrame | None,
    now_ports: pl.DataFrame | None,
    *,
    known: pl.DataFrame,
    hosts: pl.DataFrame,
    origin: float,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """This cycle's nic_samples rows (the events after each port's latest stored time, and the current values of
    ports not seen before) and the ports known after it (known_ports). `known` and `hosts` (host_id, hostname:
    every host already added) are what the run holds; neither is changed."""
    frames = []
    if events is not None:
        latest = known.rename({"t": "latest"})
        fresh = events.join(latest, on=PORT_KEYS, how="left")
        frames.append(
            fresh.filter(pl.col("latest").is_null() | (pl.col("t") > pl.col("latest"))).drop("latest")
        )
    if now_ports is not None:
        seen = pl.concat([known.select(PORT_KEYS), *(f.select(PORT_KEYS) for f in frames)])
        frames.append(now_ports.join(seen, on=PORT_KEYS, how="anti"))
    if not frames:
        return pl.DataFrame(schema=NIC_TYPES), known
    rows = pl.concat(frames).unique([*PORT_KEYS, "t"], keep="first")
    known = pl.concat([known, rows.select(*PORT_KEYS, "t")]).group_by(PORT_KEYS, maintain_order=True).max()
    out = (
        rows.join(hosts, left_on="host", right_on="hostname")
        .with_columns(t_s=pl.col("t") - origin)
        .select(*NIC_TYPES)
        .cast(NIC_TYPES)
        .sort("t_s", "host_id", "device", "port")
    )
    return out, known
