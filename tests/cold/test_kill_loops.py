"""SIGKILL the installed `zverify cold send`, `prune --yes` and `restore` at evenly spread
moments of their run, then ask `cold check`: it must never call the archive intact when it is
not.  Whether it is, is decided here independently of zverify: every stream file byte for
byte one of the streams put there (or sent), no .partial, no sidecar without its stream, and
every incremental reachable from a full through the files left.

The stand-in zfs (standin.py) sends and receives slowly, and coldshim.c makes every fsync
slow, so that the kills land in every phase: while streaming, between the fsync and the
rename, while the sidecar is written, between one deletion and the next.  After each kill the
archive must also recover with the ordinary commands (clean, then the same command again).
"""

import hashlib
import json
import shutil
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli.console import needs_installed_command
from tests.cold.standin import STREAMS, ZfsStandIn, end_group, plain_env, run, start
from tests.sendstream.test_synthesize import sender_ordered
from zverify.cold.store import lock

pytestmark = needs_installed_command
POINTS = 14  # kill moments per command, evenly spread over an unkilled run's duration
SLOW_FSYNC = "120"  # ms


def entries(cold: Path) -> list[str]:
    return sorted(p.name for p in cold.iterdir() if p.name not in lock.FILES)


def kill_at(args: list[str], env: dict[str, str], delay: float) -> str:
    """ "killed", or "finished" when the command was done before its moment came."""
    proc = start(*args, env=env)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    end_group(proc)  # the stand-in zfs it left behind
    assert proc.returncode in (0, -signal.SIGKILL), out + err
    return "killed" if proc.returncode else "finished"


def timed(args: list[str], env: dict[str, str]) -> float:
    began = time.monotonic()
    proc = start(*args, env=env)
    out, err = proc.communicate(timeout=120)
    end_group(proc)
    assert proc.returncode == 0, out + err
    return time.monotonic() - began


def moments(duration: float) -> list[float]:
    return [duration * (i + 0.5) / POINTS for i in range(POINTS)]


def check(cold: Path) -> tuple[int, dict[str, Any]]:
    done = run("cold", "check", "--json", "--no-progress", str(cold), env=plain_env())
    assert done.returncode in (0, 1, 2), done.stderr
    return done.returncode, json.loads(done.stdout)


def restorable(doc: dict[str, Any], dataset: str) -> list[str]:
    found = [d for d in doc["datasets"] if d["dataset"] == dataset]
    return [r["snapshot"] for r in found[0]["restorable"]] if found else []


def whole(streams: dict[str, tuple[int, int]]) -> bool:
    """Every incremental reachable from a full: {file: (from_guid, to_guid)}."""
    have = {to for frm, to in streams.values() if frm == 0}
    grew = True
    while grew:
        grew = False
        for frm, to in streams.values():
            if frm in have and to not in have:
                have.add(to)
                grew = True
    return all(frm == 0 or frm in have for frm, _ in streams.values())


def truth(cold: Path, known: dict[str, bytes], steps: dict[str, tuple[int, int]]) -> str | None:
    """Why the archive is not intact, found without zverify; None when it is."""
    names = entries(cold)
    partial = [n for n in names if n.endswith(".partial")]
    if partial:
        return f"leftover {partial}"
    streams = [n for n in names if not n.endswith(".json")]
    for name in streams:
        assert name in known, f"{name}: no stream of that name was ever put or sent"
        assert (cold / name).read_bytes() == known[name], f"{name} is torn"  # never, anywhere
    stray = [n for n in names if n.endswith(".json") and n[: -len(".json")] not in streams]
    if stray:
        return f"sidecars without their streams: {stray}"
    for n in names:
        if n.endswith(".json"):
            json.loads((cold / n).read_text())  # a sidecar is whole when it has its name
    if not whole({n: steps[n] for n in streams}):
        return "an incremental that no full reaches"
    return None


