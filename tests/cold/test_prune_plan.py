"""plan_prune() on synthetic archives (pure: no files, no ZFS): which chains go, in which
order, and when nothing may go.  The seed scenario: @0..@9 in one chain, then a new full."""

from zverify.cold.check import ArchiveReport, FileReport, Problem
from zverify.cold.prune import plan_prune
from zverify.sendstream.chain import ArchivedFile, Step, chains, plan

DS = "pool/set"


def guid(n: int) -> int:
    return 1000 + n


def step(frm: int | None, to: int) -> Step:
    return Step(DS, 0 if frm is None else guid(frm), guid(to), str(to), creation_time=100 + to)


def full(to: int, size: int = 100) -> ArchivedFile:
    return ArchivedFile(f"{DS}@{to}.zfsfull", size, (step(None, to),))


def inc(frm: int, to: int, size: int = 10) -> ArchivedFile:
    return ArchivedFile(f"{DS}@{frm}-@{to}.zfsinc", size, (step(frm, to),))


def package(frm: int, to: int, size: int = 50) -> ArchivedFile:
    steps = tuple(step(a, a + 1) for a in range(frm, to))
    return ArchivedFile(f"{DS}@{frm}-@{to}.zfsincstream", size, steps)


def report(*files: ArchivedFile, problems: list[Problem] | None = None) -> ArchiveReport:
    reports = [FileReport(f.name, "full", f.size, archived=f) for f in files]
    archived = list(files)
    return ArchiveReport(
        "/cold", reports, plan(archived), {DS: chains(DS, archived)}, problems or []
    )


SEED = (full(0), inc(0, 1), inc(1, 2), package(2, 9))


def test_the_old_seed_chain_goes_dependents_first_full_last() -> None:
    (d,) = plan_prune(report(*SEED, full(10), inc(10, 11)), keep_chains=1)
    assert d.refused is None
    assert [c.full for c in d.keep] == [f"{DS}@10.zfsfull"]
    assert d.files == [
        f"{DS}@2-@9.zfsincstream",
        f"{DS}@1-@2.zfsinc",
        f"{DS}@0-@1.zfsinc",
        f"{DS}@0.zfsfull",
    ]
    assert d.bytes == 100 + 10 + 10 + 50
    assert d.newest_kept is not None and d.newest_kept.snapshot == "11"
    assert [r.snapshot for r in d.lost] == [str(n) for n in range(10)]


def test_a_file_a_kept_chain_reaches_is_never_deleted() -> None:
    # @9 -> @10 links the old chain to the new one: the new full's chain needs none of the
    # old files, but @10 -> @11 is reachable from both and must stay
    (d,) = plan_prune(report(*SEED, inc(9, 10), full(10), inc(10, 11)), keep_chains=1)
    assert f"{DS}@10-@11.zfsinc" not in d.files
    assert f"{DS}@9-@10.zfsinc" in d.files


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
    (d,) = plan_prune(report(*SEED, full(10), problems=[dup]), keep_chains=1)
    assert d.refused is None and d.files


def test_keeping_more_chains_than_exist_prunes_nothing() -> None:
    (d,) = plan_prune(report(*SEED, full(10)), keep_chains=2)
    assert d.files == [] and d.refused is None and len(d.keep) == 2
