"""No Python callback inside a Polars plan, anywhere in dashboard/ or engine/ (issue 12's deadlock).

Polars runs `map_elements`, `map_batches`, `map_groups` and friends on its own thread pool, whose threads must
take the GIL to call the Python function. Under concurrent sessions a thread holding the GIL waited for that
pool while the pool's threads waited for the GIL: the server stopped answering, /_stcore/health and SIGTERM
included. Pages use the expressions of dashboard.text_exprs, or plain Python on lists after collect().
This test reads the source (ast), so a callback cannot come back unnoticed.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("dashboard", "engine")

# Methods that only ever take a Python callable: any call is a callback in the plan.
ALWAYS = {"map_elements", "map_rows", "map_batches", "map_groups", "rolling_map"}
# Names that are callbacks when handed a function: `.apply(f)`, `pl.fold(acc, f, exprs)`.
WITH_FUNCTION = {"apply", "fold", "reduce", "cum_fold", "cum_reduce", "cumulative_fold", "cumulative_reduce"}
POLARS_NAMES = {"pl", "polars"}


def _functions(tree: ast.AST) -> set[str]:
    """Names bound to Python functions in a module: defs and `name = lambda ...`."""
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _is_function(arg: ast.expr, functions: set[str]) -> bool:
    if isinstance(arg, ast.Lambda):
        return True
    if isinstance(arg, ast.Name):
        return arg.id in functions
    if isinstance(arg, ast.Call) and isinstance(
        arg.func, ast.Attribute | ast.Name
    ):  # functools.partial(f, ...)
        return getattr(arg.func, "attr", getattr(arg.func, "id", "")) == "partial"
    return False


def callbacks(source: str, filename: str = "<source>") -> list[str]:
    """'file:line: what' for every Polars call in `source` that is handed a Python function."""
    tree = ast.parse(source, filename)
    functions = _functions(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = node.func.attr
        args = [*node.args, *(k.value for k in node.keywords)]
        if name in ALWAYS:
            found.append(f"{filename}:{node.lineno}: .{name}(...)")
        elif name in WITH_FUNCTION and any(_is_function(a, functions) for a in args):
            owner = node.func.value
            if name in {"reduce", "fold"} and not (isinstance(owner, ast.Name) and owner.id in POLARS_NAMES):
                continue  # functools.reduce and the like run in plain Python, not in a plan
            found.append(f"{filename}:{node.lineno}: .{name}(<python function>)")
    return found


def test_no_module_puts_a_python_callback_in_a_polars_plan() -> None:
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += callbacks(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "Python callbacks in Polars plans (use dashboard.text_exprs):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "snippet",
    [
        "df.with_columns(pl.col('t').map_elements(lambda t: str(t), return_dtype=pl.String))",
        "pl.col('t').map_elements(fmt_duration)",
        "s.map_batches(lambda j: names.gather(j))",
        "frame.group_by('a').map_groups(summarise)",
        "frame.map_rows(lambda row: row[0])",
        "def f(x):\n    return x\nframe['a'].apply(f)",
        "frame['a'].apply(lambda v: v + 1)",
        "pl.fold(pl.lit(0), lambda a, b: a + b, pl.all())",
        "pl.col('a').rolling_map(sum, window_size=3)",
        "pl.col('a').map_batches(functools.partial(g, 2))",
    ],
)
def test_the_scan_finds_each_kind_of_callback(snippet: str) -> None:
    assert callbacks(snippet) != []


@pytest.mark.parametrize(
    "snippet",
    [
        "functools.reduce(lambda a, b: a + b, values)",
        "frame.pipe(lambda f: f.with_columns(x=1))",
        "pl.col('t').replace_strict({'a': 'A'}, default='B')",
        "[fmt_duration(v) for v in frame['x'].to_list()]",
        "sorted(tiers, key=lambda t: t)",
    ],
)
def test_the_scan_leaves_plain_python_alone(snippet: str) -> None:
    assert callbacks(snippet) == []
