"""What every chart shares beyond the palette (engine.report.palette: one colour per meaning, shared with the HTML
export) and the number formats (dashboard.format): axis settings.
"""

# ----- axes ------------------------------------------------------------------------------------------------


def count_axis(largest: float | None) -> dict:
    """Axis settings for a count (events, GPUs): whole numbers from zero, never "0.5 events"; for a small
    largest count (an observed run with a handful of XIDs) a tick at every whole number, since Plotly would
    otherwise step by halves."""
    axis = {"rangemode": "tozero", "tickformat": ",d"}
    if largest is None or largest <= 10:
        axis["dtick"] = 1
    return axis
