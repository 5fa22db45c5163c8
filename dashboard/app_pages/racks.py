"""Racks: the floor plan of every rack, host and GPU at time t, coloured by health, temperature, power against
the rack's budget, job or recent failures; a time slider that plays; one rack's elevation (hosts, GPUs, NICs,
its switch), links and events; and, once opened, the blast radius of a rack, host or switch failing at t. Under a
floor plan taller than the screen's remainder the problems table, one rack and the blast radius are drawn once
scrolled to (at once where a click, ?rack= or ?blast= asks for them: dashboard/lazy.below_fold).

URL: ?t= (seconds since the run's start), ?measure=, ?window= (failures), ?cells= (hosts, gpus; hosts by default
above GPU_CELLS_UP_TO), ?problems= (1: only racks with a problem stand out), ?rack= and ?blast= (kind:name, which
opens the blast radius) reproduce the view. Every figure is named and explained by its definition
(engine.analysis.definitions).
"""

import polars as pl
import streamlit as st

from dashboard import chart_view, fault_history, lazy, state, table_view
from dashboard.charts import racks as charts
from dashboard.format import fmt_time
from dashboard.queries import racks as queries
from dashboard.racks.floor import Floor, host_cells
from dashboard.racks.one_rack import one_rack
from dashboard.time_slider import moment_slider, time_axis
from engine.analysis.definitions import definition
from engine.report.visible_text import visible
from engine.store import RunInfo
from engine.store.schema import IN_SERVICE_STATES, OUT_OF_SERVICE_STATES

# A cell a GPU up to this size; larger clusters a cell a host (a click on "a cell a GPU" still draws every GPU). At
# llama3-405b's 24,576 GPUs a GPU cell is under 2 px wide on a 1,600 px screen, and its 24,576 hover texts cost the
# browser about 0.4 s a visit (bench/bench_pages.py); a host cell shows a failed GPU as well.
GPU_CELLS_UP_TO = 8192
# More racks than this and a few broken ones are lost among the healthy: the floor opens on the problems.
PROBLEMS_FIRST_OVER_RACKS = 64
PLAY_EVERY_S = 2.0  # seconds between frames while playing: a full page rerun each, with fresh queries
AT_T = "Shown at the time t chosen above."
HISTORY_MEASURES = ["state", "failures"]  # what a fault history can colour the floor by


def metric(column, key: str, value: str, note: str = "") -> None:
    """A figure under its definition's label, with its definition's help (and what it depends on)."""
    d = definition(key)
    column.metric(d.label, value, help=d.help + (f" {note}" if note else ""))


def page(run_id: str) -> None:
    """The page, top to bottom: the time t (and play), the floor at t with its figures, one rack opened, and
    what a failure would interrupt at t."""
    run = state.store().info(run_id)  # read again on every rerun: a live run grows between them
    t_s = time_section(run)
    floor = floor_at(run, t_s)
    if floor is None:
        st.info("This run has no hosts table (nothing to lay out on the floor).")
        return
    history = fault_history.is_fault_history(run)
    figures_section(floor, readings=not history)
    if history:
        st.caption(
            fault_history.lacks(run, "telemetry")
            + " Nor jobs, or where its nodes stand: each node is drawn as a rack of its own, in name order, "
            "down while an outage had it out."
        )
    clicked, problems_only, plan_px = floor_plan_section(run, floor)
    click = charts.clicked_rack(clicked.selection if clicked else None)
    # under a floor plan taller than the screen's remainder, what follows is drawn once scrolled to (its table and
    # chooser cost a visit about 0.2 s, dashboard/lazy.py), at once where a link or a click asks for it
    lazy.below_fold(
        f"racks_below:{run.run_id}",
        "The racks with a problem, one rack and the blast radius",
        lambda: below_floor(run, floor, clicked, problems_only),
        opened=plan_px <= lazy.CHART_PX_IN_VIEW or click is not None,
        url_keys=("rack", "blast"),
    )


