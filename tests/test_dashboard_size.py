"""No function under dashboard/ is longer than 80 lines and no module longer than 450, bar explicit allow-lists
(DESIGN "Layout": a module past ~400 lines is a smell; UI files read like a description of the UI).

The allow-lists only shrink: when a function on one is split, or a module shortened, remove its entry.
"""

import ast
import pathlib

DASHBOARD = pathlib.Path(__file__).resolve().parent.parent / "dashboard"
FUNCTION_LIMIT = 80
MODULE_LIMIT = 450

# (path relative to dashboard/, function name) -> length in lines when listed.
# This list only shrinks: never add to it, remove an entry once it is split.
ALLOWED_FUNCTIONS: dict[tuple[str, str], int] = {}

# path relative to dashboard/ -> length in lines when listed. This list only shrinks.
ALLOWED_MODULES: dict[str, int] = {}


def _modules():
    for path in sorted(DASHBOARD.rglob("*.py")):
        yield path.relative_to(DASHBOARD).as_posix(), path.read_text()


def _long_functions():
    for name, source in _modules():
        for node in ast.walk(ast.parse(source, filename=name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LIMIT:
                    yield (name, node.name), length


def test_no_dashboard_function_longer_than_limit():
    too_long = {
        key: length
        for key, length in _long_functions()
        if key not in ALLOWED_FUNCTIONS or length > ALLOWED_FUNCTIONS[key]
    }
    assert not too_long, f"functions over {FUNCTION_LIMIT} lines (split them): {too_long}"


def test_no_dashboard_module_longer_than_limit():
    too_long = {
        name: length
        for name, source in _modules()
        if (length := len(source.splitlines())) > MODULE_LIMIT
        and length > ALLOWED_MODULES.get(name, MODULE_LIMIT)
    }
    assert not too_long, f"modules over {MODULE_LIMIT} lines (split them): {too_long}"


def test_the_allow_lists_only_name_what_is_still_long():
    """An entry whose function or module is now short enough (or gone) is removed, so the lists only shrink."""
    functions = dict(_long_functions())
    modules = {name: len(source.splitlines()) for name, source in _modules()}
    stale = [key for key in ALLOWED_FUNCTIONS if key not in functions] + [
        name for name in ALLOWED_MODULES if modules.get(name, 0) <= MODULE_LIMIT
    ]
    assert not stale, f"remove these from the allow-lists (no longer over the limit): {stale}"
