"""The queue and gang allocation of jobs on hosts (by the placement rule), and why jobs waited."""
