"""Data is rendered as text on every page: hostile hostnames, job names, users and run names, fed through the
real input paths (a DCGM scrape and a kernel log uploaded on the Data page, a goodput CSV uploaded, a Slurm
sacct file replayed and a demo simulated with `--name` by the command line), never become Markdown (an image
from an outside host, a link, HTML, colour, LaTeX) or Plotly markup, and are still shown, as text.

Every page is driven with AppTest for every such run; every string of every element that Streamlit renders as
Markdown (alerts, captions, metrics' labels, values and deltas, help, expander and tab labels, ...) is checked
with its backslash escapes and code spans masked, and every Plotly figure sent to the browser is read back
from the page (its JSON) and checked for raw markup.
"""

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest
from test_charts_pages import open_page

from dashboard import uploads
from dashboard.navigation import RUN_PAGES
from dashboard.text import JOINER
from engine.store import Store
from tests.fixtures.ingest.samples import T0_MS, kernel_log, pci_bus_id, xid_body

IMG = "![x](http://evil.example/i.png)"
TAG = "<img src=x onerror=alert(1)>"
MIX = "**bold** :red[x] $x$"
PAYLOADS = (IMG, TAG, MIX)
# What must not survive, unescaped, in Markdown: an image, a link target, an HTML tag, bold, colour, LaTeX.
MARKDOWN_SYNTAX = ("![", "](http", "<img", "**bold**", ":red[", "$x$")
GOODPUT = Path(sys.executable).parent / "goodput"
ROOT = Path(__file__).resolve().parent.parent
PAGES = RUN_PAGES  # every page that shows a run (dashboard/navigation.py)


# ----- the hostile runs, through the real input paths ------------------------------------------------------


def dcgm_scrape() -> str:
    """Three scrapes of three hosts named by the payloads, two GPUs each (model: a payload too), an XID 79
    on each host's GPU 0 in the last scrape."""
    lines = []
    for scrape in range(3):
        t = T0_MS + 3_600_000 + scrape * 30_000
        for h, host in enumerate(PAYLOADS):
            for g in range(2):
                labels = (
                    f'gpu="{g}",UUID="GPU-{h:08x}-{g:04x}",pci_bus_id="{pci_bus_id(g)}",device="nvidia{g}",'
                    f'modelName="{TAG}",Hostname="{host}"'
                )
                lines += [
                    f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {50 + g} {t}",
                    f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 600 {t}",
                    f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{labels}}} {scrape} {t}",
                    f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {79 if scrape == 2 and g == 0 else 0} {t}",
                ]
    return "\n".join(lines) + "\n"


def goodput_csv() -> str:
    return "job_id,submit,gpus,duration,priority,start,end,name,user\n" + "".join(
        f"j{i},{i * 10}m,8,2h,{i},,,{name},{user}\n"
        for i, (name, user) in enumerate(zip(PAYLOADS, PAYLOADS[::-1], strict=True))
    )


def sacct() -> str:
    return "JobID|JobName|User|Submit|Start|End|State|AllocTRES|NNodes|NodeList|Priority\n" + "".join(
        f"{100 + i}|{name}|{user}|2024-03-01T00:{i:02d}:00|2024-03-01T00:{i:02d}:05|2024-03-01T02:00:05|FAILED|"
        f"cpu=8,gres/gpu=8,node=1|1|gpu00{i}|{i}\n"
        for i, (name, user) in enumerate(zip(PAYLOADS, PAYLOADS[1:] + PAYLOADS[:1], strict=True))
    )


