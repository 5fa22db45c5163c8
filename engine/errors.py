"""The one error type the command line turns into a clear message and exit status 2.

Every check of user input (a scenario key, a trace line, a store file) raises `GoodputError` with a message
that names the file, line or key and says what is wrong, so the CLI never prints a traceback for bad input.
"""


class GoodputError(ValueError):
    """Bad input or an impossible request, explained in one line for the user."""


class NotBuiltYet(GoodputError):
    """A command whose engine part has not been written yet."""
