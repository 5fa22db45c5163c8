"""The Planner's fail-slow chart: the flagship's ETTR under each policy and detection delay, its 5-95 % band as
error bars, beside the line of ignoring slow hosts."""

import plotly.graph_objects as go
import polars as pl

from dashboard.text import plot

POLICY_COLOURS = {"swap": "#2171b5", "drain": "#6a51a3"}


def policy_ettr(rows: pl.DataFrame) -> go.Figure:
    """Grouped bars (rows of policy, detect_after, detect_after_s, ettr_mean, ettr_p5, ettr_p95): a bar a
    policy at each detection delay; ignore (no detection) as a dashed line with its band shaded."""
    fig = go.Figure()
    ignore = rows.filter(pl.col("policy") == "ignore")
    acting = rows.filter(pl.col("policy") != "ignore").sort("detect_after_s")
    delays = acting["detect_after"].unique(maintain_order=True).to_list()
    for policy in acting["policy"].unique(maintain_order=True).to_list():
        part = acting.filter(pl.col("policy") == policy)
        mean = part["ettr_mean"].to_list()
        fig.add_trace(
            go.Bar(
                x=[plot(d) for d in part["detect_after"].to_list()],
                y=mean,
                name=plot(policy),
                marker_color=POLICY_COLOURS.get(policy, "#888"),
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [h - m for h, m in zip(part["ettr_p95"].to_list(), mean, strict=True)],
                    "arrayminus": [m - lo for lo, m in zip(part["ettr_p5"].to_list(), mean, strict=True)],
                },
                hovertemplate=f"{plot(policy)}, detected after %{{x}}: ETTR %{{y:.2%}}<extra></extra>",
            )
        )
    if ignore.height:
        row = ignore.row(0, named=True)
        fig.add_hrect(y0=row["ettr_p5"], y1=row["ettr_p95"], fillcolor="rgba(150,150,150,0.2)", line_width=0)
        fig.add_hline(
            y=row["ettr_mean"],
            line_dash="dash",
            line_color="#555",
            annotation_text=f"ignore: {row['ettr_mean']:.1%}",
            annotation_position="top left",
        )
    fig.update_layout(
        barmode="group",
        height=340,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={
            "title": "detected after",
            "categoryorder": "array",
            "categoryarray": [plot(d) for d in delays],
        },
        yaxis={"title": "ETTR of the flagship job", "tickformat": ".0%"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
    )
    return fig
