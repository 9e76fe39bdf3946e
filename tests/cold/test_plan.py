"""plan_send(): what `cold send` sends next, decided from GUIDs alone (pure)."""

import pytest

from zverify.cold.plan import NothingToSend, SendPlan, plan_send
from zverify.errors import UsageError
from zverify.sendstream.chain import DatasetPlan, Restorable
from zverify.zfs.inventory import Snap

SOURCE = [Snap(f"s{i}", 100 + i, 10 * i) for i in range(4)]  # guids 100..103, txg 0..30


def archived(*guids: int) -> DatasetPlan:
    """A chain restoring these snapshots, the last one newest (as its streams would prove)."""
    rows = [Restorable("d", f"s{g - 100}", g, 1000, ("f",), 1) for g in guids]
    return DatasetPlan("d", restorable=rows, newest=rows[-1:])


def sent(result: SendPlan | NothingToSend) -> tuple[str, str | None, bool]:
    assert isinstance(result, SendPlan), result
    return result.to.name, result.base.full_name("d") if result.base else None, result.intermediate


def test_first_send_is_a_full_of_the_newest_or_the_one_asked() -> None:
    assert sent(plan_send(None, SOURCE)) == ("s3", None, False)
    assert sent(plan_send(None, SOURCE, snapshot="s1")) == ("s1", None, False)
    with pytest.raises(UsageError, match="no snapshot @s9"):
        plan_send(None, SOURCE, snapshot="s9")


def test_next_send_goes_from_the_newest_archived_snapshot() -> None:
    assert sent(plan_send(archived(100, 101), SOURCE)) == ("s3", "d@s1", True)
    assert sent(plan_send(archived(100, 101), SOURCE, intermediate=False)) == ("s3", "d@s1", False)
    assert sent(plan_send(archived(100, 101), SOURCE, full=True)) == ("s3", None, False)


def test_nothing_new_is_not_an_error() -> None:
    assert isinstance(plan_send(archived(100, 103), SOURCE), NothingToSend)


def test_a_bookmark_keeps_the_chain_going_without_skipping_snapshots() -> None:
    source = [Snap("s1", 101, 10, bookmark=True), *SOURCE[2:]]  # @s0, @s1 destroyed
    assert sent(plan_send(archived(100, 101), source)) == ("s2", "d#s1", False)


def test_a_base_gone_from_the_source_is_refused_with_the_way_out() -> None:
    with pytest.raises(UsageError, match="--full"):
        plan_send(archived(100, 101), SOURCE[2:])
