"""The lemons and repeat offenders: the lemon rule on the incidents a run observed, scored against the
simulator's ground truth where the run has one, and the hosts and GPUs that failed more than once."""

import polars as pl
import streamlit as st

from dashboard import chart_view, fault_history, lazy
from dashboard.charts import lemons as lemon_charts
from dashboard.format import fmt_duration, fmt_int, fmt_pct
from dashboard.gpus.common import SHOWN_ROWS, in_words, metric, table, times
from dashboard.queries import gpus as queries
from engine.analysis.definitions import definition
from engine.analysis.lemon_score import LemonRule, LemonScore, score_lemon_rule
from engine.analysis.run_summary import RunSummary
from engine.store import RunInfo

TRUTH_TITLE = "The lemon rule against the simulator's ground truth"


def lemon_section(run: RunInfo) -> int | None:
    """The lemons and repeat offenders; returns a GPU clicked in the offenders' history, if any."""
    failures, window = queries.repair_rule(run.scenario)
    lemons = queries.lemons(run.run_id, failures, window)
    cluster = RunSummary.from_json(run.summary).cluster
    pulled = cluster.lemons if cluster is not None else None
    # a fault history names nodes, not GPUs, and ran no job: no GPU offenders, no GPU-hours lost
    gpus_known = not fault_history.is_fault_history(run)
    cols = st.columns(4)
    metric(cols[0], "lemon_rule_hosts", fmt_int(lemons.height))
    metric(cols[1], "lemons_pulled", fmt_int(pulled) if isinstance(pulled, int) else "–")
    metric(cols[2], "repeat_offender_hosts", fmt_int(queries.offender_count(run.run_id, "host", 2)))
    if gpus_known:
        metric(cols[3], "repeat_offender_gpus", fmt_int(queries.offender_count(run.run_id, "gpu", 2)))
    short = (
        f" This run spans {fmt_duration(run.duration_s)}, less than the rule's window: only failures that "
        "close together can meet it."
        if 0 < run.duration_s < window
        else ""
    )
    st.caption(
        f"The lemon rule, on the incidents this run observed: {failures} hardware failures within "
        f"{fmt_duration(window)} (the run's repair.lemon_failures and repair.lemon_window) send a host's "
        "part back to the vendor."
        + short
        + (
            ""
            if isinstance(pulled, int)
            else " The run has no count of lemon hosts pulled: only the simulator's repair model pulls hosts."
        )
    )
    # only a simulation knows its bad hosts: a replay feeds recorded failures, whatever hosts it may mark bad
    truth = queries.ground_truth(run.run_id) if run.kind == "simulate" else None
    if not lemons.is_empty():
        st.markdown(f"**{definition('lemon_rule_hosts').label}**")
        listed = lemons.head(SHOWN_ROWS)
        if truth is not None:  # each flagged host's truth beside its name
            listed = queries.with_truth(listed, truth).select(
                "host_id", "hostname", "bad", pl.exclude("host_id", "hostname", "bad")
            )
        table(st, in_words(times(listed, run, "flagged_s")))
    lemon_truth(run, lemons, truth, LemonRule(failures, window))
    lemon_hosts = queries.offenders(run.run_id, "host", minimum=2, limit=SHOWN_ROWS)
    lemon_gpus = queries.offenders(run.run_id, "gpu", minimum=2, limit=SHOWN_ROWS)
    if not gpus_known:
        return history_offenders(run, lemon_hosts)

    def incidents_per_host_and_gpu() -> None:
        # one above the other, each as wide as the page: side by side, the causes column was cut at 1280 px
        table(st, in_words(times(queries.offenders(run.run_id, "host"), run, "first_s", "last_s")))
        table(st, in_words(times(queries.offenders(run.run_id, "gpu"), run, "first_s", "last_s")))

    lazy.expander(
        f"{definition('unplanned_incidents').label} per host and per GPU (top {SHOWN_ROWS})",
        "gpus_incidents_per_host_and_gpu",
        incidents_per_host_and_gpu,
    )
    if lemon_hosts.is_empty() and lemon_gpus.is_empty():
        st.info("No host or GPU failed more than once in this run.")
        return None
    st.markdown(f"**{definition('repeat_offender_hosts').label}** (the worst {SHOWN_ROWS} first)")
    table(st, in_words(times(lemon_hosts, run, "first_s", "last_s")))
    st.markdown(f"**{definition('repeat_offender_gpus').label}** (the worst {SHOWN_ROWS} first)")
    table(st, in_words(times(lemon_gpus, run, "first_s", "last_s")))
    if not lemon_gpus.is_empty() and "gpu" not in st.query_params:
        st.caption(f"The worst repeat offender is GPU {lemon_gpus['gpu_id'][0]}.")
    history = queries.offender_incidents(run.run_id, minimum=2)
    if history.is_empty():
        return None
    st.caption("Each incident of the worst hosts; click one on a GPU to open that GPU below.")
    clicked = chart_view.plotly(
        lemon_charts.offender_history(history, run.started_at),
        width="stretch",
        on_select="rerun",
        selection_mode="points",
        key=f"gpus_offenders:{run.run_id}",
    )
    return lemon_charts.clicked_gpu(clicked.selection if clicked else None)


