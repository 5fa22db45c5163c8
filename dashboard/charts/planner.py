"""Planner chart: closed-form ETTR against the checkpoint interval, with the Young-Daly optimum marked."""

import math

import numpy as np
import plotly.graph_objects as go

from engine.analytics import closed_form_ettr, young_daly_interval


def interval_grid(current_s: float, optimum_s: float, points: int = 120) -> np.ndarray:
    """Log-spaced intervals covering a decade either side of both the current and the optimal interval."""
    anchors = [v for v in (current_s, optimum_s) if math.isfinite(v) and v > 0]
    low, high = min(anchors) / 10.0, max(anchors) * 10.0
    return np.geomspace(max(low, 1.0), max(high, 2.0), points)


def ettr_curve(*, gpus: int, rate_per_1000_node_days: float, checkpoint_interval_s: float,
               checkpoint_write_s: float, restart_overhead_s: float, gpus_per_host: int = 8) -> go.Figure:
    """ETTR(interval) of the closed form, the chosen interval and the Young-Daly interval as markers."""
    def ettr(interval: float) -> float:
        return closed_form_ettr(gpus=gpus, rate_per_1000_node_days=rate_per_1000_node_days,
                                checkpoint_interval_s=interval, checkpoint_write_s=checkpoint_write_s,
                                restart_overhead_s=restart_overhead_s, gpus_per_host=gpus_per_host).ettr

    mttf = closed_form_ettr(gpus=gpus, rate_per_1000_node_days=rate_per_1000_node_days,
                            checkpoint_interval_s=checkpoint_interval_s, checkpoint_write_s=checkpoint_write_s,
                            restart_overhead_s=restart_overhead_s, gpus_per_host=gpus_per_host).mttf_s
    optimum = young_daly_interval(checkpoint_write_s, mttf)
    grid = interval_grid(checkpoint_interval_s, optimum)
    fig = go.Figure(go.Scatter(x=grid / 60.0, y=[ettr(v) for v in grid], mode="lines", name="closed-form ETTR",
                               line={"color": "#1971c2"}))
    fig.add_trace(go.Scatter(x=[checkpoint_interval_s / 60.0], y=[ettr(checkpoint_interval_s)], mode="markers",
                             name="chosen interval", marker={"size": 12, "color": "#f08c00"}))
    if math.isfinite(optimum) and optimum > 0:
        fig.add_trace(go.Scatter(x=[optimum / 60.0], y=[ettr(optimum)], mode="markers+text",
                                 name="Young-Daly optimum", text=[f"{optimum / 60:.1f} min"],
                                 textposition="top center", marker={"size": 12, "symbol": "star",
                                                                    "color": "#2b8a3e"}))
    fig.update_layout(height=360, margin={"l": 10, "r": 10, "t": 10, "b": 10}, yaxis_title="ETTR",
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig.update_xaxes(type="log", title="checkpoint interval (min)")
    # Zoom on the curve (ETTR differences of a few points matter), never below 0 nor above 1.
    low = max(0.0, math.floor((min(fig.data[0].y) - 0.02) * 20) / 20)
    fig.update_yaxes(range=[low, 1.0])
    return fig
