"""Open each side of `zverify compare`: a live tree walked here, a live tree other MPI ranks
walk (zverify.mpi), or a manifest standing in for a tree (zverify.manifest reads it)."""

from dataclasses import replace
from typing import TYPE_CHECKING

from zverify.compare.policy import DiffKind
from zverify.compare.sides import Side
from zverify.fsinfo import filesystem_of, unreadable_xattr_namespaces
from zverify.hashing import Algorithm
from zverify.walk import TreeWalk, WalkOptions

if TYPE_CHECKING:
    from zverify.manifest.listing import Listing
    from zverify.manifest.read import NativeManifest


def live_side(name: str, path: str, options: WalkOptions) -> Side:
    walk = TreeWalk(path, options, name)
    unverifiable = unreadable_xattr_namespaces() if options.xattrs else []
    return Side(
        name, path, walk, filesystem_of(path), walk.progress, walk.close, None,
        unverifiable=unverifiable, excluded=walk.excluded,
    )  # fmt: skip


def remote_side(name: str, path: str, options: WalkOptions) -> Side:
    """A live tree that other MPI ranks walk (zverify.mpi): its root is opened here, as the
    walk would open it, so that an unreadable root fails here and the same way; its
    entries and counts come from the ranks."""
    TreeWalk(path, replace(options, key_range=(b"", b"")), name).close()  # an empty range
    unverifiable = unreadable_xattr_namespaces() if options.xattrs else []
    return Side(
        name, path, (), filesystem_of(path), lambda: (0, 0), lambda: None, None,
        unverifiable=unverifiable,
    )  # fmt: skip


def manifest_side(name: str, path: str, keep_xattrs: bool, asked: Algorithm | None = None) -> Side:
    """asked: --hash, which a checkfile of 64-hex digests needs when its name does not tell."""
    # imported here: `zverify compare` on two live trees never loads the manifest readers
    # (~20 ms of start-up, most of it bagit's and mtree's), not even their common Listing
    from zverify.manifest.listing import Listing
    from zverify.manifest.open import open_manifest

    opened = open_manifest(path, keep_xattrs, asked)
    if isinstance(opened, Listing):
        return _listed(name, path, opened)
    return _native(name, opened, keep_xattrs)


def _listed(name: str, path: str, spec: "Listing") -> Side:
    """A side whose entries were all read up front (foreign formats: not sorted, small)."""
    from zverify.manifest.listing import NO_FILESYSTEM  # loaded by manifest_side already

    entries = spec.entries
    return Side(
        name=name,
        label=path,
        entries=entries,
        fs=NO_FILESYSTEM,
        progress=lambda: (len(entries), 0),
        close=lambda: None,
        algorithm=spec.algorithm,
        lacking=spec.lacking,
        files_only=spec.files_only,
        sizes=spec.sizes,
        notes=[f"{name} is {spec.what}: {spec.summary}"],
    )


def _native(name: str, manifest: "NativeManifest", keep_xattrs: bool) -> Side:
    from zverify.manifest.read import root_label  # loaded by manifest_side already

    header = manifest.header
    lacking = {} if header.xattrs else {DiffKind.XATTR: "the manifest was written without them"}
    notes = [
        f"{name} is the manifest of {root_label(header)} written {header.created} "
        f"by zverify {header.zverify}"
    ]
    if header.one_file_system:
        notes.append(f"{name} was written with --one-file-system: so is the other side walked")
    if header.filter is not None:
        notes.append(f"{name} was written with filters: the other side gets the same")
    return Side(
        name=name,
        label=manifest.path,
        entries=manifest,
        fs=header.filesystem,
        progress=lambda: (manifest.entries_read, manifest.bytes_read()),
        close=manifest.close,
        algorithm=header.algorithm,
        lacking=lacking,
        unverifiable=(
            [f"{u} (when the manifest was written)" for u in header.unverifiable]
            if keep_xattrs
            else []  # xattrs are not compared: what the writer could not see does not matter
        ),
        notes=notes,
        one_file_system=header.one_file_system,
        filter=header.filter,
    )
