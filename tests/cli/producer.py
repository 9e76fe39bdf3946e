"""The "producer" object every JSON document carries (zverify.provenance), checked against
the installed command: this zverify's version, this host, and times of this test's run."""

import datetime
import functools
import os
import re
import socket

from tests.cli.console import zverify
from zverify import provenance


@functools.cache
def installed_version() -> str:
    """The version `zverify --version` reports ("zverify 0.1.0" on its first line)."""
    if os.environ.get("ZVERIFY_SANITIZE") == "1":  # the installed command is another build
        return provenance.producer()["version"]
    done = zverify("--version")
    assert done.returncode == 0, done.stderr
    tool, version = done.stdout.splitlines()[0].split()
    assert tool == "zverify"
    return version


def when(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def check_producer(made: dict[str, str], finished: bool = True) -> None:
    """This zverify, on this host, started no later than it finished, and finished within
    the run of this test (a stale or made-up time would not be); without "finished" for the
    first line of a stream, whose end was not known yet."""
    assert made["tool"] == "zverify" and made["version"] == installed_version()
    assert made["host"] == socket.gethostname()
    assert ("finished" in made) is finished, made
    now = datetime.datetime.now(datetime.UTC)
    end = when(made["finished"]) if finished else now
    assert when(made["started"]) <= end <= now + datetime.timedelta(seconds=1), made
    assert now - end < datetime.timedelta(minutes=10), made
    assert set(made) == {"tool", "version", "host", "started", *(["finished"] * finished)}


_PRODUCER = re.compile(r'"producer": \{[^}]*\}')
_TIMES = re.compile(r'"(started|finished)": "[^"]*"')


def timeless(out: str) -> str:
    """A rendered document with its producer's two times blanked: two runs of the same
    comparison never start in the same millisecond, and nothing else may differ."""
    return _PRODUCER.sub(lambda found: _TIMES.sub(r'"\1": "-"', found.group()), out)