def cli(*args: str) -> str:
    done = subprocess.run(
        [str(GOODPUT), *args, "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["run_id"]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[str, dict[str, str]]:
    """A store (exported as GOODPUT_STORE) and its four hostile runs (kind of input -> run id)."""
    root = tmp_path_factory.mktemp("hostile") / "store"
    store = Store(root)
    runs = {
        "telemetry upload": uploads.import_telemetry(
            store,
            [(f"{TAG}.prom", dcgm_scrape().encode())],
            [(f"{IMG}.log", kernel_log("journal", [(30, xid_body(0, 79))], host=IMG).encode())],
        ).run_id,
        "trace upload": uploads.import_trace(store, (f"{MIX}.csv", goodput_csv().encode())).run_id,
    }
    trace = root.parent / "sacct.txt"
    trace.write_text(sacct())
    runs["sacct replay"] = cli("replay", str(trace), "--store", str(root))
    runs["named simulation"] = cli("simulate", "--preset", "demo", "--name", IMG, "--store", str(root))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GOODPUT_STORE", str(root))
        yield str(root), runs


def first(root: str, run_id: str, sql: str) -> str | None:
    with duckdb.connect(str(Store(root).path_of(run_id)), read_only=True) as con:
        row = con.execute(sql).fetchone()
    return None if row is None or row[0] is None else str(row[0])


# ----- reading what a page shows ----------------------------------------------------------------------------

# Fields whose text Streamlit shows as plain text: selectbox and multiselect options and values, the ids and
# values of widgets, Plotly's JSON (checked on its own below), the text of st.text, st.code and st.json.
PLAIN_FIELDS = {
    "options",
    "default",
    "raw_value",
    "raw_values",
    "set_value",
    "value",
    "id",
    "spec",
    "config",
    "placeholder",
    "form_id",
    "query_string",
    "page",
    "page_script_hash",
    "data",
    "columns",
}
PLAIN_ELEMENTS = {"text", "code", "json", "plotly_chart", "dataframe", "arrow_data_frame"}
_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.*?)(?<!`)\1(?!`)")


def masked(markdown: str) -> str:
    """`markdown` with its backslash escapes and code spans blanked out: what is left is read as syntax."""
    out = _ESCAPED.sub("\x00\x00", markdown)
    return _CODE_SPAN.sub(lambda m: "\x00" * len(m.group(0)), out)


def as_text(markdown: str) -> str:
    """What `markdown` (as dashboard.text writes data into it) shows: escapes resolved, code fences and
    joiners dropped."""
    out = _CODE_SPAN.sub(
        lambda m: m.group(2).strip(" ") if m.group(2).strip(" ") else m.group(2), markdown.replace(JOINER, "")
    )
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", out)


def strings(message, plain: bool = False):
    """(field, text, plain) for every string field of a protobuf message, nested ones included."""
    for field, value in message.ListFields():
        is_plain = plain or field.name in PLAIN_FIELDS
        values = value if isinstance(value, Sequence) and not isinstance(value, str) else [value]
        for v in values:
            if isinstance(v, str):
                yield field.name, v, is_plain
            elif hasattr(v, "ListFields"):
                yield from strings(v, is_plain)


def nodes(tree):
    yield tree
    for child in (getattr(tree, "children", None) or {}).values():
        yield from nodes(child)


class Page:
    """What one AppTest run of a page shows, sorted by how the browser renders it."""

    def __init__(self, at):
        self.markdown: list[tuple[str, str]] = []  # (element type.field, source)
        self.plain: list[str] = []
        self.figures: list[dict] = []
        self.components: list = []  # the data of each st.components.v2 element (the GPUs page's health grid)
        for node in nodes(at._tree):
            proto = getattr(node, "proto", None)
            kind = getattr(node, "type", "")
            if proto is None or not hasattr(proto, "ListFields"):
                continue
            if kind == "plotly_chart":
                self.figures.append(json.loads(proto.spec))
                continue
            if (
                kind == "bidi_component"
            ):  # its code is ours; its data is written as text (textContent, fillText)
                self.components.append(json.loads(proto.json) if proto.json else None)
                self.plain += [text for _, text in figure_strings(self.components[-1])]
                continue
            if kind == "dataframe":
                frame = node.value
                self.plain += [str(v) for column in frame.columns for v in frame[column].tolist()]
                continue
            if kind == "table":  # st.table reads Markdown in every cell (dashboard.table_view.short)
                frame = node.value
                self.markdown += [
                    ("table.cell", str(v))
                    for column in frame.columns
                    for v in [column, *frame[column].tolist()]
                ]
                continue
            for field, text, plain in strings(proto, kind in PLAIN_ELEMENTS):
                (self.plain.append(text) if plain else self.markdown.append((f"{kind}.{field}", text)))

    def shown(self) -> str:
        """Everything a reader sees, as one text."""
        return "\n".join([*self.plain, *(as_text(s) for _, s in self.markdown), *figure_text(self.figures)])


def figure_strings(value, key: str = ""):
    """(key, text) of every string in a Plotly figure's JSON."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from figure_strings(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from figure_strings(v, key)
    elif isinstance(value, str):
        yield key, value


def figure_text(figures: list[dict]) -> list[str]:
    """The figures' strings as Plotly shows them (its entities decoded)."""
    entities = {"&lt;": "<", "&gt;": ">", "&amp;": "&"}
    return [
        re.sub(r"&(lt|gt|amp);", lambda m: entities[m.group(0)], text)
        for figure in figures
        for _, text in figure_strings(figure)
    ]


def open_all(runs: dict[str, str], root: str) -> dict[tuple[str, str], Page]:
    """Every page for every hostile run, with the drill-downs (one GPU, one job, one incident) opened."""
    pages = {}
    for what, run_id in runs.items():
        params = {"run": run_id, "gpu": "0"}
        job = first(root, run_id, "SELECT job_id FROM jobs ORDER BY job_id LIMIT 1")
        incident = first(root, run_id, "SELECT incident_id FROM incidents ORDER BY incident_id LIMIT 1")
        params |= {"job": job} if job else {}
        params |= {"incident": incident} if incident else {}
        for page in PAGES:
            extra = {"runs": ",".join(runs.values())} if page == "compare" else {}
            at = open_page(f"app_pages/{page}.py", params | extra)
            assert not at.exception, (what, page, [e.value for e in at.exception])
            pages[what, page] = Page(at)
    return pages


@pytest.fixture(scope="module")
def shown(hostile) -> dict[tuple[str, str], Page]:
    root, runs = hostile
    return open_all(runs, root)


# ----- the checks -----------------------------------------------------------------------------------------


def test_no_page_renders_data_as_markdown(shown):
    survivors = [
        (what, page, field, syntax, source)
        for (what, page), seen in shown.items()
        for field, source in seen.markdown
        for syntax in MARKDOWN_SYNTAX
        if syntax in masked(source)
    ]
    assert survivors == []


def test_no_figure_carries_data_as_plotly_markup(shown):
    raw = [
        (what, page, key, text)
        for (what, page), seen in shown.items()
        for figure in seen.figures
        for key, text in figure_strings(figure)
        if "<img" in text
    ]
    assert raw == []


def test_the_health_grid_gets_names_as_data_and_writes_them_as_text(shown):
    """The GPUs page's canvas (dashboard/gpus/health_grid.js) gets host names as they are and writes every text
    with textContent or fillText: none of its code parses HTML."""
    grids = [c for c in shown["telemetry upload", "gpus"].components if c and "hosts" in c]
    assert len(grids) == 1 and IMG in grids[0]["hosts"]
    code = (ROOT / "dashboard" / "gpus" / "health_grid.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser", code)


@pytest.mark.parametrize("what", ["telemetry upload", "trace upload", "sacct replay", "named simulation"])
def test_the_data_is_still_shown_as_text(shown, what):
    seen = "\n".join(shown[what, page].shown() for page in PAGES)
    expected = {
        "telemetry upload": PAYLOADS,
        "trace upload": PAYLOADS,
        "sacct replay": PAYLOADS,
        "named simulation": (IMG,),
    }[what]
    missing = [p for p in expected if p not in seen]
    assert missing == []


def test_markdown_places_show_the_data_escaped(shown):
    gpus = [s for _, s in shown["telemetry upload", "gpus"].markdown if s.startswith("**GPU 0**")]
    assert len(gpus) == 1 and f"of host {IMG}" in as_text(gpus[0]) and f", {TAG}," in as_text(gpus[0])
    assert "\\!" not in gpus[0] and "!\\[x\\]" in gpus[0]  # escaped, so Markdown shows the characters
    overview = [as_text(s) for _, s in shown["named simulation", "overview"].markdown if "simulate" in s]
    assert any(f"**{IMG}** · simulate" in s for s in overview)
    job = [as_text(s) for _, s in shown["sacct replay", "jobs"].markdown if " of " in s and "priority" in s]
    assert job and any(f" of {TAG}, priority" in s for s in job)


def test_names_from_the_url_and_the_delete_prompt_are_escaped(hostile):
    root, runs = hostile
    # a link can carry anything: a run id that is not in the store, a replay that is not either
    at = open_page("app_pages/incidents.py", {"run": f"{IMG}`{TAG}", "replay": MIX})
    at2 = open_page(
        "app_pages/incidents.py",
        {"run": runs["named simulation"], "replay": f"{MIX}`", "tab": "Replay with other settings"},
    )
    data = open_page("app_pages/data.py", {"run": runs["named simulation"]})
    data.button(key="data_delete").click().run()
    seen = [Page(a) for a in (at, at2, data)]
    survivors = [
        (field, source)
        for page in seen
        for field, source in page.markdown
        for syntax in MARKDOWN_SYNTAX
        if syntax in masked(source)
    ]
    assert survivors == []
    shown_text = "\n".join(page.shown() for page in seen)
    assert f"Run {IMG}`{TAG} is not in the store" in shown_text
    assert f"Run {MIX}` (the replay) is not in the store any more." in shown_text
    assert f"Delete {IMG} · simulate · {runs['named simulation']}? Its file" in shown_text.replace("**", "")
