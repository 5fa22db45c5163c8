"""Compare: two or more runs side by side: headline figures (recovery strategy and its costs among them), what
differs in their scenarios; then, once scrolled to, a row of tabs, only the open one drawn (dashboard/lazy.py: each
chart costs the browser a few tenths of a second whether or not anyone scrolls to it): ETTR over time, what
failures cost each, interruptions by cause.

URL: ?runs=a,b (run ids), ?tab= (the open tab's label) and ?per=host-days (rates instead of counts) reproduce the
view.
"""

import polars as pl
import streamlit as st

from dashboard import chart_view, lazy, state, table_view
from dashboard.charts import compare as charts
from dashboard.queries import compare as queries
from dashboard.text import md
from dashboard.text_exprs import cause_label_text
from engine.report.visible_text import visible
from engine.store import RunInfo

ETTR_TAB = "ETTR over time"
COSTS_TAB = "What failures cost"
CAUSES_TAB = "Interruptions by cause"


def page() -> None:
    """The runs chosen, the headline figures and scenario keys, then the tabs: ETTR over time, costs, causes."""
    infos = choose_runs()
    if infos is None:
        return
    labels = [queries.run_label(info) for info in infos]
    headlines_section(infos)
    scenario_section(infos)
    # under the figures and scenario keys (more than a 1000 px screen): drawn once the reader scrolls near them,
    # or at once where a link opens one (?tab=); the first chart of a visit costs it Plotly's code, about a second
    lazy.below_fold(
        "compare_tabs",
        "The charts below (ETTR over time, what failures cost, interruptions by cause)",
        lambda: lazy.tabs(
            {
                ETTR_TAB: lambda: ettr_section(infos, labels),
                COSTS_TAB: lambda: costs_section(infos, labels),
                CAUSES_TAB: lambda: causes_section(infos, labels),
            }
        ),
        url_keys=(lazy.TAB_PARAMETER,),
    )


def choose_runs() -> list[RunInfo] | None:
    """The runs compared (?runs=), at least two; None (having said why) where the store has fewer."""
    runs = state.list_runs()
    if not runs:
        state.empty_state()
        return None
    by_id = {info.run_id: info for info in runs}
    if len(runs) < 2:
        st.info(
            "Comparing needs at least two runs; the store has one. Make another with `goodput simulate`, or run "
            "and keep one on the **Planner** page."
        )
        return None

    wanted = [r for r in st.query_params.get("runs", "").split(",") if r in by_id]
    if len(wanted) < 2:
        current = st.query_params.get(state.RUN_PARAM)
        wanted = list(dict.fromkeys([r for r in (current, *by_id) if r in by_id]))[
            :2
        ]  # the selected run and the newest
    if "compare_runs" in st.session_state:  # runs deleted since the last rerun leave the choice
        st.session_state["compare_runs"] = [r for r in st.session_state["compare_runs"] if r in by_id]
    else:
        st.session_state["compare_runs"] = wanted  # the first value comes from the URL; then the widget's own
    chosen = st.multiselect(
        "Runs", list(by_id), key="compare_runs", format_func=lambda r: visible(queries.run_label(by_id[r]))
    )
    st.query_params["runs"] = ",".join(chosen)
    if len(chosen) < 2:
        st.info("Pick at least two runs.")
        return None
    return [by_id[r] for r in chosen]


def headlines_section(infos: list[RunInfo]) -> None:
    st.subheader("Headline figures")
    # static cells: the rows are the headline figures (about twenty), the columns the runs chosen; the interactive
    # grid would cost a visit 0.4 s and a first visit another second to load its code
    table_view.static(queries.headlines(infos))


def name_width(names: pl.Series) -> int:
    """Pixels for a column of names in the table's 14 px font: about 7.5 px a character and the cell's padding."""
    longest = int(names.str.len_chars().max() or 0)
    return max(100, min(360, round(7.5 * longest) + 24))


def scenario_section(infos: list[RunInfo]) -> None:
    st.subheader("What differs in their scenarios")
    diff = queries.scenario_diff(infos)
    if diff.is_empty():
        st.caption("The runs share one scenario: any difference in their figures is chance (seed) or source.")
    else:
        st.caption(f"{diff.height} keys differ.")
        table_view.short(
            diff,
            column_config={
                "key": st.column_config.TextColumn("key", width=name_width(diff["key"]), pinned=True)
            },
        )


def ettr_section(infos: list[RunInfo], labels: list[str]) -> None:
    timeline = queries.ettr_over_time(infos)
    if timeline.is_empty():
        st.caption("None of these runs has a flagship job to follow.")
    else:
        missing = [label for label in labels if label not in set(timeline["run"].to_list())]
        st.caption(
            "The flagship job's productive share of the time since it started (Kokolis et al.'s ETTR)."
            + (f" No flagship job in: {', '.join(map(md, missing))}." if missing else "")
        )
        chart_view.plotly(
            charts.ettr_over_time(timeline, [lb for lb in labels if lb not in missing]), width="stretch"
        )


def costs_section(infos: list[RunInfo], labels: list[str]) -> None:
    costs = queries.failure_costs(infos)
    if costs.is_empty():
        st.caption("None of these runs has a flagship job whose losses to count.")
        return
    st.caption(
        "The flagship job's goodput lost in dollars, by loss, and the warm standby hosts its recovery strategy "
        "kept idle: a strategy that saves restarts but holds standbys, or trains on with replicas out, compares "
        "by the total."
    )
    shown = [label for label in labels if label in set(costs["run"].to_list())]
    chart_view.plotly(charts.failure_costs(costs, shown), width="stretch")


def causes_section(infos: list[RunInfo], labels: list[str]) -> None:
    st.caption(
        "Of each run's flagship job, as the headline figures count them; every incident where a run has no "
        "flagship job."
    )
    if "compare_per" not in st.session_state:
        st.session_state["compare_per"] = st.query_params.get("per") == "host-days"
    per_exposure = st.toggle(
        "Per 1,000 host-days",
        key="compare_per",
        help="divide by the hosts counted (the flagship job's, else the cluster's) x days, so "
        "runs of other sizes and spans compare",
    )
    if per_exposure:
        st.query_params["per"] = "host-days"
    else:
        st.query_params.pop("per", None)
    counts = queries.interruptions_by_cause(infos, per_1000_host_days=per_exposure)
    if counts.is_empty():
        st.info("None of these runs has interruptions.")
    else:
        chart_view.plotly(
            charts.causes_side_by_side(
                counts, "interruptions per 1,000 host-days" if per_exposure else "interruptions", labels
            ),
            width="stretch",
        )
        table = counts.pivot("run", index="cause", values="interruptions").fill_null(0)
        table = table.with_columns(pl.lit(0.0).alias(label) for label in labels if label not in table.columns)
        table = table.select(cause_label_text("cause").alias("cause"), *labels)
        table_view.short(
            table.sort(pl.sum_horizontal(pl.exclude("cause")), descending=True),
            column_config={"cause": st.column_config.TextColumn("cause", width=name_width(table["cause"]))},
        )


st.title("Compare")
page()
