"""The ledger of definitions: every figure Goodput shows, once, with what it counts.

A figure on a page, in an export or in a CLI summary is named by its definition's `label`, explains itself
with the definition's `help` (which links to the Definitions page and to docs/definitions.md), and is
computed by the one engine function its `source` names. Two figures that count different things have
different labels (registry-wide unique), so "Interruptions" (of the flagship job) can never be confused
with "Incidents" (of the cluster). tests/test_definitions.py keeps docs/definitions.md equal to this registry
and tests/test_one_truth.py checks that every page and export of one run shows the same value for a label.

Each section is a module of its own (goodput, cluster, ...), holding a tuple DEFINITIONS.
"""

from dataclasses import dataclass

# Where the Definitions page lives in the dashboard (st.navigation url_path): help texts link to it
# relatively, so a link works under any host and port.
PAGE_PATH = "definitions"


@dataclass(frozen=True)
class Definition:
    key: str  # stable id: the anchor on the Definitions page and in docs/definitions.md
    label: str  # what every page, export and CLI table calls it (unique in the registry)
    section: str  # the heading it is listed under
    unit: str  # "count", "ratio", "GPU-hours", "hours", "seconds", "USD", "per day", ...
    means: str  # what it counts, in one or two sentences a user can check against the data
    source: str  # the engine function or summary key that computes it
    not_to_confuse: tuple[str, ...] = ()  # keys of figures that sound alike but count something else
    # "run": one value per run, the same on every page, export and CLI summary (tests/test_one_truth.py checks);
    # "view": depends on what the page shows (a time, a window, filters, a selected rack or incident)
    scope: str = "run"
    # where a run's value lives in its summary ("job.ettr"; engine.analysis.run_summary.RunSummary.figure reads
    # it), None for a figure computed from the run's tables or for the view
    summary: str | None = None

    @property
    def help(self) -> str:
        """The help text of the figure on a page: what it means and a link to its definition."""
        return f"{self.means} [Definition: {self.label}]({PAGE_PATH}#{self.key.replace('_', '-')})"

    @property
    def anchor(self) -> str:
        return self.key.replace("_", "-")


def section(name: str, *, default_scope: str = "run"):
    """The one way a section module writes its entries: `_d = section(SECTION)`, then
    `_d(key, label, unit, means, source, *not_to_confuse, scope=..., summary=...)`."""

    def define(
        key: str,
        label: str,
        unit: str,
        means: str,
        source: str,
        *others: str,
        scope: str = default_scope,
        summary: str | None = None,
    ) -> Definition:
        return Definition(key, label, name, unit, means, source, others, scope, summary)

    return define


def _collect() -> dict[str, Definition]:
    # Imported here, not at the top: each section module imports Definition from this package.
    from engine.analysis.definitions import (
        actions,
        cluster,
        goodput,
        gpus,
        incidents,
        network,
        planner,
        racks,
        scheduling,
        stragglers,
        telemetry,
        twin,
    )

    sections = (
        goodput,
        incidents,
        cluster,
        scheduling,
        racks,
        gpus,
        network,
        planner,
        telemetry,
        twin,
        stragglers,
        actions,
    )
    registry: dict[str, Definition] = {}
    labels: dict[str, str] = {}
    for section in sections:
        for d in section.DEFINITIONS:
            assert d.key not in registry, f"definition {d.key!r} twice"
            assert d.label not in labels, f"label {d.label!r} names both {labels[d.label]!r} and {d.key!r}"
            assert d.scope in ("run", "view"), f"{d.key!r}: scope {d.scope!r} is neither run nor view"
            registry[d.key] = d
            labels[d.label] = d.key
    for d in registry.values():
        for other in d.not_to_confuse:
            assert other in registry, f"{d.key!r} refers to unknown definition {other!r}"
    return registry


DEFINITIONS: dict[str, Definition] = _collect()
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(d.section for d in DEFINITIONS.values()))


def definition(key: str) -> Definition:
    """The definition of a figure; a KeyError names the key (a page asked for a figure nobody defined)."""
    try:
        return DEFINITIONS[key]
    except KeyError:
        raise KeyError(f"no definition {key!r} in engine.analysis.definitions") from None


def by_label(label: str) -> Definition | None:
    return next((d for d in DEFINITIONS.values() if d.label == label), None)


def markdown() -> str:
    """docs/definitions.md: every definition by section, each with an anchor the help texts link to."""
    lines = [
        "# Definitions",
        "",
        "Every figure Goodput shows, with what it counts. Generated from `engine/analysis/definitions/` "
        "(`goodput definitions --markdown`); the dashboard's Definitions page shows the same text.",
        "",
    ]
    for section in SECTIONS:
        lines += [f"## {section}", ""]
        lines += [entry_markdown(d) + "\n" for d in DEFINITIONS.values() if d.section == section]
    return "\n".join(lines).rstrip() + "\n"


def entry_markdown(d: Definition) -> str:
    """One figure in Markdown (docs/definitions.md and the Definitions page): its label as a heading under the
    anchor its help links to, what it means, then its unit, source, summary key, scope and the figures not to
    confuse it with."""
    facts = [d.unit, f"computed by `{d.source}`"]
    if d.summary:
        facts.append(f"in the run summary at `{d.summary}`")
    if d.scope == "view":
        facts.append("depends on the time, window, filters or selection the page shows")
    if d.not_to_confuse:
        facts.append(
            "not the same as "
            + ", ".join(f"[{DEFINITIONS[k].label}](#{DEFINITIONS[k].anchor})" for k in d.not_to_confuse)
        )
    return f'### <a id="{d.anchor}"></a>{d.label}\n\n{d.means}\n\n*' + " · ".join(facts) + "*"