def below_floor(run: RunInfo, floor: Floor, clicked, problems_only: bool) -> None:
    """The racks with a problem (while only those stand out), one rack opened, and the blast radius."""
    if problems_only and floor.problems.height:
        problems_table(floor.problems)
    rack = one_rack(run, floor, clicked)
    if fault_history.is_fault_history(run):  # no job runs behind anything: nothing a failure would interrupt
        return
    # drawn once opened (its table and controls cost a visit about 0.25 s); a link with ?blast= opens it
    opened = lazy.expander(
        "Blast radius: what a failure of a rack, host or switch would interrupt at t",
        f"racks_blast:{run.run_id}",
        lambda: blast_radius(run, floor, rack),
        opened=queries.parse_blast(st.query_params.get("blast")) is not None,
    )
    if not opened:
        st.query_params.pop("blast", None)


# ----- time t, and play -------------------------------------------------------------------------------------
def time_section(run: RunInfo) -> float:
    """The time slider and play; returns t (seconds since the run's start), kept in the URL as ?t=."""
    # 500 steps across the run, never finer than a minute (a run of one moment still gets a minute to show)
    axis = time_axis(run.started_at, max(run.duration_s, 60.0), max(run.duration_s / 500, 60.0))
    base_key = f"racks_t:{run.run_id}"
    if "racks_next_t" in st.session_state:  # a step of play, applied before the slider is drawn
        st.session_state[axis.key(base_key)] = axis.value(st.session_state.pop("racks_next_t"))
    if st.session_state.pop("racks_stop", False):
        st.session_state["racks_play"] = False
    controls = st.columns([6, 1, 1])
    picked_s = moment_slider(
        axis, base_key, queries.parse_t(st.query_params.get("t"), run.duration_s), where=controls[0]
    )
    playing = controls[1].toggle("Play", key="racks_play", help="Step the floor forward through the run")
    step_key = state.seed("racks_step", "1h")
    step = controls[2].selectbox("Step", list(queries.PLAY_STEPS), key=step_key)
    st.query_params["t"] = f"{picked_s:.0f}"
    t_s = queries.state_time(picked_s, run.duration_s)
    st.caption(f"The cluster at {fmt_time(run.started_at, t_s)}")

    @st.fragment(run_every=PLAY_EVERY_S if playing else None)
    def _clock() -> None:
        """While playing, each tick moves t one step and reruns the page (the app run itself does not step)."""
        if st.session_state.pop("racks_app_run", False) or not st.session_state.get("racks_play"):
            return
        t_next, more = queries.next_t(
            axis.seconds(st.session_state[axis.key(base_key)]), queries.PLAY_STEPS[step], run.duration_s
        )
        st.session_state["racks_next_t"] = t_next
        st.session_state["racks_stop"] = not more
        st.rerun(scope="app")

    st.session_state["racks_app_run"] = True
    _clock()
    return t_s


# ----- the floor at t -------------------------------------------------------------------------------------
def floor_at(run: RunInfo, t_s: float) -> Floor | None:
    """What to colour the floor by, and the floor at t (None: the run has no hosts table)."""
    hosts = queries.hosts_at(run.run_id, t_s)
    if hosts.is_empty():
        return None
    tdp_w, budget_kw = queries.power_limits(run.scenario)
    # a fault history has no readings or jobs to colour by: its states and failures only
    measures = HISTORY_MEASURES if fault_history.is_fault_history(run) else list(charts.MEASURES)
    measure_key = state.seed(
        f"racks_measure:{run.run_id}",
        st.query_params.get("measure") if st.query_params.get("measure") in measures else "state",
    )
    measure = (
        st.segmented_control("Colour by", measures, key=measure_key, format_func=charts.MEASURES.get)
        or "state"
    )
    st.query_params["measure"] = measure
    window_key = state.seed(
        f"racks_window:{run.run_id}",
        st.query_params.get("window") if st.query_params.get("window") in queries.WINDOWS else "1d",
    )
    window = st.session_state[window_key]
    if measure == "failures":
        window = st.selectbox(
            "Failures in the last",
            list(queries.WINDOWS),
            key=window_key,
            format_func=queries.WINDOW_WORDS.get,
        )
        st.query_params["window"] = window
    cells_frame = queries.floor_cells(run.run_id, t_s, run.scenario, queries.WINDOWS[window])
    cells_frame = cells_frame.join(queries.jobs(run.run_id).select("job_id", "kind"), on="job_id", how="left")
    return Floor(
        t_s,
        hosts,
        cells_frame,
        queries.rack_power(cells_frame),
        queries.problem_racks(hosts, cells_frame),
        measure,
        window,
        tdp_w,
        budget_kw,
    )


