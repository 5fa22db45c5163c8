"""data/prometheus/goodput-alerts.yml: promtool accepts it, its unit tests (goodput-alerts.test.yml) pass, and its
thresholds are Goodput's own (fatal XIDs, the lemon rule's defaults, the clocks-event reason bits)."""

import re
import subprocess
from pathlib import Path

import yaml

from engine.ingest.observed import FATAL_XIDS
from engine.ingest.prometheus.throttle import REASON_METRICS
from engine.scenario.keys import KEY_BY_NAME
from engine.telemetry.clocks import REASON_BITS
from engine.telemetry.model import CHECKPOINT, IDLE, UTIL_LEVEL, UTIL_SPREAD

ROOT = Path(__file__).resolve().parents[1]
ALERTS = ROOT / "data" / "prometheus" / "goodput-alerts.yml"
ALERT_TESTS = ROOT / "data" / "prometheus" / "goodput-alerts.test.yml"
ALERT_NAMES = {
    "GoodputLargestJobEttrLow",
    "GoodputLemonHost",
    "GoodputFatalXidHostInService",
    "GoodputSlowHost",
}


def rules() -> dict[str, dict]:
    """Every rule of the file by its alert or record name."""
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {rule.get("alert") or rule["record"]: rule for group in groups for rule in group["rules"]}


def test_promtool_checks_the_alert_rules() -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 8 rules found" in checked.stdout


def test_the_alerts_unit_tests_pass() -> None:
    """Each alert fires where it should and not in the near miss beside it (promtool's own evaluation)."""
    tested = subprocess.run(["promtool", "test", "rules", str(ALERT_TESTS)], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout
    tests = yaml.safe_load(ALERT_TESTS.read_text())["tests"]
    tested_alerts = {case["alertname"] for test in tests for case in test.get("alert_rule_test", [])}
    assert tested_alerts == ALERT_NAMES
    for name in ALERT_NAMES:  # each alert both fires and stays silent somewhere
        cases = [
            case for test in tests for case in test.get("alert_rule_test", []) if case["alertname"] == name
        ]
        assert any(case["exp_alerts"] for case in cases) and any(not case["exp_alerts"] for case in cases)


def test_every_alert_has_for_severity_and_annotations() -> None:
    alerts = {name: rule for name, rule in rules().items() if "alert" in rule}
    assert set(alerts) == ALERT_NAMES
    for name, rule in alerts.items():
        assert "for" in rule, name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


def test_fatal_xids_are_goodputs() -> None:
    """Both rules that read XIDs take exactly engine/ingest/observed.py FATAL_XIDS as fatal."""
    reading = [rule["expr"] for rule in rules().values() if "DCGM_FI_DEV_XID_ERRORS ==" in rule["expr"]]
    assert len(reading) == 2
    for expr in reading:
        codes = [int(code) for code in re.findall(r"DCGM_FI_DEV_XID_ERRORS == (\d+)", expr)]
        assert sorted(codes) == sorted(FATAL_XIDS)


def test_the_lemon_alert_is_goodputs_lemon_rule_at_its_defaults() -> None:
    failures = KEY_BY_NAME["repair.lemon_failures"].default
    window = KEY_BY_NAME["repair.lemon_window"].default
    assert (failures, window) == (3, "14d")
    expr = rules()["GoodputLemonHost"]["expr"]
    assert expr.strip() == f"count_over_time(goodput:dcgm_xid_fatal:new_5m[{window}]) >= {failures}"
    (lemons,) = [g for g in yaml.safe_load(ALERTS.read_text())["groups"] if g["name"] == "goodput-lemons"]
    assert lemons["interval"] == "5m" and "offset 5m" in rules()["goodput:dcgm_xid_fatal:new_5m"]["expr"]


def test_the_slow_host_alert_reads_the_held_down_bits() -> None:
    """floor(v / 32) % 8 is bits 5-7 (sw_thermal, hw_thermal, hw_power_brake), floor(v / 8) % 2 is hw_slowdown;
    the power cap (routine at full load) and the non-throttling bits are left out. Both names of field 112."""
    held = {"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}
    assert {REASON_BITS[b] for b in held} == {8, 32, 64, 128}
    assert all(REASON_BITS[b] not in (8, 32, 64, 128) for b in REASON_BITS.keys() - held)
    expr = rules()["GoodputSlowHost"]["expr"]
    assert expr.count("/ 32) % 8 > 0") == 1 and expr.count("/ 8) % 2 > 0") == 1
    assert expr.count("|".join(REASON_METRICS)) == 2


def test_the_busy_threshold_sits_between_idle_and_a_checkpoint() -> None:
    """A GPU is working above 5 %: an idle GPU reads 0 %, one writing a checkpoint at least 5 % (Goodput's model)."""
    assert UTIL_LEVEL[IDLE] + UTIL_SPREAD[IDLE] < 5 <= UTIL_LEVEL[CHECKPOINT] - UTIL_SPREAD[CHECKPOINT]
    every = rules()
    assert "> bool 5)" in every["goodput:job_busy:ratio"]["expr"]
    assert "(DCGM_FI_DEV_GPU_UTIL) > 5" in every["GoodputFatalXidHostInService"]["expr"]
