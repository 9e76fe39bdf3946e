"""The one exception type of the harness: a message that says what is missing and how to fix it."""


class HarnessError(RuntimeError):
    """Something the harness needs is missing or failed; ``str()`` is meant for the user."""
