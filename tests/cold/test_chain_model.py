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

from dataclasses import replace
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zverify.cold.proof.check import ArchiveReport, FileReport
from zverify.cold.prune import plan_prune
from zverify.sendstream.chain import (
    ArchivedFile,
    LoopedHistory,
    Step,
    as_lineages,
    chains,
    lineages,
    plan,
)

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


# -- renamed datasets: one chain by GUID (adversarial-4 M3) -------------------------------------

NEW = "pool/renamed"


@st.composite
def renamed_files(draw: st.DrawFn) -> list[ArchivedFile]:
    """files(), with the dataset renamed after snapshot @k: a file whose last snapshot was made
    after the rename carries the new name, an older one either (sent before or after)."""
    archive = draw(files())
    k = draw(st.integers(0, 8))
    out = []
    for f in archive:
        last = max(s.to_guid for s in f.steps) - guid(0)
        name = NEW if last >= k or draw(st.booleans()) else DS
        out.append(ArchivedFile(f.name, f.size, tuple(replace(s, dataset=name) for s in f.steps)))
    return out


def lineage_report(archive: list[ArchivedFile]) -> ArchiveReport:
    names = lineages(archive)
    chained = as_lineages(archive, names)
    reports = [FileReport(f.name, "full", f.size, archived=f) for f in archive]
    found = plan(chained)
    return ArchiveReport(
        "/cold", reports, found, {d: chains(d, chained) for d in found}, [], lineages=names
    )


@settings(max_examples=300, deadline=None)
@given(renamed_files())
def test_a_renamed_dataset_restores_what_receives_bring_whatever_the_names(archive) -> None:
    """`zfs receive` reads no dataset name of an incremental: the rename changes nothing."""
    plans = lineage_report(archive).plans
    claimed = {r.guid for p in plans.values() for r in p.restorable}
    assert claimed == enumerate_reachable(archive)
    guids = {DS: set(), NEW: set()}
    for s in (s for f in archive for s in f.steps):
        guids[s.dataset] |= {s.from_guid, s.to_guid} - {0}
    if guids[DS] & guids[NEW]:  # names that share a snapshot are one chain
        assert len(plans) == 1


@settings(max_examples=300, deadline=None)
@given(renamed_files(), st.integers(1, 2))
def test_prune_of_a_renamed_chain_never_loses_a_snapshot_newer_than_what_stays(
    archive, keep
) -> None:
    report = lineage_report(archive)
    decisions = plan_prune(report, keep)
    gone = {n for d in decisions for n in d.files}
    before = {r.guid for r in enumerate_plans(archive)}
    after = {r.guid for r in enumerate_plans([f for f in archive if f.name not in gone])}
    assert after <= before
    for lost in before - after:  # each proven older than something still restorable
        assert any(lost < g for g in after), (lost, sorted(after))
    if before:
        assert max(before) in after


def enumerate_plans(archive: list[ArchivedFile]) -> list:
    chained = as_lineages(archive, lineages(archive))
    return [r for p in plan(chained).values() for r in p.restorable]


def test_a_renamed_datasets_incremental_continues_its_chain_under_the_new_name() -> None:
    """The review's repro: `tank/old@0` full, `zfs rename tank/old tank/new`, `-i @0
    tank/new@1`: one chain, named by its newest name (the report adds "was tank/old")."""
    archive = [
        ArchivedFile("old@0", 10, (Step("tank/old", 0, guid(0), "0"),)),
        ArchivedFile("new@0-@1", 5, (Step("tank/new", guid(0), guid(1), "1"),)),
    ]
    assert {d: [r.guid for r in p.restorable] for d, p in plan(archive).items()} == {
        "tank/new": [],
        "tank/old": [guid(0)],
    }  # before: keyed by name, the incremental was an orphan
    report = lineage_report(archive)
    (only,) = report.plans.values()
    assert only.dataset == "tank/new" and not only.orphans
    assert [(r.guid, r.files) for r in only.restorable] == [
        (guid(0), ("old@0",)),
        (guid(1), ("old@0", "new@0-@1")),
    ]
    assert [c.files for c in report.chains["tank/new"]] == [("new@0-@1", "old@0")]


def test_after_a_pool_rename_every_dataset_of_a_package_continues() -> None:
    """`-R` of tank/r (child c), the pool imported as `new`, `-R -I` of new/r: each dataset
    at the same place below its package's top, so both chains continue."""
    full = ArchivedFile("r@0", 10, (Step("tank/r", 0, guid(0), "0"), Step("tank/r/c", 0, 50, "0")))
    inc = ArchivedFile(
        "r@0-@1", 5, (Step("new/r", guid(0), guid(1), "1"), Step("new/r/c", 50, 51, "1"))
    )
    report = lineage_report([full, inc])
    assert sorted(report.plans) == ["new/r", "new/r/c"]
    assert [r.guid for r in report.plans["new/r/c"].restorable] == [50, 51]
    assert report.plans["new/r"].was == ()  # set by check_archive, not by plan()


