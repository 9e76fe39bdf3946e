#!/bin/sh
# The send streams of tests/cold/test_zfs_receive_differential.py, written by plain `zfs send`
# as people write archives by hand.  Usage: chain_streams.sh POOL OUTDIR KEYFILE
#   POOL/a      recordsize=1M with a file of two records (large blocks active); @a1 and @a2
#               taken in one second; -L and non-L, -c, -i, -I, and a resume
#               stream after an interrupted `zfs receive -s`
#   POOL/b      encrypted: raw (-w) and plain sends
#   POOL/c      with a child, POOL/c/kid: -R and -R -I packages and per-dataset streams
# Snapshots are made in this order, which is the history the test holds the model to.
set -eu
P=$1
X=$2
KEY=$3
mkdir -p "$X"

zfs create -o recordsize=1M -o compression=off "$P/a"
A=$(zfs get -H -o value mountpoint "$P/a")
head -c 1200000 /dev/urandom >"$A/big"
echo zero >"$A/f0"
zfs snapshot "$P/a@a0"
echo one >"$A/f1"
# two snapshots in the same second, as sanoid's hourly/daily/monthly in one run (OpenZFS 2.1
# refuses `zfs snapshot ds@x ds@y` for one dataset, and one txg cannot hold two snapshots
# of it): retried until their creation times agree
for try in 1 2 3 4 5; do
    zfs snapshot "$P/a@a1"
    zfs snapshot "$P/a@a2"
    [ "$(zfs get -Hp -o value creation "$P/a@a1")" = "$(zfs get -Hp -o value creation "$P/a@a2")" ] && break
    zfs destroy "$P/a@a2"
    zfs destroy "$P/a@a1"
done
echo three >"$A/f3"
zfs snapshot "$P/a@a3"
head -c 200000 /dev/urandom | dd of="$A/big" bs=1 seek=300000 conv=notrunc status=none
zfs snapshot "$P/a@a4"

zfs create -o encryption=aes-256-gcm -o keyformat=hex -o "keylocation=file://$KEY" "$P/b"
B=$(zfs get -H -o value mountpoint "$P/b")
for s in b0 b1 b2; do echo "$s" >"$B/$s"; zfs snapshot "$P/b@$s"; done

zfs create "$P/c"
zfs create "$P/c/kid"
C=$(zfs get -H -o value mountpoint "$P/c")
for s in c0 c1 c2; do
    echo "$s" >"$C/$s"
    echo "kid $s" >"$C/kid/$s"
    zfs snapshot -r "$P/c@$s"
done

send() { # NAME ARGS...: one stream file
    name=$1
    shift
    zfs send "$@" >"$X/$name"
}
send a0.full "$P/a@a0"
send a0.full-L -L "$P/a@a0"
send a0.full-c -c "$P/a@a0"
send a2.full "$P/a@a2"
send a2.full-L -L "$P/a@a2"
send a0a1.inc -i @a0 "$P/a@a1"
send a0a1.inc-L -L -i @a0 "$P/a@a1"
send a1a2.inc -i @a1 "$P/a@a2"
send a1a2.inc-L -L -i @a1 "$P/a@a2"
send a0a2.inc -i @a0 "$P/a@a2"
send a2a3.inc -i @a2 "$P/a@a3"
send a2a3.inc-L -L -i @a2 "$P/a@a3"
send a3a4.inc -i @a3 "$P/a@a4"
send a3a4.inc-L -L -i @a3 "$P/a@a4"
send a0a4.pkg-L -L -I @a0 "$P/a@a4"
send a1a4.pkg -I @a1 "$P/a@a4"

send b0.full-w -w "$P/b@b0"
send b0.full "$P/b@b0"
send b0b1.inc-w -w -i @b0 "$P/b@b1"
send b0b1.inc -i @b0 "$P/b@b1"
send b1b2.inc-w -w -i @b1 "$P/b@b2"
send b1b2.inc -i @b1 "$P/b@b2"
send b0b2.pkg-w -w -I @b0 "$P/b@b2"

send c1.R -R "$P/c@c1"
send c1c2.RI -R -I @c1 "$P/c@c2"
send c0.full "$P/c@c0"
send c0c1.inc -i @c0 "$P/c@c1"
send c1.full "$P/c@c1"
send c2.full "$P/c@c2"
send c1c2.inc -i @c1 "$P/c@c2"
send kid1.full "$P/c/kid@c1"
send kid1kid2.inc -i @c1 "$P/c/kid@c2"

# a send cut short, received with -s, then resumed from its token: the resume stream
head -c 400000 "$X/a0.full" | zfs receive -s "$P/cut" 2>/dev/null && exit 3
token=$(zfs get -H -o value receive_resume_token "$P/cut")
[ "$token" != "-" ]
zfs send -t "$token" >"$X/a0.resume"
zfs receive -A "$P/cut"

zfs list -Hp -t snapshot -o name,guid -r "$P" >"$X/guids.tsv"
