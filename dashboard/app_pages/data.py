"""Data: the runs in the store (list, delete with a confirmation), imports by upload (DCGM scrapes and kernel
logs ingested, job traces replayed, each into a new run), watching a cluster (dashboard/watch_panel.py), and the
commands that add runs from a terminal.

The uploads' work is in dashboard/uploads.py (plain functions); this page only collects the files and says what
happened: the new run with a link to it, or the file and line that stopped the import (nothing written).
"""

import shlex

import polars as pl
import streamlit as st

from dashboard import auth, fault_history, state, table_view, uploads
from dashboard.format import fmt_int
from dashboard.queries.data import runs_table
from dashboard.state import Unreadable
from dashboard.text import code, md, visible
from dashboard.watch_panel import watch_section
from engine.analysis.run_summary import RunSummary
from engine.errors import GoodputError
from engine.replay.settings import MODES
from engine.scenario.presets import PRESETS
from engine.store import RunInfo, Store

CONFIRM_KEY = "data_confirm_delete"  # the run id awaiting confirmation
DONE_KEY = "data_deleted"  # what the last delete did, shown once after the rerun
VICTIM_KEY = "data_victim"
HISTORIES_SHOWN = 10  # fault histories described, newest first
IMPORTED_KEY = "data_imported"  # the run the last import made, shown (with its link) after the rerun


def ask_to_delete() -> None:
    # read the choice from the widget's state, not from args bound when the button was drawn: a pick made
    # in the same interaction as the click must win
    st.session_state[CONFIRM_KEY] = st.session_state.get(VICTIM_KEY)


def cancel_delete() -> None:
    st.session_state.pop(CONFIRM_KEY, None)


def run_import(what: str, work) -> None:
    """Run an import; on success remember the new run and rerun (the list above then shows it), on bad input
    show the parser's words (they name the file and line) where the button was."""
    try:
        auth.require(auth.Role.OPERATOR)
        with st.spinner(f"{what}…"):
            imported = work()
    except GoodputError as err:
        st.error(f"Nothing was imported: {md(err)}", icon=":material/error:")
        return
    st.session_state[IMPORTED_KEY] = imported
    st.rerun()


def delete(run_id: str) -> None:
    auth.require(auth.Role.OPERATOR)
    try:
        state.store().delete_run(run_id)
        st.session_state[DONE_KEY] = ("success", f"Deleted run {code(run_id)}.")
    except (OSError, state.StoreError) as err:
        st.session_state[DONE_KEY] = ("error", f"Could not delete run {code(run_id)}: {md(err)}")
    state.forget_run(run_id)
    st.session_state.pop(CONFIRM_KEY, None)


def page() -> None:
    """The runs in the store (and the files it skipped), deleting one, importing files, and the commands that
    add runs from a terminal."""
    may_write = auth.can(auth.Role.OPERATOR)  # imports and deletes: operators only, where login is on
    store = state.store()
    runs, unreadable = state.scan_runs()
    done = st.session_state.pop(DONE_KEY, None)
    if done:
        (st.success if done[0] == "success" else st.error)(done[1])
    runs_section(store, runs, unreadable)
    histories_section(runs)
    delete_section(runs, unreadable, may_write)
    import_section(store, may_write)
    watch_section(store, runs, may_write)
    terminal_section(store)


