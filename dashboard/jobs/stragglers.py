"""Stragglers (a run with an op-level timeline, `goodput ingest step-times`): the job's what-if slowdown S and its
waste, what kind of slowness it is and whether a hardware fault is suspected, the persistent straggler, the
heat map of S by worker (DP rank x stage) and the attribution by stage and by kind of op
(engine.analysis.stragglers, the same report as `goodput stragglers --run RUN_ID`)."""

import polars as pl
import streamlit as st

from dashboard import chart_view, table_view
from dashboard.charts import stragglers as charts
from dashboard.format import fmt_duration, fmt_int, fmt_pct
from dashboard.jobs.common import metric
from dashboard.queries import jobs_stragglers as queries
from dashboard.text import md
from engine.analysis.definitions import definition
from engine.analysis.stragglers import StragglerReport
from engine.errors import GoodputError
from engine.report.palette import readable
from engine.store import RunInfo


def has_timeline(run: RunInfo) -> bool:
    """Whether the run holds an op-level timeline (a run made by `goodput ingest step-times`)."""
    return queries.has_step_ops(run.run_id)


def stragglers_section(run: RunInfo) -> None:
    """The section, drawn only for a run with a timeline."""
    if not has_timeline(run):
        return
    st.subheader("Stragglers", help=definition("straggler_slowdown").help)
    try:
        with st.spinner("Simulating the job's steps as recorded and at the typical pace…"):
            report = queries.report(run.run_id)
    except GoodputError as err:
        st.error(f"The step timeline cannot be analysed: {md(err)}", icon=":material/error:")
        return
    figures(report)
    heat_map(report)
    attribution(report)


def straggler_text(report: StragglerReport) -> str:
    s = report.persistent_straggler
    return "none" if s is None else f"DP rank {s.dp_rank}, stage {s.stage}"


def figures(r: StragglerReport) -> None:
    """S, waste and the stages' part; the kind of slowness and the persistent straggler; the verdict in words."""
    cols = st.columns(3)
    metric(cols[0], "straggler_slowdown", f"{r.slowdown:.3f}")
    metric(cols[1], "straggler_waste", fmt_pct(r.waste), note="Of this job's time.")
    metric(cols[2], "stage_imbalance_slowdown", f"{r.stage_imbalance:.3f}")
    cols = st.columns(2)  # words: wider columns, so "Sequence imbalance" or "DP rank 1023, stage 31" fit
    metric(cols[0], "straggler_kind", readable(r.kind))
    s = r.persistent_straggler
    metric(
        cols[1],
        "persistent_straggler",
        straggler_text(r),
        None if s is None else f"the largest cause in {s.share_of_steps:.0%} of steps",
        delta_color="off",
        delta_arrow="off",
    )
    st.markdown(f"**{readable(r.kind)}**: {r.explanation}.")
    if r.hardware_fault_suspected:
        where = (
            f" Look first at the host of DP rank {s.dp_rank}, stage {s.stage}."
            if s is not None
            else " The slow workers change from step to step: look for fail-slow episodes on the job's hosts."
        )
        st.warning(f"A hardware or host fault is suspected.{where}", icon=":material/warning:")
    ignored = (
        f" {fmt_int(r.ignored_ops)} ops between computes (neither compute nor send/recv) were left out."
        if r.ignored_ops
        else ""
    )
    st.caption(
        f"{fmt_int(r.dp * r.stages)} workers ({fmt_int(r.dp)} DP ranks x {fmt_int(r.stages)} pipeline stages), "
        f"{fmt_int(r.steps)} steps of {fmt_int(r.microbatches)} microbatches, {fmt_int(r.ops)} ops. Mean step "
        f"{_seconds(r.step_time_s)} simulated with the recorded durations, {_seconds(r.ideal_step_time_s)} with "
        f"every op at its typical duration.{ignored}"
    )


def _seconds(s: float) -> str:
    return f"{s:.3f} s" if s < 60 else fmt_duration(s)


def heat_map(r: StragglerReport) -> None:
    d = definition("straggler_attribution")
    st.markdown("**What-if slowdown by worker (DP rank x stage)**", help=d.help)
    s = r.persistent_straggler
    chart_view.plotly(
        charts.worker_heatmap(r.by_worker, None if s is None else (s.dp_rank, s.stage)),
        width="stretch",
        key="jobs_stragglers_heatmap",
    )
    st.caption(
        "Each cell is the S of a what-if in which only that worker keeps its recorded durations and every other "
        "op runs at the typical pace: red slows the job, white is typical, blue is faster than typical."
        + ("" if s is None else " The circled worker is the persistent straggler.")
    )


def attribution_tables(r: StragglerReport) -> tuple[pl.DataFrame, pl.DataFrame]:
    """S with only that stage (kind of op) as recorded, largest first."""
    by_stage = pl.DataFrame(
        {"stage": list(range(r.stages)), "slowdown": list(r.by_stage)},
        schema={"stage": pl.Int64, "slowdown": pl.Float64},
    ).sort("slowdown", "stage", descending=[True, False])
    by_optype = pl.DataFrame(
        {"optype": list(r.by_optype), "slowdown": list(r.by_optype.values())},
        schema={"optype": pl.String, "slowdown": pl.Float64},
    )
    return by_stage, by_optype


def attribution(r: StragglerReport) -> None:
    by_stage, by_optype = attribution_tables(r)
    # a short header (the definition's label is long for a narrow column), the definition's help on it
    s_alone = st.column_config.NumberColumn(
        "S with only it as recorded", help=definition("straggler_attribution").help, format="%.3f"
    )
    cols = st.columns(2)
    cols[0].markdown("**By pipeline stage**")
    table_view.dataframe(
        by_stage,
        cols[0],
        hide_index=True,
        width="stretch",
        column_config={"stage": "Stage", "slowdown": s_alone},
    )
    cols[1].markdown("**By kind of op**")
    table_view.dataframe(
        by_optype,
        cols[1],
        hide_index=True,
        width="stretch",
        column_config={"optype": "Kind of op", "slowdown": s_alone},
    )
