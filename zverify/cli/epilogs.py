"""What each command's --help ends with: its exit codes and two examples (compare also its
profiles and one-letter codes), generated from the definitions so the help cannot drift.

Lines after a "\\b" line are printed as they are (click rewraps everything else).
"""

from collections.abc import Callable

from zverify import exitcodes
from zverify.compare.policy import CODES, PROFILES

_OK, _BAD, _TROUBLE, _INT = (
    exitcodes.IDENTICAL,
    exitcodes.DIFFERENT,
    exitcodes.TROUBLE,
    exitcodes.INTERRUPTED,
)


def _block(title: str, lines: list[str]) -> str:
    return "\b\n" + title + "\n" + "\n".join(f"  {line}" for line in lines)


def _profiles() -> list[str]:
    """Each profile as what it adds to the one before it, as the policy defines them."""
    rows, before = [], None
    for name, kinds in PROFILES.items():
        added = ", ".join(sorted(k.value for k in kinds - (PROFILES[before] if before else set())))
        rows.append(f"{name:<9} {before + ' + ' if before else ''}{added}")
        before = name
    rows[-1] += " (default)"
    return rows


def _codes() -> list[str]:
    pairs = [f"{code} {kind.value}" for kind, code in CODES.items()]
    return [", ".join(pairs[:7]), ", ".join(pairs[7:])]


def compare() -> str:
    return "\n\n".join(
        [
            _block("Profiles (--profile): what counts as a difference", _profiles()),
            _block("Codes at the start of each difference line", _codes()),
            f"Exit codes: {_OK} identical, {_BAD} different (and everything was verified), "
            f"{_TROUBLE} could not verify everything (unreadable, damaged, usage error), "
            f"{_INT} interrupted, {exitcodes.BROKEN_PIPE} stdout closed (| head), "
            f"{exitcodes.TERMINATED} terminated (SIGTERM).",
            _block(
                "Examples",
                [
                    "zverify compare --exclude /.zfs /tank/data /mnt/newpool/data",
                    "zverify compare --profile rsync-a --jsonl SRC DST > report.jsonl",
                ],
            ),
        ]
    )


def _simple(exits: str, *examples: str) -> Callable[[], str]:
    return lambda: "\n\n".join([f"Exit codes: {exits}", _block("Examples", list(examples))])


