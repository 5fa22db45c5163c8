"""The scenario presets: the TOML files in data/presets, one a preset, named by the file.

They live as files rather than code so that users can read and copy them: a preset file is a scenario file
without `preset =` (`goodput simulate --scenario data/presets/rsc1.toml` is the rsc1 preset). Each file's
comments give its sources. Keys are checked here, when the presets are read, so a mistyped key in a preset
fails at import with the file and key named rather than in the middle of a simulation; values are checked by
`engine.scenario.build` like every other layer.
"""

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.errors import GoodputError
from engine.scenario.keys import KEY_BY_NAME

PRESETS_DIR = Path(__file__).resolve().parents[2] / "data" / "presets"

# The order presets are offered in (--help, the Planner): the small one first, then the calibrated cluster,
# then the rest by name. A file not listed here comes after these, by name.
FIRST = ("demo", "llama3-405b")


class PresetError(GoodputError):
    """A preset file is missing, not TOML, or sets a key that does not exist."""


def read_presets(folder: Path = PRESETS_DIR) -> dict[str, dict[str, Any]]:
    """Every preset in `folder`: name -> flat {dotted key: value as spelled in the file}."""
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise PresetError(
            f"{folder}: no preset files (*.toml); a checkout of Goodput has them in data/presets"
        )
    names = [f.stem for f in files]
    order = [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]
    by_name = {f.stem: f for f in files}
    return {name: read_preset(by_name[name]) for name in order}


def read_preset(path: Path) -> dict[str, Any]:
    try:
        nested = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise PresetError(f"{path}: cannot read the preset: {err}") from None
    flat = _flatten(nested, "")
    for key in flat:
        if key not in KEY_BY_NAME:
            raise PresetError(f"{path}: unknown scenario key {key!r}")
    return flat


def _flatten(node: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


PRESETS = read_presets()
