"""The `goodput` command line (DESIGN "Command line" is its contract).

Every command validates its input before it writes anything; bad input prints one line,
`goodput: error: ...`, and exits with status 2 (argparse does the same for malformed flags).
"""

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engine import __version__, limits
from engine.errors import GoodputError
from engine.replay import formats as trace_formats
from engine.report.progress import progress_bar, store_progress
from engine.report.visible_text import visible
from engine.scenario.presets import PRESETS
from engine.store import Store, resolve_store_dir
from engine.store.outputs import check_output, check_store
from engine.units import SECONDS_PER_HOUR, SECONDS_PER_MINUTE

if TYPE_CHECKING:
    from engine.ingest.registry import IngestSource
    from engine.store.run import Run

EXIT_BAD_INPUT = 2
# Commands that write a new run (or keep one current) into the store: its folder is checked before any work.
WRITES_STORE = ("simulate", "replay", "ingest", "sweep", "watch")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        _check_store_flag(args)
        return args.handler(args) or 0
    except GoodputError as err:
        print(f"goodput: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("goodput: interrupted; nothing was written", file=sys.stderr)
        return 130


def _check_store_flag(args: argparse.Namespace) -> None:
    """`--store` refused before any work: a folder that cannot be written must not fail a long simulation at
    its very end (engine.store.outputs.check_store)."""
    if getattr(args, "store", None) is not None and not args.store.strip():
        raise GoodputError(
            "--store: empty; give a folder (or leave the flag out for $GOODPUT_STORE or data/store)"
        )
    if args.command in WRITES_STORE and hasattr(args, "store"):
        check_store(resolve_store_dir(args.store))


# ----- handlers --------------------------------------------------------------------------------------------


def cmd_simulate(args: argparse.Namespace) -> int:
    from engine.scenario import build
    from engine.twin.simulate import simulate

    sets = list(args.set or [])
    if args.seed is not None:
        if not 0 <= args.seed <= limits.MAX_SEED:  # named as the flag it came from, not as a --set
            raise GoodputError(
                f"--seed: must be a whole number from 0 to {limits.MAX_SEED:,}, got {args.seed}"
            )
        sets.append(f"simulation.seed={args.seed}")
    scenario = build(args.preset, file=args.scenario, sets=sets)
    name = args.name or (
        Path(args.scenario).stem if args.scenario else None
    )  # default: the file, else preset
    run = simulate(scenario, name=name, progress=progress_bar(args.json))
    run_id = _write(args, run)
    # the cluster's incidents (definition `incidents`: the Incidents page's count), beside the flagship's
    # interruptions the summary holds
    incidents = run.tables["incidents"]
    planned = int(incidents["planned"].fill_null(False).sum())
    cluster = {"total": incidents.height, "planned": planned, "unexpected": incidents.height - planned}
    _report({"run_id": run_id, **run.summary, "incidents": cluster}, args.json, _simulate_text)
    return 0


def _write(args: argparse.Namespace, run: "Run") -> str:
    """Write `run` to `--store`, its rows counted on the terminal as they go (no `--json`)."""
    shown = store_progress(args.json)
    try:
        return Store(args.store).write_run(run, progress=shown)
    finally:
        if shown is not None:
            shown.finish()


def cmd_replay(args: argparse.Namespace) -> int:
    from engine.replay.run import replay_file

    run = replay_file(
        args.file,
        fmt=args.format,
        sets=list(args.set or []),
        mode=args.mode,
        placement=args.policy,
        name=args.name,
        preset=args.preset,
    )
    run_id = _write(args, run)
    text = _simulate_text if run.summary.get("format") == "incidents" else _replay_text
    _report({"run_id": run_id, **run.summary}, args.json, text)
    return 0


def _replay_text(r: dict) -> str:
    reasons = ", ".join(f"{k} {v}" for k, v in r.get("wait_reasons", {}).items()) or "no job waited"
    if r.get("mode") == "recorded":
        reasons = "not in a recorded trace (replay with --mode rescheduled to see why)"
    return (
        f"run {r['run_id']}: {r['jobs']:,} jobs ({r['format']}, {r['mode']}, {r['policy']}) on"
        f" {r['gpus']:,} GPUs in {r['hosts']:,} hosts over {r['days']:.1f} days\n"
        f"  wait mean {r['wait_mean_s'] / SECONDS_PER_MINUTE:.1f} min,"
        f" p95 {r['wait_p95_s'] / SECONDS_PER_MINUTE:.1f} min;"
        f" utilisation {r['utilization']:.1%}; {r['pending']:,} never started\n"
        f"  waited mostly for: {reasons}" + "".join(f"\n  note: {n}" for n in r.get("notes", []))
    )


def cmd_ingest(args: argparse.Namespace) -> int:
    from engine.ingest import registry, summary_text

    source = registry.lookup(args.source)
    options = _ingest_options(args, source)
    if args.scrape:
        return _scrape(args, source)
    if not args.files and not options.get("slurm"):
        scrapers = " or ".join(registry.scrapers())
        also = "--slurm to ask slurmdbd" if "slurm" in source.options else f"--scrape URL for {scrapers}"
        raise GoodputError(f"ingest {args.source}: give at least one FILE (or {also})")
    run = source.ingest(
        args.files,
        dcgm=args.dcgm or (),
        kernel_logs=args.kernel_log or (),
        name=args.name,
        year=args.year,
        **options,
    )
    run_id = _write(args, run)
    _report({"run_id": run_id, **run.summary}, args.json, summary_text)
    return 0


# `goodput ingest node-events` flags: (flag, its argparse dest); refused for every other source.
NODE_EVENT_FLAGS = (
    ("--format", "events_format"),
    ("--causes", "causes"),
    ("--nodes", "nodes"),
    ("--gpus-per-node", "gpus_per_node"),
    ("--slurm", "slurm"),
    ("--slurm-conf", "slurm_conf"),
    ("--since", "since"),
)


def _ingest_options(args: argparse.Namespace, source: "IngestSource") -> dict:
    """The keywords `source` takes beyond files and names (engine.ingest.registry IngestSource.options), from
    their flags; a flag of another source's is refused, as are the companion flags node-events has no use for."""
    given = [flag for flag, dest in NODE_EVENT_FLAGS if getattr(args, dest) not in (None, False)]
    if "slurm" not in source.options:
        if given:
            raise GoodputError(f"{given[0]}: only `goodput ingest node-events` reads it")
        return {}
    from engine.ingest.slurm import SlurmSource
    from engine.scenario.durations import parse_duration

    for flag, value in (("--dcgm", args.dcgm), ("--kernel-log", args.kernel_log), ("--year", args.year)):
        if value:
            raise GoodputError(f"{flag}: `goodput ingest node-events` has no use for it")
    slurm = (
        args.slurm or args.slurm_conf is not None
    )  # --slurm-conf names the cluster to ask: it implies --slurm
    if slurm and args.files:
        raise GoodputError("--slurm: give FILEs or --slurm, not both")
    if args.since is not None and not slurm:
        raise GoodputError("--since: only with --slurm (the events of files set their own window)")
    return {
        "fmt": args.events_format or "auto",
        "causes": args.causes,
        "nodes": args.nodes,
        "gpus_per_node": args.gpus_per_node,
        "slurm": SlurmSource(conf=args.slurm_conf) if slurm else None,
        "since_s": None if args.since is None else parse_duration(args.since, "--since"),
    }


def _scrape(args: argparse.Namespace, source: "IngestSource") -> int:
    """`goodput ingest SOURCE --scrape URL,...`: scrape live endpoints into a run until stopped."""
    from engine.ingest import registry, summary_text
    from engine.ingest.live import parse_urls, scrape_loop
    from engine.scenario.durations import parse_duration

    if not source.scrapes:
        scrapers = " or ".join(f"`goodput ingest {name}`" for name in registry.scrapers())
        raise GoodputError(f"--scrape: only {scrapers} scrapes endpoints")
    if args.files:
        raise GoodputError("--scrape: give endpoints or files, not both")
    if args.scrapes is not None and args.scrapes < 1:
        raise GoodputError(f"--scrapes: must be at least 1, got {args.scrapes}")
    every = parse_duration(args.every, "--every")
    result = scrape_loop(
        parse_urls(args.scrape),
        every,
        Store(args.store),
        scrapes=args.scrapes,
        name=args.name,
        quiet=args.json,
    )
    _report(result, args.json, summary_text)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from engine.ingest import slurm
    from engine.ingest.watch import PrometheusAccess, watch_loop, watch_text
    from engine.ingest.watch.access import credential_file, parse_header
    from engine.scenario.durations import parse_duration

    if args.slurm_conf is not None and not args.slurm:
        args.slurm = True  # --slurm-conf names the cluster to read: it implies --slurm
    if args.prometheus is None and not args.slurm:
        raise GoodputError("watch: give --prometheus URL, --slurm, or both")
    given = [
        f
        for f in ("prometheus_header", "prometheus_bearer_token_file", "prometheus_password_file")
        if getattr(args, f)
    ]
    if args.prometheus is None and (given or args.checkpoint_metric):
        flag = "--" + (given[0] if given else "checkpoint_metric").replace("_", "-")
        raise GoodputError(f"{flag}: needs --prometheus URL")
    if args.cycles is not None and args.cycles < 1:
        raise GoodputError(f"--cycles: must be at least 1, got {args.cycles}")
    access = None
    if args.prometheus is not None:
        access = PrometheusAccess(
            args.prometheus,
            headers=tuple(parse_header(h) for h in args.prometheus_header or ()),
            bearer_token_file=credential_file(args.prometheus_bearer_token_file),
            password_file=credential_file(args.prometheus_password_file),
        )
    result = watch_loop(
        Store(args.store),
        prometheus=access,
        slurm_source=slurm.SlurmSource(conf=args.slurm_conf) if args.slurm else None,
        every_s=parse_duration(args.every, "--every"),
        cycles=args.cycles,
        name=args.name,
        lookback_s=parse_duration(args.since, "--since"),
        quiet=args.json,
        checkpoint_metric=args.checkpoint_metric,
        checkpoint_job_label=args.checkpoint_job_label,
    )
    _report(result, args.json, watch_text)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    if args.store is not None and not Path(args.store).expanduser().exists():  # a typo is no empty store
        raise GoodputError(
            f"--store: {args.store} does not exist (make a store with `goodput simulate --store DIR`)"
        )
    store = Store(args.store)
    if args.delete:
        for run_id in args.delete:
            store.delete_run(run_id)
            if not args.json:
                print(f"deleted {run_id}")
        if args.json:
            print(json.dumps({"deleted": args.delete}))
        return 0
    runs, skipped = store.scan()
    for odd in skipped:  # one line each, on stderr, so `--json` stays parseable
        print(f"goodput: warning: {visible(odd.warning())}", file=sys.stderr)  # a name's controls as marks
    if args.json:
        print(json.dumps([info.as_json() for info in runs]))
        return 0
    if not runs:
        print(f"no runs in {store.root}; make one with `goodput simulate --preset demo`")
        return 0
    print(f"{'run_id':30} {'kind':9} {'created':20} name")
    for info in runs:
        print(f"{info.run_id:30} {info.kind:9} {info.created_at:%Y-%m-%d %H:%M:%S}  {visible(info.name)}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Everything is checked and the bytes built before the file is written (atomically): no partial file."""
    from engine.report.export import export_run_incidents, write_export
    from engine.scenario.durations import parse_duration

    output = check_output(args.output, force=args.force)  # before the run is read (engine.store.outputs)
    store = Store(args.store)
    store.info(args.run)  # an unknown run: a clear error before anything else
    planned = True if args.planned else (False if args.unexpected else None)
    data = export_run_incidents(
        store,
        args.run,
        args.format,
        anonymise=args.anonymise,
        incident_id=args.incident,
        since_s=None if args.since is None else parse_duration(args.since, "--since"),
        until_s=None if args.until is None else parse_duration(args.until, "--until"),
        causes=args.cause,
        categories=args.category,
        planned=planned,
    )
    write_export(output, data, force=args.force)
    print(f"wrote {output} ({len(data):,} bytes, {args.format})", file=sys.stderr)
    return 0


def cmd_scale(args: argparse.Namespace) -> int:
    from engine.report.scale_command import run_command

    return run_command(args)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from engine.report.calibrate_command import run_command

    return run_command(args)


def cmd_stragglers(args: argparse.Namespace) -> int:
    from engine.report.stragglers_command import run_command

    return run_command(args)


def cmd_act(args: argparse.Namespace) -> int:
    from engine.act.command import run_command

    return run_command(args)


def cmd_sweep(args: argparse.Namespace) -> int:
    from engine.scenario import build
    from engine.twin.sweep import bands, make_executor, parse_vary, sweep

    scenario = build(args.preset, file=args.scenario, sets=list(args.set or []))
    axes = [parse_vary(text) for text in args.vary]
    executor = make_executor(args.executor, workers=args.workers, address=args.ray_address, quiet=args.json)
    frame = sweep(scenario, axes, args.seeds, executor=executor, progress=progress_bar(args.json))
    keys = [a.key for a in axes]
    if args.json:
        print(json.dumps({"results": frame.drop("point").to_dicts()}))
        return 0
    print(_sweep_text(bands(frame, by=keys), keys, args.seeds))
    return 0


def _sweep_text(table, keys: list[str], seeds: int) -> str:
    """Means and 5-95 % bands per grid point, one line each."""

    def band(row: dict, metric: str, spec: str) -> str:
        mean, lo, hi = (row[f"{metric}_{s}"] for s in ("mean", "p5", "p95"))
        if mean is None:
            return "-"
        return f"{mean:{spec}} [{lo:{spec}}, {hi:{spec}}]"

    columns = [
        ("ETTR", "ettr", ".3f"),
        ("closed form", "closed_form_ettr", ".3f"),
        ("MTTF h", "mttf_hours", ".2f"),
        ("interruptions", "interruptions", ".1f"),
        ("lost GPU-h", "lost_gpu_hours", ",.0f"),
    ]
    if any(
        r["ettr_with_network_mean"] != r["ettr_mean"] for r in table.to_dicts()
    ):  # a placement slows the job
        columns.insert(1, ("with network", "ettr_with_network", ".3f"))
    rows = [
        [str(r[k]) for k in keys] + [band(r, m, spec) for _, m, spec in columns] for r in table.to_dicts()
    ]
    header = keys + [title for title, _, _ in columns]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [
        f"{len(rows)} grid points x {seeds} seeds: mean [5%, 95%]",
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def cmd_ettr(args: argparse.Namespace) -> int:
    from engine.analysis.analytics import closed_form_ettr, young_daly_interval
    from engine.scenario.durations import format_duration, parse_duration

    interval = parse_duration(args.checkpoint_interval, "--checkpoint-interval")
    write = parse_duration(args.checkpoint_write, "--checkpoint-write")
    restart = parse_duration(args.restart_overhead, "--restart-overhead")
    if args.gpus < 1:
        raise GoodputError(f"--gpus: must be at least 1, got {args.gpus}")
    if args.node_failure_rate < 0:
        raise GoodputError(f"--node-failure-rate: must be at least 0, got {args.node_failure_rate}")
    if interval <= 0:
        raise GoodputError("--checkpoint-interval: must be greater than 0")
    estimate = closed_form_ettr(
        gpus=args.gpus,
        gpus_per_host=args.gpus_per_host,
        rate_per_1000_node_days=args.node_failure_rate,
        checkpoint_interval_s=interval,
        checkpoint_write_s=write,
        restart_overhead_s=restart,
    )
    result = {
        "ettr": estimate.ettr,
        "mttf_hours": estimate.mttf_s / SECONDS_PER_HOUR,
        "optimal_checkpoint_interval_s": young_daly_interval(write, estimate.mttf_s),
    }
    if not args.json:  # the text echoes the durations as read, so a unit mistaken is seen (`5m` vs `5h`)
        print(
            f"read: {args.gpus:,} GPUs, {args.node_failure_rate:g} failures per 1,000 host-days, checkpoint every"
            f" {format_duration(interval)}, {format_duration(write)} a write, {format_duration(restart)} a restart"
        )
    _report(result, args.json, _ettr_text)
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    root = Path(__file__).resolve().parent.parent
    _check_port_free(args.host, args.port)  # before Streamlit prints a URL it then cannot serve
    store = Store(args.store)
    env = {**os.environ, "GOODPUT_STORE": str(store.root.resolve())}
    # dashboard/serve.py decides on login (required off loopback) and refuses to start without it; the engine
    # does not import the dashboard, so it runs as its own module
    command = [sys.executable, "-m", "dashboard.serve", "--host", args.host, "--port", str(args.port)]
    if args.require_login:
        command.append("--require-login")
    secrets = args.secrets or os.environ.get("GOODPUT_SECRETS")
    if secrets:
        command += ["--secrets", str(Path(secrets).resolve())]  # resolved before the chdir below
    for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
        if path:
            command += [flag, str(Path(path).resolve())]
    if args.behind_tls_proxy:
        command.append("--behind-tls-proxy")
    os.chdir(root)  # Streamlit reads .streamlit/config.toml from its working directory
    os.execvpe(command[0], command, env)  # replaces this process: Ctrl-C stops Streamlit directly  # noqa: S606


def _check_port_free(host: str, port: int) -> None:
    """A GoodputError naming the address when another server already listens there."""
    import errno
    import socket

    if not 0 < port < 65536:
        raise GoodputError(f"--port: must be from 1 to 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise GoodputError(f"--host {host}: not an address of this machine ({err.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Streamlit's server binds
        try:
            probe.bind(address)
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                return  # not this machine's address: the server says what is wrong there (login, TLS, ...)
            raise GoodputError(
                f"--port {port}: {host}:{port} is not available ({err.strerror}); another dashboard may be"
                " running there: stop it, or choose another port with --port (make run PORT=...)"
            ) from None


# ----- output ----------------------------------------------------------------------------------------------


def _report(result: dict, as_json: bool, as_text: Callable[[dict], str]) -> None:
    print(json.dumps(result, default=str) if as_json else as_text(result))


def _simulate_text(r: dict) -> str:
    """The summary in words, each figure under its engine/analysis/definitions label (the same as on the pages)
    and read where its definition says (engine.analysis.run_summary.RunSummary.figure)."""
    from engine.analysis.definitions import definition as d
    from engine.analysis.run_summary import FlagshipJob, Interruptions, RunSummary
    from engine.report.palette import cause_label

    s = RunSummary.from_json(r)
    job = s.job or FlagshipJob()
    inter = s.interruptions or Interruptions()

    def f(key: str) -> float:
        return s.figure(key) or 0

    lines = [
        f"run {r['run_id']}: {s.gpus or 0:,} GPUs on {s.hosts or 0:,} hosts, {s.days or 0:g} days, seed {s.seed}",
        f"  flagship job {job.name} on {job.gpus or 0:,} GPUs: {d('ettr').label} {f('ettr'):.1%},"
        f" {d('job_mttf').label} {_hours(s.figure('job_mttf'))}, {d('checkpoints_written').label}"
        f" {f('checkpoints_written'):,.0f}, {d('goodput_lost').label} {f('goodput_lost'):,.0f} GPU-hours",
        f"  {d('interruptions').label}: {f('interruptions'):.0f} ({f('unexpected_interruptions'):.0f} unexpected,"
        f" {f('planned_interruptions'):.0f} planned)",
    ]
    if "incidents" in r:
        lines.append(
            f"  {d('incidents').label} in the cluster: {r['incidents']['total']:,}"
            f" ({r['incidents']['unexpected']:,} unexpected, {r['incidents']['planned']:,} planned)"
        )
    top = sorted(inter.by_cause.items(), key=lambda kv: -kv[1])[:5]
    if top:
        lines.append("  top causes: " + ", ".join(f"{cause_label(cause)} {n}" for cause, n in top if n))
    if s.cluster is not None:
        progress = s.figure("utilisation_by_progress")
        lines.append(
            f"  {d('utilisation_by_allocation').label} {f('utilisation_by_allocation'):.1%}"
            + (f", {d('utilisation_by_progress').label} {progress:.1%}" if progress is not None else "")
            + f", {d('gpu_hours_down').label} {f('gpu_hours_down'):,.0f} GPU-hours"
        )
    lines.append("  definitions: `goodput definitions` (docs/definitions.md)")
    return "\n".join(lines)


def cmd_definitions(args: argparse.Namespace) -> int:
    """Every figure Goodput shows and what it counts (engine/analysis/definitions): text, JSON or docs' Markdown."""
    from dataclasses import asdict

    from engine.analysis.definitions import DEFINITIONS, markdown

    if args.markdown:
        print(markdown(), end="")
    elif args.json:
        print(json.dumps([asdict(d) for d in DEFINITIONS.values()], indent=1))
    else:
        for d in DEFINITIONS.values():
            print(f"{d.label} [{d.unit}] ({d.key}): {d.means}")
    return 0


def _hours(value: float | None) -> str:
    """MTTF is null when nothing failed: the job never failed in the run."""
    return "- (no failures)" if value is None else f"{value:.2f} h"


def _ettr_text(r: dict) -> str:
    interval_min = r["optimal_checkpoint_interval_s"] / SECONDS_PER_MINUTE
    return (
        f"expected ETTR {r['ettr']:.4f}; job MTTF {r['mttf_hours']:.2f} h;"
        f" Young-Daly checkpoint interval {interval_min:.1f} min"
    )


# ----- the parser ------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="goodput",
        description="Goodput: operations dashboard and digital twin for large GPU training clusters.",
    )
    parser.add_argument("--version", action="version", version=f"goodput {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, handler, help_text, add_flags in _commands():
        # argparse %-formats a command's help in the command list: a literal % must be doubled
        sub = commands.add_parser(name, help=help_text.replace("%", "%%"), description=help_text)
        sub.set_defaults(handler=handler)
        add_flags(sub)
    return parser


def _commands() -> list[tuple[str, Callable[[argparse.Namespace], int], str, Callable]]:
    """Each command: its name, handler, one-line help and the function adding its flags, in help order."""
    return [
        (
            "simulate",
            cmd_simulate,
            "simulate a cluster and its flagship job through failures",
            _simulate_flags,
        ),
        ("replay", cmd_replay, "replay a job trace (or an incidents file) into a run", _replay_flags),
        (
            "ingest",
            cmd_ingest,
            "ingest real telemetry: DCGM scrapes, kernel logs with XIDs, step times, NIC counters, node events",
            _ingest_flags,
        ),
        (
            "watch",
            cmd_watch,
            "keep an observed run current from Prometheus (DCGM series) and Slurm (jobs, nodes)",
            _watch_flags,
        ),
        ("runs", cmd_runs, "list the runs in the store (or delete some)", _runs_flags),
        ("export", cmd_export, "export a run's incidents to a file", _export_flags),
        ("sweep", cmd_sweep, "run a grid of scenarios times seeds (summary-only simulations)", _sweep_flags),
        (
            "scale",
            cmd_scale,
            "ETTR of the flagship job by size (1k to 256k GPUs) and recovery strategy, with Monte-Carlo bands",
            _scale_flags,
        ),
        (
            "calibrate",
            cmd_calibrate,
            "fit a scenario to a stored run (rates with 90 % intervals), backtest it, write it as a scenario file",
            _calibrate_flags,
        ),
        (
            "stragglers",
            cmd_stragglers,
            "what-if slowdown of a job from its op-level timeline: waste, the worker, rank or stage to blame",
            _stragglers_flags,
        ),
        (
            "act",
            cmd_act,
            "recommend, approve and carry out drains, resumes and requeues through Slurm, with caps and an audit log",
            _act_flags,
        ),
        ("ettr", cmd_ettr, "closed-form ETTR, job MTTF and the Young-Daly checkpoint interval", _ettr_flags),
        (
            "definitions",
            cmd_definitions,
            "what every figure on the pages, in exports and here counts",
            _definitions_flags,
        ),
        ("dashboard", cmd_dashboard, "serve the dashboard", _dashboard_flags),
    ]


def _store_flag(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--store", metavar="DIR", help="run store folder (default: $GOODPUT_STORE or data/store)"
    )


def _json_flag(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _scenario_flags(sub: argparse.ArgumentParser) -> None:
    source = sub.add_mutually_exclusive_group()
    source.add_argument(
        "--preset",
        metavar="NAME",
        help=f"one of {', '.join(PRESETS)} (data/presets/NAME.toml; default llama3-405b)",
    )
    source.add_argument("--scenario", metavar="FILE", help="a TOML scenario file")
    sub.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one scenario key, e.g. training.checkpoint_interval=30m (repeatable)",
    )


def _simulate_flags(sim: argparse.ArgumentParser) -> None:
    _scenario_flags(sim)
    sim.add_argument("--seed", type=int, help="random seed (same scenario and seed: identical tables)")
    sim.add_argument("--name", help="name of the run (default: the preset or scenario file)")
    _store_flag(sim)
    _json_flag(sim)


def _replay_flags(rep: argparse.ArgumentParser) -> None:
    rep.add_argument(
        "file",
        metavar="FILE",
        help="a job trace (goodput CSV, sacct --parsable2, SWF 2.2, openb) or"
        " an incidents file written by `goodput export incidents` (CSV or JSON)",
    )
    rep.add_argument(
        "--format",
        default="auto",
        choices=["auto", *trace_formats.names()],  # the one list of formats (engine.replay.formats)
        help="trace format (default auto: told apart by the first lines)",
    )
    rep.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="a replay setting (replay.*, scheduler.*) or a cluster layout key; for an incidents file"
        " a scenario key such as spares.hosts=96 (repeatable)",
    )
    rep.add_argument(
        "--preset",
        metavar="NAME",
        help="incidents file: the scenario to replay its failures under (a JSON export carries its"
        " own; a CSV needs one)",
    )
    rep.add_argument(
        "--mode",
        choices=["recorded", "rescheduled"],
        help="start times as recorded, or re-scheduled from submit times (default rescheduled)",
    )
    rep.add_argument("--policy", choices=["pack", "spread"], help="placement policy (default pack)")
    rep.add_argument("--name", help="name of the run (default: the trace's file name)")
    _store_flag(rep)
    _json_flag(rep)


def _ingest_flags(ing: argparse.ArgumentParser) -> None:
    from engine.ingest import registry  # the one list of sources (engine.ingest.registry)

    ing.add_argument("source", choices=registry.names())
    ing.add_argument("files", nargs="*", metavar="FILE")
    ing.add_argument(
        "--scrape",
        metavar="URL[,URL...]",
        help="scrape live DCGM exporter endpoints (one a host) until stopped",
    )
    ing.add_argument("--every", default="30s", metavar="DURATION", help="scrape interval (default 30s)")
    ing.add_argument("--scrapes", type=int, metavar="N", help="stop after N scrapes (default: until stopped)")
    ing.add_argument(
        "--dcgm",
        action="append",
        metavar="FILE",
        help="kernel-log: a DCGM scrape of the same hosts, to map bus ids and UUIDs to GPUs",
    )
    ing.add_argument(
        "--kernel-log",
        action="append",
        metavar="FILE",
        help="dcgm: kernel logs of the same hosts, ingested into the same run",
    )
    ing.add_argument("--year", type=int, help="year of syslog stamps, which carry none (default: the file's)")
    _node_event_flags(ing)
    ing.add_argument("--name", help="name of the run (default: from the first file or endpoint)")
    _store_flag(ing)
    _json_flag(ing)


def _node_event_flags(ing: argparse.ArgumentParser) -> None:
    """The flags only `goodput ingest node-events` reads (NODE_EVENT_FLAGS)."""
    ing.add_argument(
        "--format",
        dest="events_format",
        choices=["auto", "slurm", "tickets"],
        help="node-events: sacctmgr's event text (slurm) or tickets (CSV, JSON lines, Parquet); default auto",
    )
    ing.add_argument(
        "--causes",
        metavar="MAP.toml",
        help="node-events: the site's words to Goodput's causes, ordered regex rules (default: Goodput's own map;"
        " data/node-events/README.md)",
    )
    ing.add_argument(
        "--nodes", type=int, metavar="N", help="node-events: the fleet's size, the nodes never seen added"
    )
    ing.add_argument("--gpus-per-node", type=int, metavar="G", help="node-events: GPUs a node (default 8)")
    ing.add_argument(
        "--slurm",
        action="store_true",
        help="node-events: ask slurmdbd (sacctmgr show event) instead of reading files",
    )
    ing.add_argument(
        "--slurm-conf",
        metavar="FILE",
        help="node-events: the slurm.conf to use (SLURM_CONF); implies --slurm",
    )
    ing.add_argument(
        "--since", metavar="DURATION", help="node-events --slurm: how far back to read (default 365d)"
    )


def _watch_flags(wat: argparse.ArgumentParser) -> None:
    wat.add_argument("--prometheus", metavar="URL", help="Prometheus (or Thanos, VictoriaMetrics) base URL")
    wat.add_argument(
        "--slurm", action="store_true", help="read jobs and nodes with sacct/sinfo on this machine"
    )
    wat.add_argument(
        "--slurm-conf", metavar="FILE", help="the slurm.conf to use (SLURM_CONF); implies --slurm"
    )
    wat.add_argument(
        "--prometheus-header",
        action="append",
        metavar="'NAME: VALUE'",
        help="a header sent with every query, e.g. 'X-Scope-OrgID: team-a' (repeatable; stored with the run and"
        " shown, so never a credential)",
    )
    wat.add_argument(
        "--prometheus-bearer-token-file",
        metavar="FILE",
        help="read a bearer token from FILE (again each cycle, so a rotated token works); the run stores the path",
    )
    wat.add_argument(
        "--prometheus-password-file",
        metavar="FILE",
        help="basic auth: the user from the URL (http://user@host:9090), the password read from FILE each cycle",
    )
    wat.add_argument(
        "--checkpoint-metric",
        metavar="NAME",
        help="a gauge of each job's latest checkpoint time (epoch s), e.g. training_checkpoint_timestamp_seconds:"
        " interrupted attempts then keep only the time to their last checkpoint (default: none read)",
    )
    wat.add_argument(
        "--checkpoint-job-label",
        default="slurm_job_id",
        metavar="LABEL",
        help="the checkpoint metric's label holding the Slurm job id (default slurm_job_id)",
    )
    wat.add_argument("--every", default="1m", metavar="DURATION", help="time between cycles (default 1m)")
    wat.add_argument("--cycles", type=int, metavar="N", help="stop after N cycles (default: until stopped)")
    wat.add_argument(
        "--since", default="1h", metavar="DURATION", help="how far back the first cycle reads (default 1h)"
    )
    wat.add_argument("--name", help="name of the run (default: from the sources)")
    _store_flag(wat)
    _json_flag(wat)


def _runs_flags(runs: argparse.ArgumentParser) -> None:
    runs.add_argument("--delete", nargs="+", metavar="RUN_ID", help="delete these runs")
    _store_flag(runs)
    _json_flag(runs)


def _export_flags(exp: argparse.ArgumentParser) -> None:
    exp.add_argument("what", choices=["incidents"], metavar="incidents", help="what to export: incidents")
    exp.add_argument("--run", required=True, metavar="RUN_ID")
    exp.add_argument("--format", required=True, choices=["csv", "json", "parquet", "html"])
    exp.add_argument(
        "--output",
        required=True,
        metavar="FILE",
        help="a new file (an existing one only with --force; never a folder, device or link)",
    )
    exp.add_argument(
        "--force", action="store_true", help="replace --output if it is an existing regular file"
    )
    exp.add_argument(
        "--anonymise",
        action="store_true",
        help="replace hostnames, job names and users by stable pseudonyms (key: <store>/anonymise.key)",
    )
    exp.add_argument("--incident", type=int, metavar="ID", help="export one incident, with its chain")
    exp.add_argument("--cause", action="append", metavar="CAUSE", help="only this cause (repeatable)")
    exp.add_argument(
        "--category",
        action="append",
        metavar="CATEGORY",
        help="only this category, e.g. GPU, Host, Network, Planned (repeatable)",
    )
    kind = exp.add_mutually_exclusive_group()
    kind.add_argument("--planned", action="store_true", help="only planned interruptions")
    kind.add_argument("--unexpected", action="store_true", help="only unexpected interruptions")
    exp.add_argument(
        "--since", metavar="D", help="only incidents at or after this time into the run, e.g. 2d"
    )
    exp.add_argument("--until", metavar="D", help="only incidents before this time into the run, e.g. 3d12h")
    _store_flag(exp)


def _sweep_flags(swp: argparse.ArgumentParser) -> None:
    _scenario_flags(swp)
    swp.add_argument(
        "--vary",
        action="append",
        required=True,
        metavar="KEY=V1,V2,...",
        help="a scenario key and its values, e.g. training.checkpoint_interval=5m,10m,30m (repeatable:"
        " the grid is every combination)",
    )
    swp.add_argument(
        "--seeds",
        type=int,
        required=True,
        metavar="N",
        help="runs per grid point, with seeds simulation.seed, simulation.seed + 1, ...",
    )
    swp.add_argument(
        "--executor",
        default="local",
        choices=["local", "ray"],
        help="local processes (default) or Ray (the optional extra goodput[ray])",
    )
    swp.add_argument(
        "--workers", type=int, metavar="N", help="worker processes or Ray CPUs (default: all cores)"
    )
    swp.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="an existing Ray cluster, e.g. ray://head:10001 or auto (default: Ray on this machine)",
    )
    _json_flag(swp)


def _scale_flags(scl: argparse.ArgumentParser) -> None:
    # its flags are its own (polars is loaded by engine.store already)
    from engine.report import scale_command

    scale_command.add_arguments(scl)


def _calibrate_flags(cal: argparse.ArgumentParser) -> None:
    from engine.report import calibrate_command

    calibrate_command.add_arguments(cal)


def _stragglers_flags(stg: argparse.ArgumentParser) -> None:
    from engine.report import stragglers_command

    stragglers_command.add_arguments(stg)


def _act_flags(act: argparse.ArgumentParser) -> None:
    from engine.act import command

    command.add_arguments(act)


def _ettr_flags(ettr: argparse.ArgumentParser) -> None:
    ettr.add_argument("--gpus", type=int, required=True, metavar="N", help="GPUs of the job")
    ettr.add_argument("--gpus-per-host", type=int, default=8, metavar="N", help="GPUs per host (default 8)")
    ettr.add_argument(
        "--node-failure-rate",
        type=float,
        required=True,
        metavar="R",
        help="failures per 1,000 host-days (Llama 3: 3.79, RSC-1: 6.5)",
    )
    ettr.add_argument(
        "--checkpoint-interval",
        required=True,
        metavar="D",
        help="time between checkpoints, with its unit: 90s, 30m, 2h, 1d (a bare number is refused)",
    )
    ettr.add_argument(
        "--checkpoint-write",
        required=True,
        metavar="D",
        help="time a checkpoint blocks training, with its unit, e.g. 20s",
    )
    ettr.add_argument(
        "--restart-overhead",
        required=True,
        metavar="D",
        help="detection, restart and restore after a failure, with its unit, e.g. 10m",
    )
    _json_flag(ettr)


def _definitions_flags(defs: argparse.ArgumentParser) -> None:
    defs.add_argument("--markdown", action="store_true", help="print docs/definitions.md")
    _json_flag(defs)


def _dashboard_flags(dash: argparse.ArgumentParser) -> None:
    _store_flag(dash)
    dash.add_argument("--port", type=int, default=8501)
    dash.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="ADDR",
        help="listen address (default 127.0.0.1); any other address requires login",
    )
    dash.add_argument(
        "--require-login",
        action="store_true",
        help="require login on a loopback address too (off there by default)",
    )
    dash.add_argument(
        "--secrets",
        metavar="FILE",
        help="Streamlit secrets file with [auth] and [goodput.roles] (default $GOODPUT_SECRETS, "
        "else ~/.streamlit/secrets.toml and .streamlit/secrets.toml)",
    )
    dash.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    dash.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    dash.add_argument(
        "--behind-tls-proxy",
        action="store_true",
        help="a proxy in front terminates TLS (needed beyond loopback without --tls-cert; also "
        "$GOODPUT_BEHIND_TLS_PROXY=1)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
