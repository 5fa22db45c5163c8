"""Issue 13 on the Network page: every per-tier figure is right for the whole tier, every figure is named and
explained by engine.analysis.definitions, and counts that sound alike (link faults and outages, jobs hit and job
interruptions) have their own names and values."""

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_charts_pages import open_page, stored_run
from test_traffic import HOST_STATES, HOUR, TIMES, incidents, setup

from dashboard.charts import network as charts
from dashboard.queries.network import TIER_FIGURES, tier_figures
from engine.analysis.definitions import DEFINITIONS, definition
from engine.fabric.link_stats import LinkTotals
from engine.fabric.network_incidents import network_incident_counts
from engine.fabric.traffic import NetworkTraffic
from engine.report.palette import TIER_LABELS, TIER_ORDER, tier_label
from engine.scenario import build
from engine.twin.simulate import simulate

PAGE = "app_pages/network.py"
NIC = "NIC cables (GPU to rack switch)"


def label(key: str) -> str:
    return definition(key).label


# ----- the engine counts every link at every sample ---------------------------------------------------------


def test_tier_figures_are_exact_for_every_link_whichever_links_are_stored():
    scenario, fab = setup()
    # the NIC cable of host 0 GPU 2 (link 2) is down at the 4 h sample only
    traffic = NetworkTraffic(
        scenario,
        fab,
        HOST_STATES,
        incidents([(4 * HOUR, 5 * HOUR, "network_switch_cable", 2)]),
        TIMES,
        6 * HOUR,
        np.random.default_rng(1),
    )
    nic, up, core = traffic.tier_stats()
    # job a: 32 NICs at 75 % for 6 samples (one of them down once); job b: 16 NICs at 75 % for 4 samples
    assert (nic.tier, nic.links, nic.link_samples, nic.down_link_samples) == ("gpu_rtsw", 128, 768, 1)
    assert nic.mean_util_pct == pytest.approx((32 * 6 * 75 - 75 + 16 * 4 * 75) / 767)
    assert (nic.hottest_link_mean_pct, nic.peak_util_pct, nic.down_share) == (75.0, 75.0, 1 / 768)
    assert (up.links, up.down_link_samples, core.down_link_samples) == (fab.spines * fab.n_racks, 0, 0)
    # the same figures as the full link_samples gives, tier by tier
    every = pl.concat(traffic.samples("all")).with_columns(
        tier=pl.when(pl.col("link_id") < fab.rack_link_base)
        .then(0)
        .when(pl.col("link_id") < fab.core_link_base)
        .then(1)
        .otherwise(2)
    )
    for stats, level in zip((nic, up, core), range(3), strict=True):
        rows = every.filter(pl.col("tier") == level)
        assert stats.link_samples == rows.height and stats.down_link_samples == rows["util_pct"].null_count()
        assert stats.mean_util_pct == pytest.approx(rows["util_pct"].mean())
        assert stats.peak_util_pct == pytest.approx(rows["util_pct"].max())
        assert stats.hottest_link_mean_pct == pytest.approx(
            rows.group_by("link_id").agg(pl.col("util_pct").mean())["util_pct"].max()
        )
    # what "switches" stores of the NIC cables: link 2 at its flapping and down samples, a selection by trouble
    stored = pl.concat(traffic.samples("switches")).filter(pl.col("link_id") < fab.rack_link_base)
    assert stored["link_id"].unique().to_list() == [2]
    assert stored["util_pct"].null_count() / stored.height > 0.2  # the false alarm the page once showed


def test_link_totals_skip_down_readings_and_empty_links():
    totals = LinkTotals(3)
    nan = float("nan")
    totals.add(np.array([[10.0, nan, nan], [30.0, 50.0, nan]], dtype=np.float32))
    totals.add(np.empty((0, 3), dtype=np.float32))
    tier = totals.tier("t", 0, 3)
    assert (tier.link_samples, tier.down_link_samples) == (6, 3)
    assert (tier.mean_util_pct, tier.hottest_link_mean_pct, tier.peak_util_pct) == (30.0, 50.0, 50.0)
    dead = totals.tier("t", 2, 3)
    assert (dead.mean_util_pct, dead.hottest_link_mean_pct, dead.peak_util_pct, dead.down_share) == (
        None,
        None,
        None,
        1.0,
    )
    assert dead.record()["down_share"] == 1.0


# ----- the dashboard shows only figures right for the whole tier --------------------------------------------

COVERAGE = pl.DataFrame(
    {
        "tier": ["gpu_rtsw", "rtsw_ctsw"],
        "links": [100, 10],
        "links_sampled": [2, 10],
        "complete": [False, True],
        "mean_util": [3.0, 40.0],
        "hottest_link_mean": [9.0, 60.0],
        "max_util": [9.0, 90.0],
        "down_share": [0.9, 0.01],
    }
)


def test_a_tier_stored_in_part_has_no_figures_from_its_rows():
    figures = tier_figures(COVERAGE, None)
    assert figures.schema == pl.Schema(TIER_FIGURES)
    assert figures.row(0) == ("gpu_rtsw", 100, 2, False, None, None, None, None)
    assert figures.row(1) == ("rtsw_ctsw", 10, 10, True, 40.0, 60.0, 90.0, 0.01)


