"""The lemon rule scored against ground truth (engine.analysis.lemon_score): exact small cases, the undefined
ratios, refusals of a truth with holes, invariants over any flags and truth (Hypothesis), and the rule's
precision and recall on the real simulator with bad hosts drawn (failures.bad_host_fraction)."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.queries import gpus as queries
from engine.analysis.lemon_score import LemonRule, LemonScore, pooled, score_lemon_rule
from engine.scenario import build
from engine.store import Store
from engine.twin.simulate import simulate

RULE = LemonRule(failures=3, window_s=14 * 86400.0)


def truth_of(bad: dict[int, bool]) -> pl.DataFrame:
    return pl.DataFrame(
        {"host_id": list(bad), "bad": list(bad.values())}, schema={"host_id": pl.Int32, "bad": pl.Boolean}
    )


def flags(*hosts: int) -> pl.DataFrame:
    return pl.DataFrame({"host_id": list(hosts)}, schema={"host_id": pl.Int32})


def test_a_small_case_scores_exactly():
    # hosts 0-7; 1, 3, 5 and 6 are bad; the rule flags 1, 3 (bad) and 4 (good): 5 and 6 are missed
    truth = truth_of({h: h in (1, 3, 5, 6) for h in range(8)})
    score = score_lemon_rule(flags(4, 1, 3), truth, RULE)
    assert score == LemonScore(
        rule=RULE,
        hosts=8,
        bad_hosts=4,
        flagged_hosts=3,
        true_positives=2,
        false_positives=1,
        false_negatives=2,
        precision=2 / 3,
        recall=0.5,
    )
    assert score.chance_precision == 0.5 and score.chance_recall == 3 / 8


def test_a_host_flagged_twice_counts_once_and_the_rule_is_kept():
    # lemons() lists a host once, but a caller joining flags from several windows may repeat it
    rule = LemonRule(failures=2, window_s=3600.0)
    score = score_lemon_rule(flags(2, 2, 2), truth_of({1: False, 2: True}), rule)
    assert (score.flagged_hosts, score.true_positives, score.precision, score.recall) == (1, 1, 1.0, 1.0)
    assert score.rule is rule


def test_ratios_are_undefined_rather_than_zero_when_their_denominator_is():
    nothing_flagged = score_lemon_rule(flags(), truth_of({0: True, 1: False}), RULE)
    assert nothing_flagged.precision is None and nothing_flagged.recall == 0.0
    assert (nothing_flagged.false_negatives, nothing_flagged.false_positives) == (1, 0)
    no_bad_host = score_lemon_rule(flags(0), truth_of({0: False, 1: False}), RULE)
    assert no_bad_host.recall is None and no_bad_host.precision == 0.0  # every flag a false alarm
    empty = score_lemon_rule(flags(), truth_of({}), RULE)
    assert (empty.hosts, empty.precision, empty.recall, empty.chance_precision, empty.chance_recall) == (
        0,
        None,
        None,
        None,
        None,
    )


def test_a_truth_with_holes_or_gaps_is_refused_by_name():
    with pytest.raises(ValueError, match=r"ground truth unknown \(bad is null\) for 1 of 2 hosts"):
        score_lemon_rule(flags(0), pl.DataFrame({"host_id": [0, 1], "bad": [True, None]}), RULE)
    with pytest.raises(ValueError, match=r"flagged hosts without ground truth \(host_id\): \[7, 9\]"):
        score_lemon_rule(flags(9, 0, 7), truth_of({0: True}), RULE)
    with pytest.raises(ValueError, match=r"lacks the columns \['bad'\]"):
        score_lemon_rule(flags(0), pl.DataFrame({"host_id": [0]}), RULE)
    with pytest.raises(ValueError, match=r"lists hosts twice \(host_id\): \[3\]"):
        score_lemon_rule(flags(), pl.DataFrame({"host_id": [3, 3], "bad": [True, False]}), RULE)


@st.composite
def flags_and_truth(draw) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Any ground truth over up to 60 hosts, and any flags among them (repeats allowed)."""
    bad = draw(st.lists(st.booleans(), max_size=60))
    hosts = list(range(len(bad)))
    flagged = draw(st.lists(st.sampled_from(hosts), max_size=80)) if hosts else []
    return flags(*flagged), truth_of(dict(zip(hosts, bad, strict=True)))


@settings(max_examples=200, deadline=None)
@given(flags_and_truth())
def test_invariants_hold_for_any_flags_and_truth(case):
    flagged, truth = case
    s = score_lemon_rule(flagged, truth, RULE)
    assert s.true_positives + s.false_negatives == s.bad_hosts == int(truth["bad"].sum())
    assert s.true_positives + s.false_positives == s.flagged_hosts == flagged["host_id"].n_unique()
    assert min(s.true_positives, s.false_positives, s.false_negatives) >= 0
    assert s.flagged_hosts <= s.hosts and s.bad_hosts <= s.hosts == truth.height
    for ratio, denominator in ((s.precision, s.flagged_hosts), (s.recall, s.bad_hosts)):
        assert (ratio is None) == (denominator == 0)
        assert ratio is None or 0.0 <= ratio <= 1.0
    # flagging every bad host and nothing else is perfect; flagging everything has recall 1 (if any is bad)
    perfect = score_lemon_rule(truth.filter(pl.col("bad")), truth, RULE)
    assert perfect.false_positives == perfect.false_negatives == 0
    assert perfect.recall in (None, 1.0) and perfect.precision in (None, 1.0)
    everything = score_lemon_rule(truth, truth, RULE)
    assert everything.recall in (None, 1.0) and everything.precision == everything.chance_precision


