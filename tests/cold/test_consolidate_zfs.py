"""`cold consolidate` and `cold digest` held against real OpenZFS (issue 44, deliverable 5).

Each scenario (tests/cold/churn.py, seeded) is a dataset under churn that stresses the merge,
and an archive of it written by plain `zfs send` (-c, -e mixed per stream, -L throughout or
never, -i files and -I packages).  For the snapshot @N the archive's chain ends at:

- `cold consolidate` writes NAME@N.zfsfull from the archive alone;
- `zfs receive` takes it into an empty dataset, which gets @N's GUID;
- the source's real @N->@N+1 incremental receives on top of it;
- `zverify compare` finds @N and @N+1 identical to the source's (content, metadata, xattrs);
- `cold digest` of the chain, of a real `zfs send` full of @N and of the consolidated full agree.

A chain with one WRITE payload byte changed and re-signed (valid checksums, wrong content) must
digest differently from the real full, and `cold prune` must refuse to delete it for that full.

zverify's cold commands run on this host (the installed console script, on the streams the
guest wrote into the shared exchange directory), as on a storage host without ZFS; receives
and `zverify compare` run where ZFS is.

Seeds and chain lengths: ZVERIFY_CONSOLIDATE_SEEDS ("1", "1,5" or "1-40"),
ZVERIFY_CONSOLIDATE_LINKS (links per scenario, default 4), ZVERIFY_CONSOLIDATE_LONG (one more
scenario with that many links, default 10; 0 for none), ZVERIFY_CONSOLIDATE_COMPARE_BOTH=1
(compare @N too, not only @N+1), ZVERIFY_CONSOLIDATE_KEEP=DIR (keep each scenario's streams
there, to replay `cold consolidate` and `cold digest` without ZFS).
scripts/consolidate-differential.sh runs many seeds and a chain of >= 100 links.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.console import zverify
from tests.cold.zfs_helpers import assert_same_snapshot, guid
from tests.sendstream.streamgen import BEGIN, WRITE, resign, walk
from zverify.cold.names import file_name

pytestmark = pytest.mark.zfs


def seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


# The CI default (under 4 minutes of TCG with the boot): seed 1 has -L and an -i over a skipped
# snapshot; the longer chain (seed 1001) no -L, -i files and -I packages, -c and -e mixed.
SEEDS = seeds(os.environ.get("ZVERIFY_CONSOLIDATE_SEEDS", "1"))
LINKS = int(os.environ.get("ZVERIFY_CONSOLIDATE_LINKS", "4"))
LONG = int(os.environ.get("ZVERIFY_CONSOLIDATE_LONG", "10"))
# `zverify compare` of @N as well as @N+1 (a Python start in the VM costs ~10 s of TCG): @N+1
# already holds every block of @N that @N+1 did not rewrite, and the digests cover all of @N.
COMPARE_BOTH = os.environ.get("ZVERIFY_CONSOLIDATE_COMPARE_BOTH") == "1"
SCENARIOS = [(s, LINKS) for s in SEEDS] + ([(SEEDS[0] + 1000, LONG)] if LONG else [])


@dataclass
class Scenario:
    host: Any
    doc: dict  # churn.py's scenario.json
    out_host: Path
    out_guest: str

    @property
    def dataset(self) -> str:
        return self.doc["dataset"]

    def guest(self, path: Path) -> str:
        return f"{self.out_guest}/{path.relative_to(self.out_host)}"

    def one(self, where: str) -> Path:
        (path,) = (self.out_host / where).iterdir()
        return path


class Source:
    """What assert_same_snapshot needs of the source dataset."""

    def __init__(self, mountpoint: str) -> None:
        self.mountpoint = mountpoint


@pytest.fixture(scope="module")
def scenarios(zfs_host, zfs_module_pool) -> dict[tuple[int, int], Scenario]:
    """Built once per (seed, links), on first use, in the module's pool."""
    return {}


