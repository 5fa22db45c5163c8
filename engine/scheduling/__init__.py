"""The queue and gang placement of jobs on hosts, and why jobs waited."""
