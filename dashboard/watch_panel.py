"""The Data page's "Watch a cluster" section: start a watch inside this dashboard server (operators), the
watches running here with their logs and a Stop button, and where each watched run's sources stand. The watches
themselves run in dashboard/watch_runner.py; what they may read is the administrator's configuration
(dashboard/watch_endpoints.py): the form offers those endpoints by name, never a URL or a path."""

import shlex
from collections.abc import Callable

import streamlit as st

from dashboard import auth, state, watch_endpoints, watch_runner
from dashboard.format import fmt_duration, fmt_int
from dashboard.queries.data import watched_runs
from dashboard.text import code, md, md_urls
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.scenario.durations import parse_duration
from engine.store import RunInfo, Store

WATCH_STARTED_KEY = "data_watch_started"  # the watch the form just started, shown after the rerun
WATCH_REFRESH_S = 5.0  # how often the list of running watches redraws itself (cycles, last line)


def watch_section(store: Store, runs: list[RunInfo], may_write: bool) -> None:
    """Start and stop watches in this dashboard server (operators), the watches it runs, the command for a
    watch that outlives the server, and the watched runs with their sources' states."""
    st.subheader("Watch a cluster")
    where = shlex.quote(str(store.root))
    st.markdown(
        "`goodput watch` keeps one observed run current from Prometheus (the XID and ECC series of"
        " dcgm-exporter) and Slurm (jobs, attempts, node states): each cycle adds what changed, atomically."
        " Raw per-GPU series stay in Prometheus; the GPUs page queries them for its window."
    )
    st.info(
        "A watch started here runs inside this dashboard server, for as long as the server runs: it stops when"
        " the server stops (every cycle it committed stays in the run). For a watch of days, run the command"
        " below as a service.",
        icon=":material/info:",
    )
    st.code(
        f"goodput watch --prometheus http://prometheus:9090 --slurm --every 1m --store {where}\n"
        f"goodput watch --prometheus http://thanos-query:10902 --every 5m --name fleet --store {where}",
        language="bash",
    )
    if may_write:
        start_form(store)
    else:
        auth.missing(auth.Role.OPERATOR, "Starting and stopping watches")
    if any(w.running for w in watch_runner.watches(store.root)):
        # while this server's watches commit cycles, both lists redraw themselves (cycles, sources' states)
        st.fragment(watch_lists, run_every=WATCH_REFRESH_S)(store, None, may_write)
    else:
        watch_lists(store, runs, may_write)


def start_form(store: Store) -> None:
    """The form that starts a watch of what the administrator configured; its first cycle's outcome (a run, or
    the error and nothing written) is shown under it."""
    started = st.session_state.pop(WATCH_STARTED_KEY, None)
    if started is not None:
        watch_started_message(started)
    try:
        config = watch_endpoints.configured()
    except GoodputError as err:
        st.error(
            f"The watch settings in the dashboard's secrets file are wrong, so no watch can start here: {md(err)}",
            icon=":material/error:",
        )
        return
    if config.empty:
        not_configured()
        return
    names = list(config.endpoints)
    with st.form("watch_form", border=True):
        prometheus, slurm_col = st.columns([3, 2], vertical_alignment="bottom")
        endpoint = prometheus.selectbox(
            "Prometheus",
            names,
            index=0 if names and not config.slurm else None,
            format_func=lambda name: config.endpoints[name].shown,
            placeholder="none" if config.slurm else "choose an endpoint",
            key="watch_endpoint",
            disabled=not names,
            help="the endpoints configured in the dashboard's secrets file, each with its own credentials",
        )
        read_slurm = slurm_col.checkbox(
            f"Read Slurm ({config.slurm_conf or 'default slurm.conf'})",
            key="watch_slurm",
            disabled=not config.slurm,
            help="sacct and sinfo on the dashboard's server"
            if config.slurm
            else "the dashboard's secrets file has no [goodput.watch.slurm]",
        )
        every, since, name = st.columns(3)
        every_text = every.text_input(
            "Every",
            value="1m",
            key="watch_every",
            help=f"time between cycles, at least {fmt_duration(watch_runner.watch_loop_module.MIN_EVERY_S)}",
        )
        since_text = since.text_input(
            "Look back", value="1h", key="watch_since", help="how far back the first cycle reads"
        )
        run_name = name.text_input(
            "Run name (required)", key="watch_name", help="one watch per name in this store"
        )
        submitted = st.form_submit_button("Start watching", icon=":material/play_arrow:", key="watch_start")
    if submitted:
        start_watch(
            store,
            lambda: watch_runner.WatchSettings(
                name=run_name,
                endpoint=endpoint,
                slurm=bool(read_slurm and config.slurm),
                every_s=parse_duration(every_text, "Every"),
                lookback_s=parse_duration(since_text, "Look back"),
            ),
            config,
        )


def not_configured() -> None:
    """No endpoint is configured: say how to configure one, instead of a form."""
    st.info(
        "Watches started here read only the Prometheus endpoints (and the Slurm) that whoever runs this dashboard"
        " configured in its secrets file, each with its own credentials; none is configured yet. Add them like"
        " this (README, 'Watch a real cluster'):",
        icon=":material/settings:",
    )
    st.code(watch_endpoints.EXAMPLE, language="toml")