# ----- the runs in the store --------------------------------------------------------------------------------
def runs_section(store: Store, runs: list[RunInfo], unreadable: list[Unreadable]) -> None:
    st.subheader("Runs in the store")
    st.caption(
        f"Store: {code(store.root)} · {fmt_int(len(runs))} run(s), newest first. Every run is one DuckDB file; "
        "the dashboard reads it while the command line writes new ones."
    )
    table = runs_table(runs)
    if 0 < table.height <= table_view.SHORT_ROWS:
        # a store's few runs as static cells: the interactive grid costs a page 0.4 s, and its first visit a second
        table_view.short(
            table.select(
                pl.col("run_id").alias("run id"),
                "kind",
                "name",
                pl.col("created").dt.strftime("%Y-%m-%d %H:%M").alias("created (UTC)"),
                pl.col("started").alias("run starts"),
                "days",
                # a cluster's size with its thousands separated (a static cell shows a number as it is)
                pl.Series("GPUs", [fmt_int(n) for n in table["GPUs"]], pl.String),
                "seed",
                pl.col("size_mb").alias("size (MB)"),
            )
        )
    elif runs:
        table_view.dataframe(
            table,
            hide_index=True,
            key="runs_table",
            column_config={
                "run_id": st.column_config.TextColumn("run id"),
                "created": st.column_config.DatetimeColumn("created (UTC)", format="YYYY-MM-DD HH:mm"),
                "started": st.column_config.TextColumn(
                    "run starts",
                    help="UTC; unknown for a kernel log stamped only in "
                    "seconds since boot (its times count from its first line)",
                ),
                "days": st.column_config.NumberColumn("days", format="%,.1f"),
                "GPUs": st.column_config.NumberColumn("GPUs", format="%,d"),
                "size_mb": st.column_config.NumberColumn("size (MB)", format="%,.1f"),
            },
        )
    unlistable = bool(unreadable) and unreadable[0].name == state.STORE_UNLISTABLE
    if unlistable:
        st.error(f"The store cannot be listed: {md(unreadable[0].error)}.", icon=":material/error:")
    elif not runs:
        st.info(f"No runs in {code(store.root)} yet: make one with the commands below.")
    if unreadable and not unlistable:
        # one odd file in runs/ never hides the others: it is listed here, and skipped everywhere else
        st.warning(f"{len(unreadable)} file(s) in the store were skipped:", icon=":material/warning:")
    for bad in [] if unlistable else unreadable:
        remedy = (
            "Delete it below, or re-create the run."
            if bad.run_id
            else "Rename or remove it in the store's runs/ folder."
        )
        st.error(
            f"File {code(bad.name)} cannot be read as a run: {md(bad.error)}. {remedy}",
            icon=":material/error:",
        )


def histories_section(runs: list[RunInfo]) -> None:
    """The fault histories in the store (`goodput ingest node-events`): each in one line, with what its ingest
    noted and skipped (times read as UTC, GPUs a node assumed, records left out and why)."""
    histories = [r for r in runs if fault_history.is_fault_history(r)]
    if not histories:
        return
    st.subheader("Fault histories")
    for run in histories[:HISTORIES_SHOWN]:
        st.markdown(f"**{md(run.name)}** ({code(run.run_id)}): {fault_history.outline(run)}")
        notes = fault_history.ingest_notes(run)
        st.caption(("The ingest noted: " + "; ".join(notes) + ".") if notes else "The ingest noted nothing.")
    if len(histories) > HISTORIES_SHOWN:
        st.caption(f"… and {len(histories) - HISTORIES_SHOWN:,} more, older.")


# ----- delete, in two steps ---------------------------------------------------------------------------------
def delete_section(runs: list[RunInfo], unreadable: list[Unreadable], may_write: bool) -> None:
    deletable = [r.run_id for r in runs] + [b.run_id for b in unreadable if b.run_id]
    if not deletable or not may_write:
        return
    st.subheader("Delete a run")
    pending = st.session_state.get(CONFIRM_KEY)
    if pending not in deletable:
        pending = None
        st.session_state.pop(CONFIRM_KEY, None)
    names = {r.run_id: f"{r.name} · {r.kind} · {r.run_id}" for r in runs} | {
        b.run_id: f"(unreadable) {b.run_id}" for b in unreadable if b.run_id
    }
    if st.session_state.get(VICTIM_KEY) not in deletable:  # first visit, or the last pick was deleted
        selected = st.query_params.get(state.RUN_PARAM)
        st.session_state[VICTIM_KEY] = selected if selected in deletable else deletable[0]
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    left.selectbox(
        "Run to delete",
        deletable,
        format_func=lambda r: visible(names[r]),
        key=VICTIM_KEY,
        disabled=pending is not None,
    )
    right.button(
        "Delete…",
        icon=":material/delete:",
        key="data_delete",
        disabled=pending is not None,
        on_click=ask_to_delete,
    )
    if pending:
        st.warning(
            f"Delete **{md(names[pending])}**? Its file is removed from the store; this cannot be undone.",
            icon=":material/warning:",
        )
        yes, no, _ = st.columns([1, 1, 4])
        yes.button("Delete permanently", type="primary", key="data_confirm", on_click=delete, args=(pending,))
        no.button("Cancel", key="data_cancel", on_click=cancel_delete)