def history_offenders(run: RunInfo, lemon_hosts: pl.DataFrame) -> None:
    """A fault history's repeat offenders: its hosts that failed more than once, with each failure drawn."""
    if lemon_hosts.is_empty():
        st.info("No host failed more than once in this history.")
        return
    st.markdown(f"**{definition('repeat_offender_hosts').label}** (the worst {SHOWN_ROWS} first)")
    table(st, in_words(times(lemon_hosts.drop("gpu_hours_lost"), run, "first_s", "last_s")))
    history = queries.offender_incidents(run.run_id, minimum=2)
    if not history.is_empty():
        st.caption("Each unplanned outage of the worst hosts, by cause.")
        chart_view.plotly(lemon_charts.offender_history(history, run.started_at), width="stretch")


def lemon_truth(run: RunInfo, lemons: pl.DataFrame, truth: pl.DataFrame | None, rule: LemonRule) -> None:
    """The lemon rule scored against the simulator's ground truth (hosts.bad): what it flagged that is bad,
    what bad it missed; for a run without ground truth, that it has none."""
    if truth is None:
        st.markdown(f"**{TRUTH_TITLE}**")
        st.info(
            "This run has no ground truth of bad hosts, so the lemon rule cannot be scored: "
            + (
                "it was written before simulated runs recorded which hosts the simulator drew bad."
                if run.kind == "simulate"
                else "it was observed (replayed or ingested), and nobody knows which of its hosts are "
                "systematically bad."
            )
        )
        return
    score = score_lemon_rule(lemons, truth, rule)
    st.markdown(truth_sentence(score))
    cols = st.columns(5)
    metric(cols[0], "lemon_rule_hosts", fmt_int(score.flagged_hosts))
    metric(cols[1], "lemon_rule_true_positives", fmt_int(score.true_positives))
    metric(cols[2], "lemon_rule_precision", fmt_pct(score.precision))
    metric(cols[3], "bad_hosts_ground_truth", fmt_int(score.bad_hosts))
    metric(cols[4], "lemon_rule_recall", fmt_pct(score.recall))
    st.caption(chance_sentence(score))
    counts = queries.lemon_truth_counts(run.run_id, rule.window_s)
    chart_view.plotly(lemon_charts.lemon_truth(counts, rule.failures), width="stretch")


def hosts_text(n: int) -> str:
    return f"{n:,} host" + ("" if n == 1 else "s")


def truth_sentence(score: LemonScore) -> str:
    """ "Flagged N hosts, M of them bad (precision P), found M of the K bad hosts (recall R)", in words where a
    ratio is undefined."""
    flagged = (
        f"flagged {hosts_text(score.flagged_hosts)}, {score.true_positives:,} of them bad "
        f"(precision {fmt_pct(score.precision)})"
        if score.flagged_hosts
        else "flagged no host (precision undefined)"
    )
    found = (
        f"found {score.true_positives:,} of the {score.bad_hosts:,} bad {'host' if score.bad_hosts == 1 else 'hosts'}"
        f" (recall {fmt_pct(score.recall)})"
        if score.bad_hosts
        else "and the simulator drew no bad host (failures.bad_host_fraction = 0: recall undefined)"
    )
    return f"**{TRUTH_TITLE}:** {flagged}, {found}."


def chance_sentence(score: LemonScore) -> str:
    """What flagging as many hosts at random would score, the yardstick for the rule's figures: a precision
    only where something was flagged, a recall only where some host was bad (else each is undefined, as in
    truth_sentence: never "undefined" there beside "0.0%" here)."""
    if not score.hosts:
        return ""
    bars = (
        f"Each bar below is a share of its own group; hosts in the shaded part meet the rule "
        f"({score.rule.failures} repair-sending incidents within {fmt_duration(score.rule.window_s)})."
    )
    drawn = f"{score.bad_hosts:,} of the run's {score.hosts:,} hosts were drawn bad ({fmt_pct(score.chance_precision)})"
    if not score.flagged_hosts:
        return f"{drawn}; the rule flagged no host, so there is no random pick of as many to compare with. {bars}"
    expected = score.flagged_hosts * score.bad_hosts / score.hosts
    recall = f"recall {fmt_pct(score.chance_recall)}" if score.bad_hosts else "recall undefined"
    return (
        f"{drawn}: flagging {hosts_text(score.flagged_hosts)} at random would find about {expected:,.1f} bad "
        f"ones (precision {fmt_pct(score.chance_precision)}, {recall}). {bars}"
    )
