#!/bin/sh
# Source pool for the send-stream fixtures (run in the VM by tools/zfsvm/streams.py).
# Usage: stream_content.sh DEVICE KEYFILE
# Content is small and deterministic; each item exercises one kind of stream record:
# small files (OBJECT/WRITE), a multi-record file (>128K), a sparse file (FREE),
# an xattr with xattr=sa (system attributes), a tiny compressible file that ZFS
# stores as an embedded block pointer (WRITE_EMBEDDED with -e), a child dataset
# (-R), and an encrypted dataset (raw -w sends).
set -eu
DEV=$1
KEY=$2

zpool create -f -O mountpoint=/fixtures -O compression=lz4 -O xattr=sa -O acltype=posix zv "$DEV"
zfs create zv/fs
zfs create zv/fs/child
zfs create -o encryption=aes-256-gcm -o keyformat=hex -o "keylocation=file://$KEY" zv/enc

cd /fixtures/fs
for i in 1 2 3 4 5; do printf 'small file %s\n' "$i" >"small$i"; done
yes 'zverify send-stream fixture: a file larger than one 128K record' | head -c 300000 >big
truncate -s 1M sparse
printf 'island in a sparse file' | dd of=sparse bs=1 seek=524288 conv=notrunc status=none
# 3000 identical bytes compress to a few dozen: small enough for an embedded block pointer.
head -c 3000 /dev/zero | tr '\000' z >embedded
setfattr -n user.fixture -v 'an xattr stored as a system attribute' small1
mkdir dir
echo nested >dir/nested
ln -s small1 link
ln small2 hardlink2
echo 'child dataset file' >child/file
echo secret >/fixtures/enc/secret
zfs snapshot -r zv@s1

echo changed >small3
rm small4
echo added >small6
printf 'CHANGED' | dd of=big bs=1 seek=150000 conv=notrunc status=none
echo 'child dataset change' >>child/file
echo secret2 >/fixtures/enc/secret2
zfs snapshot -r zv@s2

# Nothing changes between s2 and s3: the empty incremental.
zfs snapshot -r zv@s3
zpool sync zv
