"""Units of time, defined once: every time inside a run is in seconds (DESIGN "Rules of the house").

Floats on purpose: `days * SECONDS_PER_DAY` stays a float when `days` is an int, as the literals these
replace (86400.0, 3600.0) did, so a value and its type are the same wherever the constant is used.
"""

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3_600.0
SECONDS_PER_DAY = 86_400.0
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY
# An int: millisecond clocks (DCGM's, the kernel's) are integers and stay so.
MILLISECONDS_PER_DAY = 86_400_000
