"""What `restore --thaw` waits for and leaves alone, by thaw state: the `thawing` state is
what a real Glacier shows for hours, and moto (tests/cold/store/test_bucket_lifecycle_thaw.py)
never does, so it is checked here on the plan itself (pure: no store is asked)."""

from zverify.cold.store import Frozen
from zverify.cold.thaw import ThawPlan
from zverify.report.cold.changes import thaw_lines
from zverify.sendstream.chain import Restorable

S3 = Restorable("zv/fs", "s3", 33, 0, ("full", "s1-s2", "s2-s3"), 300)


def archived(**states: str) -> list[Frozen]:
    return [Frozen(key, 100, "DEEP_ARCHIVE", state) for key, state in sorted(states.items())]


def test_pending_is_the_chain_in_its_order_thawing_included_thawed_not() -> None:
    wanted = {k: "in the chain of @s3 by the sidecars" for k in S3.files}
    plan = ThawPlan(wanted, archived(**{"full": "thawed", "s1-s2": "thawing", "s2-s3": "frozen"}))
    assert [f.key for f in plan.pending] == ["s1-s2", "s2-s3"]
    assert thaw_lines(plan, asked=True).splitlines() == [
        "zverify: thawing s1-s2 (100 bytes, DEEP_ARCHIVE): in the chain of @s3 by the sidecars",
        "zverify: thaw asked s2-s3 (100 bytes, DEEP_ARCHIVE): in the chain of @s3 by the sidecars",
    ]


def test_only_what_cannot_be_read_outside_the_chain_is_skipped() -> None:
    wanted = {k: "chain" for k in S3.files}
    states = {"full": "thawed", "other": "frozen", "older": "thawing", "spare": "thawed"}
    plan = ThawPlan(wanted, archived(**states), S3)
    assert sorted(plan.skipped()) == ["older", "other"]  # a thawed one is read as any other
    assert "outside the chain of @s3 by the sidecars: not read" in plan.skipped()["other"]


def test_the_restore_is_pinned_to_the_sidecars_choice_unless_unknown_streams_were_thawed() -> None:
    assert ThawPlan({}, [], S3).pin == "33"
    assert ThawPlan({}, [], S3, unknown=["no-sidecar"]).pin is None  # it may hold a newer one
    assert ThawPlan({}, []).pin is None
