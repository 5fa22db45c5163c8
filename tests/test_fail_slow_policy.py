"""What detecting fail-slow hosts buys (issue 24, 5): the policy study by Monte-Carlo and the Planner's tab."""

import pytest
from test_charts_pages import open_page

from engine.errors import GoodputError
from engine.scenario import build
from engine.twin.fail_slow import policy_study
from engine.twin.sweep import LocalExecutor

SMALL = ["simulation.days=10", "simulation.telemetry=false"]


@pytest.fixture(scope="module")
def study():
    return policy_study(
        build("llama3-405b", sets=SMALL), seeds=3, detect_after_s=(60.0, 3600.0), executor=LocalExecutor(1)
    )


def test_every_policy_and_delay_is_a_row_and_ignore_is_the_baseline(study):
    assert study.select("policy", "detect_after").rows() == [
        ("ignore", "-"),
        ("swap", "1m"),
        ("swap", "1h"),
        ("drain", "1m"),
        ("drain", "1h"),
    ]
    assert (study["runs"] == 3).all()
    assert study.filter(study["policy"] == "ignore")["ettr_gain_pts"][0] == 0.0
    assert ((study["ettr_p5"] <= study["ettr_mean"]) & (study["ettr_mean"] <= study["ettr_p95"])).all()


def test_acting_on_slow_hosts_beats_ignoring_them_and_swapping_trades_slowdown_for_restarts(study):
    ignore = study.row(0, named=True)
    swap_fast = study.filter((study["policy"] == "swap") & (study["detect_after"] == "1m")).row(0, named=True)
    swap_slow = study.filter((study["policy"] == "swap") & (study["detect_after"] == "1h")).row(0, named=True)
    assert max(study["ettr_gain_pts"]) > 1.0  # at FALCON's rate, detection buys points of ETTR
    # swapping at once cuts the slowdown but pays a restart for each short episode it would have outlived
    assert (
        swap_fast["slowdown_gpu_hours_mean"]
        < swap_slow["slowdown_gpu_hours_mean"]
        < ignore["slowdown_gpu_hours_mean"]
    )
    assert (
        swap_fast["restart_gpu_hours_mean"]
        > swap_slow["restart_gpu_hours_mean"]
        > ignore["restart_gpu_hours_mean"]
    )


def test_bad_choices_are_refused():
    with pytest.raises(GoodputError, match="policies"):
        policy_study(build("demo", sets=SMALL), policies=("reboot",), seeds=2)
    with pytest.raises(GoodputError, match="detection delays"):
        policy_study(build("demo", sets=SMALL), detect_after_s=(), seeds=2)


def test_the_planner_tab_compares_policies(store_dir):
    at = open_page("app_pages/planner.py", {"preset": "demo", "tab": "Fail-slow hosts"})
    at.slider(key="planner_slow_seeds").set_value(2)
    next(b for b in at.button if b.label == "Compare policies").click().run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "gain over ignore (pts)" in d.value.columns]
    assert tables, ([e.value for e in at.error], [list(d.value.columns) for d in at.dataframe])
    table = tables[0]
    assert table["policy"].tolist()[0] == "ignore" and {"swap", "drain"} <= set(table["policy"])
    assert any("Best here:" in c.value for c in at.caption)
