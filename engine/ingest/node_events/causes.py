"""The cause map: a site's words for why a node went out, mapped to Goodput's cause keys (`--causes MAP.toml`).

A map is TOML, an ordered list of rules; the first rule whose pattern matches an event names its cause:

    fallback_to_default = true      # optional: after these rules, Goodput's own (causes_default.toml)

    [[rule]]
    match = '(?i)xid ?79|fell off the bus'   # a regular expression
    cause = "faulty_gpu"                      # engine.sim.failures.CAUSE_KEYS, planned_maintenance or unknown
    planned = false                           # optional; true makes the outage planned_maintenance
    field = "any"                             # optional: cause (Slurm's Reason), description, or any (default)

An event no rule matches is `unknown`: it is kept and counted, never dropped. A rule whose cause is `unknown`
stops the later rules from guessing (Slurm's `Not responding` says nothing of why).

Patterns are Rust regular expressions (Polars matches them, column by column): matching takes time linear in
the text, whatever the pattern, so no pattern can hang an ingest (`(a+)+$` over a long line is as fast as
`a`). The syntax is Python's less look-around and backreferences; a pattern that uses them, does not compile
or compiles past the engine's size limit is a one-line error naming the map file and the rule. The texts
matched are at most MAX_EVENT_TEXT_CHARS each, the map at most MAX_SCENARIO_BYTES, MAX_CAUSE_RULES rules of
MAX_CAUSE_PATTERN_CHARS each (engine/limits.py).
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from engine import limits
from engine.bounded_read import read_bounded
from engine.errors import GoodputError
from engine.sim.failures import CATEGORY, CAUSE_KEYS

DEFAULT_MAP = Path(__file__).with_name("causes_default.toml")
UNKNOWN = "unknown"
PLANNED = "planned_maintenance"
FIELDS = ("cause", "description", "any")
RULE_KEYS = ("match", "cause", "planned", "field")
MAP_KEYS = ("rule", "fallback_to_default")
# An XID named in a text: `Xid 79`, `XID:79`, `xid=79`, `NVRM: Xid (PCI:0000:3b:00): 79, pid=...`.
XID_PATTERN = r"(?i)\bxid\b(?:\s*\(pci:[^)]*\))?[\s:#=-]*(\d{1,3})\b"


def causes() -> tuple[str, ...]:
    """Every cause a rule may name."""
    return (*CAUSE_KEYS, PLANNED, UNKNOWN)


def category_of(cause: str) -> str:
    return CATEGORY.get(cause, "Unknown")


@dataclass(frozen=True)
class Rule:
    number: int  # 1-based, in its file
    pattern: str
    cause: str
    planned: bool
    field: str
    origin: str  # the map file it came from


@dataclass(frozen=True)
class CauseMap:
    rules: tuple[Rule, ...]
    name: str  # the map's file, or "default"

    def classify(self, events: pl.DataFrame) -> pl.DataFrame:
        """`events` (reason, description) with `cause`, `planned` and `rule` (the number of the rule that
        matched in the map's rule order, null for none) added: each distinct pair of texts matched once."""
        events = events.cast({"reason": pl.String, "description": pl.String})
        pairs = events.select("reason", "description").unique()
        hit = [_matches(rule, pl.col("reason"), pl.col("description")) for rule in self.rules]
        index = pl.coalesce(
            [pl.when(h).then(pl.lit(i, pl.Int32)) for i, h in enumerate(hit)] or [pl.lit(None)]
        )
        pairs = pairs.with_columns(index.alias("rule"))
        table = pl.DataFrame(
            {
                "rule": pl.Series(range(len(self.rules)), dtype=pl.Int32),
                "cause": [r.cause for r in self.rules],
                "planned": [r.planned for r in self.rules],
            }
        )
        pairs = pairs.join(table, on="rule", how="left").with_columns(
            cause=pl.col("cause").fill_null(UNKNOWN), planned=pl.col("planned").fill_null(False)
        )
        return events.join(pairs, on=["reason", "description"], how="left", nulls_equal=True)


def _matches(rule: Rule, reason: pl.Expr, description: pl.Expr) -> pl.Expr:
    on_reason = reason.str.contains(rule.pattern).fill_null(False)
    on_description = description.str.contains(rule.pattern).fill_null(False)
    if rule.field == "cause":
        return on_reason
    if rule.field == "description":
        return on_description
    return on_reason | on_description


def load(path: str | Path | None) -> CauseMap:
    """The map of `path` (Goodput's default where None), every rule checked; a GoodputError naming the file and
    the rule otherwise."""
    if path is None:
        return CauseMap(_rules(DEFAULT_MAP, "default"), "default")
    name = str(path)
    if Path(path).is_dir():
        raise GoodputError(f"--causes: {name} is a folder, not a TOML file")
    data = read_bounded(path, "the cause map", limits.MAX_SCENARIO_BYTES, source=f"--causes: {name}")
    document = _toml(data, name)
    rules = _parse(document, name)
    if document.get("fallback_to_default", False):
        rules += _rules(DEFAULT_MAP, "default")
    return CauseMap(rules, name)


def _rules(path: Path, name: str) -> tuple[Rule, ...]:
    return _parse(_toml(path.read_bytes(), name), name)


def _toml(data: bytes, name: str) -> dict:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise GoodputError(f"{name}: not UTF-8 text (byte {err.start})") from None
    except (tomllib.TOMLDecodeError, ValueError) as err:
        raise GoodputError(f"{name}: not valid TOML ({err})") from None


def _parse(document: dict, name: str) -> tuple[Rule, ...]:
    unknown = [k for k in document if k not in MAP_KEYS]
    if unknown:
        raise GoodputError(f"{name}: unknown key {unknown[0]!r} (a map has {' and '.join(MAP_KEYS)})")
    if not isinstance(document.get("fallback_to_default", False), bool):
        raise GoodputError(f"{name}: fallback_to_default must be true or false")
    rules = document.get("rule")
    if not isinstance(rules, list) or not rules:
        raise GoodputError(f"{name}: no [[rule]] tables (each: match = '<regex>', cause = '<cause key>')")
    if len(rules) > limits.MAX_CAUSE_RULES:
        raise GoodputError(
            f"{name}: {len(rules):,} rules, over Goodput's limit of {limits.MAX_CAUSE_RULES:,}"
            " (engine/limits.py MAX_CAUSE_RULES)"
        )
    return tuple(_rule(raw, number, name) for number, raw in enumerate(rules, start=1))


def _rule(raw: object, number: int, name: str) -> Rule:
    where = f"{name}, rule {number}"
    if not isinstance(raw, dict):
        raise GoodputError(f"{where}: not a table (write [[rule]] and its keys)")
    unknown = [k for k in raw if k not in RULE_KEYS]
    if unknown:
        raise GoodputError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(RULE_KEYS)})")
    pattern = raw.get("match")
    if not isinstance(pattern, str) or not pattern:
        raise GoodputError(f"{where}: match must be a regular expression (a non-empty string)")
    if len(pattern) > limits.MAX_CAUSE_PATTERN_CHARS:
        raise GoodputError(
            f"{where}: a pattern of {len(pattern):,} characters, over Goodput's limit of"
            f" {limits.MAX_CAUSE_PATTERN_CHARS:,} (engine/limits.py MAX_CAUSE_PATTERN_CHARS)"
        )
    planned = raw.get("planned")
    if planned is not None and not isinstance(planned, bool):
        raise GoodputError(f"{where}: planned must be true or false")
    cause = raw.get("cause", PLANNED if planned else None)
    if not isinstance(cause, str) or cause not in causes():
        raise GoodputError(f"{where}: cause {cause!r} is not one of {', '.join(causes())}")
    if planned is None:
        planned = cause == PLANNED
    if planned != (cause == PLANNED):
        raise GoodputError(
            f"{where}: a planned rule's cause is {PLANNED} (leave cause out), and only a planned rule's"
            f" (got cause {cause!r} with planned = {str(planned).lower()})"
        )
    field = raw.get("field", "any")
    if field not in FIELDS:
        raise GoodputError(f"{where}: field must be one of {', '.join(FIELDS)}, got {field!r}")
    _compile(pattern, where)
    return Rule(number, pattern, cause, planned, field, name)


def _compile(pattern: str, where: str) -> None:
    """Compile `pattern` in the engine that will match it: an error names what it refused."""
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.PolarsError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        said = next((line.removeprefix("error: ") for line in lines if line.startswith("error: ")), None)
        said = said or (lines[0].removeprefix("regex error: ") if lines else type(err).__name__)
        raise GoodputError(
            f"{where}: match {_short(pattern)} is not a pattern Goodput can run ({said}); patterns are Rust"
            " regular expressions: linear time, no look-around or backreferences"
        ) from None


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60] + "…")


def xid_of(text: pl.Expr) -> pl.Expr:
    """The XID code a text names (`Xid 79`), as an Int32, or null."""
    return text.str.extract(XID_PATTERN, 1).cast(pl.Int32, strict=False)
