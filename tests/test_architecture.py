"""The import rules of the house (DESIGN "Rules of the house"), checked on the source itself.

- the engine never imports streamlit or the dashboard (the model never imports the UI);
- pages (dashboard/app_pages) never issue SQL and never import duckdb: their questions are in dashboard/queries;
- queries never import charts (what both need, formats and text expressions, is dashboard.format and
  dashboard.text_exprs), and charts never import queries or streamlit (frames in, figures out);
- nothing the project ships (engine/, dashboard/) imports from tests/;
- every page is written one way: constants and functions, then `st.title(...)` and the call that draws it,
  `page()` or, for a page of the selected run, `state.render_run_page(page, state.run_or_stop())` (which
  reruns it as a live-ingest run grows). No other code runs at the top of a page.

The checker reads each file's syntax tree (no import runs) and places a file by the folders of its path only
(engine/..., dashboard/app_pages/...), so it holds however deep the engine is grouped into packages. Each
broken rule is reported as `path:line: what is wrong`, and the last tests prove it fails on a tree that breaks
each rule.
"""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {"tests", "__pycache__", "node_modules", "build", "dist"}  # besides hidden ones (.venv, .git)

# A string that starts like a statement DuckDB runs: upper-case keywords as the house writes SQL, or a
# lower-case `select ... from`.
_SQL = re.compile(
    r"^\s*(SELECT|WITH|INSERT|UPDATE|DELETE|CREATE|DROP|ATTACH|COPY|PRAGMA)\b"
    r"|^\s*select\s.*\bfrom\b",
    re.DOTALL,
)