def start_watch(
    store: Store, settings: Callable[[], watch_runner.WatchSettings], config: watch_endpoints.WatchConfig
) -> None:
    """Start the watch and wait for its first cycle: on success rerun (the list shows it), on an error say
    why where the form is (a field named, or the first cycle's error: nothing was written)."""
    try:
        auth.require(auth.Role.OPERATOR)
        key = watch_runner.start(store.root, settings(), config)
    except GoodputError as err:
        st.error(f"The watch was not started: {md_urls(err)}", icon=":material/error:")
        return
    with st.spinner("Reading the sources for the first cycle…"):
        first = watch_runner.wait_first_cycle(key, watch_runner.FIRST_CYCLE_WAIT_S)
    if first.error is not None and first.run_id is None:
        watch_runner.forget(key)  # nothing ran and nothing was written: the name is free again
        st.error(f"The watch did not start: {md_urls(first.error)}", icon=":material/error:")
        return
    st.session_state[WATCH_STARTED_KEY] = key
    st.rerun()


def watch_started_message(key: watch_runner.WatchKey) -> None:
    """What the watch the form just started did in its first cycle (shown once, after the rerun)."""
    started = next((w for w in watch_runner.watches(key.store_root) if w.key == key), None)
    if started is None:  # dismissed meanwhile, from another session
        return
    if started.run_id is None:
        st.info(
            f"Watching **{md(started.name)}**: its first cycle is still reading the sources; the list below shows"
            " it when it commits, or why it failed.",
            icon=":material/hourglass_top:",
        )
    else:
        st.success(
            f"Watching **{md(started.name)}**: the first cycle wrote run {code(started.run_id)}.",
            icon=":material/check_circle:",
        )


def watch_lists(store: Store, runs: list[RunInfo] | None, may_write: bool) -> None:
    """The watches this server runs for this store, then the store's watched runs (`runs`, or scanned afresh
    when None: a redraw of the fragment)."""
    server_watches(store, may_write)
    watched_runs_states(runs if runs is not None else state.scan_runs()[0])


def server_watches(store: Store, may_write: bool) -> None:
    """This server's watches of the store: state, log, and Stop (or Dismiss, once ended) for operators."""
    listed = watch_runner.watches(store.root)
    if listed:
        st.markdown("**Watches started in this dashboard server**")
    for w in listed:
        status = "stopping" if w.stopping else "running" if w.running else "ended"
        run = f"run {code(w.run_id)}" if w.run_id else "no run yet"
        cycles = f"{fmt_int(w.cycles)} {'cycle' if w.cycles == 1 else 'cycles'}"
        st.markdown(
            f"**{md(w.name)}** · {status} · {cycles} · {run} · started"
            f" {w.started_at:%Y-%m-%d %H:%M} UTC · {md(sources_text(w.watching))}"
        )
        if w.error is not None:
            st.error(f"Ended: {md_urls(w.error)}", icon=":material/error:")
        if w.lines:
            with st.expander(f"Log ({len(w.lines)} recent lines)"):
                st.code("\n".join(w.lines), language=None)
        if may_write:
            if w.running:
                st.button(
                    "Stop",
                    icon=":material/stop:",
                    key=f"watch_stop:{w.name}",
                    disabled=w.stopping,
                    on_click=stop_watch,
                    args=(w.key,),
                )
            else:
                st.button(
                    "Dismiss",
                    icon=":material/close:",
                    key=f"watch_forget:{w.name}",
                    on_click=forget_watch,
                    args=(w.key,),
                )


def sources_text(watching: watch_runner.Watching) -> str:
    """What a watch reads (the endpoint by its name and URL) and how often."""
    parts = [] if watching.prometheus_shown is None else [f"Prometheus {watching.prometheus_shown}"]
    if watching.settings.slurm:
        parts.append(f"Slurm ({watching.slurm_conf or 'default slurm.conf'})")
    every = watching.settings.every_s
    return ", ".join(parts) + f", every {fmt_duration(every) if every >= 1 else f'{every * 1000:g} ms'}"


def stop_watch(key: watch_runner.WatchKey) -> None:
    auth.require(auth.Role.OPERATOR)
    watch_runner.stop(key)


def forget_watch(key: watch_runner.WatchKey) -> None:
    auth.require(auth.Role.OPERATOR)
    watch_runner.forget(key)


def watched_runs_states(runs: list[RunInfo]) -> None:
    """The watched runs in the store (started here or by the command), with their sources' last states."""
    watched = watched_runs(runs)
    if not watched:
        st.caption("No watched run in this store yet.")
        return
    st.markdown("**Watched runs in the store**")
    for info, states in watched:
        cycles = RunSummary.from_json(info.summary).details.get("cycles", 0)
        st.markdown(
            f"**{md(info.name)}** ({code(info.run_id)}, {fmt_int(cycles)} {'cycle' if cycles == 1 else 'cycles'})"
        )
        for s in states:
            line = md_urls(s.line())
            if s.reachable:
                st.success(line, icon=":material/check_circle:")
            else:
                st.error(line, icon=":material/error:")
