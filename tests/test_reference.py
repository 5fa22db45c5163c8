"""The cause table and XID catalogue kept in engine/reference.py match ../shared/reference row for row."""

import csv

from engine.reference import (
    CAUSES,
    LLAMA3_DAYS,
    LLAMA3_JOB_HOSTS,
    LLAMA3_RATE_PER_1000_NODE_DAYS,
    LLAMA3_UNEXPECTED,
    XIDS,
)


def test_causes_match_the_llama3_table(shared_reference):
    with open(shared_reference / "llama3_interruptions.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["cause"], r["label"], r["category"], int(r["count"])) for r in rows] == [
        (c.cause, c.label, c.category, c.count) for c in CAUSES
    ]
    assert sum(c.count for c in CAUSES) == LLAMA3_UNEXPECTED == 419


def test_xids_match_the_catalogue(shared_reference):
    with open(shared_reference / "xid_catalog.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [
        (int(r["xid"]), r["mnemonic"], r["meaning"], r["action"], r["fatal"] == "true") for r in rows
    ] == [(x.xid, x.mnemonic, x.meaning, x.action, x.fatal) for x in XIDS]


def test_derived_rate_is_the_readme_figure():
    # reference README §2: 419 / 54 days / 2,048 hosts = 3.79 per 1,000 host-days
    assert LLAMA3_DAYS == 54 and LLAMA3_JOB_HOSTS == 2048
    assert round(LLAMA3_RATE_PER_1000_NODE_DAYS, 2) == 3.79
