"""The dashboard's pages in the sidebar's order: the one list the router (dashboard/streamlit_app.py) builds its
navigation from and the tests walk.

    [p.name for p in PAGES if p.reads_run]   # the pages that show the selected run
    [f"/{p.path}" for p in PAGES]             # where a browser opens each
"""

from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class PageEntry:
    group: str  # the sidebar's heading
    file: str  # relative to dashboard/: app_pages/NAME.py
    title: str
    icon: str
    default: bool = False
    url_path: str | None = None  # None: Streamlit's, from the file name
    reads_run: bool = True  # shows the run chosen in the sidebar (Definitions does not)

    @property
    def name(self) -> str:
        return PurePosixPath(self.file).stem

    @property
    def path(self) -> str:
        """The URL path a browser opens the page at: "" for the default page, else its url_path or name."""
        return "" if self.default else self.url_path or self.name


PAGES: tuple[PageEntry, ...] = (
    PageEntry("Operate", "app_pages/overview.py", "Overview", ":material/monitoring:", default=True),
    PageEntry("Operate", "app_pages/racks.py", "Racks", ":material/grid_view:"),
    PageEntry("Operate", "app_pages/gpus.py", "GPUs", ":material/memory:"),
    PageEntry("Operate", "app_pages/jobs.py", "Jobs", ":material/view_timeline:"),
    PageEntry("Operate", "app_pages/network.py", "Network", ":material/hub:"),
    PageEntry("Operate", "app_pages/incidents.py", "Incidents", ":material/report:"),
    PageEntry("Operate", "app_pages/operations.py", "Operations", ":material/build:"),
    PageEntry("Plan", "app_pages/twin.py", "Twin", ":material/model_training:"),
    PageEntry("Plan", "app_pages/planner.py", "Planner", ":material/tune:"),
    PageEntry("Plan", "app_pages/compare.py", "Compare", ":material/compare_arrows:"),
    PageEntry("Manage", "app_pages/data.py", "Data", ":material/database:"),
    # every figure's help links here (engine.analysis.definitions.PAGE_PATH)
    PageEntry(
        "Manage",
        "app_pages/definitions.py",
        "Definitions",
        ":material/menu_book:",
        url_path="definitions",
        reads_run=False,
    ),
)
RUN_PAGES: tuple[str, ...] = tuple(p.name for p in PAGES if p.reads_run)