def test_a_rename_that_moves_a_packages_child_keeps_the_names_apart() -> None:
    """A child renamed inside the tree would be received (by a plain incremental of its new
    name) where no dataset is: the names stay apart, and the incremental is an orphan."""
    full = ArchivedFile("r@0", 10, (Step("tank/r", 0, guid(0), "0"), Step("tank/r/c", 0, 50, "0")))
    moved = ArchivedFile("d@0-@1", 5, (Step("tank/r/d", 50, 51, "1"),))
    assert lineages([full, moved]) == {}
    assert lineages([ArchivedFile("c@0", 10, (Step("tank/r/c", 0, 50, "0"),)), moved]) == {
        "tank/r/c": "tank/r/d",
        "tank/r/d": "tank/r/d",
    }


# -- clones inside `zfs send -R` packages (adversarial-4 M3) --------------------------------


def clone(dataset: str, origin: int, to: int, snap: str, **flags: bool) -> Step:
    return Step(dataset, origin, to, snap, clone=True, **flags)


def test_a_package_whose_clone_follows_its_origin_restores_every_dataset() -> None:
    """`zfs clone tank/r@0 tank/r/cl; zfs snapshot -r tank/r@1; zfs send -R tank/r@1`: the
    clone's substream starts from its origin, which the package sent first."""
    package = ArchivedFile(
        "r@1",
        30,
        (
            Step("tank/r", 0, guid(0), "0"),
            Step("tank/r", guid(0), guid(1), "1"),
            clone("tank/r/cl", guid(0), 60, "1"),
        ),
    )
    plans = plan([package])
    assert [r.guid for r in plans["tank/r/cl"].restorable] == [60]
    assert [r.guid for r in plans["tank/r"].restorable] == [guid(0), guid(1)]
    assert not plans["tank/r/cl"].refused and not plans["tank/r/cl"].orphans


def test_a_clone_made_since_in_an_incremental_package_follows_the_packages_base() -> None:
    full = ArchivedFile("r@0", 10, (Step("tank/r", 0, guid(0), "0"),))
    package = ArchivedFile(
        "r@0-@1", 5, (Step("tank/r", guid(0), guid(1), "1"), clone("tank/r/cl", guid(0), 60, "1"))
    )
    assert [r.files for r in plan([full, package])["tank/r/cl"].restorable] == [("r@0", "r@0-@1")]


@pytest.mark.parametrize(
    ("steps", "why"),
    [
        ((clone("tank/r/cl", guid(0), 60, "1"),), "does not bring before it"),
        (  # origin received raw, clone sent without -w: needs the key
            (Step("tank/r", 0, guid(0), "0", raw=True), clone("tank/r/cl", guid(0), 60, "1")),
            "without -w on a chain received raw",
        ),
        (  # origin with large blocks, clone without -L
            (
                Step("tank/r", 0, guid(0), "0", large_blocks=True),
                clone("tank/r/cl", guid(0), 60, "1"),
            ),
            "requires -L",
        ),
    ],
)
def test_a_clone_is_refused_where_receive_refuses_it(steps, why) -> None:
    full = [ArchivedFile("r@0", 10, (Step("tank/r", 0, guid(0), "0"),))] if len(steps) == 1 else []
    plans = plan([*full, ArchivedFile("pkg", 20, steps)])
    cl = plans["tank/r/cl"]
    assert not cl.restorable
    assert why in " ".join(w for _, w in cl.refused) + " ".join(map(str, cl.orphans))


def test_a_full_inside_a_package_names_the_base_its_package_lacks() -> None:
    """L2: `-R -I @0 tank/q@1` with a child k3 created since: k3's own substream is a full;
    what is missing is the package's first base, tank/q@0."""
    package = ArchivedFile(
        "q@0-@1", 5, (Step("tank/q", guid(0), guid(1), "1"), Step("tank/q/k3", 0, 70, "1"))
    )
    assert plan([package])["tank/q/k3"].orphans == [("q@0-@1", guid(0), "tank/q")]
    assert plan([package])["tank/q"].orphans == [("q@0-@1", guid(0), "tank/q")]
    # with the package's base archived (by a file that never carried k3), k3 restores
    full = ArchivedFile("q@0", 10, (Step("tank/q", 0, guid(0), "0"),))
    k3 = plan([full, package])["tank/q/k3"]
    assert not k3.orphans and [(r.guid, r.files) for r in k3.restorable] == [
        (70, ("q@0", "q@0-@1"))
    ]