def _imports(tree: ast.Module, package: tuple[str, ...]) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(line, modules it may reach) of every import in `tree`; a relative one resolved against
    `package` (the folders of the file); `from a import b` may reach `a` or `a.b` (`from dashboard import
    charts` imports a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, (alias.name,)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            yield node.lineno, (*(f"{base}.{alias.name}" for alias in node.names), base)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _first(reached: tuple[str, ...], *prefixes: str) -> str | None:
    """The first module of `reached` within one of `prefixes`, or None."""
    return next((m for m in reached for p in prefixes if _within(m, p)), None)


def _from_tests(module: str) -> bool:
    top = module.split(".")[0]
    return top in ("tests", "conftest") or top.startswith("test_")


def _sql_literals(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal that reads as SQL, f-strings included (by their first part)."""
    parts_of_fstrings = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    for node in ast.walk(tree):
        if id(node) in parts_of_fstrings:
            continue
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = node.values[0].value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if isinstance(text, str) and _SQL.match(text):
            yield node.lineno, text


def _page_idiom(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Where a page departs from the one idiom (module docstring): (line, what is wrong)."""
    body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    ending = [ast.unparse(node) for node in body[-2:]]
    if (
        len(ending) < 2
        or not ending[0].startswith("st.title(")
        or ending[1] not in ("page()", "state.render_run_page(page, state.run_or_stop())")
    ):
        yield (
            (body[-1].lineno if body else 1),
            ("a page ends with st.title(...) and page() or state.render_run_page(page, state.run_or_stop())"),
        )
    if not any(isinstance(node, ast.FunctionDef) and node.name == "page" for node in body):
        yield 1, "a page draws itself in a function named page"
    for node in body[:-2]:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
            continue
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if targets and all(isinstance(t, ast.Name) and t.id.isupper() for t in targets):
            continue  # a constant
        yield node.lineno, f"top-level code in a page ({ast.unparse(node)[:50]!r}); draw it from page()"


def _python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if not any(p.startswith(".") or p in SKIPPED_DIRS for p in parts[:-1]):
            yield path


def violations(root: Path) -> list[str]:
    """Every broken import rule under `root` (a checkout: engine/, dashboard/, ...), as `path:line: why`."""
    found: list[str] = []
    for path in _python_files(root):
        rel = path.relative_to(root)
        folders = rel.parts[:-1]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        where = rel.as_posix()
        in_engine = folders[:1] == ("engine",)
        in_pages = folders[:2] == ("dashboard", "app_pages")
        in_queries = folders[:2] == ("dashboard", "queries")
        in_charts = folders[:2] == ("dashboard", "charts")
        for line, reached in _imports(tree, folders):
            if in_engine and (module := _first(reached, "streamlit", "dashboard")):
                found.append(
                    f"{where}:{line}: the engine imports {module}; the engine never imports streamlit "
                    "or the dashboard (DESIGN: the model never imports the UI)"
                )
            if in_pages and _first(reached, "duckdb"):
                found.append(
                    f"{where}:{line}: a page imports duckdb; pages ask dashboard/queries, never the store"
                )
            if in_queries and (module := _first(reached, "dashboard.charts")):
                found.append(
                    f"{where}:{line}: a query imports {module}; queries never import charts (shared "
                    "formats are in dashboard.format and dashboard.text_exprs)"
                )
            if in_charts and (module := _first(reached, "dashboard.queries", "streamlit")):
                found.append(
                    f"{where}:{line}: a chart imports {module}; charts take frames and return figures, "
                    "never importing queries or streamlit"
                )
            shipped = folders[:1] in (("engine",), ("dashboard",))
            if shipped and (module := next((m for m in reached if _from_tests(m)), None)):
                found.append(f"{where}:{line}: imports {module} from tests/; only tests import tests")
        if in_pages and rel.name != "__init__.py":
            found += [f"{where}:{line}: {why}" for line, why in _page_idiom(tree)]
        if in_pages:
            for line, text in _sql_literals(tree):
                first = text.strip().splitlines()[0][:60]
                found.append(
                    f"{where}:{line}: a page issues SQL ({first!r}); move it into its dashboard/queries "
                    "module"
                )
    return found


def test_the_house_keeps_its_import_rules():
    found = violations(ROOT)
    assert not found, "broken import rules:\n" + "\n".join(found)


def test_the_checker_reads_the_real_tree():
    """The rules above cannot pass by reading nothing: the folders they name exist and hold modules."""
    files = [p.relative_to(ROOT).parts[:2] for p in _python_files(ROOT)]
    for folder in (
        ("engine",),
        ("dashboard", "app_pages"),
        ("dashboard", "queries"),
        ("dashboard", "charts"),
    ):
        assert sum(1 for parts in files if parts[: len(folder)] == folder) >= 2, folder


# engine/'s top level: its packages (what the README's layout names) and the few modules every package uses.
# A new module goes into the package whose part of the model it is.
ENGINE_PACKAGES = {
    "act",
    "scenario",
    "sim",
    "fabric",
    "telemetry",
    "scheduling",
    "replay",
    "ingest",
    "store",
    "analysis",
    "twin",
    "report",
}
ENGINE_SHARED_MODULES = {"__init__", "cli", "errors", "limits", "reference", "units", "bounded_read"}


def test_engine_is_grouped_into_the_packages_the_readme_names():
    engine = ROOT / "engine"
    packages = {p.name for p in engine.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in engine.glob("*.py")}
    assert packages == ENGINE_PACKAGES
    assert set(ENGINE_ORDER) == ENGINE_PACKAGES | {"shared", "cli"}, "place every package in ENGINE_ORDER"
    assert modules == ENGINE_SHARED_MODULES, f"move {sorted(modules - ENGINE_SHARED_MODULES)} into a package"
    layout = (ROOT / "README.md").read_text()
    assert all(f"{name}/" in layout for name in ENGINE_PACKAGES)
    assert sorted(p.stem for p in (ROOT / "data" / "presets").glob("*.toml"))  # presets ship with the code


BROKEN = {
    "engine/core/model.py": "import numpy\n\nimport streamlit as st\n",
    "engine/core/deep/sim.py": "from dashboard.state import store\n",
    "engine/ok.py": "from engine.core import model\n",
    "dashboard/app_pages/page.py": (
        'import streamlit as st\nimport duckdb\n\nROWS = "SELECT * FROM jobs"\n'
        'st.title("Jobs: with every attempt")\n'
    ),
    "dashboard/app_pages/other.py": (
        "import streamlit as st\n\n\ndef page():\n"
        '    return f"WITH x AS (SELECT 1) SELECT * FROM {t}"\n\n\n'
        'run = state.run_or_stop()\nst.title("Other")\npage()\n'
    ),
    "dashboard/app_pages/fine.py": (
        '"""A page."""\n\nTEXT = "With these settings, select a run from the list"\n\n\n'
        "def page(run_id):\n    st.caption(TEXT)\n\n\n"
        'st.title("Fine")\nstate.render_run_page(page, state.run_or_stop())\n'
    ),
    "dashboard/queries/jobs.py": "from dashboard.charts.common import count_axis\n",
    "dashboard/queries/rel.py": "from ..charts import jobs\n",
    "dashboard/charts/jobs.py": "from dashboard import queries\nimport streamlit\n",
    "dashboard/helper.py": "from tests.runs import pages_run\n",
    "tests/test_x.py": "from tests.runs import pages_run\nimport duckdb\n",
}


@pytest.fixture
def broken_tree(tmp_path: Path) -> Path:
    for rel, text in BROKEN.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_checker_names_file_and_line_of_each_broken_rule(broken_tree):
    found = violations(broken_tree)
    expected = {
        "engine/core/model.py:3: the engine imports streamlit",
        "engine/core/deep/sim.py:1: the engine imports dashboard.state",
        "dashboard/app_pages/page.py:2: a page imports duckdb",
        "dashboard/app_pages/page.py:4: a page issues SQL ('SELECT * FROM jobs')",
        "dashboard/app_pages/other.py:5: a page issues SQL ('WITH x AS (SELECT 1) SELECT * FROM')",
        "dashboard/app_pages/other.py:8: top-level code in a page ('run = state.run_or_stop()')",
        "dashboard/app_pages/page.py:5: a page ends with st.title(...) and page()",
        "dashboard/app_pages/page.py:1: a page draws itself in a function named page",
        "dashboard/queries/jobs.py:1: a query imports dashboard.charts.common",
        "dashboard/queries/rel.py:1: a query imports dashboard.charts",
        "dashboard/charts/jobs.py:1: a chart imports dashboard.queries",
        "dashboard/charts/jobs.py:2: a chart imports streamlit",
        "dashboard/helper.py:1: imports tests.runs.pages_run from tests/",
    }
    for start in expected:
        assert any(f.startswith(start) for f in found), f"not reported: {start}\n" + "\n".join(found)
    # prose that merely starts with "With", modules inside tests/ and the engine's own imports are no violations
    assert not [f for f in found if f.startswith(("dashboard/app_pages/fine.py", "tests/", "engine/ok.py"))]


def test_a_clean_tree_has_no_violations(tmp_path):
    for rel, text in {
        "engine/a/b.py": "import polars\nfrom engine.a import c\n",
        "dashboard/app_pages/p.py": (
            "from dashboard.queries import jobs\n\n\ndef page():\n"
            "    jobs.count()\n\n\nst.title('P')\npage()\n"
        ),
        "dashboard/queries/jobs.py": "from dashboard.format import fmt_int\n",
        "dashboard/charts/c.py": "from dashboard.format import fmt_int\nimport plotly\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert violations(tmp_path) == []


# The engine's order, lowest first: a package imports its own modules and packages below it, never one beside
# or above it. The flow of DESIGN: a scenario and the store's records at the bottom; the model's parts (what
# hosts report, the job queue, the fabric, the SimPy model); what a run means (analysis); the twin, which runs
# the model end to end and many times (simulate, sweeps, scale); reports and exports; then the sources of real
# runs, which build on all of it (replay re-simulates an incident file; ingest reads Slurm text with replay's
# sacct parser); the command line on top. "shared" is engine/'s own modules (errors, units, limits, ...).
ENGINE_ORDER = (
    "shared",
    "store",
    "scenario",
    "telemetry",
    "scheduling",
    "fabric",
    "sim",
    "analysis",
    "twin",
    "report",
    "replay",
    "ingest",
    "act",
    "cli",
)


def _engine_part(parts: tuple[str, ...]) -> str:
    """The ENGINE_ORDER name of engine module `parts` (("engine", "sim", "simulate") -> "sim")."""
    if len(parts) < 2:
        return "shared"
    if parts[1] == "cli":
        return "cli"
    return parts[1] if parts[1] in ENGINE_ORDER else "shared"


def order_violations(root: Path) -> list[str]:
    """`path:line: what is wrong` for each engine import that reaches a package at or above the importer's
    place in ENGINE_ORDER (lazy imports inside functions count: they are the same arrow)."""
    rank = {name: i for i, name in enumerate(ENGINE_ORDER)}
    found = []
    for path in _python_files(root):
        rel = path.relative_to(root)
        if rel.parts[0] != "engine":
            continue
        own = _engine_part(tuple(rel.with_suffix("").parts))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for line, reached in _imports(tree, rel.parts[:-1]):
            module = reached[-1] if reached[-1] else reached[0]
            if not _within(module, "engine") or module == "engine":
                continue
            other = _engine_part(tuple(module.split(".")))
            if other != own and rank[other] >= rank[own] and other != "shared":
                found.append(
                    f"{rel.as_posix()}:{line}: engine.{own} imports {module}, but {other} comes after {own} "
                    "in the engine's order (tests/test_architecture.py ENGINE_ORDER)"
                )
    return found


def test_the_engine_keeps_its_order():
    found = order_violations(ROOT)
    assert not found, "imports against the engine's order:\n" + "\n".join(found)


def test_the_order_checker_names_an_import_against_the_flow(tmp_path):
    for rel, text in {
        "engine/sim/model.py": "from engine.analysis.summary import summarize\n",
        "engine/analysis/summary.py": "def summarize():\n    from engine.sim import model\n",
        "engine/fabric/net.py": "import engine.scheduling.queue\n\n\ndef f():\n    from engine.twin import sweep\n",
        "engine/units.py": "X = 1\n",
        "engine/twin/run.py": "from engine import units\nfrom engine.sim.model import run\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    found = order_violations(tmp_path)
    assert [f.split(": ")[0] for f in found] == ["engine/fabric/net.py:5", "engine/sim/model.py:1"], found
    assert "engine.sim imports engine.analysis.summary, but analysis comes after sim" in found[1]
