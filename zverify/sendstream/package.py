"""The package rules: what must hold between the substreams of a `zfs send -R/-I/-p` package.

A package's checksums restart at every BEGIN, so nothing in the framing notices a
substream cut out, reordered or spliced in from another send.  These rules compare the
substreams with each other and with the compound header's promises (its `fss` list):

* linkage, as each substream begins: per dataset, every incremental continues the
  previous one (and, raw sends, its IV-set GUID), and agrees with the header's GUIDs;
* completeness, at the package's final END: what the header says is sent is there.

They are apart from the checker (validate), which frames a stream record by record,
because they are zfs send's policy, not the stream format: they change when zfs send
does.  They report through a Sink (the checker), so they hold no report of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from zverify.sendstream.nvlist import NvDict
from zverify.sendstream.report import CompoundHeader, Dataset, Substream


class Sink(Protocol):
    """Where a rule reports what it finds (the checker, which applies the listing limits)."""

    def problem(
        self, offset: int, record: int, message: str, code: str, span: Any = None
    ) -> None: ...

    def warning(self, offset: int, record: int, message: str, code: str) -> None: ...


def datasets(nv: NvDict | None) -> list[Dataset]:
    fss = (nv or {}).get("fss")
    out: list[Dataset] = []
    if not isinstance(fss, dict):
        return out
    for key, entry in fss.items():
        if not isinstance(entry, dict):
            continue
        snaps = entry.get("snaps")
        snapshots = (
            {k: v for k, v in (snaps or {}).items() if isinstance(v, int)}
            if isinstance(snaps, dict)
            else {}
        )
        origin = entry.get("origin")
        name = entry.get("name")
        try:
            guid = int(key, 16)
        except ValueError:
            guid = 0
        out.append(
            Dataset(
                guid=guid,
                name=name if isinstance(name, str) else "",
                snapshots=snapshots,
                origin=origin if isinstance(origin, int) else None,
            )
        )
    return out


Missing = Callable[[str], None]
"""Reports one incomplete-package problem (at the package's final END)."""

SHOW_SNAPSHOTS = 5


class PackageRules:
    """The rules over one package, and what they remember between its substreams."""

    def __init__(self, header: CompoundHeader, sink: Sink) -> None:
        self.header = header
        self.sink = sink
        self.by_name = {d.name: d for d in header.datasets}  # the header's datasets
        self.last: dict[str, Substream] = {}  # per dataset, its latest substream

    def begun(self, sub: Substream) -> None:
        """GUID linkage inside a package, as each substream begins (so that a break makes
        the report damaged at once): per dataset, each substream continues the previous."""
        ds = self.by_name.get(sub.dataset)
        snap = sub.toname.split("@", 1)[1] if "@" in sub.toname else ""
        if ds and snap in ds.snapshots and ds.snapshots[snap] != sub.toguid:
            msg = (
                f"{sub.toname}: toguid {sub.toguid} differs from the package header's "
                f"{ds.snapshots[snap]}"
            )
            self.sink.problem(sub.offset, sub.record, msg, "guid")
        prev = self.last.get(sub.dataset)
        self.last[sub.dataset] = sub
        if prev is None:
            if ds:
                self.first(sub, ds)
        elif sub.kind != "clone":
            self.link(prev, sub)

    def first(self, sub: Substream, ds: Dataset) -> None:
        """Where zfs send starts a dataset: from the header's fromsnap when the dataset has
        it (never in full then); in a -R package, in full or from its origin when it has not."""
        header = self.header
        fromsnap, tosnap = header.text("fromsnap"), header.text("tosnap")
        if fromsnap and _before(ds, fromsnap, tosnap):
            want = ds.snapshots[fromsnap]
            if sub.fromguid != want:
                what = f"fromguid {sub.fromguid}" if sub.fromguid else "is a full stream"
                if sub.kind == "clone":
                    what = f"is a clone stream from {sub.fromguid}"
                msg = f"{sub.toname}: {what}, but the package starts at @{fromsnap} ({want})"
                self.sink.problem(sub.offset, sub.record, msg, "guid")
        elif fromsnap and header.recursive and sub.kind == "incremental":
            # Without a fromsnap, the -R completeness check names the missing first snapshots.
            msg = (
                f"broken chain: {sub.toname} starts from {sub.fromguid}, but {ds.name} has "
                f"no @{fromsnap}: zfs send -R starts it in full (or from its origin)"
            )
            self.sink.problem(sub.offset, sub.record, msg, "guid")

    def link(self, prev: Substream, sub: Substream) -> None:
        if sub.fromguid != prev.toguid:
            what = "is a full stream" if not sub.fromguid else f"starts from {sub.fromguid}"
            msg = (
                f"broken chain: {sub.toname} {what}, but the previous substream of "
                f"{sub.dataset} ({prev.toname}) ends at {prev.toguid}"
            )
            self.sink.problem(sub.offset, sub.record, msg, "guid")
            return
        want, have = prev.crypt("to_ivset_guid"), sub.crypt("from_ivset_guid")
        if want and have and want != have:
            msg = (
                f"broken raw chain: {sub.toname} from_ivset_guid {have} is not "
                f"{prev.toname}'s {want}"
            )
            self.sink.problem(sub.offset, sub.record, msg, "guid")

    def complete(self, subs: list[Substream], offset: int, record: int) -> None:
        """Checksums restart at every BEGIN, so whole substreams can be cut out of a package
        without any checksum noticing: compare what is there with what the header promises
        (called at the package's final END, at offset and record)."""
        header = self.header

        def missing(message: str) -> None:
            self.sink.problem(offset, record, f"incomplete package: {message}", "incomplete")

        if not subs:
            return missing(f"no substream at all (the header sends {header.toname})")
        if not header.shape_known:
            msg = "package header nvlist not decoded: completeness checked against its toname only"
            self.sink.warning(header.offset, 0, msg, "nvlist")
            if header.toname not in {s.toname for s in subs}:
                missing(f"{header.toname} is missing")
            return
        if header.recursive:
            _check_replication(header, subs, missing)
        else:
            self.chain_ends(subs, missing)

    def chain_ends(self, subs: list[Substream], missing: Missing) -> None:
        """Without -R, zfs send writes one dataset's chain ending at the header's snapshot
        (its start, when the header names a fromsnap, is checked by first)."""
        header = self.header
        for sub in subs:
            if sub.dataset != header.dataset:
                msg = (
                    f"broken chain: {sub.toname} is not a snapshot of the package's "
                    f"{header.dataset}"
                )
                self.sink.problem(sub.offset, sub.record, msg, "guid")
        want = _final_name(header)
        if subs[-1].toname != want:
            missing(f"{want} is missing: the last substream ends at {subs[-1].toname}")


def _before(ds: Dataset, fromsnap: str, tosnap: str | None) -> bool:
    """fromsnap is listed for ds, before tosnap when that is listed too (fss keeps zfs send's
    creation order)."""
    if fromsnap not in ds.snapshots:
        return False
    names = list(ds.snapshots)
    return tosnap not in ds.snapshots or names.index(fromsnap) < names.index(tosnap)


def _final_name(header: CompoundHeader) -> str:
    # A send of a live (read-only) filesystem has no snapshot: libzfs writes `fs@` in the
    # header, the kernel `fs@--head--` in the substream.
    return header.toname + "--head--" if header.toname.endswith("@") else header.toname


def _check_replication(header: CompoundHeader, subs: list[Substream], missing: Missing) -> None:
    """-R: every dataset listed with the tosnap is sent up to it (zfs send skips datasets
    without it and leaves them out of `fss`)."""
    tosnap, fromsnap = header.text("tosnap"), header.text("fromsnap")
    # Present by GUID, or by name: a GUID that disagrees with the header is its own problem.
    guids, names = {s.toguid for s in subs}, {s.toname for s in subs}
    datasets = {s.dataset for s in subs}
    top_listed = False
    for ds in header.datasets:
        wanted = _wanted(ds, tosnap, fromsnap)
        top_listed = top_listed or (bool(wanted) and ds.name == header.dataset)
        lost = [n for n in wanted if ds.snapshots[n] not in guids and f"{ds.name}@{n}" not in names]
        if lost:
            sent = ds.name in datasets or not guids.isdisjoint(ds.snapshots.values())
            missing(_lost_message(ds, lost, sent))
    if not top_listed and header.toname not in names:
        missing(f"{header.toname}, the package's tosnap, is missing")


def _wanted(ds: Dataset, tosnap: str | None, fromsnap: str | None) -> list[str]:
    """The snapshots of ds a -R package must hold.  Without a fromsnap, zfs send -R sends
    every snapshot up to tosnap; fss lists them in creation order (and, from old senders,
    later ones too, hence the cut).  With one, -R -i sends only tosnap (and clone origins),
    and the header does not say -i from -I: only tosnap is certain."""
    if tosnap is None or tosnap not in ds.snapshots:
        return []
    if fromsnap is not None:
        return [tosnap]
    names = list(ds.snapshots)
    return names[: names.index(tosnap) + 1]


def _lost_message(ds: Dataset, lost: list[str], sent: bool) -> str:
    """One line for everything missing of one dataset (sent: any of its substreams is here)."""
    name = ds.name or f"the dataset with GUID {ds.guid}"
    shown = ", ".join(f"@{n}" for n in lost[:SHOW_SNAPSHOTS])
    if len(lost) > SHOW_SNAPSHOTS:
        shown += f" and {len(lost) - SHOW_SNAPSHOTS} more"
    if not sent:
        return f"dataset {name} is missing (the header lists {shown})"
    if len(lost) == 1:
        return f"{name}@{lost[0]} is missing (the header lists it)"
    return f"{name} is missing {shown} (the header lists them)"
