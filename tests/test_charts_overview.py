"""The Overview's chart of a watched cluster's jobs: one stacked bar of kept, lost work and time between attempts
(the summary's jobs_ledger_gpu_hours), in the ledger's colours, each named by its definition."""

from dashboard.charts import overview as charts
from engine.analysis.definitions import definition
from engine.report.palette import LOSS_COLOURS


def test_the_observed_ledger_stacks_kept_lost_work_and_between_attempts():
    fig = charts.observed_ledger({"wall": 100.0, "kept": 70.0, "lost_work": 10.0, "between_attempts": 20.0})
    assert fig.layout.barmode == "stack"
    assert [t.name for t in fig.data] == [
        "kept",
        definition("observed_lost_work").label,
        definition("observed_between_attempts").label,
    ]
    assert [t.x[0] for t in fig.data] == [70.0, 10.0, 20.0]
    assert [t.marker.color for t in fig.data] == [
        LOSS_COLOURS["productive"],
        LOSS_COLOURS["lost_work"],
        LOSS_COLOURS["restart"],
    ]
    assert [t.text[0] for t in fig.data][0] == "kept 70%"


def test_an_empty_ledger_draws_no_shares():
    fig = charts.observed_ledger({"wall": 0.0, "kept": 0.0, "lost_work": 0.0, "between_attempts": 0.0})
    assert [t.text[0] for t in fig.data] == ["", "", ""]