def judge(
    cold: Path, known: dict[str, bytes], steps: dict[str, tuple[int, int]], outcomes: Counter[str]
) -> tuple[int, dict[str, Any]]:
    code, doc = check(cold)
    why_not = truth(cold, known, steps)
    if code == 0:
        assert why_not is None, f"check said INTACT, but: {why_not}"
    else:
        assert why_not is not None, f"check said {code} for an intact archive: {doc}"
    partials = [n for n in entries(cold) if n.endswith(".partial")]
    for name in partials:  # named, as the leftover of an interrupted send, and never a stream
        (f,) = [f for f in doc["files"] if f["file"] == name]
        assert f["kind"] == "partial" and [p["kind"] for p in f["problems"]] == ["partial"]
        assert "interrupted send" in f["problems"][0]["message"]
    names = entries(cold)
    sidecars = sum(n.endswith(".json") for n in names)
    state = f"{len(names) - sidecars - len(partials)} streams, {sidecars} sidecars"
    outcomes[f"exit {code}: {state}" + (f", {len(partials)} .partial" if partials else "")] += 1
    return code, doc


# -- send ------------------------------------------------------------------------------------

FULL_S1, INC = "zv%2Ffs@s1.zfsfull", "zv%2Ffs@s1-@s2.zfsinc"
GUID = {e["to"]: e["to_guid"] for e in json.loads((STREAMS / "index.json").read_text())["streams"]}


def test_send_killed_anywhere(tmp_path: Path, coldshim: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    zfs.source("zv/fs", {"s1": "full_fs_s1.zstream", "s2": "incr_fs_s1_s2.zstream"})
    known = {
        FULL_S1: (STREAMS / "full_fs_s1.zstream").read_bytes(),
        INC: (STREAMS / "incr_fs_s1_s2.zstream").read_bytes(),
    }
    steps = {FULL_S1: (0, GUID["zv/fs@s1"]), INC: (GUID["zv/fs@s1"], GUID["zv/fs@s2"])}
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / FULL_S1).write_bytes(known[FULL_S1])
    (seed / f"{FULL_S1}.json").write_text("{}\n")
    slow = zfs.env(LD_PRELOAD=str(coldshim), ZVCOLD_SLOW_FSYNC_MS=SLOW_FSYNC)
    zfs.slow(0.08)

    def send(cold: Path) -> list[str]:
        return ["cold", "send", "--no-progress", "--no-intermediate", "zv/fs", str(cold)]

    first = tmp_path / "timed"
    shutil.copytree(seed, first)
    duration = timed(send(first), slow)
    outcomes: Counter[str] = Counter()
    for i, at in enumerate(moments(duration)):
        cold = tmp_path / f"kill-{i}"
        shutil.copytree(seed, cold)
        zfs.slow(0.08)
        outcomes[kill_at(send(cold), slow, at)] += 1
        code, doc = judge(cold, known, steps, outcomes)
        if code == 0:
            assert restorable(doc, "zv/fs") == (["s1", "s2"] if INC in entries(cold) else ["s1"])
        # recovery with the ordinary commands: clean the leftover, send again
        zfs.slow(None)
        assert run("cold", "clean", "--yes", str(cold), env=plain_env()).returncode == 0
        again = run(*send(cold), env=zfs.env())
        assert again.returncode == 0, again.stderr
        code, doc = check(cold)
        assert code == 0 and restorable(doc, "zv/fs") == ["s1", "s2"], doc
    print(f"send: {POINTS} kills over {duration:.2f} s: {dict(outcomes)}")
    assert outcomes["killed"] >= POINTS // 2, outcomes
    assert sum(n for k, n in outcomes.items() if k.startswith("exit 0")), outcomes
    assert sum(n for k, n in outcomes.items() if ".partial" in k), outcomes


# -- prune -----------------------------------------------------------------------------------

DS = "pool/set"


def synthetic(n: int, frm: int | None) -> tuple[str, bytes, tuple[int, int]]:
    """A real (checksummed) stream of pool/set@n, full or from @frm."""
    # in the sender's order: prune proves content with the chain-state engine
    data = sender_ordered(False, 1000 + n, 0 if frm is None else 1000 + frm,
                          toname=f"{DS}@{n}", nwrites=20, created=1_700_000_000 + n)  # fmt: skip
    name = f"pool%2Fset@{n}.zfsfull" if frm is None else f"pool%2Fset@{frm}-@{n}.zfsinc"
    return name, data, (0 if frm is None else 1000 + frm, 1000 + n)