# ----- imports by upload ------------------------------------------------------------------------------------
def import_section(store: Store, may_write: bool) -> None:
    st.subheader("Import files")
    imported = st.session_state.pop(IMPORTED_KEY, None)
    if imported is not None:
        imported_note(imported)
    if not may_write:
        auth.missing(auth.Role.OPERATOR, "Importing files and deleting runs")
        return
    st.caption(
        f"Up to {uploads.MAX_UPLOAD_MB} MB in all per import. Files are checked whole before anything "
        "is written: a file that does not parse is named with its line, and no run is made. Larger "
        "files: the commands below."
    )
    telemetry_tab, trace_tab = st.tabs(["Telemetry: DCGM scrapes and kernel logs", "Job trace"])
    with telemetry_tab:
        telemetry_upload(store)
    with trace_tab:
        trace_upload(store)


def imported_note(imported: uploads.Imported) -> None:
    """What the last import made: the run, its counts, the guesses it made, and a link to it."""
    counted = {
        "jobs": "jobs",
        "hosts": "hosts",
        "gpus": "GPUs",
        "samples": "samples",
        "xid_events": "XID events",
    }
    summary = RunSummary.from_json(imported.summary)
    counts = ", ".join(
        f"{summary.at(k):,} {label}" for k, label in counted.items() if isinstance(summary.at(k), int)
    )
    st.success(
        f"Imported **{md(imported.name)}** as run {code(imported.run_id)} ({md(imported.kind)}"
        + (f": {counts}" if counts else "")
        + ").",
        icon=":material/check_circle:",
    )
    for note in summary.details.get("notes") or ():  # a guess the import made, and what would replace it
        st.warning(md(note), icon=":material/info:")
    st.page_link(
        "app_pages/overview.py",
        label=f"Open run {md(imported.run_id)}",
        icon=":material/open_in_new:",
        query_params={state.RUN_PARAM: imported.run_id},
    )


def telemetry_upload(store: Store) -> None:
    """DCGM scrapes and kernel logs, ingested into a new run."""
    scrapes = st.file_uploader(
        "DCGM exporter scrapes (Prometheus text, e.g. `curl host:9400/metrics`)",
        accept_multiple_files=True,
        key="upload_dcgm",
        max_upload_size=uploads.MAX_UPLOAD_MB,
    )
    logs = st.file_uploader(
        "Kernel logs with NVIDIA XIDs (dmesg, dmesg -T, journalctl -k, /dev/kmsg, syslog)",
        accept_multiple_files=True,
        key="upload_logs",
        max_upload_size=uploads.MAX_UPLOAD_MB,
    )
    telemetry_name = st.text_input("Run name (optional)", key="upload_telemetry_name")
    if st.button(
        "Ingest into a new run",
        key="upload_ingest",
        icon=":material/upload:",
        disabled=not (scrapes or logs),
    ):
        run_import(
            "Ingesting",
            lambda: uploads.import_telemetry(
                store, scrapes or [], logs or [], name=telemetry_name.strip() or None
            ),
        )


