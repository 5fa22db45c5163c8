"""Bounds on every size a scenario asks for (engine/limits.py, engine/scenario/bounds.py): refused at
validation with the key, the value and the limit, before anything is allocated; `goodput simulate` and
`goodput sweep` exit 2 with one `goodput: error:` line and write nothing; the Planner shows the same line."""

import math
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_charts_pages import open_page

from engine import limits
from engine.cli import main
from engine.errors import GoodputError
from engine.scenario import ScenarioError, build
from engine.scenario import bounds as scenario_limits
from engine.twin.sweep import Axis, check_runs, parse_vary, seeds_of, sweep


def run_cli(capsys, *argv) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().err.splitlines()


def assert_refused(capsys, store, argv, *named) -> str:
    """Exit 2, one stderr line starting `goodput: error:` that names each of `named`, nothing stored (`store`
    None: a command without a store)."""
    code, err = run_cli(capsys, *argv, *(("--store", str(store)) if store else ()))
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("goodput: error: "), err
    for word in named:
        assert word in err[0], (word, err[0])
    assert store is None or not store.exists() or not any(store.iterdir())
    return err[0]


# ----- goodput simulate ------------------------------------------------------------------------------------

SIMULATE_CASES = [
    # --set values, then what the one line must name (the key, the value or size, the limit)
    (["cluster.gpus=100000000"], ["cluster.gpus", "100000000", "524,288"]),
    (["training.gpus=100000000"], ["training.gpus", "100000000", "524,288"]),
    (["spares.hosts=100000000"], ["spares.hosts", "100000000", "262,144"]),
    (["simulation.days=100000"], ["simulation.days", "100000", "3,650"]),
    (["repair.technicians=1000000000"], ["repair.technicians", "262,144"]),
    (["cluster.racks_per_pod=1000000000"], ["cluster.racks_per_pod", "262,144"]),
    (["research.max_hosts=1000000000"], ["research.max_hosts", "262,144"]),
    (["simulation.seed=9223372036854775807"], ["simulation.seed", "4,611,686,018,427,387,904"]),
    # sizes several keys make together: GPU-days, samples, events, checkpoints, research jobs
    (
        ["cluster.gpus=262144", "simulation.days=3650"],
        ["cluster.gpus, simulation.days", "956,825,600", "50,000,000"],
    ),
    (
        ["simulation.telemetry_resolution=1s"],
        ["simulation.telemetry_resolution", "309,657,600", "200,000,000"],
    ),
    (["failures.rate_per_1000_node_days=1000000000"], ["failures.rate_per_1000_node_days", "500,000"]),
    (["failures.planned_per_day=1e9"], ["failures.planned_per_day", "500,000"]),
    (["network.fabric_faults_per_day=1e9"], ["network.fabric_faults_per_day", "500,000"]),
    (
        ["training.checkpoint_interval=1s", "simulation.days=3650", "simulation.telemetry=false"],
        ["training.checkpoint_interval", "292,867,756", "5,000,000"],
    ),
    (["research.median_duration=1s", "simulation.days=30"], ["research.median_duration", "5,000,000"]),
    (
        [
            "cluster.gpus=262144",
            "training.gpus=262144",
            "spares.hosts=0",
            "simulation.days=100",
            "simulation.telemetry=false",
        ],
        ["training.gpus", "attempts x its hosts", "250,000,000"],
    ),
    (["training.checkpoint_interval=inf"], ["training.checkpoint_interval", "finite"]),
    (["cluster.gpus=" + "9" * 5000], ["cluster.gpus", "5,000 characters"]),
]


@pytest.mark.parametrize(("sets", "named"), SIMULATE_CASES, ids=[c[0][0][:40] for c in SIMULATE_CASES])
def test_simulate_refuses_sizes_over_the_limits(capsys, tmp_path, monkeypatch, sets, named):
    def must_not_run(*args, **kwargs):
        raise AssertionError("simulated a scenario that should have been refused")

    monkeypatch.setattr("engine.twin.simulate.simulate", must_not_run)
    argv = ["simulate", "--preset", "demo"] + [a for s in sets for a in ("--set", s)]
    assert_refused(capsys, tmp_path / "store", argv, *named)  # at validation: simulate never ran


