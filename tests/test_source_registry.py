"""Trace formats and ingest sources are plug-ins: one registry each (engine.replay.formats,
engine.ingest.registry) that the CLI (and, for formats, the dashboard) reads."""

import polars as pl
import pytest

from dashboard import uploads
from engine.cli import build_parser, main
from engine.errors import GoodputError
from engine.ingest import registry as ingest_sources
from engine.replay import formats
from engine.replay.trace import Trace, finish


def _replay_format_choices() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    replay = sub.choices["replay"]
    action = next(a for a in replay._actions if "--format" in a.option_strings)
    return list(action.choices)


def test_every_registered_format_is_a_cli_choice_and_a_picker_choice():
    names = formats.names()
    assert set(names) >= {"goodput", "sacct", "swf", "openb", "incidents"}
    assert _replay_format_choices() == ["auto", *names]
    assert uploads.trace_format_choices() == ("auto", *names)


@pytest.fixture
def fake_format():
    def parse(source, text, beside=None):
        frame = pl.DataFrame({"job_id": ["a"], "gpus": [8.0], "submit_s": [0.0], "duration_s": [60.0]})
        return Trace(jobs=finish(frame), fmt="fake", name=source)

    entry = formats.register(formats.TraceFormat("fake", "a test's own format", parse))
    yield entry
    del formats._REGISTRY["fake"]


def test_a_registered_format_is_available_without_touching_other_modules(fake_format):
    assert "fake" in _replay_format_choices()
    assert "fake" in uploads.trace_format_choices()
    trace = formats.parse_trace(b"anything\n", fmt="fake", name="x.fake")
    assert trace.fmt == "fake" and trace.jobs.height == 1 and trace.name == "x.fake"


def test_an_unknown_format_names_the_known_ones():
    with pytest.raises(GoodputError) as err:
        formats.lookup("nope")
    message = str(err.value)
    assert "\n" not in message
    assert message == f"--format: unknown trace format 'nope'; one of auto, {', '.join(formats.names())}"
    with pytest.raises(GoodputError, match="unknown trace format 'nope'"):
        formats.parse_trace(b"job_id,submit,gpus\n", fmt="nope", name="t.csv")


# ----- ingest sources: the same plug-in shape (engine.ingest.registry) ---------------------------------------


def _ingest_source_choices() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    ingest = sub.choices["ingest"]
    action = next(a for a in ingest._actions if a.dest == "source")
    return list(action.choices)


def test_every_registered_ingest_source_is_a_cli_choice():
    assert ingest_sources.names()[:2] == ("dcgm", "kernel-log")
    assert _ingest_source_choices() == list(ingest_sources.names())
    assert ingest_sources.scrapers() == ("dcgm",)


def test_a_registered_ingest_source_is_a_cli_choice_until_unregistered(tmp_path, capsys):
    calls = []

    def ingest(files, *, dcgm, kernel_logs, name, year):
        calls.append((list(files), name, year))
        raise GoodputError("fake-telemetry: read")

    ingest_sources.register(ingest_sources.IngestSource("fake-telemetry", "a test's own source", ingest))
    try:
        assert _ingest_source_choices()[-1] == "fake-telemetry"
        log = tmp_path / "x.log"
        log.write_text("anything\n")
        code = main(["ingest", "fake-telemetry", str(log), "--name", "mine", "--store", str(tmp_path / "s")])
        assert code == 2 and calls == [([str(log)], "mine", None)]  # cmd_ingest handed the files to it
        assert capsys.readouterr().err == "goodput: error: fake-telemetry: read\n"
    finally:
        del ingest_sources._REGISTRY["fake-telemetry"]
    assert "fake-telemetry" not in _ingest_source_choices()


def test_an_unknown_ingest_source_names_the_known_ones():
    with pytest.raises(GoodputError) as err:
        ingest_sources.lookup("nope")
    assert str(err.value) == f"ingest: unknown source 'nope'; one of {', '.join(ingest_sources.names())}"