def test_pooled_scores_sum_their_counts_and_take_ratios_of_the_sums():
    a = score_lemon_rule(
        flags(0, 1), truth_of({0: True, 1: False, 2: True}), RULE
    )  # 1 of 2 flags, 1 of 2 bad
    b = score_lemon_rule(flags(), truth_of({0: True}), RULE)  # nothing flagged, 1 bad host missed
    both = pooled([a, b])
    assert (both.hosts, both.bad_hosts, both.flagged_hosts) == (4, 3, 2)
    assert (both.true_positives, both.false_positives, both.false_negatives) == (1, 1, 2)
    assert (both.precision, both.recall, both.rule) == (0.5, 1 / 3, RULE)
    with pytest.raises(ValueError, match="no scores to pool"):
        pooled([])
    with pytest.raises(ValueError, match="different rules cannot be pooled"):
        pooled([a, score_lemon_rule(flags(), truth_of({}), LemonRule(2, 60.0))])


# ----- the real simulator -----------------------------------------------------------------------------------

# The demo cluster (64 hosts, a failure-heavy 40 incidents per 1,000 host-days) for four weeks, 15 % of its
# hosts bad at 5x the rate (AIReSim Table 1's bad hosts: 9 of 64), scored with the default rule (3 within 14 d)
# as the GPUs page scores it (its queries on the stored run), replications pooled.
BAD_HOSTS = ("failures.bad_host_fraction=0.15", "failures.bad_host_multiplier=5")
# The simulator cures a bad host at its first repair that truly succeeds (engine.sim.bad_hosts, after AIReSim):
# a rule on repeat failures can only find the bad hosts repair leaves bad. Two repair models:
NEVER_CURED = ("repair.manual_silent_failure=1",)  # the lemon rule's premise: repair never finds the fault
AIRESIM_REPAIR = (  # AIReSim Table 1: 2 h automatic repair, 80 % escalated, 40 % / 20 % silently failed
    "repair.automatic=2h",
    "repair.escalation=0.8",
    "repair.automatic_silent_failure=0.4",
    "repair.manual_silent_failure=0.2",
)


def scored_runs(store_dir, sets: tuple[str, ...], seeds: range) -> LemonScore:
    """The default rule's score pooled over `seeds` replications of the demo with BAD_HOSTS and `sets`."""
    store, scores = Store(store_dir), []
    for seed in seeds:
        scenario = build(
            "demo",
            sets=[
                "simulation.telemetry=false",
                "simulation.days=28",
                f"simulation.seed={seed}",
                *BAD_HOSTS,
                *sets,
            ],
        )
        run = simulate(scenario)
        store.write_run(run)
        truth = queries.ground_truth(run.run_id)
        assert truth is not None, "the simulator wrote no ground truth (hosts.bad) for a run with bad hosts"
        failures, window = queries.repair_rule(run.scenario)
        assert (failures, window) == (3, 14 * 86400.0)  # the default rule
        flagged = queries.lemons(run.run_id, failures, window)
        scores.append(score_lemon_rule(flagged, truth, LemonRule(failures, window)))
    score = pooled(scores)
    assert score.chance_precision == pytest.approx(9 / 64), score  # exactly floor(15 % of 64) hosts drawn bad
    return score


def test_the_default_rule_finds_the_bad_hosts_repair_leaves_bad(store_dir):
    """Measured (seeds 1-20, 21-40, 41-60): precision 0.75, 0.78, 0.78 (about 175 flags each), recall 0.76,
    0.74, 0.77 (of 180 bad hosts), against a chance precision of 0.14 (the share of bad hosts) and a chance
    recall of 0.14 (the share of hosts flagged). One pooled binomial standard error is 0.03: the floors sit
    about 4 of them under what was measured and still more than 4 times chance."""
    score = scored_runs(store_dir, NEVER_CURED, range(1, 21))
    assert score.precision >= 0.65 and score.precision >= 4 * score.chance_precision, score
    assert score.recall >= 0.60 and score.recall >= 4 * score.chance_recall, score


def test_under_airesims_repair_the_rule_stays_above_chance_but_misses_the_cured(store_dir):
    """Measured (seeds 1-60, 61-120): precision 0.367 and 0.365 (about 200 flags each), recall 0.141 and 0.128
    (of 540 bad hosts), against chances of 0.141 and 0.05: 2.6 times chance each. Most bad hosts are cured by
    their first repair before they can fail three times in 14 days, so recall is low by construction. Standard
    errors 0.034 (precision) and 0.015 (recall): the bounds sit 3 to 4 of them from what was measured."""
    score = scored_runs(store_dir, AIRESIM_REPAIR, range(1, 61))
    assert score.precision >= 0.25 and score.precision >= 1.75 * score.chance_precision, score
    assert 0.08 <= score.recall <= 0.25 and score.recall >= 1.5 * score.chance_recall, score
