"""`zverify cutover --pool-state`: the new pool must have been scrubbed after the copy.  The
history lines are in the form OpenZFS 2.1 prints for `zpool history -il`; the CLI half runs
against a stand-in zpool (test_migration_zfs.py runs the real one in the VM)."""

import json

from tests.cli.console import zverify
from tests.cli.test_schemas import validate
from tests.cutover.test_cli import STATE, standin  # noqa: F401  (the fixture)
from zverify.cutover.poolstate import check_pool_state, scrubs
from zverify.zfs.pool import _LINE, Event

CREATE = "2026-11-28.21:00:00 zpool create q /dev/vdb [user 0 (root) on vm:linux]"
RECV = "2026-11-28.21:01:00 zfs receive -F q/a [user 0 (root) on vm:linux]"
RECV_INTERNAL = "2026-11-28.21:01:00 [txg:20] finish receiving q/a (68) snap=s1 [on vm]"
SCRUB = "2026-11-28.{t} zpool scrub q [user 0 (root) on vm:linux]"
SETUP = "2026-11-28.{t} [txg:{x}] scan setup func=1 mintxg=0 maxtxg={x} [on vm]"
DONE = "2026-11-28.{t} [txg:{x}] scan done errors={e} [on vm]"
CLEAN = "scrub repaired 0B in 00:00:01 with 0 errors on Sat Nov 28 21:03:01 2026"


def events(*lines: str) -> list[Event]:
    parsed = []
    for line in lines:
        m = _LINE.match(line)
        assert m, line
        parsed.append(Event(m.group(1), m.group(2) is not None, m.group(3)))
    return parsed


def scrub(t: str, x: int, errors: int = 0) -> list[str]:
    done = f"{t[:-2]}{int(t[-2:]) + 1:02d}"
    return [SETUP.format(t=t, x=x), DONE.format(t=done, x=x + 1, e=errors)]


def test_a_clean_scrub_after_the_receive_is_verified() -> None:
    history = events(CREATE, RECV, RECV_INTERNAL, *scrub("21:03:00", 30))
    assert [s.errors for s in scrubs(history)] == [0]
    assert check_pool_state("q/a", history, CLEAN, strict=False) == []


def test_no_scrub_after_the_receive_is_an_unverified_copy_and_fails_with_strict() -> None:
    history = events(CREATE, *scrub("20:59:00", 5), RECV, RECV_INTERNAL)
    (found,) = check_pool_state("q/a", history, CLEAN, strict=False)
    assert found.kind == "unverified-copy" and found.severity.value == "warning"
    assert "21:01:00" in found.message and "zpool scrub -w q" in found.message
    (strict,) = check_pool_state("q/a", history, CLEAN, strict=True)
    assert strict.severity.value == "fail"


def test_a_scrub_with_errors_or_still_running_is_no_proof() -> None:
    with_errors = events(CREATE, RECV, *scrub("21:03:00", 30, errors=2))
    assert check_pool_state("q/a", with_errors, CLEAN, strict=True)
    running = events(CREATE, RECV, SETUP.format(t="21:03:00", x=30))
    assert scrubs(running)[0].errors is None
    assert check_pool_state("q/a", running, "scrub in progress since Sat Nov 28", strict=True)


def test_a_remove_or_sequential_resilver_since_the_last_clean_scrub_is_named() -> None:
    remove = "2026-11-28.21:05:00 zpool remove q /dev/vdc [user 0 (root) on vm:linux]"
    replace = "2026-11-28.21:06:00 zpool replace -s q /dev/vdd /dev/vde [user 0 (root) on vm:linux]"
    history = events(CREATE, RECV, *scrub("21:03:00", 30), remove, replace)
    (found,) = check_pool_state("q/a", history, CLEAN, strict=True)
    assert "zpool remove q" in found.message and "zpool replace -s q" in found.message
    assert found.details["operations"][0].endswith("zpool remove q /dev/vdc")


def test_another_datasets_receive_does_not_count() -> None:
    other = "2026-11-28.21:04:00 zfs receive -F q/other [user 0 (root) on vm:linux]"
    history = events(CREATE, RECV, *scrub("21:03:00", 30), other)
    assert check_pool_state("q/a", history, CLEAN, strict=True) == []


def zpool_standin(tmp_path, history: str, status: str, code: int = 0) -> None:
    (tmp_path / "history.txt").write_text(history)
    (tmp_path / "status.txt").write_text(status)
    (tmp_path / "bin" / "zpool").write_text(
        "#!/bin/sh\n"
        f'case "$1" in history) cat {tmp_path}/history.txt; exit {code};;\n'
        f"status) cat {tmp_path}/status.txt; exit {code};; esac\n"
    )


def test_the_cli_fails_an_unscrubbed_copy_with_strict_and_passes_a_scrubbed_one(
    standin,  # noqa: F811
    tmp_path,
) -> None:
    standin(STATE)
    zpool_standin(tmp_path, "\n".join([CREATE, RECV]) + "\n", f"  scan: {CLEAN}\n")
    r = zverify("cutover", "--json", "--pool-state", "--strict", "p/a", "q/a")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    validate("cutover", doc)
    assert [f["kind"] for f in doc["findings"]] == ["unverified-copy"]
    assert zverify("cutover", "--pool-state", "p/a", "q/a").returncode == 0  # a warning only
    zpool_standin(tmp_path, "\n".join([CREATE, RECV, *scrub("21:03:00", 30)]), f"  scan: {CLEAN}\n")
    r = zverify("cutover", "--pool-state", "--strict", "p/a", "q/a")
    assert r.returncode == 0 and "unverified-copy" not in r.stdout, r.stdout + r.stderr


def test_an_unreadable_history_is_exit_2(standin, tmp_path) -> None:  # noqa: F811
    standin(STATE)
    zpool_standin(tmp_path, "", "", code=1)
    r = zverify("cutover", "--pool-state", "p/a", "q/a")
    assert r.returncode == 2 and "unverified-copy" in r.stdout, r.stdout + r.stderr


def test_a_read_only_source_pool_is_never_asked_to_sync(standin, tmp_path) -> None:  # noqa: F811
    """The migration's old pool imported with -o readonly=on: cutover reads it and writes
    nothing, and its state is not unverified for want of a flush."""
    standin(STATE)
    (tmp_path / "bin" / "zpool").write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/zpool.log\n'
        'case "$*" in "get -H -o value readonly p") echo on;; "sync p") exit 1;;\n'
        "get*) echo off;; esac\n"
    )
    r = zverify("cutover", "p/a", "q/a")
    assert r.returncode == 0, r.stdout + r.stderr
    log = (tmp_path / "zpool.log").read_text().splitlines()
    assert "sync p" not in log and log.count("sync q") == 2


def test_a_receive_under_the_pools_former_name_counts() -> None:
    """The migration: received into tmppool/a, then `zpool import tmppool q`.  A scrub of
    the empty tmppool before the copy is no proof of it."""
    create = "2026-11-28.21:00:00 zpool create tmppool /dev/vdb [user 0 (root) on vm:linux]"
    received = "2026-11-28.21:04:00 zfs receive -F tmppool/a [user 0 (root) on vm:linux]"
    history = events(create, *scrub("21:01:00", 3), received)
    (found,) = check_pool_state("q/a", history, CLEAN, strict=True)
    assert "since the last receive into q/a (2026-11-28.21:04:00)" in found.message
    whole = events(create, *scrub("21:01:00", 3), received.replace("tmppool/a", "tmppool"))
    assert check_pool_state("q", whole, CLEAN, strict=True)  # the pool's root: any receive