def figures_section(floor: Floor, readings: bool = True) -> None:
    """What an operator looks for first: what is broken at t; then the cluster's size and (where the run has GPU
    readings to sum) its power."""
    hosts, power, problems, budget_kw = floor.hosts, floor.power, floor.problems, floor.budget_kw
    over = power.filter(pl.col("over"))
    states = hosts["state"].fill_null("unknown")
    up, out, unknown = (
        int(states.is_in(s).sum()) for s in (IN_SERVICE_STATES, OUT_OF_SERVICE_STATES, ("unknown",))
    )
    n_racks = hosts["rack_id"].n_unique()
    cols = st.columns(4)
    metric(cols[0], "racks_with_a_problem", f"{problems.height:,}", AT_T)
    metric(cols[1], "hosts_out_of_service", f"{out:,}", AT_T)
    metric(cols[2], "hosts_in_service", f"{up:,}", AT_T)
    metric(cols[3], "hosts_without_a_state", f"{unknown:,}", AT_T)
    cols = st.columns(4)
    metric(cols[0], "racks", f"{n_racks:,}")
    if not readings:
        return
    cluster_kw = float(power["rack_kw"].sum())
    metric(
        cols[1],
        "gpu_power_drawn",
        f"{cluster_kw / 1000:,.2f} MW" if cluster_kw >= 1000 else f"{cluster_kw:,.1f} kW",
        AT_T,
    )
    metric(
        cols[2],
        "racks_over_power_budget",
        f"{over.height:,}",
        f"This run's budget: {budget_kw:g} kW a rack. {AT_T}",
    )


def floor_plan_section(run: RunInfo, floor: Floor) -> tuple[object, bool, int]:
    """The floor plan, a cell a host or a GPU; returns its selection state (a click opens a rack), whether only
    the racks with a problem stand out, and the plan's height in pixels."""
    hosts, problems = floor.hosts, floor.problems
    n_racks = hosts["rack_id"].n_unique()
    st.subheader("Floor plan")
    cells, problems_only = floor_controls(run, n_racks)
    figure = charts.floor_plan(
        shown_cells(floor, cells),
        floor.measure,
        tdp_w=floor.tdp_w,
        window=queries.WINDOW_WORDS[floor.window],
        problem_racks=problems["rack_id"].to_list() if problems_only else None,
    )
    if problems_only:
        hidden = n_racks - problems.height
        st.caption(
            f"**Problems only**: {problems.height:,} of {n_racks:,} racks have a host out of service or a "
            f"failed GPU at t (ringed); the other {hidden:,} are greyed out. Switch *Problems only* off to "
            "see every rack."
        )
    clicked = chart_view.plotly(
        figure,
        width="stretch",
        on_select="rerun",
        selection_mode="points",
        key=f"racks_floor:{run.run_id}",
    )
    floor_notes(run, floor, problems_only)
    return clicked, problems_only, int(figure.layout.height or 0)


