"""Replay with other settings: the run's failures at the same times on the same hosts under more spares, another
checkpoint interval or faster restarts, written as a new run and shown beside this one (?replay=)."""

import streamlit as st

from dashboard import auth, state, table_view
from dashboard.queries import incidents as queries
from dashboard.text import code, md
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.replay.incidents import replay_stored_run
from engine.scenario import Scenario, from_dict
from engine.store import RunInfo


def replay_section(run: RunInfo, flagship: str | None) -> None:
    """The Incidents page's Replay with other settings tab (its label is the heading)."""
    try:
        scenario = from_dict(run.scenario) if isinstance(run.scenario, dict) and run.scenario else None
    except GoodputError:
        scenario = None
    if scenario is None or not flagship:
        st.info(
            "This run has no scenario to replay under (an observed or hand-made run). Export its incidents "
            "and replay the file with `goodput replay FILE --preset ... --set ...`."
        )
        return
    st.caption(
        "The same failures at the same times on the same hosts, under other settings: what would this "
        "run have cost with more spares, another checkpoint interval or faster restarts?"
    )
    values = replay_settings(run, scenario)
    if replay_button(run, scenario, values):
        replay_beside(run)


def replay_settings(run: RunInfo, scenario: Scenario) -> dict:
    """The settings a replay may change (spare hosts, checkpoint interval, restart overhead), as scenario
    values, starting from the run's own."""
    spare_room = max(scenario.hosts - scenario.job_hosts, 0)
    cols = st.columns(3)
    spares = cols[0].number_input(
        "spares.hosts (hot spare hosts)",
        0,
        spare_room,
        min(int(scenario["spares.hosts"]), spare_room),
        key=f"incidents_spares:{run.run_id}",
    )
    interval_min, restart_min = (
        scenario["training.checkpoint_interval"] / 60.0,
        scenario["training.restart_overhead"] / 60.0,
    )
    # bounds: the scenario key's minimum (1 s) and a day, or the run's own value where it is longer
    interval = cols[1].number_input(
        "training.checkpoint_interval (minutes)",
        1 / 60,
        max(24 * 60.0, interval_min),
        interval_min,
        key=f"incidents_interval:{run.run_id}",
    )
    restart = cols[2].number_input(
        "training.restart_overhead (minutes)",
        0.0,
        max(24 * 60.0, restart_min),
        restart_min,
        key=f"incidents_restart:{run.run_id}",
    )
    return {
        "spares.hosts": int(spares),
        "training.checkpoint_interval": interval * 60.0,
        "training.restart_overhead": restart * 60.0,
    }


def replay_button(run: RunInfo, scenario: Scenario, values: dict) -> bool:
    """The Replay button (planners only): the run's failures replayed under `values` into a new run, kept in the
    URL as ?replay=; False where the replay failed (having said why)."""
    # the new run's name says what changed (the settings left as they were add nothing to read), spelled as
    # a scenario file would spell it
    spelled = scenario.with_values(values).raw
    settings = [f"{k}={spelled[k]}" for k in values]
    changed = [text for text, k in zip(settings, values, strict=True) if values[k] != scenario[k]]
    if not auth.can(auth.Role.PLANNER):  # a replay is a simulation run on this server
        auth.missing(auth.Role.PLANNER, "Replaying with other settings")
    elif st.button(
        "Replay with these settings", icon=":material/replay:", key=f"incidents_replay:{run.run_id}"
    ):
        with st.status(
            "Replaying the run's failures under " + ", ".join(settings) + " …", expanded=False
        ) as status:
            try:
                forked = replay_stored_run(
                    state.store(),
                    run.run_id,
                    values=values,
                    name=f"{run.name} · replay ({', '.join(changed) or 'same settings'})",
                )
                state.set_url("replay", state.store().write_run(forked))
                replayed = RunSummary.from_json(forked.summary).details["replayed"]
                status.update(
                    label=f"Replayed {replayed['failures']:,} failures and {replayed['planned']:,} planned stops",
                    state="complete",
                )
            except GoodputError as err:
                status.update(label="The replay failed", state="error")
                st.error(md(err))
                return False
    return True


def replay_beside(run: RunInfo) -> None:
    """The replay of the URL's ?replay= beside this run, with links to compare them and open its incidents."""
    new_id = st.query_params.get("replay")
    if not new_id or new_id == run.run_id:
        return
    try:
        forked_info = state.store().info(new_id)
    except (GoodputError, OSError):
        st.warning(f"Run {code(new_id)} (the replay) is not in the store any more.")
        return
    st.markdown(
        "**The two runs side by side** (the flagship job's figures; cost: its losses at the run's price)"
    )
    table_view.dataframe(queries.side_by_side(run, forked_info), hide_index=True, width="stretch")
    cols = st.columns(2)
    cols[0].page_link(
        "app_pages/compare.py",
        label="Compare the two runs",
        icon=":material/compare_arrows:",
        query_params={"runs": f"{run.run_id},{new_id}", "run": run.run_id},
    )
    cols[1].page_link(
        "app_pages/incidents.py",
        label="Open the replay's incidents",
        icon=":material/open_in_new:",
        query_params={"run": new_id},
    )
