"""Straggler charts: the what-if slowdown of each worker of a job (DP rank x pipeline stage) as a heat map
(engine.analysis.stragglers: S with only that worker as recorded). Numbers in, a Plotly figure out."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from dashboard.text import plot

# Rows of the heat map past which the DP ranks' tick labels are left to Plotly (every one would overlap).
MAX_TICKED_RANKS = 64


def worker_heatmap(
    by_worker: Sequence[Sequence[float]],
    straggler: tuple[int, int] | None = None,
    label: str = "S with only this worker as recorded",
) -> go.Figure:
    """`by_worker[dp_rank][stage]` as a heat map, DP ranks down, stages across; white at 1 (a worker at the
    typical pace), red above (it slows the job), blue below. `straggler` (dp_rank, stage) is circled.
    `label` names the value in the hover and the colour bar (plain text: it goes through dashboard.text.plot).
    """
    z = np.asarray(by_worker, dtype=float)
    dp, stages = z.shape if z.ndim == 2 else (0, 0)
    name = plot(label)
    hover = [
        [plot(f"DP rank {d}, stage {s}") + f"<br>{name}: {z[d, s]:.3f}" for s in range(stages)]
        for d in range(dp)
    ]
    spread = float(np.nanmax(np.abs(z - 1.0))) if z.size else 0.0
    spread = max(spread, 0.01)  # a flat job still gets a scale, not a division by zero
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=list(range(stages)),
            y=list(range(dp)),
            hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>",
            colorscale="RdBu_r",
            zmin=1.0 - spread,
            zmax=1.0 + spread,
            colorbar={"title": {"text": "S alone", "side": "right"}},
            xgap=1 if stages <= 64 else 0,
            ygap=1 if dp <= 64 else 0,
        )
    )
    if straggler is not None:
        d, s = straggler
        fig.add_trace(
            go.Scatter(
                x=[s],
                y=[d],
                mode="markers",
                marker={"symbol": "circle-open", "size": 18, "color": "black", "line": {"width": 3}},
                name="Persistent straggler",
                hovertemplate=plot(f"Persistent straggler: DP rank {d}, stage {s}") + "<extra></extra>",
                showlegend=False,  # the page's caption says what the circle is
            )
        )
    fig.update_layout(
        height=min(max(240, 80 + 28 * dp), 640),
        margin={"l": 60, "r": 20, "t": 20, "b": 50},
    )
    fig.update_xaxes(title_text="Pipeline stage", dtick=1 if stages <= 32 else None, showgrid=False)
    fig.update_yaxes(
        title_text="DP rank",
        autorange="reversed",
        dtick=1 if dp <= MAX_TICKED_RANKS else None,
        showgrid=False,
    )
    return fig
