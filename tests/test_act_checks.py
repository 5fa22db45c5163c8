"""The checks before anything reaches Slurm, as plain functions: the settings file, the commands built (names
checked against what Slurm lists), the caps and the largest job. End to end against a real Slurm:
tests/test_act_slurm.py."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.act import guard
from engine.act.audit import AuditEvent, AuditLog
from engine.act.records import Action
from engine.act.settings import ActionSettings, load_settings
from engine.act.slurm_control import ClusterNow, SlurmRefused, build_command
from engine.errors import GoodputError

NOW = ClusterNow(
    nodes=frozenset(f"gpu{i:03d}" for i in range(100)),
    out_of_service=frozenset({"gpu099"}),
    jobs={"41": ("gpu000", "gpu001", "gpu002"), "42": ("gpu010",), "43": ()},
)


def test_settings_default_when_absent_and_read_from_the_store(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == ActionSettings()
    (tmp_path / "settings.toml").write_text(
        '[actions]\nmax_drains_per_hour = 4\nmax_drains_per_day = 10\nmax_drain_share = 0.05\nslurm_conf = "/x"\n'
    )
    assert load_settings(tmp_path) == ActionSettings(
        max_drains_per_hour=4, max_drains_per_day=10, max_drain_share=0.05, slurm_conf="/x"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[actions]\nmax_drains = 3\n", "unknown key(s) max_drains"),
        ("[actions]\nmax_drain_share = 0\n", "max_drain_share: 0.0 is not in (0, 1]"),
        (
            "[actions]\nmax_drains_per_hour = 0\n",
            "max_drains_per_hour: 0 is not a whole number of at least 1",
        ),
        ("[actions]\nmax_drains_per_hour = 5\nmax_drains_per_day = 4\n", "less than max_drains_per_hour"),
        ("[actions]\nbreaker_errors = true\n", "breaker_errors: True is not a whole number"),
        ("[actions]\nhorizon_hours = 'a day'\n", "horizon_hours: 'a day' is not a number"),
        ("[actions\n", "not valid TOML"),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "settings.toml").write_text(text)
    with pytest.raises(GoodputError) as err:
        load_settings(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'settings.toml'}: ") and message in str(err.value)


def test_commands_are_argument_vectors_with_the_reason_on_one_line() -> None:
    drain = build_command(Action.DRAIN, NOW, nodes=("gpu003", "gpu002"), reason="fatal XID 79\n on GPU 3")
    assert drain.argv == (
        "scontrol",
        "update",
        "NodeName=gpu002,gpu003",
        "State=DRAIN",
        "Reason=goodput: fatal XID 79 on GPU 3",
    )
    assert (
        drain.shown()
        == "scontrol update NodeName=gpu002,gpu003 State=DRAIN 'Reason=goodput: fatal XID 79 on GPU 3'"
    )
    resume = build_command(Action.RESUME, NOW, nodes=("gpu099",))
    assert resume.argv == ("scontrol", "update", "NodeName=gpu099", "State=RESUME")
    requeue = build_command(Action.REQUEUE, NOW, job_id="42")
    assert (requeue.argv, requeue.nodes) == (("scontrol", "requeue", "42"), ("gpu010",))


@pytest.mark.parametrize(
    ("action", "kwargs", "message"),
    [
        (Action.DRAIN, {"nodes": ("gpu100",), "reason": "x"}, "drain: Slurm lists no node gpu100"),
        (Action.DRAIN, {"nodes": ("gpu001 State=RESUME",), "reason": "x"}, "is not a node name"),
        (Action.DRAIN, {"nodes": ("gpu001",), "reason": "  "}, "drain: Slurm needs a reason"),
        (Action.RESUME, {"nodes": ()}, "resume: no node named"),
        (Action.REQUEUE, {"job_id": "42; rm -rf /"}, "is not a Slurm job id"),
        (Action.REQUEUE, {"job_id": "7"}, "requeue: Slurm lists no active job 7"),
    ],
)
def test_names_are_checked_before_a_command_is_built(action: Action, kwargs: dict, message: str) -> None:
    with pytest.raises(SlurmRefused, match=message):
        build_command(action, NOW, **kwargs)


@given(st.text(min_size=1, max_size=300))
def test_no_reason_escapes_its_one_argument(reason: str) -> None:
    try:
        command = build_command(Action.DRAIN, NOW, nodes=("gpu001",), reason=reason)
    except SlurmRefused:
        assert not reason.split()
        return
    assert len(command.argv) == 5 and command.argv[4].startswith("Reason=goodput: ")
    assert "\n" not in command.argv[4] and len(command.argv[4]) <= len("Reason=") + 200


def test_the_largest_running_job_is_the_one_on_most_nodes() -> None:
    assert NOW.largest_job() == ("41", ("gpu000", "gpu001", "gpu002"))
    assert (
        guard.touches_largest_job(NOW, build_command(Action.DRAIN, NOW, nodes=("gpu001",), reason="x"))
        == "41"
    )
    assert (
        guard.touches_largest_job(NOW, build_command(Action.DRAIN, NOW, nodes=("gpu050",), reason="x"))
        is None
    )
    assert guard.touches_largest_job(NOW, build_command(Action.REQUEUE, NOW, job_id="41")) == "41"


def _drained(log: AuditLog, action_id: str, nodes: list[str], failed: bool = False) -> None:
    with log.writing() as w:
        w.append("op", AuditEvent.APPROVED, action_id, {"action": "drain", "nodes": nodes})
        w.append("op", AuditEvent.FAILED if failed else AuditEvent.DONE, action_id, {"slurm_error": failed})


def test_caps_count_the_log_and_the_nodes_out_of_service(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    settings = ActionSettings(max_drains_per_hour=2, max_drains_per_day=3, max_drain_share=0.03)
    at = datetime.now(UTC)
    drain = build_command(Action.DRAIN, NOW, nodes=("gpu050",), reason="x")
    assert guard.cap_refusal(log.entries(), settings, NOW, drain, at) is None
    _drained(log, "a", ["gpu060"])
    _drained(log, "b", ["gpu061"], failed=True)  # Slurm refused it: nothing was drained
    assert guard.cap_refusal(log.entries(), settings, NOW, drain, at) is None
    _drained(log, "c", ["gpu062"])
    assert guard.cap_refusal(log.entries(), settings, NOW, drain, at).startswith(
        "cap: 2 node(s) drained by Goodput in the last hour"
    )
    later = at + timedelta(hours=2)  # the hour has passed, the day has not: 2 + 1 = 3 fits
    assert guard.cap_refusal(log.entries(), settings, NOW, drain, later) is None
    busy = ClusterNow(NOW.nodes, frozenset({"gpu097", "gpu098", "gpu099"}), NOW.jobs)
    assert guard.cap_refusal([], settings, busy, drain, at) == (
        "cap: 4 of 100 nodes would be out of service; max_drain_share = 0.03 allows 3"
    )
    resume = build_command(Action.RESUME, NOW, nodes=("gpu099",))
    assert guard.cap_refusal(log.entries(), settings, busy, resume, at) is None


def test_the_breaker_opens_after_errors_in_a_row_and_closes_on_success_or_reset(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    settings = ActionSettings(breaker_errors=2)
    with log.writing() as w:
        w.append("op", AuditEvent.FAILED, "a", {"slurm_error": True, "answer": {"text": "down"}})
        w.append("op", AuditEvent.DONE, "b", {})
        w.append("op", AuditEvent.FAILED, "c", {"slurm_error": True, "answer": {"text": "down"}})
    assert guard.breaker(log.entries(), settings) == guard.Breaker(False, 1, "down")
    with log.writing() as w:
        w.append("op", AuditEvent.FAILED, "d", {"slurm_error": True, "answer": {"text": "still down"}})
    assert guard.breaker(log.entries(), settings) == guard.Breaker(True, 2, "still down")
    with log.writing() as w:
        w.append("op", AuditEvent.BREAKER_RESET, None, {"why": "fixed"})
    assert not guard.breaker(log.entries(), settings).open
