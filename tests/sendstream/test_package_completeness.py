"""A package must hold what its compound header promises (finding C1 of adversarial-compare-2).

Checksums restart at every BEGIN, so whole substreams cut out of a `-R`/`-I` package leave
every checksum valid; only the header says they are missing.  Each test here fails on the
code before the completeness checks: it pairs a cut-down package (DAMAGED, exit 1) with
the intact one (OK), so the checks are also held to no false alarm.  Cut points come from
verify_stream's own substream offsets on the intact fixtures; expected problem offsets
from walking the records independently (streamgen.walk).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.console import zverify_in_process
from tests.sendstream.conftest import INDEX, STREAMS
from tools.streamgen import StreamBuilder, walk
from zverify.sendstream.report import StreamReport, Substream
from zverify.sendstream.validate import verify_stream

Check = Callable[[bytes], StreamReport]
Chain = list[tuple[str, int, int]]

real = pytest.mark.skipif(not INDEX.exists(), reason="no real fixtures: index.json not generated")


def _incomplete(report: StreamReport) -> list[str]:
    return [p.message for p in report.problems if p.code == "incomplete"]


def _final_end(data: bytes) -> int:
    return walk(data)[-1].offset


# -- the five cut-down files of the report, from the real fixtures -------------------------


def _cut(name: str, drop: Callable[[Substream], bool]) -> bytes:
    """The fixture without the substreams `drop` selects: header, kept substreams, final END."""
    data = (STREAMS / name).read_bytes()
    subs = verify_stream(STREAMS / name).substreams
    end = subs[-1].offset + (subs[-1].stream_bytes or 0)
    kept = [data[s.offset : s.offset + (s.stream_bytes or 0)] for s in subs if not drop(s)]
    return data[: subs[0].offset] + b"".join(kept) + data[end:]


R_FIXTURE, I_FIXTURE = "replicate_R_fs_s2.zstream", "package_I_fs_s1_s3.zstream"
CUTS = {
    # name: (fixture, substreams to drop, what the problem must name)
    "R_nochild": (R_FIXTURE, lambda s: s.dataset == "zv/fs/child", "zv/fs/child"),
    "R_no_fs_s2": (R_FIXTURE, lambda s: s.toname == "zv/fs@s2", "zv/fs@s2"),
    "R_only_header": (R_FIXTURE, lambda s: True, "no substream"),
    "I_no_last": (I_FIXTURE, lambda s: s.toname == "zv/fs@s3", "zv/fs@s3"),
    "I_empty": (I_FIXTURE, lambda s: True, "no substream"),
}


def _console(path: Path) -> subprocess.CompletedProcess[str]:
    """In-process (tests/cli/console.py): it runs on the instrumented core under asan.sh."""
    return zverify_in_process("stream", "verify", "-q", str(path))


@real
@pytest.mark.parametrize("name", CUTS)
def test_real_package_with_substreams_cut_out_is_damaged(tmp_path: Path, name: str) -> None:
    fixture, drop, named = CUTS[name]
    assert verify_stream(STREAMS / fixture).valid  # the intact package
    data = _cut(fixture, drop)
    path = tmp_path / name
    path.write_bytes(data)
    r = verify_stream(path)
    assert not r.valid and r.exit_code == 1
    (message,) = _incomplete(r)
    assert named in message, message
    (problem,) = r.problems
    assert problem.offset == _final_end(data) == len(data) - 312
    proc = _console(path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("DAMAGED") and named in proc.stdout


@real
def test_summary_names_the_package_target(tmp_path: Path) -> None:
    # -R: the header's toname (the top dataset's tosnap), not the last child substream.
    proc = _console(STREAMS / R_FIXTURE)
    assert proc.returncode == 0, proc.stdout
    assert "replication package, 4 substreams" in proc.stdout
    assert proc.stdout.rstrip().endswith("to zv/fs@s2")
    # -I with one substream left is still a package, and still names its header's snapshot.
    path = tmp_path / "I_no_last"
    path.write_bytes(_cut(I_FIXTURE, CUTS["I_no_last"][1]))
    first = _console(path).stdout.splitlines()[0]
    assert "incremental package, 1 substream," in first and first.endswith("to zv/fs@s3")


# -- synthetic packages (tools/streamgen.py) ----------------------------------------


def _pkg(header: dict | None, toname: str, chain: Chain) -> bytes:
    """A package whose compound BEGIN carries toname, one substream per (toname, to, from)."""
    b = StreamBuilder()
    b.package_header(header, toname)
    for name, to, frm in chain:
        b.substream(name, to, frm, nwrites=1)
    b.final_end()
    return bytes(b.data)


def _fss(datasets: dict[str, dict[str, int]]) -> dict:
    """The header's `fss`: dataset GUID -> name and snapshots (short name -> GUID, in order)."""
    return {f"{i + 1:#x}": {"name": n, "snaps": s} for i, (n, s) in enumerate(datasets.items())}