def floor_controls(run: RunInfo, n_racks: int) -> tuple[str, bool]:
    """A cell a host or a GPU (?cells=), and Problems only (?problems=)."""
    gpus = queries.gpu_count(run.run_id)
    default_cells = "gpus" if 0 < gpus <= GPU_CELLS_UP_TO else "hosts"
    wanted_cells = st.query_params.get("cells")
    cells_key = state.seed(
        f"racks_cells:{run.run_id}", wanted_cells if wanted_cells in ("hosts", "gpus") else default_cells
    )
    controls = st.columns([1, 1])
    cells = (
        controls[0].segmented_control(
            "Cells",
            ["hosts", "gpus"],
            key=cells_key,
            format_func={"hosts": "a cell a host", "gpus": "a cell a GPU"}.get,
        )
        or default_cells
    )
    if gpus == 0:
        cells = "hosts"
    st.query_params["cells"] = cells
    wanted_problems = st.query_params.get("problems")
    problems_key = state.seed(
        f"racks_problems:{run.run_id}",
        wanted_problems == "1" if wanted_problems in ("0", "1") else n_racks > PROBLEMS_FIRST_OVER_RACKS,
    )
    problems_only = controls[1].toggle(
        "Problems only",
        key=problems_key,
        help="Grey out every rack without a host out of service or a failed GPU at t, "
        "and ring the racks with one.",
    )
    st.query_params["problems"] = "1" if problems_only else "0"
    return cells, problems_only


def shown_cells(floor: Floor, cells: str) -> pl.DataFrame:
    """The floor's cells: its GPUs, or its hosts with their hottest GPU, mean GPU power and most failed GPU."""
    hosts, cells_frame, budget_kw = floor.hosts, floor.cells, floor.budget_kw
    if cells == "gpus":
        shown = cells_frame
        st.caption(
            "A GPU shows its host's state, or *Failed GPU* (black) from its own incident until its repair."
        )
    else:
        shown = host_cells(hosts, cells_frame, budget_kw)
        st.caption(
            "A host cell shows *Failed GPU* (black) where one of its GPUs has failed while the host is in service, "
            "its hottest GPU, its mean GPU power and its most failed GPU."
        )
    return shown


def floor_notes(run: RunInfo, floor: Floor, problems_only: bool) -> None:
    """What the plan shows (the power readings and budget), what the run lacks, and the racks over budget."""
    hosts, measure, tdp_w, budget_kw = floor.hosts, floor.measure, floor.tdp_w, floor.budget_kw
    over = floor.power.filter(pl.col("over"))
    unknown = int(hosts["state"].fill_null("unknown").eq("unknown").sum())  # as figures_section counts it
    notes = [
        "Click a ringed rack's dot to open it below, or choose any rack under *Rack*."
        if problems_only
        else "Click a rack's dot to open it below."
    ]
    if measure == "power":
        notes.append(
            f"Each GPU's latest reading at or before t, summed per host and rack against the rack budget of "
            f"{budget_kw:g} kW; a GPU's TDP is {tdp_w:.0f} W (H100, Llama 3 paper). Racks over budget: red ×."
        )
    if measure in ("temp", "power") and not queries.has_table(run.run_id, "gpu_samples"):
        notes.append("This run has no GPU telemetry: no readings to show.")
    st.caption(" ".join(notes))
    if unknown == hosts.height:
        st.caption("This run records no host states at t, so every host shows as unknown.")
    if over.height:
        st.markdown(
            "**Racks over their power budget at t**: "
            + ", ".join(
                f"rack {r} ({kw:.1f} kW)" for r, kw in over.select("rack_id", "rack_kw").head(20).iter_rows()
            )
            + (" …" if over.height > 20 else "")
        )


def problems_table(problems: pl.DataFrame) -> None:
    """The racks with a host out of service or a failed GPU at t."""
    st.markdown(f"**Racks with a problem at t** ({problems.height:,}: choose one under *Rack* to open it)")
    shown = (
        problems.head(500)
        .with_columns(pl.col("states").list.eval(pl.element().replace(charts.STATE_WORDS)))
        .rename(
            {
                "rack_id": "rack",
                "hosts_out_of_service": "hosts out of service",
                "failed_gpus": "failed GPUs",
                "states": "out-of-service states",
            }
        )
    )
    table_view.short(shown, height=min(400, 38 + 35 * min(problems.height, 500)))


