"""GPUs page: the lemon rule against the simulator's ground truth (hosts.bad). A hand-made simulated run with
known bad hosts shows the rule's flags, hits and misses as figures, a sentence and a chart; a run without
ground truth (an older file without the column, an observed run, a truth with holes) says it has none and
shows no score."""

import re
from dataclasses import replace

import duckdb
import polars as pl
import pytest
from test_charts_pages import open_page, pages_run, sparse_run, stored_run

from dashboard.charts import gpus as charts
from dashboard.queries import gpus as queries
from engine.analysis.definitions import by_label, definition
from engine.store import Store
from engine.store.run import Run

PAGE = "app_pages/gpus.py"
TAB = "Lemons and repeat offenders"  # the section's tab under the health grid: only the open tab is drawn
SECTION = "**The lemon rule against the simulator's ground truth**"
# The rule of these runs: 2 repair-sending incidents within 6 hours (pages_run lasts one day)
RULE_SETS = ("repair.lemon_failures=2", "repair.lemon_window=6h")
BAD = (1, 4, 6)

# Incidents added to pages_run's four (1: faulty_gpu on host 1 at 20,000 s; 2: network_switch_cable on host 6
# at 30,000 s; 3: planned; 4: gpu_hbm3 on host 1 at 70,000 s): (id, t_s, cause, category, host, gpu)
EXTRA_INCIDENTS = (
    (5, 75000.0, "ssd", "Host", 1, None),  # host 1 (bad): 70,000 and 75,000 in 6 h: flagged, a true positive
    (6, 10000.0, "faulty_gpu", "GPU", 2, 4),  # host 2 (good): 10,000 and 12,000: flagged, a false alarm
    (7, 12000.0, "power_supply", "Host", 2, None),
    (8, 40000.0, "cpu", "Host", 4, None),  # host 4 (bad): one failure: missed
    (9, 60000.0, "nic", "Host", 6, None),  # host 6 (bad): 30,000 and 60,000, more than 6 h apart: missed
    (10, 80000.0, "software_bug", "Software", 5, None),  # host 5 (good): job-level causes send no host to
    (11, 81000.0, "dependency", "Software", 5, None),  # repair, so they never count towards the rule
)


def with_truth(run: Run, bad: list[bool | None]) -> Run:
    """`run` with the hosts table's ground truth set to `bad` (host by host)."""
    hosts = run.tables["hosts"].with_columns(pl.Series("bad", bad, dtype=pl.Boolean))
    return replace(run, tables={**run.tables, "hosts": hosts})


def truth_run(bad_hosts: tuple[int, ...] = BAD) -> Run:
    """pages_run with the EXTRA_INCIDENTS, the 6-hour rule and hosts `bad_hosts` drawn bad."""
    run = pages_run(preset_sets=RULE_SETS)
    incidents = run.tables["incidents"]
    ids, t, cause, category, host, gpu = zip(*EXTRA_INCIDENTS, strict=True)
    extra = pl.DataFrame(
        {
            "incident_id": ids,
            "t_s": t,
            "detected_s": t,
            "mitigated_s": [x + 600.0 for x in t],
            "repaired_s": [x + 3600.0 for x in t],
            "cause": cause,
            "category": category,
            "planned": [False] * len(ids),
            "host_id": host,
            "gpu_id": gpu,
            "jobs_hit": [0] * len(ids),
            "gpu_hours_lost": [0.0] * len(ids),
            "job_ids": [[] for _ in ids],
        },
        schema={name: incidents.schema[name] for name in incidents.columns if name not in ("xid", "link_id")},
    )
    every = pl.concat([incidents, extra], how="diagonal").sort("t_s")
    return with_truth(
        replace(run, tables={**run.tables, "incidents": every}), [h in bad_hosts for h in range(8)]
    )


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def truth_metrics(at) -> dict[str, str]:
    keys = (
        "lemon_rule_true_positives",
        "lemon_rule_precision",
        "bad_hosts_ground_truth",
        "lemon_rule_recall",
    )
    shown = metrics(at)
    return {k: shown[definition(k).label] for k in keys if definition(k).label in shown}