def trace_upload(store: Store) -> None:
    """A job trace (and an openb node list), replayed into a new run."""
    trace = st.file_uploader(
        "Job trace: goodput CSV, Slurm `sacct --parsable2`, SWF, Alibaba openb pod list",
        key="upload_trace",
        max_upload_size=uploads.MAX_UPLOAD_MB,
    )
    nodes = st.file_uploader(
        "Its node list, for an openb pod list (`openb_node_list_gpu_node.csv`; without "
        "it the cluster is inferred from the pods)",
        key="upload_nodes",
        max_upload_size=uploads.MAX_UPLOAD_MB,
    )
    left, right = st.columns(2)
    trace_format = left.selectbox(
        "Format",
        uploads.trace_format_choices(),
        key="upload_format",
        help="auto tells the formats apart by their header and columns",
    )
    mode = right.radio(
        "Replay",
        MODES,
        index=MODES.index("rescheduled"),
        horizontal=True,
        key="upload_mode",
        help="recorded: start times from the trace; rescheduled: submit "
        "times only, under this engine's scheduler",
    )
    trace_name = st.text_input("Run name (optional)", key="upload_trace_name")
    if st.button(
        "Replay into a new run", key="upload_replay", icon=":material/upload:", disabled=trace is None
    ):
        run_import(
            "Replaying",
            lambda: uploads.import_trace(
                store,
                trace,
                fmt=trace_format,
                mode=mode,
                name=trace_name.strip() or None,
                node_list=nodes,
            ),
        )


# ----- adding runs ------------------------------------------------------------------------------------------
def terminal_section(store: Store) -> None:
    st.subheader("Add runs from a terminal")
    where = shlex.quote(str(store.root))
    st.markdown(
        "Simulations, and imports of any size, run from the command line; each command writes one new run "
        "into this store, and it appears here on the next refresh. Each preset ("
        + ", ".join(f"`{name}`" for name in PRESETS)
        + ") is a file in `data/presets` to copy."
    )
    # one block (one syntax highlighter to draw, not four: issue 28), each group under a comment
    st.code(
        "# Simulate a cluster from a preset or a scenario file\n"
        f"goodput simulate --preset demo --store {where}\n"
        f"goodput simulate --preset llama3-405b --set spares.hosts=96 --name more-spares --store {where}\n"
        f"goodput simulate --scenario my-cluster.toml --store {where}\n\n"
        "# Replay a job trace (goodput CSV, Slurm sacct, SWF, Alibaba openb, incident lists)\n"
        f"goodput replay jobs.csv --format auto --store {where}\n"
        f"goodput replay workload.swf --format swf --store {where}\n"
        f"goodput replay openb_pod_list_default.csv --format openb --store {where}"
        "   # reads openb_node_list_gpu_node.csv from the same folder\n\n"
        "# Ingest telemetry: DCGM exporter scrapes, kernel logs with NVIDIA XIDs, node_exporter scrapes, step times\n"
        f"goodput ingest dcgm scrape-*.prom --store {where}\n"
        f"goodput ingest dcgm --scrape http://gpu-host:9400/metrics --every 30s --store {where}\n"
        f"goodput ingest kernel-log /var/log/kern.log --store {where}\n"
        f"goodput ingest node-exporter node-*.prom --store {where}   # NIC ports: link rate, error counters\n"
        f"goodput ingest step-times ops.parquet --store {where}   # a job's per-operation timeline\n\n"
        "# A fault history: fault tickets (CSV, JSON lines, Parquet) or Slurm's node events (data/node-events)\n"
        f"goodput ingest node-events tickets.csv --causes site-causes.toml --nodes 2000 --store {where}\n"
        f"goodput ingest node-events --slurm --since 365d --store {where}\n\n"
        "# List or delete runs\n"
        f"goodput runs --store {where}\n"
        f"goodput runs --delete RUN_ID --store {where}",
        language="bash",
    )


st.title("Data")
page()
