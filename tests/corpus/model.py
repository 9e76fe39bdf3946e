"""The stream corpus (tests/data/corpus/<release>.tar.xz, made by `python -m tools.zfsvm
corpus`): loading, the reason each recorded receive refusal had, and the receive chains the
suite ran, as archives for `cold check`."""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass
from pathlib import Path

from tools.zfsvm import config
from tools.zfsvm.corpus import load

DATA = Path(__file__).resolve().parents[1] / "data" / "corpus"
# The releases whose corpus is committed (each must be there: a missing one fails). 2.3 joins
# when `python -m tools.zfsvm corpus --release 2.3` has run (see docs/design/corpus.md).
RELEASES = ("2.1", "2.3")
assert set(RELEASES) <= set(config.RELEASES)
SEED = 20261128
# What receive says when the stream's own bytes are the reason (dmu_recv.c / libzfs_sendrecv.c
# wordings: checksum mismatch, invalid or corrupt stream, unsupported feature, short read).
STREAM_REASON = re.compile(
    r"checksum mismatch|invalid (backup )?stream|corrupt|unsupported|premature|"
    r"incomplete stream|truncated|bad magic|stream has unsupported",
    re.IGNORECASE,
)
# Refusals a directory archive cannot cure: the stream's base, or its -L/raw kind, is not
# what the chain before it in the same recorded receive sequence has.
CHAIN_FAULTS = frozenset({"wrongbase", "nobase", "toggle", "redacted-base"})


@dataclass(frozen=True)
class Stream:
    entry: dict
    path: Path

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def refused(self) -> bool:
        return self.entry["receive_status"] != 0

    @property
    def refused_for_its_bytes(self) -> bool:
        """Receive refused it for a reason in the stream (damage, unsupported content)."""
        if not self.refused:
            return False
        return self.entry["fault_in_stream"] or bool(
            STREAM_REASON.search(self.entry["receive_stderr"])
        )

    @property
    def target(self) -> str:
        return self.entry["receive_argv"][-1].split("@")[0]


@functools.cache
def corpus(release: str, workdir: str) -> tuple[dict, dict[str, Stream]]:
    """The index and every stream, written as files under workdir (a missing corpus is an
    error: it is committed, so its absence is a broken checkout, not a reason to skip)."""
    index, blobs = load(DATA / f"{release}.tar.xz")
    out = Path(workdir) / release
    out.mkdir(parents=True, exist_ok=True)
    streams = {}
    for entry in index["streams"]:
        path = out / f"{entry['id']}.zs"
        path.write_bytes(blobs[entry["id"]])
        streams[entry["id"]] = Stream(entry, path)
    return index, streams


def chains(streams: dict[str, Stream]) -> list[list[Stream]]:
    """Consecutive receives into one target, in the order the suite ran them."""
    runs: list[list[Stream]] = []
    for s in streams.values():
        if runs and runs[-1][-1].target == s.target:
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs


def sample(streams: dict[str, Stream], count: int, seed: int = SEED) -> list[list[Stream]]:
    """A seeded selection of the chains with more than one stream (those with a route)."""
    runs = [r for r in chains(streams) if len(r) > 1]
    rng = random.Random(seed)
    return runs if count >= len(runs) else rng.sample(runs, count)
