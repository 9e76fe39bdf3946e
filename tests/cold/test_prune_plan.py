"""plan_prune() on synthetic archives (pure: no files, no ZFS): which chains go, in which
order, and when nothing may go.  The seed scenario: @0..@9 in one chain, then a new full of
@10 linked to it by @9 -> @10 (what `cold send --full` archives first)."""

from zverify.cold.proof.check import ArchiveReport, FileReport, Problem
from zverify.cold.prune import plan_prune
from zverify.sendstream.chain import ArchivedFile, Step, chains, plan

DS = "pool/set"


def guid(n: int) -> int:
    return 1000 + n


def step(frm: int | None, to: int, ds: str = DS, created: int | None = None) -> Step:
    when = 100 + to if created is None else created
    return Step(ds, 0 if frm is None else guid(frm), guid(to), str(to), creation_time=when)


def full(to: int, size: int = 100, ds: str = DS) -> ArchivedFile:
    return ArchivedFile(f"{ds}@{to}.zfsfull", size, (step(None, to, ds),))


def inc(frm: int, to: int, size: int = 10, ds: str = DS) -> ArchivedFile:
    return ArchivedFile(f"{ds}@{frm}-@{to}.zfsinc", size, (step(frm, to, ds),))


def package(frm: int, to: int, size: int = 50) -> ArchivedFile:
    steps = tuple(step(a, a + 1) for a in range(frm, to))
    return ArchivedFile(f"{DS}@{frm}-@{to}.zfsincstream", size, steps)


def report(
    *files: ArchivedFile, problems: list[Problem] | None = None, only: str | None = None
) -> ArchiveReport:
    """What check_archive() reports of these files (only: --dataset)."""
    reports = [FileReport(f.name, "full", f.size, archived=f) for f in files]
    archived = list(files)
    datasets = [only] if only else sorted({d for f in archived for d in f.datasets})
    return ArchiveReport(
        "/cold",
        reports,
        plan(archived),
        {d: chains(d, archived) for d in datasets},
        problems or [],
    )


SEED = (full(0), inc(0, 1), inc(1, 2), package(2, 9))
LINK = inc(9, 10)  # what `cold send --full` archives before the new full of @10


def test_the_old_seed_chain_goes_dependents_first_full_last() -> None:
    (d,) = plan_prune(report(*SEED, LINK, full(10), inc(10, 11)), keep_chains=1)
    assert d.refused is None
    assert [c.full for c in d.keep] == [f"{DS}@10.zfsfull"]
    assert d.files == [
        f"{DS}@9-@10.zfsinc",
        f"{DS}@2-@9.zfsincstream",
        f"{DS}@1-@2.zfsinc",
        f"{DS}@0-@1.zfsinc",
        f"{DS}@0.zfsfull",
    ]
    assert d.bytes == 100 + 10 + 10 + 50 + 10
    assert d.newest_kept is not None and d.newest_kept.snapshot == "11"
    assert [r.snapshot for r in d.lost] == [str(n) for n in range(10)]


def test_a_file_a_kept_chain_reaches_is_never_deleted() -> None:
    # @9 -> @10 links the old chain to the new one: the new full's chain needs none of the
    # old files, but @10 -> @11 is reachable from both and must stay
    (d,) = plan_prune(report(*SEED, LINK, full(10), inc(10, 11)), keep_chains=1)
    assert f"{DS}@10-@11.zfsinc" not in d.files
    assert f"{DS}@9-@10.zfsinc" in d.files


def test_a_new_full_no_stream_orders_keeps_both_chains() -> None:
    # nothing in the streams says @10 came after @9 (clocks are not proof): both are newest
    (d,) = plan_prune(report(*SEED, full(10), inc(10, 11)), keep_chains=1)
    assert d.refused is None and d.files == [] and len(d.keep) == 2


def test_same_second_snapshots_are_ordered_by_the_streams_not_the_clock() -> None:
    # finding C1: @1 and @2 made in one second; a new full of @1 must not cost @2
    same = [step(0, 1, created=500), step(1, 2, created=500)]
    pkg = ArchivedFile(f"{DS}@0-@2.zfsincstream", 50, tuple(same))
    new = ArchivedFile(f"{DS}@1.zfsfull", 90, (step(None, 1, created=500),))
    (d,) = plan_prune(report(full(0), pkg, new), keep_chains=1)
    assert [c.full for c in d.keep] == [new.name]
    assert d.refused is not None and "@2" in d.refused and d.files == []


def test_a_package_that_is_a_childs_only_chain_stays() -> None:
    # finding C2: a -R package of parent and child; the parent gets a newer linked full
    parent, child = DS, f"{DS}/child"
    r_steps = (step(None, 0, parent), step(0, 1, parent), step(None, 50, child))
    r = ArchivedFile(f"{DS}@1.zfsfull", 200, r_steps)
    link, new = inc(1, 2), full(2)
    decisions = {d.dataset: d for d in plan_prune(report(r, link, new), keep_chains=1)}
    deleted = {n for d in decisions.values() for n in d.files}
    assert r.name not in deleted  # the child's only chain
    assert decisions[child].refused is None and decisions[child].files == []
    # with --dataset parent, a file that also carries the child is never this prune's
    (d,) = plan_prune(report(r, link, new, only=parent), keep_chains=1)
    assert r.name not in d.files


def test_a_dataset_that_would_vanish_refuses_and_keeps_its_files() -> None:
    # a child carried only by an old -R package of the parent, whose chain is old: the
    # package is kept for the child, and its old parent files stay with it
    parent, child = DS, f"{DS}/child"
    r = ArchivedFile("r.zfsfull", 200, (step(None, 0, parent), step(None, 50, child)))
    decisions = {d.dataset: d for d in plan_prune(report(r, inc(0, 1), full(1)), keep_chains=1)}
    assert r.name not in {n for d in decisions.values() for n in d.files}


def test_an_old_chain_newer_than_the_kept_one_is_refused() -> None:
    # a "new" full of an older snapshot must not cost the newer history
    (d,) = plan_prune(report(full(0), package(0, 9), full(5, size=80)), keep_chains=1)
    assert [c.full for c in d.keep] == [f"{DS}@5.zfsfull"]  # the newest full is kept
    assert d.refused is not None and "@9" in d.refused and d.files == []


def test_any_blocking_problem_refuses_even_with_nothing_to_delete() -> None:
    damaged = Problem("other.zfsinc", "damaged", "at byte 12: checksum")
    (d,) = plan_prune(report(*SEED, problems=[damaged]), keep_chains=1)
    assert d.refused is not None and "other.zfsinc: damaged" in d.refused


def test_benign_problems_do_not_block() -> None:
    dup = Problem(f"{DS}@0-@1.zfsinc", "duplicate", "same as another")
    (d,) = plan_prune(report(*SEED, LINK, full(10), problems=[dup]), keep_chains=1)
    assert d.refused is None and d.files


def test_keeping_more_chains_than_exist_prunes_nothing() -> None:
    (d,) = plan_prune(report(*SEED, full(10)), keep_chains=2)
    assert d.files == [] and d.refused is None and len(d.keep) == 2
