"""The suite's own exceptions that commands turn into exit codes (``harness.exits``): a bad input is exit 2, one line."""


class UsageError(Exception):
    """A bad option, path or combination of them: one line that says what is wrong and what to do."""