def scenario(scenarios, host, pool, seed: int, links: int) -> Scenario:
    key = (seed, links)
    if key not in scenarios:
        tag = f"s{seed}-{links}"
        out_host = Path(host.exchange_host) / "consolidate" / tag
        out_guest = f"{host.exchange_guest}/consolidate/{tag}"
        shutil.rmtree(out_host, ignore_errors=True)
        start = time.monotonic()
        made = host.run(
            [*host.python, "-m", "tests.cold.churn", f"{pool.name}/{tag}", out_guest,
             "--seed", str(seed), "--links", str(links)],
            timeout=3600,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr[-3000:]
        doc = json.loads((out_host / "scenario.json").read_text())
        print(
            f"\n{tag}: built in {time.monotonic() - start:.1f}s, large={doc['large']}, "
            f"{len(doc['churn'])} changes, sends: "
            + "; ".join(f["command"].split(" ", 2)[2] for f in doc["files"])
        )
        if os.environ.get("ZVERIFY_CONSOLIDATE_KEEP"):  # the streams, to replay without ZFS
            shutil.copytree(out_host, Path(os.environ["ZVERIFY_CONSOLIDATE_KEEP"]) / tag)
        scenarios[key] = Scenario(host, doc, out_host, out_guest)
    return scenarios[key]


def digests(*places: Path, dataset: str, snapshot: str, expect: int = 0) -> set[str]:
    """The digests of dataset@snapshot that `cold digest` prints, one per route."""
    done = zverify(
        "cold", "digest", *map(str, places), "--dataset", dataset, "--snapshot", snapshot, "--json"
    )
    assert done.returncode == expect, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    routes = json.loads(done.stdout)["routes"]
    assert routes and all(r["digest"] for r in routes), done.stdout
    return {r["digest"] for r in routes}


def receive(host, path: str, target: str) -> None:
    r = host.run(["sh", "-c", f"zfs receive -u {target} < {path}"], timeout=1800)
    assert r.returncode == 0, f"zfs receive {path} -> {target}: {r.stderr[-2000:]}"


@pytest.mark.parametrize(("seed", "links"), SCENARIOS, ids=[f"s{s}-{n}" for s, n in SCENARIOS])
def test_consolidated_full_receives_as_the_snapshot_and_takes_the_next_incremental(
    zfs_host, zfs_module_pool, zverify_in_zfs_host, scenarios, seed, links
):
    host = zfs_host
    sc = scenario(scenarios, host, zfs_module_pool, seed, links)
    ds, n, nxt = sc.dataset, sc.doc["target"], sc.doc["next"]
    chain, real_full, into = sc.out_host / "chain", sc.out_host / "full", sc.out_host / "cons"
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir()

    start = time.monotonic()
    done = zverify(
        "cold", "consolidate", str(chain), "--dataset", ds, "--into", str(into), "--json"
    )
    spent = time.monotonic() - start
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    said = json.loads(done.stdout)
    (made,) = into.glob("*.zfsfull")  # NAME@N.zfsfull, NAME as names.py writes a dataset
    assert made.name == file_name(ds, n, None, False), made.name
    print(f"consolidated @{n} from {len(list(chain.iterdir()))} files in {spent:.1f}s")
    check = zverify("cold", "check", "--json", str(into))
    assert check.returncode == 0, check.stdout + check.stderr

    target = f"{zfs_module_pool.name}/rcv-s{seed}-{links}"
    host.run(["zfs", "destroy", "-r", target])
    receive(host, sc.guest(made), target)
    assert guid(host, f"{target}@{n}") == sc.doc["guids"][n]
    receive(host, sc.guest(sc.one("next")), target)
    assert guid(host, f"{target}@{nxt}") == sc.doc["guids"][nxt]
    source = Source(host.run(["zfs", "get", "-Hp", "-o", "value", "mountpoint", ds]).stdout.strip())
    for snap in (n, nxt) if COMPARE_BOTH else (nxt,):
        assert_same_snapshot(host, zverify_in_zfs_host, source, target, snap)

    of_chain = digests(chain, dataset=ds, snapshot=n)
    of_real = digests(real_full, dataset=ds, snapshot=n)
    of_made = digests(into, dataset=ds, snapshot=n)
    assert len(of_chain) == 1 and of_chain == of_real == of_made, (of_chain, of_real, of_made)
    assert {said["chain_digest"], said["full_digest"]} == of_chain, said
    host.run(["zfs", "destroy", "-r", target])


# -- a re-signed stream: valid checksums, wrong content --------------------------------------


def flip_last_write(path: Path) -> int:
    """Flip one bit of a non-zero byte in the last uncompressed WRITE payload of the last
    substream, then re-sign every trailer and END; returns the byte's offset."""
    data = bytearray(path.read_bytes())
    recs = walk(bytes(data))
    last_begin = max(i for i, r in enumerate(recs) if r.type == BEGIN)
    writes = [
        r for r in recs[last_begin:]
        if r.type == WRITE and data[r.offset + 50] == 0
        and any(data[r.offset + 312 : r.end])
    ]  # fmt: skip
    assert writes, f"{path.name}: no uncompressed non-zero WRITE to change"
    rec = writes[-1]
    payload = data[rec.offset + 312 : rec.end]
    at = rec.offset + 312 + next(i for i, b in enumerate(payload) if b)
    data[at] ^= 0x10
    path.write_bytes(resign(data))
    return at


def test_a_re_signed_changed_block_changes_the_digest_and_prune_keeps_the_chain(
    zfs_host, zfs_module_pool, scenarios
):
    host = zfs_host
    seed, links = SCENARIOS[0]
    sc = scenario(scenarios, host, zfs_module_pool, seed, links)
    ds, n = sc.dataset, sc.doc["target"]
    flags = "-L" if sc.doc["large"] else ""
    for tampered in (False, True):
        place = sc.out_host / ("tampered" if tampered else "untampered")
        shutil.rmtree(place, ignore_errors=True)
        place.mkdir()
        full0 = file_name(ds, "0", None, False)
        shutil.copy(sc.out_host / "chain" / full0, place / full0)
        shutil.copy(sc.one("full"), place / sc.one("full").name)
        inc = place / file_name(ds, n, "0", False)
        r = host.run(["sh", "-c", f"zfs send {flags} -i @0 {ds}@{n} > {sc.guest(inc)}"])
        assert r.returncode == 0, r.stderr
        if tampered:
            at = flip_last_write(inc)
            print(f"changed byte {at} of {inc.name} and re-signed it")
        check = zverify("cold", "check", "--json", str(place))
        assert check.returncode == 0, check.stdout + check.stderr  # integrity cannot see it
        chain_only = sc.out_host / f"chain-only-{tampered}"
        shutil.rmtree(chain_only, ignore_errors=True)
        chain_only.mkdir()
        shutil.copy(place / full0, chain_only / full0)
        shutil.copy(inc, chain_only / inc.name)
        of_chain = digests(chain_only, dataset=ds, snapshot=n)
        of_real = digests(sc.out_host / "full", dataset=ds, snapshot=n)
        assert (of_chain != of_real) == tampered, (tampered, of_chain, of_real)

        before = sorted(p.name for p in place.iterdir())
        done = zverify("cold", "prune", "--yes", "--json", str(place))
        after = sorted(p.name for p in place.iterdir())
        if tampered:
            assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            assert after == before, f"prune deleted {set(before) - set(after)}"
        else:
            assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
            assert full0 not in after and inc.name not in after, after
