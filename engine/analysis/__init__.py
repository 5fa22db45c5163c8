"""Figures computed from runs: ETTR and closed forms, the goodput ledger, incidents, the planner's estimates
and the definitions every page and export reads."""
