"""The Operations page (issue 25): the recommended actions of the selected run with their price and evidence, acting
only on an observed run, a dry run before anything, a confirmation of the exact command, Slurm's answer shown, the
audit log with its chain checked; query parameters never act. With a real Slurm (tests/servers/slurm.py): a drain
carried out from the page. Viewers and planners cannot act: tests/test_auth_browser.py (a real login)."""

from dataclasses import replace
from pathlib import Path

import pytest
from test_act_recommend import FATAL, small_run
from test_charts_pages import open_page

from engine.act.audit import AuditLog
from engine.store import Store
from tests.servers.slurm import SlurmCluster

PAGE = "app_pages/operations.py"


def observed(node: str = "h1"):
    """The small run with a fatal XID on h1 (rack 0), as read from a real cluster whose h1 is `node`."""
    run = replace(small_run(incidents=[FATAL]), kind="ingest")
    hosts = run.tables["hosts"].with_columns(run.tables["hosts"]["hostname"].replace("h1", node))
    return replace(run, tables={**run.tables, "hosts": hosts})


def settings(store_dir: Path, **actions: str) -> None:
    store_dir.mkdir(parents=True, exist_ok=True)
    lines = "".join(f'{key} = "{value}"\n' for key, value in actions.items())
    (store_dir / "settings.toml").write_text("[actions]\n" + lines)


def events(store_dir: Path) -> list[str]:
    return [e.event for e in AuditLog(store_dir).entries()]


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_a_simulated_run_shows_its_findings_with_acting_off(store_dir: Path) -> None:
    run_id = Store(store_dir).write_run(small_run(incidents=[FATAL]))
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    table = at.dataframe[0].value
    assert (list(table["action"]), list(table["nodes"])) == (["drain"], ["h1"])
    assert "acting on them is off" in " ".join(i.value for i in at.info)
    assert "Dry run" not in [b.label for b in at.button]
    assert [m.label for m in at.metric][-4:] == [
        "Cost if acting",
        "Cost if not acting",
        "Jobs hit now",
        "GPUs hit now",
    ]
    assert events(store_dir) == ["recommended"]  # seen once, logged once
    open_page(PAGE, {"run": run_id})
    assert events(store_dir) == ["recommended"]


def test_query_parameters_never_act(store_dir: Path, tmp_path: Path) -> None:
    settings(store_dir, slurm_bin=str(tmp_path))  # no Slurm here: anything that reached it would fail loudly
    run_id = Store(store_dir).write_run(observed())
    at = open_page(PAGE, {"run": run_id})
    action_id = at.dataframe[0].value["id"][0]
    forged = {
        "run": run_id,
        "action": action_id,
        "approve": "1",
        "confirm": "1",
        "dry_run": "1",
        "ops_confirm": "true",
        "tab": "Recommended",
    }
    at = open_page(PAGE, forged)
    assert not at.exception
    assert at.selectbox(key="ops_pick").value == action_id  # the link opens the action, and only that
    assert events(store_dir) == ["recommended"]
    assert "Carry out" not in [b.label for b in at.button]  # no confirmation without this session's dry run


def test_a_dry_run_without_slurm_says_so_and_sends_nothing(store_dir: Path, tmp_path: Path) -> None:
    settings(store_dir, slurm_bin=str(tmp_path))
    run_id = Store(store_dir).write_run(observed())
    at = open_page(PAGE, {"run": run_id})
    at = button(at, "Dry run").click().run()
    assert not at.exception
    said = " ".join(e.value for e in at.error)
    assert "It would be refused" in said and "sinfo: not found in" in said
    assert "Carry out" not in [b.label for b in at.button]
    assert events(store_dir) == ["recommended"]  # a dry run that reached no Slurm logs nothing


