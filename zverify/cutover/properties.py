"""Property drift between a dataset and its replica.  Pure.

A value is compared together with its source (`zfs get`'s SOURCE column), because a value
that was inherited from the old pool's root is silently lost in a move that does not
carry it (openzfs/zfs#5967): the replica then shows the default.  Rules:

* different values are drift (`property-drift`, not ready), unless `--expect PROP=VALUE`
  declares the replica's value;
* equal values from a different kind of source are a warning (`property-origin`): the
  value is right today, but a change on a parent will reach one side and not the other.
  `local` and `received` count as the same kind, since `zfs send -p/-R` turns one into
  the other;
* a mountpoint inherited (or default) on both sides is compared as its path below the
  mountpoint of the top of the check: a replica mounted under the new pool is not drift;
* a `temporary` value (`zpool import -o readonly=on olddata`, `mount -o ro`) is how the pool
  is imported or mounted now, not a property of the dataset that a copy carries: not
  compared (the old pool of a migration is imported read-only on purpose).
"""

from collections.abc import Mapping

from zverify.cutover.findings import Finding, Severity
from zverify.zfs.inventory import Dataset, Prop

COMPARED = (
    "compression",
    "recordsize",
    "volblocksize",
    "volsize",
    "checksum",
    "dedup",
    "copies",
    "atime",
    "xattr",
    "acltype",
    "casesensitivity",
    "normalization",
    "utf8only",
    "mountpoint",
    "canmount",
    "readonly",
    "quota",
    "refquota",
    "reservation",
    "encryption",
    "keyformat",
)
TEMPORARY = "temporary"  # zfs get's SOURCE of an import or mount option
# Properties that only apply to blocks written after they change.
NOT_REWRITTEN = frozenset({"compression", "recordsize", "checksum", "dedup", "copies"})


def compare_properties(
    src: Dataset, dst: Dataset, tops: tuple[Dataset, Dataset], expect: Mapping[str, str]
) -> list[Finding]:
    """Findings for every compared property and every user property (with a ':')."""
    found = []
    for name in _names(src, dst):
        s, d = src.props.get(name), dst.props.get(name)
        if TEMPORARY in (s and s.source, d and d.source):
            continue
        if name in expect:
            found += _expected(src.name, name, s, d, expect[name])
        elif s is None or d is None:
            found += _one_sided(src.name, name, s, d)
        elif _value(name, s, src, tops[0]) != _value(name, d, dst, tops[1]):
            found.append(_drift(src.name, name, s, d))
        elif _kind(name, s) != _kind(name, d) and "-" not in (s.source, d.source):
            found.append(_origin(src.name, name, s, d))
    return found


def _names(src: Dataset, dst: Dataset) -> list[str]:
    users = sorted({n for n in (*src.props, *dst.props) if ":" in n})
    return [n for n in COMPARED if n in src.props or n in dst.props] + users


def _kind(name: str, p: Prop) -> str:
    if p.source in ("local", "received"):
        return "set"
    return "inherited" if _follows_parent(name, p) else p.source


def _follows_parent(name: str, p: Prop) -> bool:
    """Inherited; for mountpoint also the default, which is the parent's path plus the name."""
    return bool(p.inherited_from) or (name == "mountpoint" and p.source == "default")


def _value(name: str, p: Prop, ds: Dataset, top: Dataset) -> str:
    """The value as compared: an inherited mountpoint relative to the top's mountpoint."""
    if name != "mountpoint" or not _follows_parent(name, p):
        return p.value
    if ds.name == top.name:
        return "(inherited from above the replicated tree)"
    base = top.value("mountpoint").rstrip("/")
    if p.value.startswith(base + "/"):
        return "(top)/" + p.value[len(base) + 1 :]
    return p.value


def _expected(dataset: str, name: str, s: Prop | None, d: Prop | None, want: str) -> list[Finding]:
    if d is None or d.value != want:
        has = "is not set" if d is None else f"is {d.value}"
        return [
            _finding(
                "property-drift",
                Severity.FAIL,
                dataset,
                name,
                s,
                d,
                f"{name} expected {want} on the replica, but it {has}",
            )
        ]
    if name in NOT_REWRITTEN and (s is None or s.value != want):
        was = "unset" if s is None else s.value
        return [
            _finding(
                "not-rewritten",
                Severity.NOTE,
                dataset,
                name,
                s,
                d,
                f"{name}={want} as expected, but it applies only to blocks written "
                f"from now on: received blocks keep {name}={was}",
            )
        ]
    return []


def _one_sided(dataset: str, name: str, s: Prop | None, d: Prop | None) -> list[Finding]:
    if s is not None:
        text = f"{name}={s.value} ({s.source}) on the source is not set on the replica"
        return [_finding("property-drift", Severity.FAIL, dataset, name, s, d, text)]
    assert d is not None
    text = f"{name}={d.value} ({d.source}) is set on the replica only"
    return [_finding("property-drift", Severity.WARNING, dataset, name, s, d, text)]


def _drift(dataset: str, name: str, s: Prop, d: Prop) -> Finding:
    text = f"{name} is {s.value} ({s.source}) on the source, {d.value} ({d.source}) on the replica"
    return _finding("property-drift", Severity.FAIL, dataset, name, s, d, text)


def _origin(dataset: str, name: str, s: Prop, d: Prop) -> Finding:
    text = (
        f"{name}={s.value} on both sides, but {s.source} on the source and {d.source} on the "
        "replica: a change on a parent now reaches one side only"
    )
    return _finding("property-origin", Severity.WARNING, dataset, name, s, d, text)


def _finding(
    kind: str,
    severity: Severity,
    dataset: str,
    name: str,
    s: Prop | None,
    d: Prop | None,
    message: str,
) -> Finding:
    details = {"property": name, "src": _shown(s), "dst": _shown(d)}
    return Finding(kind, severity, dataset, message, details)


def _shown(p: Prop | None) -> dict[str, str] | None:
    return None if p is None else {"value": p.value, "source": p.source}
