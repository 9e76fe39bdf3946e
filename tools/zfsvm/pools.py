"""Test pools and datasets with chosen properties, on a ZFS host (VM or native).

A pool is named as asked in the VM (``tank`` mounted at ``/tank``); natively the
name gets the process id appended and is mounted under the host's temp dir, so a
test can never collide with a real pool of the machine.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field


@dataclass
class Dataset:
    name: str
    mountpoint: str
    keyfile: str | None = None


@dataclass
class Pool:
    host: object
    name: str
    mountpoint: str
    datasets: list[Dataset] = field(default_factory=list)

    @classmethod
    def create(cls, host, device: str, name: str) -> Pool:
        if host.kind == "native":
            name = f"{name}{os.getpid()}"
            mountpoint = f"{host.exchange_guest}/{name}"
        else:
            mountpoint = f"/{name}"
        host.run(
            ["zpool", "create", "-f", "-O", f"mountpoint={mountpoint}", name, device],
            check=True,
            timeout=300,
        )
        return cls(host, name, mountpoint)

    def dataset(self, relname: str, *, encrypted: bool = False, **props: str) -> Dataset:
        """Create ``<pool>/<relname>`` with zfs properties given as keywords.

        ``encrypted=True`` adds aes-256-gcm with a raw hex key in a keyfile on the host.
        """
        name = f"{self.name}/{relname}"
        opts: list[str] = []
        for key, value in props.items():
            opts += ["-o", f"{key}={value}"]
        keyfile = None
        if encrypted:
            keyfile = (
                f"/root/zvkey-{name.replace('/', '_')}"
                if self.host.kind == "vm"
                else f"{self.host.exchange_guest}/key-{name.replace('/', '_')}"
            )
            self.host.run(
                ["sh", "-c", f"umask 077; cat > {keyfile}"], input=secrets.token_hex(32), check=True
            )
            opts += [
                "-o",
                "encryption=aes-256-gcm",
                "-o",
                "keyformat=hex",
                "-o",
                f"keylocation=file://{keyfile}",
            ]
        self.host.run(["zfs", "create", "-p", *opts, name], check=True, timeout=120)
        mnt = self.host.run(["zfs", "get", "-Hp", "-o", "value", "mountpoint", name], check=True)
        ds = Dataset(name, mnt.stdout.strip(), keyfile)
        self.datasets.append(ds)
        return ds

    def snapshot(self, dataset: Dataset | str, snap: str, recursive: bool = False) -> str:
        name = dataset.name if isinstance(dataset, Dataset) else dataset
        full = f"{name}@{snap}"
        self.host.run(["zfs", "snapshot", *(["-r"] if recursive else []), full], check=True)
        return full

    def sync(self) -> None:
        """Wait for the txg to reach disk: du under-reports until then."""
        self.host.run(["zpool", "sync", self.name], check=True, timeout=300)

    def destroy(self) -> None:
        self.host.run(["zpool", "destroy", "-f", self.name], timeout=300)
