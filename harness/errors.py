"""The suite's own exceptions for bad input, which commands turn into exit code 2 with one line (``harness.exits``).

Every refusal of an input (an option, a workload, a file, a results dir) raises :class:`BadInput` or a subclass, with
one line that says what is wrong and what to do. Any other exception is the suite's own error (exit 4, its traceback
in a log), never taken for the user's: a ``ValueError`` from a library or a bug is not bad input.
"""


class BadInput(ValueError):
    """An input the suite refuses, before it measures anything: one line that says what is wrong and what to do."""


class UsageError(BadInput):
    """A bad option, path or combination of them."""
