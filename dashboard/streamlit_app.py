"""Goodput's dashboard: the router. Every page reads the run chosen in the sidebar (in the URL as ?run=)."""

from pathlib import Path

import duckdb
import pandas  # noqa: F401  loaded whole before any page's rerun: Plotly probes a half-imported pandas otherwise
import streamlit as st

from dashboard import auth, navigation, state, style, upload_gate
from dashboard.text import md
from engine.errors import GoodputError

# The tab's icon ships with the dashboard (sent inline as a data URL): a ":material/...:" icon is fetched from
# fonts.gstatic.com on every rerun, a request that fails on a cluster's air-gapped network and tells Google who looks
FAVICON = Path(__file__).with_name("favicon.svg")
st.set_page_config(page_title="Goodput", page_icon=str(FAVICON), layout="wide")
style.apply()  # metric labels wrap rather than being cut (dashboard/style.py)

PAGES: dict[str, list] = {}
for entry in navigation.PAGES:
    PAGES.setdefault(entry.group, []).append(
        st.Page(
            entry.file, title=entry.title, icon=entry.icon, default=entry.default, url_path=entry.url_path
        )
    )


def public(err: BaseException) -> str:
    """An error as a browser may see it: without the server's paths (the store's, the checkout's)."""
    text = (err.strerror or type(err).__name__) if isinstance(err, OSError) else str(err)
    places = ((state.store().root.resolve(), "the store"), (Path(__file__).resolve().parents[1], "…"))
    for path, label in places:
        text = text.replace(str(path), label)
    return text


problem = auth.configuration_problem()
if problem:
    # served beyond loopback without login or TLS (started some other way than `goodput dashboard`, which
    # refuses to start): nothing is shown, and the server's log and this screen say what is missing
    st.title("Goodput")
    st.error(f"This dashboard cannot be shown yet: {md(problem)}", icon=":material/lock:")
    st.caption("Whoever runs it: see the README's 'Login' section, or start it with `goodput dashboard`.")
    st.stop()
access = auth.current()
# the upload route asks whether this session may import (dashboard/upload_gate.py)
upload_gate.remember_this_session(access.can(auth.Role.OPERATOR))
if access.login_required and not access.logged_in:
    # a logged-out visitor gets the login screen whatever the URL asks for (every page's address answers with
    # it, so a shared link does not say "page not found"): no run list, no sidebar, no data
    screens = [st.Page(auth.login_screen, title="Log in", default=True)] + [
        st.Page(auth.login_screen, title=p.title, url_path=p.url_path)
        for group in PAGES.values()
        for p in group
        if p.url_path
    ]
    st.navigation(screens, position="hidden").run()
    st.stop()
page = st.navigation(PAGES)
st.sidebar.markdown("**Goodput** · the share of a training job's time that becomes progress")
auth.sidebar_user(access)
state.sidebar_run_selector()
try:
    page.run()
except (GoodputError, duckdb.Error, OSError) as err:
    # A run file that vanished or cannot be read mid-session (deleted from a terminal, a disk error, a run
    # from an older Goodput): say so plainly instead of a traceback, and keep the other pages usable.
    st.error(f"This page could not read the selected run: {md(public(err))}", icon=":material/error:")
    st.caption("Pick another run in the sidebar, or open the Data page to list and delete runs.")
