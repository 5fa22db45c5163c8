"""`goodput calibrate` on the command line: its flags, the fit (engine.twin.calibrate), the backtest
(engine.twin.backtest) and what it prints, one JSON object or a table a person reads, with a progress bar on
a terminal while the backtest runs."""

import argparse
import json

from engine.errors import GoodputError

FITTED_SOURCES = ("prior", "default", "assumed")  # sources that are not the run itself
SOURCE_WORDS = {
    "prior": "prior (too few events: shrunk toward the default)",
    "assumed": "assumed (the run cannot show it: see the warnings)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of `goodput calibrate` (engine/cli.py adds them to its sub-command parser)."""
    parser.add_argument(
        "--run", required=True, metavar="RUN_ID", help="the run to learn from (`goodput runs`)"
    )
    parser.add_argument(
        "--since",
        metavar="D",
        help="start of the window: a time from the run's start (7d) or a date (default: the run's start)",
    )
    parser.add_argument(
        "--until", metavar="D", help="end of the window, the same way (default: the run's end)"
    )
    parser.add_argument(
        "--output",
        metavar="FILE.toml",
        help="write the fitted scenario there, each fitted key commented with its estimate, interval, n and"
        " source (runs with `goodput simulate --scenario FILE.toml`)",
    )
    parser.add_argument("--force", action="store_true", help="replace --output if it is an existing file")
    parser.add_argument(
        "--backtest",
        action="store_true",
        help="simulate the window with the fitted scenario (each run drawing the fitted keys first) and put the"
        " observed figures beside the twin's 90 %% band; with --until D on a run that goes on after D, a time"
        " split: fit before D, forecast the rest and compare it with what happened",
    )
    parser.add_argument(
        "--forecast",
        type=float,
        metavar="DAYS",
        help="also forecast the next DAYS of this cluster with the fitted scenario (ETTR, interruptions, MTTF,"
        " lost GPU-hours, each with the twin's 90 %% band)",
    )
    parser.add_argument(
        "--work",
        type=float,
        metavar="DAYS",
        help="with --forecast: the days of ideal compute the flagship job still needs (training.work); the"
        " forecast then says when training finishes (time to train, with its band)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="N",
        help="runs of the backtest and of the forecast (default 20; needs --backtest or --forecast)",
    )
    parser.add_argument(
        "--store", metavar="DIR", help="run store folder (default: $GOODPUT_STORE or data/store)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run_command(args: argparse.Namespace) -> int:
    from engine.report.progress import progress_bar
    from engine.store import Store, resolve_store_dir
    from engine.store.outputs import check_output
    from engine.twin.backtest import SEEDS, backtest
    from engine.twin.calibrate import calibrate

    if args.seeds is not None and not (args.backtest or args.forecast is not None):
        raise GoodputError("--seeds: only with --backtest or --forecast")
    if args.work is not None and args.forecast is None:
        raise GoodputError("--work: only with --forecast DAYS (the horizon the work must be done within)")
    output = check_output(args.output, force=args.force) if args.output else None  # before any work
    store = Store(resolve_store_dir(args.store))
    fit = calibrate(store, args.run, since=args.since, until=args.until)
    result = fit.to_json()
    test = None
    if args.backtest:
        seeds = args.seeds if args.seeds is not None else SEEDS
        test = backtest(store, fit, seeds, progress=progress_bar(args.json))
        result["backtest"] = test.to_json()
    else:
        result["backtest"] = None
    result["forecast"] = None
    if args.forecast is not None:
        from engine.twin.forecast import forecast

        seeds = args.seeds if args.seeds is not None else SEEDS
        ahead = forecast(
            fit.scenario(),
            args.forecast,
            seeds,
            work_days=args.work,
            uncertainty=fit.uncertainty(),
            progress=progress_bar(args.json),
        )
        result["forecast"] = ahead.to_json()
    if output is not None:
        from engine.report.export import write_export

        write_export(output, fit.to_toml().encode(), force=args.force)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(calibration_text(result, output))
    return 0


def calibration_text(result: dict, output=None) -> str:
    """The fit and the backtest as a person reads them on a terminal."""
    from engine.report.visible_text import visible

    window = result["window"]
    lines = [
        f"Run {visible(result['run_id'])}: {window['days']:.2f} days from {window['start'][:19]} to"
        f" {window['end'][:19]}, {result['exposure_host_days']:,.0f} host-days in service",
        "",
        f"{'KEY':<44}{'VALUE':>12}  {'90 % INTERVAL':<24}{'N':>6}  SOURCE",
    ]
    for key, est in result["keys"].items():
        if est["source"] == "default":
            continue
        interval = ""
        if est["low"] is not None and est["high"] is not None:
            interval = f"{_value(key, est['low'])} to {_value(key, est['high'])}"
        elif est["low"] is not None:
            interval = f"at least {_value(key, est['low'])}"
        elif est["high"] is not None:
            interval = f"at most {_value(key, est['high'])}"
        source = SOURCE_WORDS.get(est["source"], "run")
        lines.append(f"{key:<44}{_value(key, est['value']):>12}  {interval:<24}{est['n']:>6}  {source}")
    lines.append(
        f"every other key: {len(result.get('assumed', {}))} defaults (engine/scenario/keys.py), not fitted"
    )
    lines += [f"warning: {visible(w)}" for w in result["warnings"]]
    if output is not None:
        lines += ["", f"wrote {output} (run it: goodput simulate --scenario {output})"]
    test = result.get("backtest")
    if test:
        lines += ["", *_backtest_lines(test)]
    ahead = result.get("forecast")
    if ahead:
        lines += ["", *_forecast_lines(ahead)]
    return "\n".join(lines)


def _forecast_lines(ahead: dict) -> list[str]:
    from engine.twin.forecast import FIGURES

    lines = [
        f"Forecast: the next {ahead['days']:g} days of this cluster, {ahead['seeds']} runs of the fitted scenario,"
        f" each drawing the fit's keys first; the band holds a new run {ahead['band_level']:.0%} of the time",
        f"{'FIGURE':<24}{'MEAN':>12}{'BAND LOW':>12}{'BAND HIGH':>12}",
    ]
    for name in FIGURES:
        spread = ahead[name]
        if spread["mean"] is None:
            continue  # time to train without work to do
        lines.append(f"{name:<24}" + "".join(f"{_number(spread[p]):>12}" for p in ("mean", "low", "high")))
    if ahead["work_days"] is not None:
        lines.append(
            f"{ahead['work_days']:g} days of work: done within {ahead['days']:g} days in {ahead['finished']} of"
            f" {ahead['seeds']} runs"
            + ("" if ahead["finished"] == ahead["seeds"] else " (the others need longer)")
        )
    return lines


def _backtest_lines(test: dict) -> list[str]:
    from engine.twin.backtest import FIGURES, REPAIR_FIGURES

    split = test.get("split")
    if split:
        head = (
            f"Time split: fitted before --until, the next {split['forecast_days']:.2f} days forecast ({test['seeds']}"
            f" runs of the fitted scenario after {split['warm_up_days']:g} days of warm-up, each drawing the fit's"
            " keys first) beside what happened;"
        )
    else:
        head = (
            f"Backtest: the fitted scenario over {test['days']:.2f} days, {test['seeds']} seeds, each drawing the"
            " fit's keys first; observed beside the band,"
        )
    lines = [
        f"{head} the band holds a new run {test['band_level']:.0%} of the time",
        f"{'FIGURE':<24}{'OBSERVED':>12}{'BAND LOW':>12}{'MEDIAN':>12}{'BAND HIGH':>12}{'ERROR':>9}  ",
    ]
    for name in (*FIGURES, *REPAIR_FIGURES, "unknown_share"):
        band = test.get(name) if name != "unknown_share" else test.get("unknown_share")
        if not band:
            continue
        verdict = {True: "inside", False: "OUTSIDE", None: "-"}[band["inside"]]
        if band["observed"] is None and name in FIGURES:
            verdict += " (no job in the run)" if test.get("largest_job") is None else ""
        elif band["observed_is"] != "measured":
            verdict += f" (observed: {band['observed_is']}, no checkpoints read)"
        cells = (
            [
                _duration(band[p]) if band[p] is not None else "-"
                for p in ("observed", "low", "median", "high")
            ]
            if name in REPAIR_FIGURES
            else [_number(band[p]) for p in ("observed", "low", "median", "high")]
        )
        error = "-" if band.get("median_error") is None else f"{band['median_error']:+.0%}"
        lines.append(f"{name:<24}" + "".join(f"{c:>12}" for c in cells) + f"{error:>9}  {verdict}")
    weeks = test.get("faults_by_week") or {}
    if weeks.get("observed"):
        held = sum(weeks["inside"])
        lines.append(f"faults by week: {held} of {len(weeks['inside'])} weeks inside their band")
    if test["outside"]:
        lines.append(
            "The twin does not reproduce this window: "
            + ", ".join(test["outside"])
            + " fell outside the band. The fit misses something this cluster does (a cause it does not"
            " model, a rate that changed within the window, a repair queue); read the forecasts with that error."
        )
    else:
        lines.append("Every observed figure lies inside the twin's band.")
    return lines


def _value(key: str, value) -> str:
    from engine.scenario.keys import KEY_BY_NAME

    if value is None:
        return "-"
    known = KEY_BY_NAME.get(key)
    if known is not None and known.kind in ("duration", "optional_duration"):
        return _duration(float(value))
    return _number(value)


def _duration(seconds: float) -> str:
    """A fitted duration, to three figures in the unit a person reads it in (the JSON keeps seconds)."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if abs(seconds) >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def _number(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)
