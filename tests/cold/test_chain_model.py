"""The chain model (zverify.sendstream.chain) against brute force and against the true history,
over generated archives (hypothesis; pure: no files, no ZFS).

Each generated archive draws files from one dataset's linear history @0..@N (GUID 1000+i, so
the true order is known here and nowhere in the model): fulls, `-i` incrementals and `-I`
packages, each with its own -w/-L flags, some of them resume streams.  Whether OpenZFS really
receives what the model says is tested on real OpenZFS
(tests/cold/test_zfs_receive_differential.py);
here the search and the prune decision are checked against a plain enumeration of every order
in which the files can be received.
"""

from __future__ import annotations

from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zverify.cold.check import ArchiveReport, FileReport
from zverify.cold.prune import plan_prune
from zverify.sendstream.chain import ArchivedFile, LoopedHistory, Step, chains, plan

DS = "pool/set"


def guid(i: int) -> int:
    return 1000 + i


@st.composite
def files(draw: st.DrawFn) -> list[ArchivedFile]:
    last = draw(st.integers(2, 7))
    out = []
    for n in range(draw(st.integers(1, 6))):
        raw, large = draw(st.booleans()), draw(st.booleans())
        kind = draw(st.sampled_from(["full", "full", "inc", "package", "resume"]))
        a = draw(st.integers(0, last - 1))
        b = draw(st.integers(a + 1, last))
        created = draw(st.sampled_from([100, 100 + a]))  # often the same second
        if kind in ("full", "resume"):
            steps = [Step(DS, 0, guid(a), str(a), created, raw, large, kind == "resume")]
        elif kind == "inc":
            steps = [Step(DS, guid(a), guid(b), str(b), created, raw, large)]
        else:
            steps = [Step(DS, guid(i), guid(i + 1), str(i + 1), created, raw, large)
                     for i in range(a, b)]  # fmt: skip
        out.append(ArchivedFile(f"f{n}-{kind}", draw(st.integers(1, 50)), tuple(steps)))
    return out


def receive(tip: tuple[int, bool, bool] | None, f: ArchivedFile) -> tuple[int, bool, bool] | None:
    """The rules, written out plainly: the state after f, or None when refused."""
    for s in f.steps:
        if s.resuming:
            return None
        if tip is None:
            if s.from_guid != 0:
                return None
            tip = (s.to_guid, s.raw, s.large_blocks)
        elif s.from_guid != tip[0] or s.raw != tip[1] or (tip[2] and not s.large_blocks):
            return None
        else:
            tip = (s.to_guid, tip[1], tip[2] or s.large_blocks)
    return tip


def enumerate_reachable(archive: list[ArchivedFile]) -> set[int]:
    """Every snapshot some order of receives of distinct files brings."""
    found: set[int] = set()
    for k in range(1, len(archive) + 1):
        for order in permutations(archive, k):
            tip = None
            for f in order:
                tip = receive(tip, f)
                if tip is None:
                    break
                found |= {s.to_guid for s in f.steps}
    return found


def report_of(archive: list[ArchivedFile]) -> ArchiveReport:
    reports = [FileReport(f.name, "full", f.size, archived=f) for f in archive]
    return ArchiveReport("/cold", reports, plan(archive), {DS: chains(DS, archive)}, [])


@settings(max_examples=300, deadline=None)
@given(files())
def test_restorable_is_exactly_what_some_order_of_receives_brings(archive) -> None:
    plans = plan(archive)
    claimed = {r.guid for r in plans[DS].restorable} if DS in plans else set()
    assert claimed == enumerate_reachable(archive)
    by_name = {f.name: f for f in archive}
    for r in plans.get(DS, plan([])).restorable if DS in plans else []:
        tip = None
        for name in r.files:  # each claimed route, received in its order
            tip = receive(tip, by_name[name])
            assert tip is not None, (r, name)
        assert r.guid in {s.to_guid for n in r.files for s in by_name[n].steps}


@settings(max_examples=300, deadline=None)
@given(files())
def test_the_streams_order_never_contradicts_the_history(archive) -> None:
    if DS not in (plans := plan(archive)):
        return
    order = plans[DS].order
    for a in range(10):
        for b in range(10):
            if order.older(guid(a), guid(b)):
                assert a < b


@settings(max_examples=300, deadline=None)
@given(files(), st.integers(1, 2))
def test_prune_never_loses_a_snapshot_newer_than_what_stays(archive, keep) -> None:
    decisions = plan_prune(report_of(archive), keep)
    gone = {n for d in decisions for n in d.files}
    assert all(d.refused is None or not d.files for d in decisions)
    before = {r.guid for r in plan(archive)[DS].restorable} if DS in plan(archive) else set()
    left = [f for f in archive if f.name not in gone]
    after = {r.guid for r in plan(left)[DS].restorable} if DS in plan(left) else set()
    assert after <= before
    for lost in before - after:  # each proven older than something still restorable
        assert any(lost < g for g in after), (lost, sorted(after))
    if before:
        assert max(before) in after  # the newest history always stays


def test_streams_that_loop_back_are_not_judged() -> None:
    loop = [
        ArchivedFile("full", 10, (Step(DS, 0, guid(0), "0"),)),
        ArchivedFile("ab", 10, (Step(DS, guid(0), guid(1), "1"),)),
        ArchivedFile("ba", 10, (Step(DS, guid(1), guid(0), "0"),)),
    ]
    with pytest.raises(LoopedHistory, match="not one dataset's history"):
        plan(loop)
