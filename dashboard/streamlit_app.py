"""Goodput's dashboard: the router. Every page reads the run chosen in the sidebar (in the URL as ?run=).

Streamlit runs this file as its script (`__main__`) on every rerun: `main` routes. Imported, it is the app that
`streamlit run dashboard/streamlit_app.py` serves (Streamlit finds `app` below and serves it through uvicorn): the
same middleware as `goodput dashboard` in front of Streamlit (dashboard/serve.py), so the upload gate holds from
before the server listens. Served any other way beyond loopback, no page is shown and the server stops
(dashboard/upload_gate.py refuse_if_ungated).
"""

from pathlib import Path

import duckdb
import pandas  # noqa: F401  loaded whole before any page's rerun: Plotly probes a half-imported pandas otherwise
import streamlit as st

from dashboard import auth, navigation, serve, state, style, upload_gate
from dashboard.text import md
from engine.errors import GoodputError

# The tab's icon ships with the dashboard (sent inline as a data URL): a ":material/...:" icon is fetched from
# fonts.gstatic.com on every rerun, a request that fails on a cluster's air-gapped network and tells Google who looks
FAVICON = Path(__file__).with_name("favicon.svg")


def public(err: BaseException) -> str:
    """An error as a browser may see it: without the server's paths (the store's, the checkout's)."""
    text = (err.strerror or type(err).__name__) if isinstance(err, OSError) else str(err)
    places = ((state.store().root.resolve(), "the store"), (Path(__file__).resolve().parents[1], "…"))
    for path, label in places:
        text = text.replace(str(path), label)
    return text


def main() -> None:
    """One run of the app's script: the page the URL asks for, or the screen that stands in for it."""
    st.set_page_config(page_title="Goodput", page_icon=str(FAVICON), layout="wide")
    style.apply()  # metric labels wrap rather than being cut (dashboard/style.py)

    pages: dict[str, list] = {}
    for entry in navigation.PAGES:
        pages.setdefault(entry.group, []).append(
            st.Page(
                entry.file, title=entry.title, icon=entry.icon, default=entry.default, url_path=entry.url_path
            )
        )

    # beyond loopback without the upload gate (served some way other than `goodput dashboard` or `streamlit run`):
    # no page, and the server stops (dashboard/upload_gate.py refuse_if_ungated)
    ungated = upload_gate.refuse_if_ungated()
    problem = ungated or auth.configuration_problem()
    if problem:
        # served beyond loopback without login, TLS or the upload gate (started some other way than `goodput
        # dashboard`, which refuses to start without the first two): nothing is shown, and the server's log and
        # this screen say what is missing
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
            for group in pages.values()
            for p in group
            if p.url_path
        ]
        st.navigation(screens, position="hidden").run()
        st.stop()
    page = st.navigation(pages)
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


if __name__ == "__main__":
    main()
else:
    # `streamlit run dashboard/streamlit_app.py` imports this file and serves `app` (its ASGI mode) instead of
    # serving the file bare: the upload gate, security headers and gzip of `goodput dashboard` in front
    app = st.App(__file__, middleware=serve.middleware(tls=auth.served_with_tls()))