def test_the_audit_log_tab_shows_the_chain_and_offers_downloads(store_dir: Path) -> None:
    run_id = Store(store_dir).write_run(small_run(incidents=[FATAL]))
    open_page(PAGE, {"run": run_id})
    at = open_page(PAGE, {"run": run_id, "tab": "Audit log"})
    assert not at.exception
    assert "1 entry; the hash chain holds" in at.success[0].value
    log = at.dataframe[0].value
    assert list(log["event"]) == ["recommended"]
    assert [d.label for d in at.get("download_button")] == ["Audit log (CSV)", "Audit log (JSON)"]


@pytest.mark.xdist_group("slurm")
def test_a_drain_carried_out_from_the_page(store_dir: Path, slurm_cluster: SlurmCluster) -> None:
    settings(store_dir, slurm_conf=slurm_cluster.conf)
    run_id = Store(store_dir).write_run(observed(slurm_cluster.node))
    try:
        at = open_page(PAGE, {"run": run_id})
        at = button(at, "Dry run").click().run()
        assert not at.exception
        command = at.code[0].value
        assert command.startswith(
            f"scontrol update NodeName={slurm_cluster.node} State=DRAIN 'Reason=goodput: "
        )
        assert button(at, "Carry out").disabled  # until the command is confirmed
        at = (
            at.checkbox(key=next(c.key for c in at.checkbox if c.key.startswith("ops_confirm:")))
            .check()
            .run()
        )
        at = button(at, "Carry out").click().run()
        assert not at.exception
        assert "Slurm accepted" in at.success[0].value
        state = slurm_cluster.run(
            "sinfo", "--noheader", "--Node", f"--nodes={slurm_cluster.node}", "--format=%T"
        )
        assert state.strip().startswith("drain")
        assert events(store_dir) == ["recommended", "dry_run", "approved", "done"]
        at = open_page(PAGE, {"run": run_id})
        assert list(at.dataframe[0].value["state"]) == ["done"]
        assert "Dry run" not in [b.label for b in at.button]
    finally:
        slurm_cluster.resume()


def test_the_action_picker_shows_invisible_characters_as_the_table_does(store_dir: Path) -> None:
    """A node named with U+202E (RIGHT-TO-LEFT OVERRIDE) read 'drain hexe.png1' in the picker, raw, while the
    table beside it showed the mark: every label of the page's pickers is made visible."""
    run_id = Store(store_dir).write_run(observed("h\u202e1gnp.exe"))
    at = open_page(PAGE, {"run": run_id})
    assert not at.exception
    [label] = at.selectbox(key="ops_pick").options
    assert "\u202e" not in label and label.endswith("drain h⟨U+202E⟩1gnp.exe")
    at = open_page(PAGE, {"run": run_id, "tab": "By hand"})
    assert at.selectbox(key="ops_hand_action").options == ["drain", "resume", "requeue"]


def test_the_command_confirmed_shows_invisible_characters(store_dir: Path, tmp_path: Path) -> None:
    """The dry run's command is what the operator confirms: a reason holding U+202E reversed it on screen (issue 45,
    12, found beside the picker). Against a Slurm of four nodes (tests/servers/fake_slurm.py)."""
    from tests.servers import fake_slurm

    slurm = fake_slurm.make(tmp_path / "slurm", 4, delay_s=0.0)
    settings(store_dir, slurm_bin=str(slurm))
    run_id = Store(store_dir).write_run(observed("gpu01"))
    at = open_page(PAGE, {"run": run_id, "tab": "By hand"})
    at.text_input(key="ops_hand_nodes").set_value("gpu02").run()
    at.text_input(key="ops_hand_reason").set_value("fan \u202eylf\u202c noise").run()
    at = button(at, "Dry run").click().run()
    assert not at.exception
    command = at.code[0].value
    assert "\u202e" not in command and "Reason=goodput: fan ⟨U+202E⟩ylf⟨U+202C⟩ noise" in command
    assert fake_slurm.updates(slurm) == []  # a dry run sends nothing