# ----- blast radius ---------------------------------------------------------------------------------------
def blast_radius(run: RunInfo, floor: Floor, rack: int | None) -> None:
    """What a failure of a rack, host, switch or pod's spine would interrupt at t (?blast=kind:target)."""
    hosts, cells_frame = floor.hosts, floor.cells
    gpus = queries.gpu_count(run.run_id)
    st.caption(
        "What a failure would interrupt at t: every job with a host behind the failed part stops as a whole "
        "(gang-scheduled jobs restart together)."
    )
    wanted_blast = queries.parse_blast(st.query_params.get("blast"))
    kind_key = state.seed(f"racks_blast_kind:{run.run_id}", wanted_blast[0] if wanted_blast else "rack")
    kind = (
        st.segmented_control(
            "A failure of", list(queries.BLAST_KINDS), key=kind_key, format_func=queries.BLAST_KINDS.get
        )
        or "rack"
    )
    targets = queries.blast_targets(hosts, kind)
    target_key = f"racks_blast_target:{run.run_id}:{kind}"
    follows_key = f"racks_blast_follows:{run.run_id}:{kind}"  # the open rack the target was last taken from
    of_rack = queries.blast_target_of_rack(hosts, kind, rack) if rack is not None else None
    if st.session_state.get(target_key) not in targets:  # first view: the URL's part, else the open rack's
        from_url = (
            wanted_blast[1]
            if wanted_blast and wanted_blast[0] == kind and wanted_blast[1] in targets
            else None
        )
        st.session_state[target_key] = from_url or (of_rack if of_rack in targets else targets[0])
        st.session_state[follows_key] = rack
    elif rack is not None and st.session_state.get(follows_key) != rack and of_rack in targets:
        st.session_state[target_key] = of_rack  # another rack opened since: the blast radius follows it
        st.session_state[follows_key] = rack
    target = st.selectbox(
        queries.BLAST_KINDS[kind],
        targets,
        key=target_key,
        format_func=visible,
        help="Opens on the rack opened above (its rack, top host, switch or pod's spine); "
        "opening another rack moves it there.",
    )
    st.query_params["blast"] = f"{kind}:{target}"
    hit_hosts, spanning = queries.blast_hosts(hosts, kind, target)
    gpus_per_host = max(1, round(gpus / max(hosts.height, 1))) if gpus else 8
    hit = queries.blast_radius(hosts, gpus_per_host, queries.jobs(run.run_id), hit_hosts, spanning)
    cols = st.columns(3)
    AT_PART = f"For {queries.BLAST_KINDS[kind].lower()} {target}, at the time t chosen above."
    metric(cols[0], "blast_jobs", f"{hit.height:,}", AT_PART)
    metric(cols[1], "blast_gpus_stopped", f"{int(hit['job_gpus'].sum()):,}", AT_PART)
    metric(cols[2], "blast_gpus_behind", f"{hit_hosts.len() * gpus_per_host:,}", AT_PART)
    if hit.is_empty():
        st.caption("No job runs behind it at t" + (" across racks" if spanning else "") + ".")
    else:
        table_view.dataframe(
            hit.rename(
                {
                    "job_id": "job",
                    "hosts_hit": "its hosts behind the part",
                    "gpus_hit": "its GPUs behind the part",
                    "job_gpus": "its GPUs (all stop)",
                }
            ),
            hide_index=True,
            width="stretch",
        )
    if st.toggle(
        "Show it on the floor", key="racks_blast_floor", help="the floor plan again, the blast radius in red"
    ):
        chart_view.plotly(
            charts.floor_plan(queries.blast_cells(cells_frame, hit_hosts, hit), "blast"),
            width="stretch",
            key=f"racks_blast_floor:{run.run_id}",
        )


st.title("Racks")
state.render_run_page(page, state.run_or_stop())
