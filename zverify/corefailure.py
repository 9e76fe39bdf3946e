"""One line, not a traceback, when the C core cannot be loaded.

zverify._zvcore is compiled: a wheel made for another machine, a checkout never built, or a
shared library missing at run time makes every import of it fail, deep inside whichever
command ran (a 40-line traceback ending in the one line that matters).  Both entry points
turn that ImportError into the line naming what is missing, and exit 2: nothing was
verified.  Standard library only: this runs when imports have failed.
"""

CORE = "zverify._zvcore"


def describe(err: BaseException) -> str | None:
    """The message for ERR if it is the C core failing to load, else None."""
    if not isinstance(err, ImportError):
        return None
    # `from zverify import _zvcore` with no build of it at all names the package; a build
    # the dynamic loader refused is named by its init symbol's module (3.11) or in full.
    absent = isinstance(err, ModuleNotFoundError) and err.name == CORE
    absent |= err.name == "zverify" and "'_zvcore'" in str(err)
    if absent:
        why = (
            "no build of it for this Python and machine is installed "
            "(install the wheel made for them, or build from source)"
        )
    elif err.name in (CORE, "_zvcore"):  # the loader's own words name the library or symbol
        why = " ".join(str(err).split())
    else:
        return None
    return f"cannot load the C core {CORE}: {why}; nothing was verified"