def test_the_largest_preset_is_within_every_limit():
    s = build("future-131k")
    for size in scenario_limits.sizes(s):
        assert size.value <= size.limit, size
    assert math.isclose(next(z.value for z in scenario_limits.sizes(s) if "GPU-days" in z.what), 131072 * 54)


def test_a_scenario_file_is_bounded_like_set(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text('preset = "demo"\n[cluster]\ngpus = 100_000_000\n')
    with pytest.raises(
        ScenarioError, match=r"big\.toml: cluster\.gpus: must be at most 524,288, got 100000000"
    ):
        build(file=path)
    deep = tmp_path / "deep.toml"
    deep.write_text("[" + ".".join(["a"] * 200) + "]\nx = 1\n")
    with pytest.raises(ScenarioError, match=r"deep\.toml: a\.a.*nested deeper than Goodput's limit of 32"):
        build(file=deep)
    digits = tmp_path / "digits.toml"
    digits.write_text("[cluster]\ngpus = " + "9" * 5000 + "\n")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        build(file=digits)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[cluster]\n")
    with pytest.raises(ScenarioError, match="not UTF-8"):
        build(file=binary)


def test_a_scenario_file_larger_than_its_limit_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SCENARIO_BYTES", 64)
    path = tmp_path / "long.toml"
    path.write_text("# " + "x" * 100 + "\n")
    with pytest.raises(GoodputError, match=r"long\.toml: the scenario file is larger than .* 64 bytes"):
        build(file=path)


@settings(deadline=None, max_examples=60)
@given(
    gpus=st.integers(min_value=limits.MAX_CLUSTER_GPUS + 1, max_value=10**15),
    key=st.sampled_from(["cluster.gpus", "training.gpus"]),
)
def test_any_gpu_count_over_the_limit_is_refused_without_allocating(gpus, key):
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError) as refused:
            build("demo", sets=[f"{key}={gpus}"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"{key}: must be at most 524,288, got {gpus}" in str(refused.value)
    assert peak < 2_000_000  # bytes: nothing the size of the cluster was made


@settings(deadline=None, max_examples=80)
@given(
    hosts=st.integers(min_value=52, max_value=limits.MAX_CLUSTER_GPUS // 8),
    days=st.floats(min_value=0.01, max_value=limits.MAX_RUN_DAYS),
    resolution_s=st.integers(min_value=1, max_value=86_400),
    interval_s=st.integers(min_value=1, max_value=86_400),
)
def test_a_scenario_builds_exactly_when_every_size_is_within_its_limit(hosts, days, resolution_s, interval_s):
    """The demo preset (a 48-host job, 4 spares, 40 failures per 1,000 host-days, one planned stop and one
    fabric fault every two days, research jobs of median 6 h on 85 % of the rest) on any cluster and span: it
    builds if and only if none of the sizes, worked out here by hand, is over its limit."""
    sets = [
        f"cluster.gpus={hosts * 8}",
        f"simulation.days={days!r}",
        f"simulation.telemetry_resolution={resolution_s}s",
        f"training.checkpoint_interval={interval_s}s",
    ]
    seconds = days * 86400
    write_s = 0.4 * 384 / 2000.0  # storage.checkpoint_gb_per_gpu x training.gpus / storage.bandwidth_gb_per_s
    sizes = {
        "GPU-days": (hosts * 8 * days, limits.MAX_GPU_DAYS),
        "telemetry samples": (hosts * 8 * math.ceil(seconds / resolution_s), limits.MAX_GPU_SAMPLES),
        "failures, planned stops and fabric faults": (
            40 / 1000 * hosts * days + 0.5 * days + 0.5 * days,
            limits.MAX_SIM_EVENTS,
        ),
        "checkpoints": (seconds / (interval_s + write_s), limits.MAX_CHECKPOINTS),
        "attempts x its hosts": (48 * ((40 / 1000 * 48 + 0.5) * days + 1), limits.MAX_JOB_ATTEMPT_HOSTS),
        "research job-host intervals": (
            (hosts - 52) * 0.85 * seconds / (6 * 3600 * math.exp(0.5)),
            limits.MAX_RESEARCH_HOST_JOBS,
        ),
    }
    over = [what for what, (value, limit) in sizes.items() if value > limit * (1 + 1e-9)]
    near = [what for what, (value, limit) in sizes.items() if math.isclose(value, limit, rel_tol=1e-9)]
    try:
        s = build("demo", sets=sets)
    except ScenarioError as err:
        assert over or near, str(err)
        assert any(what in str(err) for what in over + near) and str(err).endswith("(engine/limits.py)")
        return
    assert not over, over
    assert all(z.value <= z.limit for z in scenario_limits.sizes(s))


# ----- sweeps ------------------------------------------------------------------------------------------------


def test_sweep_refuses_too_many_runs_before_building_the_grid(capsys):
    ten = ["--vary", f"failures.scale={','.join(str(v) for v in range(1, 11))}"]
    line = assert_refused(
        capsys,
        None,
        ["sweep", "--preset", "demo", *ten, "--vary", "spares.hosts=0,1,2,3,4,5,6,7,8,9", "--seeds", "101"],
        "10 values of failures.scale",
        "10 values of spares.hosts",
        "101 seeds",
        "10,100 runs",
        "10,000",
    )
    assert line.startswith("goodput: error: --vary/--seeds:")
    many = [Axis(f"k{i}", Unwalkable(str(v) for v in range(10))) for i in range(10)]  # 10^10 grid points
    with pytest.raises(GoodputError, match="10,000,000,000 runs"):
        check_runs(many, 1)  # counted, never walked (a check of how, not of how fast: no clock)


class Unwalkable(tuple):
    """Values that may be counted but not walked: a grid built before the check would raise here."""

    def __iter__(self):
        raise AssertionError("the grid was walked before its size was checked")


def test_sweep_seeds_and_values_are_bounded():
    base = build("demo")
    with pytest.raises(GoodputError, match="--seeds: 1,000,000,000 is over Goodput's limit of 10,000"):
        seeds_of(base, 10**9)
    with pytest.raises(GoodputError, match="over Goodput's limit of 10,000 runs"):
        parse_vary("failures.scale=" + ",".join(["1"] * 20_000))
    top = build("demo", sets=[f"simulation.seed={limits.MAX_SEED}"])
    assert seeds_of(top, 1) == [limits.MAX_SEED]
    with pytest.raises(GoodputError, match=r"the last seed \(simulation.seed \+ 1\)"):
        seeds_of(top, 2)
    with pytest.raises(GoodputError, match="cluster.gpus: must be at most 524,288"):
        sweep(base, [parse_vary("cluster.gpus=512,100000000")], 1)


@settings(deadline=None, max_examples=50)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=6),
    seeds=st.integers(min_value=1, max_value=10**9),
)
def test_check_runs_counts_grid_points_times_seeds(sizes, seeds):
    axes = [Axis(f"k{i}", tuple(map(str, range(n)))) for i, n in enumerate(sizes)]
    runs = math.prod(sizes) * seeds
    if runs <= limits.MAX_SWEEP_RUNS:
        assert check_runs(axes, seeds) == runs
    else:
        with pytest.raises(GoodputError, match=f"{runs:,} runs"):
            check_runs(axes, seeds)


# ----- the Planner --------------------------------------------------------------------------------------------


def test_the_planner_shows_the_one_line_for_a_cluster_over_the_limit(store_dir):
    at = open_page("app_pages/planner.py", {"preset": "demo", "cluster": "1048576", "gpus": "384"})
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("cluster.gpus" in e and "524,288" in e and "1048576" in e for e in errors), errors
    assert not any(b.label == "Run" for b in at.button)