def _without(chain: Chain, *names: str) -> Chain:
    return [link for link in chain if link[0] not in names]


def test_package_needs_a_substream(check: Check) -> None:
    replication = {"tosnap": "a", "fss": _fss({"p/fs": {"a": 1}})}
    for header in (None, replication, {"tosnap": "a", "not_recursive": True}):
        assert check(_pkg(header, "p/fs@a", [("p/fs@a", 1, 0)])).valid
        data = _pkg(header, "p/fs@a", [])
        r = check(data)
        assert _incomplete(r) == [
            "incomplete package: no substream at all (the header sends p/fs@a)"
        ]
        assert r.problems[0].offset == _final_end(data)


I_CHAIN: Chain = [("p/fs@b", 2, 1), ("p/fs@c", 3, 2), ("p/fs@d", 4, 3)]


def test_I_package_reaches_the_header_snapshot(check: Check) -> None:
    assert check(_pkg(None, "p/fs@d", I_CHAIN)).valid
    r = check(_pkg(None, "p/fs@d", _without(I_CHAIN, "p/fs@d")))
    assert _incomplete(r) == [
        "incomplete package: p/fs@d is missing: the last substream ends at p/fs@c"
    ]


def test_I_package_is_one_datasets_chain(check: Check) -> None:
    foreign = [*I_CHAIN[:2], ("q/other@x", 9, 0), I_CHAIN[2]]
    data = _pkg(None, "p/fs@d", foreign)
    r = check(data)
    assert [p.code for p in r.problems] == ["guid"]
    assert "q/other@x is not a snapshot of the package's p/fs" in r.problems[0].message
    assert r.problems[0].offset == [x.offset for x in walk(data) if x.type == 0][3]


def test_package_header_fromsnap_is_where_the_chain_starts(check: Check) -> None:
    fss = _fss({"p/fs": {"a": 1, "b": 2, "c": 3, "d": 4}})
    header = {"tosnap": "d", "fromsnap": "a", "not_recursive": True, "fss": fss}
    assert check(_pkg(header, "p/fs@d", I_CHAIN)).valid
    # The same snapshots, but the first sent as a full stream: not `zfs send -I @a`.
    r = check(_pkg(header, "p/fs@d", [("p/fs@b", 2, 0), *I_CHAIN[1:]]))
    assert [p.code for p in r.problems] == ["guid"]
    assert "is a full stream, but the package starts at @a" in r.problems[0].message


def test_live_filesystem_package_ends_at_head(check: Check) -> None:
    header = {"tosnap": "", "not_recursive": True}
    assert check(_pkg(header, "p/fs@", [("p/fs@--head--", 5, 0)])).valid
    r = check(_pkg(header, "p/fs@", [("p/fs@x", 5, 0)]))
    assert _incomplete(r) == [
        "incomplete package: p/fs@--head-- is missing: the last substream ends at p/fs@x"
    ]