def test_prune_killed_anywhere(tmp_path: Path, coldshim: Path) -> None:
    # the old chain ends with the link `cold send --full` archives before a new full: only
    # with it do the streams prove the old chain older, so that prune may delete it
    old = [synthetic(0, None), synthetic(1, 0), synthetic(2, 1), synthetic(3, 2), synthetic(10, 3)]
    new = [synthetic(10, None), synthetic(11, 10)]
    known = {name: data for name, data, _ in old + new}
    steps = {name: step for name, _, step in old + new}
    seed = tmp_path / "seed"
    seed.mkdir()
    for name, data in known.items():
        (seed / name).write_bytes(data)
        (seed / f"{name}.json").write_text("{}\n")
    slow = plain_env(LD_PRELOAD=str(coldshim), ZVCOLD_SLOW_FSYNC_MS=SLOW_FSYNC)

    def prune(cold: Path) -> list[str]:
        return ["cold", "prune", "--yes", "--no-progress", str(cold)]

    first = tmp_path / "timed"
    shutil.copytree(seed, first)
    duration = timed(prune(first), slow)
    assert entries(first) == sorted(f for n, _, _ in new for f in (n, f"{n}.json"))
    outcomes: Counter[str] = Counter()
    deleted: Counter[int] = Counter()
    for i, at in enumerate(moments(duration)):
        cold = tmp_path / f"kill-{i}"
        shutil.copytree(seed, cold)
        outcomes[kill_at(prune(cold), slow, at)] += 1
        # deleted furthest from the full first: what is left of the old chain still restores
        code, doc = judge(cold, known, steps, outcomes)
        assert code == 0, doc
        assert all(n in entries(cold) for n, _, _ in new)  # the kept chain: never touched
        left = [n for n, _, _ in old if n in entries(cold)]
        assert left == [n for n, _, _ in old][: len(left)]
        deleted[len(old) - len(left)] += 1
        linked = old[-1][0] in entries(cold) or not left
        before_again = entries(cold)
        again = run(*prune(cold), env=plain_env())
        assert again.returncode == 0, again.stdout + again.stderr
        # with its link gone, nothing proves the rest of the old chain older: it stays
        assert entries(cold) == (entries(first) if linked else before_again)
    print(f"prune: {POINTS} kills over {duration:.2f} s: {dict(outcomes)}, old files deleted "
          f"{dict(sorted(deleted.items()))}")  # fmt: skip
    assert outcomes["killed"] >= POINTS // 2, outcomes
    assert len(deleted) >= 3, deleted  # kills before, during and after the deletions


# -- restore ---------------------------------------------------------------------------------


def test_restore_killed_anywhere(tmp_path: Path) -> None:
    zfs = ZfsStandIn(tmp_path / "standin")
    files = {
        FULL_S1: "full_fs_s1.zstream",
        INC: "incr_fs_s1_s2.zstream",
        "zv%2Ffs@s2-@s3.zfsinc": "incr_empty_fs_s2_s3.zstream",
    }
    cold = tmp_path / "cold"
    cold.mkdir()
    for name, fixture in files.items():
        shutil.copy(STREAMS / fixture, cold / name)
    digests = {n: hashlib.sha256((cold / n).read_bytes()).hexdigest() for n in files}
    zfs.slow(0.05)
    duration = timed(["cold", "restore", "--no-progress", str(cold), "tank/timed"], zfs.env())
    outcomes: Counter[str] = Counter()
    for i, at in enumerate(moments(duration)):
        zfs.slow(0.05)
        outcomes[
            kill_at(["cold", "restore", "--no-progress", str(cold), f"tank/k{i}"], zfs.env(), at)
        ] += 1
        # a restore only reads: the archive is as it was, and its lock went with it
        assert entries(cold) == sorted(files)
        assert {n: hashlib.sha256((cold / n).read_bytes()).hexdigest() for n in files} == digests
        code, doc = check(cold)
        assert code == 0 and restorable(doc, "zv/fs") == ["s1", "s2", "s3"]
        received = (zfs.state / "received").read_text() if (zfs.state / "received").exists() else ""
        got = sorted(line.split("\t")[0] for line in received.splitlines())
        mine = [g.split("@")[1] for g in got if g.startswith(f"tank/k{i}@")]
        assert mine == ["s1", "s2", "s3"][: len(mine)]  # whole streams only, in order
        outcomes[f"{len(mine)} received"] += 1
        zfs.slow(None)
        again = run("cold", "restore", "--no-progress", str(cold), f"tank/again{i}", env=zfs.env())
        assert again.returncode == 0 and f"restored tank/again{i}@s3" in again.stdout
    print(f"restore: {POINTS} kills over {duration:.2f} s: {dict(outcomes)}")
    assert outcomes["killed"] >= POINTS // 2, outcomes
    assert len(outcomes) >= 3, outcomes
