"""One rack seen from the front (the Racks page's drill-down): its hosts and GPUs by state, their NIC cables and
the rack switch with its uplinks, each up or down."""

import numpy as np
import plotly.graph_objects as go
import polars as pl

from dashboard.charts.host_states import (
    STATE_COLOURS,
    STATE_ORDER,
    STATE_WORDS,
    as_plot_text,
    state_words_expr,
)
from engine.report.palette import GPU_FAILED_LABEL

LINK_COLOURS = {"up": "#2ca02c", "down": "#d62728"}


def elevation(gpus: pl.DataFrame, links: pl.DataFrame, rack_id: int) -> go.Figure:
    """One rack seen from the front: hosts stacked (slot 0 at the bottom), each host's GPUs in a line coloured by
    state with its NICs (the gpu_rtsw cables) as small diamonds above them, and the rack switch (RTSW) on top
    with its uplinks to the spine, each coloured up or down.

    `gpus`: the rack's rows of queries.floor_cells (hostname, slot, gpu_index, state, job_id, temp_c, power_w,
    host_kw); `links`: queries.rack_links (tier, a, b, state, util_pct), possibly empty.
    """
    gpus, links = as_plot_text(gpus, "hostname", "job_id"), as_plot_text(links, "a", "b")
    slots = int(gpus["slot"].max()) + 1 if gpus.height else 1
    width = int(gpus["gpu_index"].max()) + 1 if gpus.height else 8
    fig = go.Figure()
    fig.add_traces(_gpu_cells(gpus))
    if links.height:
        fig.add_traces(_nics(links, gpus))
        fig.add_traces(_uplinks(links, width, slots))
    _switch(fig, links, rack_id, width, slots)
    _host_labels(fig, gpus)
    fig.update_layout(
        height=120 + 70 * (slots + 1),
        margin={"l": 220, "r": 10, "t": 30, "b": 10},
        plot_bgcolor="white",
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_xaxes(
        range=[-0.6, width - 0.4],
        tickvals=list(range(width)),
        ticktext=[f"GPU {i}" for i in range(width)],
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(range=[-0.6, slots + 0.8], showticklabels=False, showgrid=False, zeroline=False)
    return fig


def _gpu_cells(gpus: pl.DataFrame) -> list[go.Scatter]:
    """The GPUs, a square each, a trace per state; hover: host, GPU, state, job and last reading."""
    states = gpus["state"].fill_null("unknown")
    traces = []
    reading = (
        pl.format(" · {} °C · {} W", pl.col("temp_c").round(0), pl.col("power_w").round(0))
        if {"temp_c", "power_w"} <= set(gpus.columns)
        else pl.lit("")
    )
    hover = gpus.with_columns(states.alias("state")).select(
        pl.format(
            "<b>{} GPU {}</b><br>{} · {}{}",
            pl.col("hostname"),
            pl.col("gpu_index"),
            state_words_expr("state"),
            pl.col("job_id").fill_null("no job"),
            reading.fill_null(" · no reading"),
        )
    )["hostname"]
    for state in [s for s in STATE_ORDER if s in set(states.to_list())]:
        mine = (states == state).to_numpy()
        traces.append(
            go.Scatter(
                x=gpus["gpu_index"].to_numpy()[mine],
                y=gpus["slot"].to_numpy()[mine],
                mode="markers",
                name=STATE_WORDS.get(state, state),
                text=hover.to_numpy()[mine],
                hovertemplate="%{text}<extra></extra>",
                marker={
                    "symbol": "square",
                    "size": 26,
                    "color": STATE_COLOURS[state],
                    "line": {"width": 1, "color": "#495057"},
                },
            )
        )
    return traces


def _nics(links: pl.DataFrame, gpus: pl.DataFrame) -> list[go.Scatter]:
    """Each GPU's NIC cable to the rack switch, a small diamond above the GPU, up or down."""
    traces = []
    nics = links.filter(pl.col("tier") == "gpu_rtsw").with_columns(
        pl.col("a").str.split(":gpu").list.get(0).alias("hostname"),
        pl.col("a").str.split(":gpu").list.get(1).cast(pl.Int64, strict=False).alias("gpu_index"),
    )
    nics = nics.join(gpus.select("hostname", "slot").unique(), on="hostname", how="inner")
    for state in ("up", "down"):
        mine = nics.filter(pl.col("state") == state)
        if mine.height:
            traces.append(
                go.Scatter(
                    x=mine["gpu_index"].to_numpy(),
                    y=mine["slot"].to_numpy() + 0.4,
                    mode="markers",
                    name=f"NIC {state}",
                    hovertemplate="%{text}<extra></extra>",
                    text=mine.select(
                        pl.format("NIC cable {} → {} ({} Gbps): {}", "a", "b", "capacity_gbps", "state")
                    )["a"].to_list(),
                    marker={"symbol": "diamond", "size": 9, "color": LINK_COLOURS[state]},
                )
            )
    return traces


def _uplinks(links: pl.DataFrame, width: int, slots: int) -> list[go.Scatter]:
    """The rack switch's uplinks to the spine, spread over its width, up or down."""
    traces = []
    uplinks = links.filter(pl.col("tier") == "rtsw_ctsw").with_row_index("k")
    if uplinks.height:
        x = np.linspace(0, width - 1, uplinks.height)
        for state in ("up", "down"):
            mine = uplinks.filter(pl.col("state") == state)
            if mine.height:
                traces.append(
                    go.Scatter(
                        x=x[mine["k"].to_numpy()],
                        y=np.full(mine.height, slots + 0.45),
                        mode="markers",
                        name=f"uplink {state}",
                        hovertemplate="%{text}<extra></extra>",
                        text=mine.select(
                            pl.format("uplink {} → {} ({} Gbps): {}", "a", "b", "capacity_gbps", "state")
                        )["a"].to_list(),
                        marker={"symbol": "triangle-up", "size": 9, "color": LINK_COLOURS[state]},
                    )
                )
    return traces


def _switch(fig: go.Figure, links: pl.DataFrame, rack_id: int, width: int, slots: int) -> None:
    """The rack switch on top, named with its links down."""
    down = int((links["state"] == "down").sum()) if links.height else 0
    switch = f"rtsw-{rack_id}" + (f" · {down} link(s) down" if down else "")
    fig.add_shape(
        type="rect",
        x0=-0.5,
        x1=width - 0.5,
        y0=slots - 0.3,
        y1=slots + 0.25,
        fillcolor="#343a40",
        line={"width": 0},
    )
    fig.add_annotation(
        x=(width - 1) / 2, y=slots - 0.02, text=switch, showarrow=False, font={"color": "white", "size": 12}
    )


def _host_labels(fig: go.Figure, gpus: pl.DataFrame) -> None:
    """Each host's name, own state, job and power, left of its line."""
    # a host's own state: a failed GPU colours its cell, not the host's line
    host_state = (
        state_words_expr("state").filter(pl.col("state") != "failed").first().fill_null(GPU_FAILED_LABEL)
    )
    for host in (
        gpus.group_by("slot", "hostname")
        .agg(
            host_state,
            pl.col("job_id").first(),
            *([pl.col("host_kw").first()] if "host_kw" in gpus.columns else []),
        )
        .iter_rows(named=True)
    ):
        kw = f" · {host['host_kw']:.1f} kW" if host.get("host_kw") is not None else ""
        fig.add_annotation(
            x=-0.01,
            xref="paper",
            y=host["slot"],
            xanchor="right",
            showarrow=False,
            align="right",
            text=f"<b>{host['hostname']}</b><br>{host['state']}<br>{host['job_id'] or 'no job'}{kw}",
        )
