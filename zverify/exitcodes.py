"""Exit codes, in the diff/cmp convention that migration scripts already test for."""

IDENTICAL = 0  # verified identical under the chosen profile
DIFFERENT = 1  # differences found (and everything could be read)
TROUBLE = 2  # could not complete: usage error, unreadable root, any unreadable entry
INTERRUPTED = 130  # Ctrl-C