def test_the_rule_is_scored_against_the_ground_truth(store_dir):
    run_id = stored_run(store_dir, truth_run())
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    markdown = [m.value for m in at.markdown]
    assert (
        "**The lemon rule against the simulator's ground truth:** flagged 2 hosts, 1 of them bad (precision 50.0%), "
        "found 1 of the 3 bad hosts (recall 33.3%)."
    ) in markdown
    assert metrics(at)[definition("lemon_rule_hosts").label] == "2"
    assert truth_metrics(at) == {
        "lemon_rule_true_positives": "1",
        "lemon_rule_precision": "50.0%",
        "bad_hosts_ground_truth": "3",
        "lemon_rule_recall": "33.3%",
    }
    for m in at.metric:  # every figure takes its label and help from its definition
        assert by_label(m.label) is not None and m.proto.help == by_label(m.label).help, m.label
    assert any(
        c.value.startswith(
            "3 of the run's 8 hosts were drawn bad (37.5%): flagging 2 hosts at random would find about 0.8 bad ones "
            "(precision 37.5%, recall 25.0%)."
        )
        for c in at.caption
    )
    # the lemon table names each flagged host's truth: host 2 (a false alarm) met the rule first
    lemons = at.dataframe[0].value
    assert list(lemons.columns[:3]) == ["host_id", "hostname", "bad"]  # the truth beside the host's name
    assert lemons["hostname"].tolist() == ["host-002", "host-001"]
    assert lemons["bad"].tolist() == ["good", "bad"]
    assert not any("no ground truth" in i.value for i in at.info)


def test_the_queries_count_hosts_by_their_worst_window_and_truth(store_dir):
    run_id = stored_run(store_dir, truth_run())
    truth = queries.ground_truth(run_id)
    assert truth is not None and truth.filter(pl.col("bad"))["host_id"].to_list() == list(BAD)
    counts = queries.lemon_truth_counts(run_id, 6 * 3600.0)
    assert counts.rows() == [(0, False, 4), (1, True, 2), (2, False, 1), (2, True, 1)]
    # the chart's threshold and the lemon query agree: hosts at or past it are those lemons() lists
    flagged = int(counts.filter(pl.col("most_in_window") >= 2)["hosts"].sum())
    assert flagged == queries.lemons(run_id, 2, 6 * 3600.0).height == 2


def test_the_chart_shows_each_group_as_shares_with_the_threshold_marked():
    counts = pl.DataFrame(
        {"most_in_window": [0, 1, 2, 2], "bad": [False, True, False, True], "hosts": [4, 2, 1, 1]},
        schema={"most_in_window": pl.Int64, "bad": pl.Boolean, "hosts": pl.Int64},
    )
    fig = charts.lemon_truth(counts, failures=2)
    bad, good = fig.data
    assert (bad.name, list(bad.x), list(bad.text)) == ("Bad hosts (3)", [1, 2], ["2", "1"])
    assert list(bad.y) == pytest.approx([200 / 3, 100 / 3])
    assert (good.name, list(good.x), list(good.y), list(good.text)) == (
        "Good hosts (5)",
        [0, 2],
        [80.0, 20.0],
        ["4", "1"],
    )
    line = next(s for s in fig.layout.shapes if s.line.dash == "dash")
    assert line.x0 == line.x1 == 1.5  # between 1 and 2 incidents: hosts right of it meet the rule
    shade = next(s for s in fig.layout.shapes if s.type == "rect")
    assert (shade.x0, shade.x1, shade.layer) == (1.5, 2.5, "below")  # under the bars, not over them
    assert fig.layout.annotations[0].text == "lemon rule: 2 or more are flagged"
    assert fig.layout.xaxis.dtick == 1


def test_a_run_without_a_bad_host_counts_every_flag_as_a_false_alarm(store_dir):
    run_id = stored_run(store_dir, truth_run(bad_hosts=()))
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert not at.exception
    assert (
        "**The lemon rule against the simulator's ground truth:** flagged 2 hosts, 0 of them bad (precision 0.0%), "
        "and the simulator drew no bad host (failures.bad_host_fraction = 0: recall undefined)."
    ) in [m.value for m in at.markdown]
    assert truth_metrics(at) == {
        "lemon_rule_true_positives": "0",
        "lemon_rule_precision": "0.0%",
        "bad_hosts_ground_truth": "0",
        "lemon_rule_recall": "–",
    }