def test_the_engines_count_wins_for_every_tier():
    engine = [
        {
            "tier": "gpu_rtsw",
            "mean_util_pct": 5.5,
            "hottest_link_mean_pct": 6.25,
            "peak_util_pct": 6.25,
            "down_share": 0.0002,
        },
        {
            "tier": "rtsw_ctsw",
            "mean_util_pct": 40,
            "hottest_link_mean_pct": 60,
            "peak_util_pct": 90,
            "down_share": 0.01,
        },
    ]
    figures = tier_figures(COVERAGE, engine)
    assert figures.row(0) == ("gpu_rtsw", 100, 2, False, 5.5, 6.25, 6.25, 0.0002)
    assert figures.row(1) == ("rtsw_ctsw", 10, 10, True, 40.0, 60.0, 90.0, 0.01)


# Characters this Python's Unicode tables know: Polars (Rust) follows a newer Unicode, so for a letter added
# since (U+10D50, Garay, Unicode 16) its lowercase exists there and not here; tier keys are ASCII identifiers.
KNOWN_TO_PYTHON = st.characters(exclude_categories=("Cn", "Cs"))


@given(st.lists(st.one_of(st.sampled_from(TIER_ORDER), st.text(KNOWN_TO_PYTHON, max_size=10)), max_size=12))
def test_tier_text_is_tier_label(tiers):
    frame = pl.DataFrame({"tier": tiers}, schema={"tier": pl.String})
    assert frame.select(charts.tier_text("tier"))["tier"].to_list() == [tier_label(t) for t in tiers]


def test_every_tier_has_words():
    assert set(TIER_ORDER) <= set(TIER_LABELS)


# ----- counts of network incidents --------------------------------------------------------------------------


def test_jobs_hit_are_distinct_and_job_interruptions_count_every_hit():
    frame = pl.DataFrame(
        {
            "cause": ["network_switch_cable"] * 3 + ["faulty_gpu"],
            "jobs_hit": [1, 2, 0, 1],
            "job_ids": [["a"], ["a", "b"], [], ["c"]],
            "gpu_hours_lost": [1.5, 2.0, None, 100.0],
        }
    )
    counts = network_incident_counts(frame)
    assert (counts.incidents, counts.jobs_hit, counts.job_interruptions, counts.gpu_hours_lost) == (
        3,
        2,
        3,
        3.5,
    )
    for key in ("network_jobs_hit", "network_job_interruptions", "link_faults", "link_outages"):
        assert DEFINITIONS[key].not_to_confuse, key  # each names the figure it must not be mistaken for


# ----- the page, on a llama3-405b cluster -------------------------------------------------------------------


@pytest.fixture
def llama_run():
    # four days of the llama3-405b cluster: 24,576 NIC cables, a handful of which fail and are stored (fresh
    # each test: link_samples is a generator, drawn once as the store writes it)
    return simulate(build("llama3-405b", sets=["simulation.days=4"]))


TABS = (
    "Switch and cable failures",
    "Outages and slowed jobs",
    "Degraded links",
    "Utilisation",
    "Hottest links",
)


def every_tab(run_id: str) -> list:
    """The page opened on each of its lazy tabs (dashboard/lazy.py): only the open one is drawn."""
    pages = [open_page(PAGE, {"run": run_id, "tab": tab}) for tab in TABS]
    assert not any(at.exception for at in pages)
    return pages


def test_the_llama3_page_reports_the_nic_tier_for_every_cable(store_dir, llama_run):
    run_id = stored_run(store_dir, llama_run)
    pages = every_tab(run_id)
    dataframes = [d for at in pages for d in at.dataframe]
    captions = [c for at in pages for c in at.caption]
    summary = llama_run.summary["network"]
    tiers = next(d.value for d in dataframes if "down_pct" in d.value.columns)
    nic = tiers[tiers["tier"] == NIC].iloc[0]
    engine_nic = next(t for t in summary["tiers"] if t["tier"] == "gpu_rtsw")
    assert nic["links"] == 24576 and 0 < nic["links_sampled"] < 100
    # almost every cable up: the share of link-time down is tiny, as the engine counted it
    assert nic["down_pct"] == pytest.approx(engine_nic["down_share"] * 100) and nic["down_pct"] < 0.1
    assert 0 < nic["mean_util"] <= 6.25  # 25 of 400 Gbps while a multi-host job runs, 0 when idle
    # the note says what link_samples holds of the NIC cables; neither the chart nor the hottest links use them
    assert any(f"holds {nic['links_sampled']:,} of its 24,576 links" in c.value for c in captions)
    hottest = next(d.value for d in dataframes if "errors" in d.value.columns and "capacity_gbps" in d.value)
    assert NIC not in set(hottest["tier"])


def test_every_metric_is_a_definition_with_its_help(store_dir, llama_run):
    run_id = stored_run(store_dir, llama_run)
    pages = every_tab(run_id)
    summary = llama_run.summary["network"]
    for at in pages:
        assert len({m.label for m in at.metric}) == len(at.metric)  # no label twice on a view
    shown = {m.label: m for at in pages for m in at.metric}
    assert len(shown) >= 12
    for name, m in shown.items():
        d = next((d for d in DEFINITIONS.values() if d.label == name), None)
        assert d is not None, f"metric {name!r} has no definition"
        assert m.help.startswith(d.help), name
    # the figures that once disagreed, each under its own name
    net = llama_run.tables["incidents"].filter(pl.col("cause") == "network_switch_cable")
    assert shown[label("link_faults")].value == f"{summary['link_faults']:,}"
    assert shown[label("network_incidents")].value == f"{net.height:,}"
    assert shown[label("network_job_interruptions")].value == f"{net['jobs_hit'].sum():,}"
    assert shown[label("network_jobs_hit")].value == f"{net['job_ids'].explode().drop_nulls().n_unique():,}"
    assert int(shown[label("link_outages")].value) <= summary["link_faults"]
