"""A round trip through the day-one path (issue 46, 4): a cluster simulated with known bursts and a failure rate
that changes, its faults written out as a ticket system would export them, ingested with `goodput ingest
node-events`, and calibrated: the twin finds the change (within two weeks of it), takes the recent level, and finds
the bursts' rate and size (fixed seeds; tolerances stated beside each check)."""

import json
from datetime import timedelta

import polars as pl
import pytest

from engine.cli import main
from engine.scenario import build
from engine.sim.failures import CAUSE_KEYS
from engine.store import Store
from engine.twin.calibrate import RUN_KEY, calibrate
from engine.twin.simulate import simulate
from engine.units import SECONDS_PER_DAY

DAYS = 91.0  # each half: 13 weeks
BURSTS_PER_DAY = 1.0
BURST_SIZE = 4.0
SCALE_AFTER = 2.5  # the rate after the change, times the first half's


def _half(seed: int, scale: float) -> tuple:
    scenario = build(
        "rsc1",
        sets=[
            f"simulation.days={DAYS:g}",
            "simulation.telemetry=false",
            f"simulation.seed={seed}",
            f"failures.scale={scale:g}",
            # bursts scale with failures.scale too: the same bursts a day in both halves
            f"failures.burst_per_day={BURSTS_PER_DAY / scale:g}",
            f"failures.burst_size_mean={BURST_SIZE:g}",
        ],
    )
    run = simulate(scenario)
    return scenario, run


def _tickets(run, offset_s: float) -> pl.DataFrame:
    """The run's faults that took a host out, as tickets: node, start, end (empty while open), cause."""
    names = run.tables["hosts"].select("host_id", "hostname")
    out = run.tables["incidents"].filter(
        pl.col("host_id").is_not_null()
        & ~pl.col("planned")
        & (pl.col("repaired_s").is_null() | (pl.col("repaired_s") > pl.col("t_s")))
    )
    start = run.started_at + timedelta(seconds=offset_s)
    return (
        out.join(names, on="host_id")
        .select(
            node="hostname",
            start=pl.lit(start) + pl.duration(microseconds=(pl.col("t_s") * 1e6).cast(pl.Int64)),
            end=pl.lit(start) + pl.duration(microseconds=(pl.col("repaired_s") * 1e6).cast(pl.Int64)),
            cause="cause",
        )
        .with_columns(
            pl.col("start").dt.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00"),
            pl.col("end").dt.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00"),
            description=pl.lit("from the simulator"),
        )
    )


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roundtrip")
    scenario, first = _half(46, 1.0)
    _, second = _half(47, SCALE_AFTER)
    tickets = pl.concat([_tickets(first, 0.0), _tickets(second, DAYS * SECONDS_PER_DAY)])
    csv = folder / "tickets.csv"
    tickets.write_csv(csv)
    # the site's map: Goodput's own cause keys, word for word
    rules = "".join(
        f'[[rule]]\nmatch = \'^{cause}$\'\ncause = "{cause}"\nfield = "cause"\n\n' for cause in CAUSE_KEYS
    )
    causes = folder / "causes.toml"
    causes.write_text(rules)
    store_dir = folder / "store"
    hosts = scenario.hosts
    return store_dir, csv, causes, hosts, scenario


def test_the_change_and_the_bursts_come_back(history, capsys):
    store_dir, csv, causes, hosts, scenario = history
    code = main(
        [
            "ingest", "node-events", str(csv), "--causes", str(causes), "--nodes", str(hosts),
            "--gpus-per-node", "8", "--store", str(store_dir), "--json",
        ]
    )  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["unknown_share"] == 0.0 and summary["hosts"] == hosts
    fit = calibrate(Store(store_dir), summary["run_id"])
    # the change: one, within two weeks of day 91 (weekly counts of ~100 and ~250 faults)
    assert fit.drift.rate_changes, fit.drift.to_json()
    change = fit.drift.rate_changes[-1]
    assert abs(change.at_s / SECONDS_PER_DAY - DAYS) <= 14.0
    assert change.after / change.before == pytest.approx(SCALE_AFTER, rel=0.25)
    # the recent level, bursts' hosts taken out: the first half's rate times 2.5 (Poisson over ~13 weeks of
    # ~250 faults: +-2 %; the thinning by hosts out and by bursts shifts it a little more: 15 % allowed)
    first_half = calibrate(Store(store_dir), summary["run_id"], until=f"{DAYS - 7:g}d")
    assert fit.keys[RUN_KEY].value == pytest.approx(SCALE_AFTER * first_half.keys[RUN_KEY].value, rel=0.15)
    # the bursts: ~1 a day of 2 + geometric(mean 2) hosts, against ~30 chance pairs a week at this rate
    bursts = fit.keys["failures.burst_per_day"]
    assert bursts.value == pytest.approx(BURSTS_PER_DAY, rel=0.35), bursts
    assert fit.keys["failures.burst_size_mean"].value == pytest.approx(BURST_SIZE, abs=1.0)
    assert any("failure rate changed" in w for w in fit.warnings)
