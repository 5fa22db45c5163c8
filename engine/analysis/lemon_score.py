"""The lemon rule scored against ground truth: how many of the hosts it flags are really bad, and how many of
the bad hosts it finds.

A simulated run knows which hosts were drawn systematically bad (the hosts table's `bad` column, set from
failures.bad_host_fraction); the lemon rule (repair.lemon_failures incidents within repair.lemon_window,
dashboard.queries.gpus.lemons) only sees the incidents. Scoring one against the other says what the rule is
worth before it pulls real hosts: precision (the share of flagged hosts that are bad) and recall (the share
of bad hosts flagged), the usual measures of a detector. The truth is who was bad when the run started: the
simulator cures a bad host at a repair that truly succeeds (engine.sim.bad_hosts), and a rule on repeat
failures cannot find a host fixed after its first, so recall depends on the repair model as much as on the rule.

Pure: frames in, a record out. No ground truth (an observed run) is for the caller to say; this module scores
only a truth it is given, and refuses one with holes rather than guessing.
"""

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class LemonRule:
    """The rule's settings: `failures` repair-sending incidents within `window_s` seconds flag a host."""

    failures: int
    window_s: float


@dataclass(frozen=True)
class LemonScore:
    """The rule's flags against the ground truth of `hosts` hosts, `bad_hosts` of them bad."""

    rule: LemonRule
    hosts: int  # hosts whose truth is known (every host of the run)
    bad_hosts: int
    flagged_hosts: int
    true_positives: int  # flagged and bad
    false_positives: int  # flagged but good
    false_negatives: int  # bad but not flagged
    precision: float | None  # true_positives / flagged_hosts; None when nothing was flagged
    recall: float | None  # true_positives / bad_hosts; None when no host is bad

    @property
    def chance_precision(self) -> float | None:
        """The precision of flagging as many hosts at random: the share of bad hosts (None without hosts)."""
        return self.bad_hosts / self.hosts if self.hosts else None

    @property
    def chance_recall(self) -> float | None:
        """The recall of flagging as many hosts at random: the share of hosts flagged (None without hosts)."""
        return self.flagged_hosts / self.hosts if self.hosts else None


def score_lemon_rule(flagged: pl.DataFrame, truth: pl.DataFrame, rule: LemonRule) -> LemonScore:
    """Score the hosts `flagged` (a column host_id; a host listed twice counts once) against `truth` (columns
    host_id and bad, one row a host, no nulls). Every flagged host must be in `truth`."""
    _check_truth(truth)
    flagged_ids = flagged.select(pl.col("host_id").cast(pl.Int64)).unique()
    truth = truth.select(pl.col("host_id").cast(pl.Int64), pl.col("bad").cast(pl.Boolean))
    unknown = flagged_ids.join(truth, on="host_id", how="anti")["host_id"].sort()
    if unknown.len():
        raise ValueError(f"flagged hosts without ground truth (host_id): {unknown.head(10).to_list()}")
    marked = truth.join(flagged_ids.with_columns(flagged=pl.lit(True)), on="host_id", how="left").select(
        "bad", pl.col("flagged").fill_null(False)
    )
    counts = marked.select(
        hosts=pl.len(),
        bad=pl.col("bad").sum(),
        flagged=pl.col("flagged").sum(),
        tp=(pl.col("bad") & pl.col("flagged")).sum(),
    ).row(0, named=True)
    tp, bad, flagged_n = int(counts["tp"]), int(counts["bad"]), int(counts["flagged"])
    return LemonScore(
        rule=rule,
        hosts=int(counts["hosts"]),
        bad_hosts=bad,
        flagged_hosts=flagged_n,
        true_positives=tp,
        false_positives=flagged_n - tp,
        false_negatives=bad - tp,
        precision=tp / flagged_n if flagged_n else None,
        recall=tp / bad if bad else None,
    )


def pooled(scores: Iterable[LemonScore]) -> LemonScore:
    """Several runs' scores of one rule as one (counts summed, ratios of the sums): Monte-Carlo replications
    of a scenario, each too small alone to say much."""
    scores = list(scores)
    if not scores:
        raise ValueError("no scores to pool")
    rules = {s.rule for s in scores}
    if len(rules) > 1:
        raise ValueError(f"scores of different rules cannot be pooled: {sorted(rules, key=repr)}")

    def total(field: str) -> int:
        return sum(getattr(s, field) for s in scores)

    tp, flagged, bad = total("true_positives"), total("flagged_hosts"), total("bad_hosts")
    return LemonScore(
        rule=scores[0].rule,
        hosts=total("hosts"),
        bad_hosts=bad,
        flagged_hosts=flagged,
        true_positives=tp,
        false_positives=total("false_positives"),
        false_negatives=total("false_negatives"),
        precision=tp / flagged if flagged else None,
        recall=tp / bad if bad else None,
    )


def _check_truth(truth: pl.DataFrame) -> None:
    missing = {"host_id", "bad"} - set(truth.columns)
    if missing:
        raise ValueError(f"ground truth lacks the columns {sorted(missing)} (it needs host_id and bad)")
    if truth["bad"].null_count():
        raise ValueError(
            f"ground truth unknown (bad is null) for {truth['bad'].null_count()} of {truth.height} hosts: "
            "a truth with holes cannot score the rule"
        )
    if truth["host_id"].is_duplicated().any():
        dupes = truth.filter(pl.col("host_id").is_duplicated())["host_id"].unique().sort()
        raise ValueError(f"ground truth lists hosts twice (host_id): {dupes.head(10).to_list()}")
