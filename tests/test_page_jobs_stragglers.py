"""Jobs page, Stragglers (issue 24, 4): a run made by `goodput ingest step-times` shows its what-if slowdown S,
waste, the kind of slowness, the persistent straggler, the heat map of workers and the attribution by stage and
kind of op, the same figures as `goodput stragglers`; a run without a timeline has no such section; names from
the file render as text; the flagship's ledger carries its fail-slow slowdown where the run has one."""

from dataclasses import replace

import numpy as np
import pytest
from test_charts_pages import open_page

from dashboard.charts.stragglers import worker_heatmap
from dashboard.format import fmt_gpu_hours, fmt_pct
from dashboard.text import plot
from engine.analysis.definitions import definition
from engine.analysis.run_summary import RunSummary
from engine.analysis.step_timeline import layout
from engine.analysis.stragglers import analyse
from engine.ingest.step_times import ingest_step_times
from engine.store import Store
from tests.fixtures.step_times import pipeline_ops, to_csv
from tests.runs import FLAGSHIP, make_store, small_run

PAGE = "app_pages/jobs.py"
HOSTILE = "![x](http://evil.example/i.png) <b>bold</b> :red[red]"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def ingested(store_dir, tmp_path, frame, name: str | None = None) -> str:
    path = tmp_path / "ops.csv"
    path.write_bytes(to_csv(frame))
    return Store(store_dir).write_run(ingest_step_times([path], name=name))


def test_a_slow_worker_shows_s_the_kind_the_straggler_and_the_heat_map(store_dir, tmp_path):
    frame = pipeline_ops(dp=3, stages=2, steps=4, slow={(1, 1): 2.0})
    expected = analyse(layout(frame))
    run_id = ingested(store_dir, tmp_path, frame)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    assert "Stragglers" in [h.value for h in at.subheader]
    # one job's timeline alone: no schedule's sections (Gantt, queue, table) to show empty
    assert "Attempts over time" not in [h.value for h in at.subheader] and "Jobs" not in metrics(at)
    m = metrics(at)
    assert m[definition("straggler_slowdown").label] == f"{expected.slowdown:.3f}"
    assert m[definition("straggler_waste").label] == fmt_pct(expected.waste)
    assert m[definition("straggler_kind").label] == "Worker"
    assert m[definition("persistent_straggler").label] == "DP rank 1, stage 1"
    help_of = {x.label: x.help for x in at.metric}
    assert help_of[definition("straggler_waste").label].startswith(definition("straggler_waste").help)
    assert [w.value for w in at.warning] == [
        "A hardware or host fault is suspected. Look first at the host of DP rank 1, stage 1."
    ]
    assert any("6 workers (3 DP ranks x 2 pipeline stages), 4 steps" in c.value for c in at.caption)
    heat = [c for c in at.get("plotly_chart") if "jobs_stragglers_heatmap" in str(c.proto.id)]
    assert len(heat) == 1
    # the attribution: by stage (stage 1 first, its slow worker) and by kind of op
    stages, optypes = at.dataframe[0].value, at.dataframe[1].value
    assert stages["stage"].tolist() == [1, 0]
    assert stages["slowdown"].tolist() == pytest.approx([expected.by_stage[1], expected.by_stage[0]])
    assert optypes["optype"].tolist() == list(expected.by_optype)


def test_a_stage_imbalance_is_said_not_to_be_hardware(store_dir, tmp_path):
    run_id = ingested(store_dir, tmp_path, pipeline_ops(stage_factor={1: 2.0}))
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    m = metrics(at)
    assert m[definition("straggler_kind").label] == "Stage imbalance"
    assert m[definition("persistent_straggler").label] == "none"
    assert any("not a hardware fault" in x.value for x in at.markdown) and not at.warning


def test_a_run_without_step_times_has_no_stragglers_section(store_dir):
    make_store(store_dir, small_run())
    at = open_page(PAGE, {"run": "sim-20240301-000000-aaaaaa"})
    assert not at.exception
    assert "Stragglers" not in [h.value for h in at.subheader]
    assert definition("straggler_slowdown").label not in metrics(at)


def test_names_from_the_file_render_as_text(store_dir, tmp_path):
    # a hostile kind of op after the computes (a tail slot) and a hostile run name
    frame = pipeline_ops(slow={(1, 1): 2.0})
    frame = frame.with_columns(frame["optype"].replace({"optimizer": HOSTILE}))
    run_id = ingested(store_dir, tmp_path, frame, name=HOSTILE)
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    optypes = at.dataframe[1].value["optype"].tolist()
    assert HOSTILE in optypes  # a table cell: plain text, as it is
    for x in [*at.markdown, *at.caption]:
        assert "](http" not in x.value and "<b>" not in x.value


def test_the_heat_map_is_workers_by_stage_with_the_straggler_circled():
    fig = worker_heatmap([[1.0, 1.0], [1.0, 1.5], [1.0, 0.9]], straggler=(1, 1), label="<b>S</b>")
    heat = fig.data[0]
    assert np.asarray(heat.z).shape == (3, 2)
    assert heat.zmin == pytest.approx(0.5) and heat.zmax == pytest.approx(1.5)  # white at 1
    assert heat.hovertext[1][1] == plot("DP rank 1, stage 1") + f"<br>{plot('<b>S</b>')}: 1.500"
    assert "<b>" not in heat.hovertext[0][0]
    assert (fig.data[1].x[0], fig.data[1].y[0]) == (1, 1)
    assert len(worker_heatmap([[1.0, 1.0]]).data) == 1  # no straggler: nothing circled


def test_the_flagship_shows_its_fail_slow_slowdown_beside_its_other_losses(store_dir):
    run = small_run()
    summary = RunSummary.from_json(run.summary)
    losses = dict(summary.job.losses_gpu_hours) | {"slowdown": 12.5}
    data = run.summary | {"job": run.summary["job"] | {"losses_gpu_hours": losses}}
    make_store(store_dir, replace(run, summary=data))
    at = open_page(PAGE, {"run": "sim-20240301-000000-aaaaaa", "job": FLAGSHIP})
    assert not at.exception
    m = metrics(at)
    assert m[definition("slowdown_fail_slow").label] == fmt_gpu_hours(12.5)
    assert definition("lost_work").label in m  # beside the others


def test_without_fail_slow_the_flagship_shows_no_slowdown(store_dir):
    make_store(store_dir, small_run())
    at = open_page(PAGE, {"run": "sim-20240301-000000-aaaaaa", "job": FLAGSHIP})
    assert not at.exception
    assert definition("slowdown_fail_slow").label not in metrics(at)