def no_truth_shown(at) -> str:
    """The page's words for a run without ground truth; fails if any score is shown."""
    assert not at.exception
    assert SECTION in [m.value for m in at.markdown]
    assert truth_metrics(at) == {}
    assert not any("precision" in m.value for m in at.markdown)
    said = [i.value for i in at.info if "no ground truth" in i.value]
    assert len(said) == 1
    return said[0]


def test_an_older_file_without_the_column_says_it_has_no_ground_truth(store_dir):
    run_id = stored_run(store_dir, truth_run())
    with duckdb.connect(str(Store(store_dir).path_of(run_id))) as con:  # as written before hosts.bad existed
        con.execute("ALTER TABLE hosts DROP COLUMN bad")
    assert queries.ground_truth(run_id) is None
    at = open_page(PAGE, {"run": run_id, "tab": TAB})
    assert no_truth_shown(at) == (
        "This run has no ground truth of bad hosts, so the lemon rule cannot be scored: it was written before "
        "simulated runs recorded which hosts the simulator drew bad."
    )
    assert metrics(at)[definition("lemon_rule_hosts").label] == "2"  # the rule itself is still applied
    assert "bad" not in at.dataframe[0].value.columns


def test_an_observed_run_says_nobody_knows_its_bad_hosts(store_dir):
    run_id = stored_run(store_dir, sparse_run())  # an ingested run: hosts.bad stays NULL
    assert queries.ground_truth(run_id) is None
    assert no_truth_shown(open_page(PAGE, {"run": run_id, "tab": TAB})).endswith(
        "it was observed (replayed or ingested), and nobody knows which of its hosts are systematically bad."
    )


def test_a_truth_with_holes_is_no_truth(store_dir):
    bad = [h in BAD for h in range(8)]
    bad[3] = None
    run_id = stored_run(store_dir, with_truth(truth_run(), bad))
    assert queries.ground_truth(run_id) is None
    no_truth_shown(open_page(PAGE, {"run": run_id, "tab": TAB}))


def test_a_replay_is_not_scored_whatever_hosts_it_marks_bad(store_dir):
    # a replay feeds recorded failures into the simulator: the hosts it draws bad did not cause them
    run_id = stored_run(store_dir, replace(truth_run(), kind="replay", run_id=""))
    assert queries.ground_truth(run_id) is not None  # the column is filled, yet the page does not score it
    assert no_truth_shown(open_page(PAGE, {"run": run_id, "tab": TAB})).endswith(
        "it was observed (replayed or ingested), and nobody knows which of its hosts are systematically bad."
    )


@pytest.mark.parametrize(
    ("flagged", "bad", "precision", "recall"),
    [
        (0, 0, "precision undefined", "recall undefined"),  # the demo: nothing flagged, nothing drawn bad
        (0, 3, "precision undefined", "recall 0.0%"),
        (2, 0, "precision 0.0%", "recall undefined"),
        (2, 3, "precision 50.0%", "recall 33.3%"),
    ],
)
def test_the_lemon_section_never_says_undefined_beside_a_number(flagged, bad, precision, recall):
    """Issue 28: "precision undefined" in the sentence above the figures and "precision 0.0%" in the
    chance sentence below them, for one and the same rule. A ratio is undefined where its denominator is
    zero, in every sentence and figure of the section alike."""
    from dashboard.gpus.lemons import chance_sentence, truth_sentence
    from engine.analysis.lemon_score import LemonRule, LemonScore

    tp = min(1, flagged, bad)
    score = LemonScore(
        rule=LemonRule(failures=3, window_s=14 * 86400.0),
        hosts=64,
        bad_hosts=bad,
        flagged_hosts=flagged,
        true_positives=tp,
        false_positives=flagged - tp,
        false_negatives=bad - tp,
        precision=tp / flagged if flagged else None,
        recall=tp / bad if bad else None,
    )
    said = truth_sentence(score) + " " + chance_sentence(score)
    assert precision in truth_sentence(score) and recall in truth_sentence(score)
    for ratio in ("precision", "recall"):
        if f"{ratio} undefined" in said:  # undefined once: no number for it anywhere in the section
            assert not re.search(rf"{ratio} [0-9]", said), said


def test_the_causes_column_is_wide_enough_for_causes_in_words():
    """Issue 28: the causes column of the offender tables was cut; they now span the page, causes wide."""
    from dashboard.gpus.common import COLUMNS

    assert COLUMNS["causes"]["width"] == "large"