EPILOGS: dict[str, Callable[[], str]] = {
    "compare": compare,
    "manifest": _simple(
        f"{_OK} recorded, {_TROUBLE} something could not be read (the manifest is still "
        "written, with the errors in it) or usage error.",
        "zverify manifest /tank/data -o data.zvm.zst",
        "zverify compare data.zvm.zst /mnt/newpool/data",
    ),
    "cutover": _simple(
        f"{_OK} READY, {_BAD} NOT READY (every reason listed), {_TROUBLE} could not check, "
        f"{_INT} interrupted.",
        "zverify cutover -r tank/data newpool/data",
        "zverify cutover -r --content --json tank/data newpool/data",
    ),
    "stream verify": _simple(
        f"{_OK} every stream intact, {_BAD} any damaged (offset named), {_TROUBLE} any "
        "unreadable or usage error.",
        "zverify stream verify /cold/tank-data@2026-11-01.zfs",
        "zfs send -w tank/data@today | zverify stream verify -",
    ),
    "stream info": _simple(
        f"{_OK} intact, {_BAD} damaged, {_TROUBLE} unreadable or usage error.",
        "zverify stream info /cold/tank-data@2026-11-01.zfs",
        "zverify stream info --json backup.zfs",
    ),
    "stream token": _simple(
        f"{_OK} decoded, {_BAD} damaged or malformed, {_TROUBLE} usage error.",
        "zverify stream token 1-e604ea4bf-e0-789c63a2...",
        'zverify stream token --json "$(zfs get -Hpo value receive_resume_token pool/set)"',
    ),
    "cold send": _simple(
        f"{_OK} archived (or nothing new to send), {_TROUBLE} not archived, or usage error.",
        "zverify cold send tank/data /cold --full",
        "zverify cold send --parity 10 tank/data /cold",
    ),
    "cold check": _simple(
        f"{_OK} every file intact and every incremental reachable from a full, {_BAD} anything "
        f"else (each problem named), {_TROUBLE} a file could not be read.",
        "zverify cold check /cold",
        "zverify cold check --dataset tank/data --json /cold",
    ),
    "cold scrub": _simple(
        f"{_OK} every file read proven, {_BAD} damage found (named, with offsets and its "
        f"parity's verdict), {_TROUBLE} a file could not be read, or the ledger is not intact.",
        "zverify cold scrub --max-bytes 200G --max-age 30 /cold",
        "zverify cold scrub --max-duration 4h --prometheus /var/lib/node_exporter/cold.prom /cold",
    ),
    "cold restore": _simple(
        f"{_OK} restored and proven by GUID, {_BAD} the archive cannot restore it (why), "
        f"{_TROUBLE} error.",
        "zverify cold restore --dry-run /cold newpool/data",
        "zverify cold restore --snapshot 2026-11-01 /cold newpool/data-restored",
    ),
    "cold prune": _simple(
        f"{_OK} pruned, nothing to prune, or a dry run, {_BAD} refused (why; nothing deleted), "
        f"{_TROUBLE} error.",
        "zverify cold prune /cold --keep-chains 2",
        "zverify cold prune /cold --keep-chains 2 --yes",
    ),
    "cold clean": _simple(
        f"{_OK} removed, nothing to remove, or a dry run, {_BAD} a .partial left alone (why), "
        f"{_TROUBLE} error (e.g. a send is running: the archive is locked).",
        "zverify cold clean /cold",
        "zverify cold clean /cold --yes",
    ),
    "cold lock": _simple(
        f"{_OK} the kept chains locked (or a dry run), {_TROUBLE} error (a bucket without "
        "object lock, a lock refused).",
        "zverify cold lock --days 30 s3://backups/tank",
        "zverify cold lock --days 365 --mode COMPLIANCE s3://backups/tank",
    ),
    "cold parity": _simple(
        f"{_OK} every stream protected, {_BAD} a stream left without parity (not intact: "
        f"repair it first), {_TROUBLE} error.",
        "zverify cold parity /cold",
        "zverify cold parity --parity 20 /cold",
    ),
    "cold repair": _simple(
        f"{_OK} repaired and proven (or nothing damaged), {_BAD} a stream cannot be repaired "
        f"(why; nothing replaced), {_TROUBLE} error.",
        "zverify cold repair /cold",
        "zverify cold repair --remove-damaged /cold 'tank%2Fdata@s1.zfsfull'",
    ),
    "cold consolidate": _simple(
        f"{_OK} written and its digest equal to the chain's (or planned: -n), {_BAD} the "
        f"digests differ (the first object named; nothing kept), {_TROUBLE} refused (raw, "
        "redacted, dedup, resume, mixed chains: the file and field named) or not read.",
        "zverify cold consolidate --dataset tank/data -n /cold",
        "zverify cold consolidate --dataset tank/data --snapshot 100 /cold",
    ),
    "cold drill": _simple(
        f"{_OK} received and its files equal the source's (or its manifest's), {_BAD} "
        f"they differ (the first paths named) or the archive cannot restore it, {_TROUBLE} "
        "not drilled: no space, no ZFS, a receive refused, nothing to compare with, or an "
        "entry unreadable.  The scratch is destroyed in every case.",
        "zverify cold drill --dataset tank/data --scratch-file 20G /cold",
        "zverify cold drill --dataset tank/data --pool backup --against data.zvm.zst /cold",
    ),
    "certificate verify": _simple(
        f"{_OK} intact (and well signed, when asked) and certifying a pass, {_BAD} altered, "
        f"badly signed, or certifying a failure (NOT READY, DOES NOT RESTORE), {_TROUBLE} "
        "unreadable, not a certificate, no signature or no ssh-keygen.",
        "zverify certificate verify cutover.cert.json",
        "zverify certificate verify --signers allowed_signers --identity ops@example.org "
        "cutover.cert.json",
    ),
    "cold digest": _simple(
        f"{_OK} every route to the snapshot gives one digest, {_BAD} routes disagree (the "
        f"first object named), {_TROUBLE} refused or not read.",
        "zverify cold digest --dataset tank/data /cold",
        "zverify cold digest --dataset tank/data --snapshot 100 --json /cold",
    ),
}


def epilog(command: str) -> str | None:
    make = EPILOGS.get(command)
    return make() if make else None