def test_R_full_needs_every_listed_snapshot_up_to_tosnap(check: Check) -> None:
    # Older senders listed snapshots after tosnap (p/fs@d) and datasets without it (p/fs/new):
    # zfs send -R sends neither.
    fss = _fss({"p/fs": {"a": 1, "b": 2, "c": 3, "d": 4}, "p/fs/kid": {"a": 11, "c": 13}})
    fss["0x3"] = {"name": "p/fs/new", "snaps": {"x": 21}}
    header = {"tosnap": "c", "fss": fss}
    chain: Chain = [
        ("p/fs@a", 1, 0),
        ("p/fs@b", 2, 1),
        ("p/fs@c", 3, 2),
        ("p/fs/kid@a", 11, 0),
        ("p/fs/kid@c", 13, 11),
    ]
    assert check(_pkg(header, "p/fs@c", chain)).valid
    r = check(_pkg(header, "p/fs@c", _without(chain, "p/fs@a")))
    assert _incomplete(r) == ["incomplete package: p/fs@a is missing (the header lists it)"]
    r = check(_pkg(header, "p/fs@c", _without(chain, "p/fs/kid@a", "p/fs/kid@c")))
    assert _incomplete(r) == [
        "incomplete package: dataset p/fs/kid is missing (the header lists @a, @c)"
    ]
    r = check(_pkg(header, "p/fs@c", _without(chain, "p/fs@a", "p/fs@b", "p/fs@c")))
    assert _incomplete(r) == [
        "incomplete package: dataset p/fs is missing (the header lists @a, @b, @c)"
    ]


def test_R_incremental_needs_each_datasets_tosnap(check: Check) -> None:
    # -R -i @a: intermediate @b is not sent; p/fs/new was created after @a (sent in full).
    snaps = {"a": 11, "b": 12, "c": 13}
    fss = _fss({"p/fs": {"a": 1, "b": 2, "c": 3}, "p/fs/kid": snaps, "p/fs/new": {"c": 23}})
    header = {"tosnap": "c", "fromsnap": "a", "fss": fss}
    chain: Chain = [("p/fs@c", 3, 1), ("p/fs/kid@c", 13, 11), ("p/fs/new@c", 23, 0)]
    assert check(_pkg(header, "p/fs@c", chain)).valid
    r = check(_pkg(header, "p/fs@c", _without(chain, "p/fs/kid@c", "p/fs/new@c")))
    assert _incomplete(r) == [
        "incomplete package: dataset p/fs/kid is missing (the header lists @c)",
        "incomplete package: dataset p/fs/new is missing (the header lists @c)",
    ]
    # p/fs/kid has @a, so zfs send sends it from @a, never in full.
    r = check(_pkg(header, "p/fs@c", [chain[0], ("p/fs/kid@c", 13, 0), chain[2]]))
    assert [p.code for p in r.problems] == ["guid"]


def test_R_incremental_new_dataset_starts_in_full(check: Check) -> None:
    # -R -I @a: p/fs/new has no @a, so zfs send sends it from its first snapshot, in full.
    fss = _fss({"p/fs": {"a": 1, "c": 3}, "p/fs/new": {"b": 22, "c": 23}})
    header = {"tosnap": "c", "fromsnap": "a", "fss": fss}
    chain: Chain = [("p/fs@c", 3, 1), ("p/fs/new@b", 22, 0), ("p/fs/new@c", 23, 22)]
    assert check(_pkg(header, "p/fs@c", chain)).valid
    data = _pkg(header, "p/fs@c", _without(chain, "p/fs/new@b"))
    r = check(data)
    assert [p.code for p in r.problems] == ["guid"]
    assert "p/fs/new has no @a" in r.problems[0].message
    assert r.problems[0].offset == [x.offset for x in walk(data) if x.type == 0][2]


def test_R_without_fss_still_needs_the_header_tosnap(check: Check) -> None:
    header = {"tosnap": "c"}
    assert check(_pkg(header, "p/fs@c", [("p/fs@c", 3, 0), ("p/fs/kid@c", 13, 0)])).valid
    r = check(_pkg(header, "p/fs@c", [("p/fs/kid@c", 13, 0)]))
    assert _incomplete(r) == ["incomplete package: p/fs@c, the package's tosnap, is missing"]


def test_many_missing_snapshots_make_one_line(check: Check) -> None:
    snaps = {f"s{i}": 100 + i for i in range(8)}
    header = {"tosnap": "s7", "fss": _fss({"p/fs": {"s7": 1}, "p/fs/kid": snaps})}
    r = check(_pkg(header, "p/fs@s7", [("p/fs@s7", 1, 0)]))
    assert _incomplete(r) == [
        "incomplete package: dataset p/fs/kid is missing "
        "(the header lists @s0, @s1, @s2, @s3, @s4 and 3 more)"
    ]
