"""The pure engine and the verdict rule, fed with hand-made entries (no filesystem)."""

from collections.abc import Hashable

from tests.compare.test_pure_logic import rec
from zverify import _zvcore, exitcodes
from zverify.compare.engine import compare_entries
from zverify.compare.policy import ComparePolicy, DiffKind
from zverify.compare.result import CompareResult
from zverify.entry import Entry
from zverify.fsinfo import FsInfo

FS = FsInfo("test", "none", "/")


def result_of(src: list[Entry], dst: list[Entry]) -> CompareResult:
    policy = ComparePolicy()
    found = compare_entries(src, dst, policy)
    return CompareResult(**vars(found), policy=policy, src_fs=FS, dst_fs=FS)


def test_changed_while_read_is_not_verified_exit_2() -> None:
    src = [rec(b""), rec(b"f")]
    dst = [rec(b""), rec(b"f", changed="modified", digest=None)]
    result = result_of(src, dst)
    assert [d.kind for d in result.differences] == [DiffKind.CHANGED]
    assert result.exit_code == exitcodes.TROUBLE


def test_identical_and_different_verdicts() -> None:
    assert result_of([rec(b""), rec(b"f")], [rec(b""), rec(b"f")]).exit_code == 0
    assert result_of([rec(b""), rec(b"f")], [rec(b"")]).exit_code == 1


def test_hardlinks_of_every_non_directory_type() -> None:
    for kind in (_zvcore.KIND_SYMLINK, _zvcore.KIND_FIFO, _zvcore.KIND_CHAR, _zvcore.KIND_FILE):
        src = [rec(b""), rec(b"a", kind, nlink=2, ino=7), rec(b"b", kind, nlink=2, ino=7)]
        dst = [rec(b""), rec(b"a", kind, ino=1), rec(b"b", kind, ino=2)]
        found = compare_entries(src, dst, ComparePolicy())
        assert [(d.kind, d.members) for d in found.differences] == [
            (DiffKind.HARDLINK, (b"a", b"b"))
        ], kind


def test_identity_is_pluggable() -> None:
    """A manifest has no inode numbers: a group id decides hardlinks and du's count-once."""

    def group(entry: Entry) -> Hashable:
        return entry.ino // 100  # stand-in for a manifest's group id

    src = [rec(b""), rec(b"a", nlink=2, ino=701, size=10), rec(b"b", nlink=2, ino=702, size=10)]
    dst = [rec(b""), rec(b"a", nlink=2, ino=1, size=10), rec(b"b", nlink=2, ino=1, size=10)]
    by_group = compare_entries(src, dst, ComparePolicy(), identity=group)
    assert by_group.differences == []
    assert by_group.src_sizes.du_apparent_bytes == 10  # one group: counted once
    by_inode = compare_entries(src, dst, ComparePolicy())
    assert [d.kind for d in by_inode.differences] == [DiffKind.HARDLINK]


def test_verdict_rule() -> None:
    assert exitcodes.verdict(unverified=False, different=False) == 0
    assert exitcodes.verdict(unverified=False, different=True) == 1
    assert exitcodes.verdict(unverified=True, different=False) == 2
    assert exitcodes.verdict(unverified=True, different=True) == 2
    assert exitcodes.worst([0, 1, 0]) == 1
    assert exitcodes.worst([1, 2, 0]) == 2
    assert exitcodes.worst([2, 130]) == 130
    assert exitcodes.worst([0, 7]) == 2  # an unknown code is never better than TROUBLE
    assert exitcodes.worst([]) == 0


def test_ignoring_content_does_not_make_bytes_the_same_payload() -> None:
    src = [rec(b""), rec(b"f", size=10, digest=b"a" * 16)]
    dst = [rec(b""), rec(b"f", size=12, digest=b"b" * 16)]
    found = compare_entries(src, dst, ComparePolicy.build("full", "content"))
    assert found.differences == []
    assert found.explanation.apparent["content"] == 2  # not filed under "allocation"
    assert found.explanation.apparent["allocation"] == 0
