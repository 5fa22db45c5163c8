"""The audit log on the Operations page: every recommendation, approval, rejection, command and answer, newest
first, as text; whether its hash chain holds; and the log to download (CSV, JSON)."""

import polars as pl
import streamlit as st

from dashboard import table_view
from dashboard.text import code, md
from engine.act.audit import AuditLog
from engine.act.command import audit_csv, audit_json

SHOWN_ROWS = 500  # the newest; the downloads hold every row


def section(log: AuditLog) -> None:
    check = log.verify()
    if check.ok:
        st.success(
            f"{check.rows:,} {'entry' if check.rows == 1 else 'entries'}; the hash chain holds "
            f"(head {code(check.head_hash[:16])}…). "
            "`goodput act verify-log` checks it from a terminal and prints the whole head to keep elsewhere.",
            icon=":material/verified:",
        )
    else:
        st.error(
            f"The audit log does not verify: {len(check.problems)} problem(s). "
            + " ".join(md(p) for p in check.problems[:5]),
            icon=":material/gpp_bad:",
        )
    frame = log.frame()
    if frame.is_empty():
        st.info("Nothing has been recommended or done yet.", icon=":material/info:")
        return
    shown = (
        frame.sort("seq", descending=True)
        .head(SHOWN_ROWS)
        .select(
            "seq",
            "at",
            "who",
            "event",
            "action_id",
            pl.col("detail").alias("what"),
            pl.col("hash").str.slice(0, 12),
        )
    )
    table_view.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        column_config={
            "seq": st.column_config.NumberColumn("#", format="%d"),
            "at": st.column_config.DatetimeColumn("When (UTC)", format="YYYY-MM-DD HH:mm:ss"),
            "who": "Who",
            "event": "Event",
            "action_id": "Action",
            "what": st.column_config.TextColumn("What (JSON)", width="large"),
            "hash": "Hash",
        },
    )
    if frame.height > SHOWN_ROWS:
        st.caption(f"The newest {SHOWN_ROWS:,} of {frame.height:,} entries; the downloads hold them all.")
    cols = st.columns(2)
    # each file is read and built when its button is clicked, not on every rerun (the log was read four times)
    cols[0].download_button(
        "Audit log (CSV)",
        lambda: audit_csv(log),
        "goodput-audit.csv",
        "text/csv",
        icon=":material/download:",
        on_click="ignore",
    )
    cols[1].download_button(
        "Audit log (JSON)",
        lambda: audit_json(log),
        "goodput-audit.json",
        "application/json",
        icon=":material/download:",
        on_click="ignore",
    )
