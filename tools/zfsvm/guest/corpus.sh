#!/bin/bash
# A replay of the workloads of OpenZFS's send/receive test suite
# (tests/zfs-tests/tests/functional/rsend/, cli_root/zfs_send, zfs_receive,
# redacted_send), written here; run in the VM by tools/zfsvm/corpus.py.
# Usage: [STEPS="step ..."] corpus.sh DEVICE OUTDIR
# For every stream it writes OUTDIR/ID.zs, OUTDIR/ID.list (the source pool's
# `zfs list -Hp -o name,guid,createtxg -t all`), OUTDIR/ID.err (receive stderr)
# and one line of OUTDIR/manifest.tsv:
#   id  scenario  fault  derived_from  send-argv  receive-argv  receive-status
# fault says why a receive may be refused: "none", a damage done to the bytes
# (truncated, bitflip: the reason is in the stream), or a receive context that
# does not fit the stream (wrongbase, exists, nobase, nokey, toggle...).
# Data is small and mostly compressible: the corpus is committed.
set -u
DEV=$1
OUT=$2
P=src
T=dst
N=0
mkdir -p "$OUT"
: >"$OUT/manifest.tsv"

zpool create -f -O mountpoint=/corpus -O compression=off "$P" "$DEV" || exit 3
zfs create "$P/$T" || exit 3

# Compressible but not all alike: a line numbered from a seed, repeated.
fill() { # path bytes seed
	local i=0
	while [ $i -lt 64 ]; do printf 'corpus %s line %s\n' "$3" $i; i=$((i + 1)); done |
		yes "$(cat)" 2>/dev/null | head -c "$2" >"$1"
}

new_id() { N=$((N + 1)); ID=$(printf 's%04d' $N); }

# snd SCENARIO SEND-ARGS... : send to ID.zs; sets ID (empty if the send failed).
snd() {
	local scen=$1; shift
	new_id
	if ! zfs send "$@" >"$OUT/$ID.zs" 2>"$OUT/$ID.serr"; then
		printf '%s\t%s\t%s\n' "$ID" "$scen" "$*" >>"$OUT/send-failed.tsv"
		rm -f "$OUT/$ID.zs"
		ID=
		return 1
	fi
	zfs list -Hp -o name,guid,createtxg -t all -r "$P" >"$OUT/$ID.list"
	SCEN=$scen; SARGV="zfs send $*"; FAULT=none; FROM=-
	rm -f "$OUT/$ID.serr"
}

# rcv RECEIVE-ARGS... : receive the current ID's stream, record the outcome.
rcv() {
	[ -n "$ID" ] || return 0
	zfs receive "$@" <"$OUT/$ID.zs" >/dev/null 2>"$OUT/$ID.err"
	local rc=$?
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ID" "$SCEN" "$FAULT" "$FROM" "$SARGV" \
		"zfs receive $*" $rc >>"$OUT/manifest.tsv"
	return $rc
}

# fault KIND : the next ID is a damaged copy of the current one (or the same
# bytes received into another context); the caller then calls rcv.
derive() { # KIND HOW
	[ -n "$ID" ] || return 1
	local parent=$ID size
	size=$(stat -c %s "$OUT/$parent.zs")
	new_id
	cp "$OUT/$parent.list" "$OUT/$ID.list"
	case $2 in
	trunc-half) head -c $((size / 2)) "$OUT/$parent.zs" >"$OUT/$ID.zs" ;;
	trunc-end) head -c $((size - 100)) "$OUT/$parent.zs" >"$OUT/$ID.zs" ;;
	trunc-hdr) head -c 200 "$OUT/$parent.zs" >"$OUT/$ID.zs" ;;
	flip-*)
		local at=$((size * ${2#flip-} / 100))
		[ $at -lt 400 ] && at=400
		[ $at -ge $size ] && at=$((size - 1))
		cp "$OUT/$parent.zs" "$OUT/$ID.zs"
		printf '\x5a' | dd of="$OUT/$ID.zs" bs=1 seek=$at conv=notrunc status=none
		;;
	same) cp "$OUT/$parent.zs" "$OUT/$ID.zs" ;;
	esac
	FAULT=$1; FROM=$parent
}

fresh() { zfs destroy -r "$P/$T/$1" >/dev/null 2>&1; true; }

# A full of the first snapshot into a fresh target, then each next snapshot as an incremental
# from the one before, received in turn: the chain most of the suite's tests send.
send_chain() { # STEP TARGET "SEND-FLAGS" DATASET SNAP...
	local step=$1 target=$2 flags=$3 ds=$4 prev=$5 snap
	shift 5
	# shellcheck disable=SC2086
	snd "$step" $flags "$ds@$prev" && { fresh "$target"; rcv "$P/$T/$target"; }
	for snap; do
		# shellcheck disable=SC2086
		snd "$step" $flags -i "@$prev" "$ds@$snap" && rcv "$P/$T/$target"
		prev=$snap
	done
}

# Every stream of a full/incremental pair, plus damaged copies refused on receive.
damage_set() { # TARGET-DATASET  (current ID is a full stream)
	local keep=$ID scen=$SCEN sargv=$SARGV
	for how in trunc-half trunc-end trunc-hdr flip-30 flip-70; do
		ID=$keep
		derive "${how%%-*}" "$how" || return
		SCEN=$scen; SARGV=$sargv
		fresh "$1"; rcv "$P/$T/$1"
	done
	ID=$keep
}

# --- setup_test_model: a tree of filesystems, a volume, clones, properties ---
model() {
	local m=$P/model
	zfs create -o compression=lz4 "$m"
	zfs create "$m/fs1"; zfs create -o recordsize=32k "$m/fs1/fs2"
	zfs create -V 2M -o volblocksize=8k "$m/vol"
	fill /corpus/model/fs1/a 40000 a; fill /corpus/model/fs1/fs2/b 70000 b
	dd if=/corpus/model/fs1/a of=/dev/zvol/$m/vol bs=8k count=4 conv=notrunc status=none 2>/dev/null
	zfs snapshot -r "$m@m1"
	zfs clone -o atime=off "$m/fs1@m1" "$m/clone1"
	fill /corpus/model/clone1/c 20000 c
	zfs set user:tag=one "$m/fs1"
	zfs snapshot -r "$m@m2"
	fill /corpus/model/fs1/a 50000 a2; rm /corpus/model/fs1/fs2/b
	zfs set user:tag=two "$m/fs1"; zfs set compression=gzip "$m/fs1/fs2"
	zfs snapshot -r "$m@m3"
	zfs destroy "$m/clone1@m2" 2>/dev/null
	zfs snapshot -r "$m@m4"
	local f
	for f in "" -p -c -e -L -Lce; do
		snd model -R $f "$m@m1" && { fresh rm1; rcv -F "$P/$T/rm1"; }
		[ "$f" = "" ] && damage_set rmd
		snd model -R $f -I "$m@m1" "$m@m3" && rcv -F "$P/$T/rm1"
		snd model -R $f -i "$m@m3" "$m@m4" && rcv -F "$P/$T/rm1"
		send_chain model f1 "$f" "$m/fs1" m2 m3
	done
	# -I package whose base the target lacks; incremental onto a fresh target.
	snd model -I "$m/fs1@m2" "$m/fs1@m4" && { FAULT=nobase; fresh nb; rcv "$P/$T/nb"; }
	snd model -i @m1 "$m/fs1/fs2@m3" && { FAULT=nobase; fresh nb2; rcv "$P/$T/nb2"; }
	# Full stream into an existing dataset without -F.
	snd model "$m/fs1/fs2@m1" && { fresh ex; zfs create "$P/$T/ex"; FAULT=exists; rcv "$P/$T/ex"; }
	# Incremental onto a target whose last snapshot is not the stream's base.
	snd model "$m/fs1/fs2@m1" && { fresh wb; rcv "$P/$T/wb"; }
	snd model -i @m3 "$m/fs1/fs2@m4" && { FAULT=wrongbase; rcv "$P/$T/wb"; }
	# The same incremental received twice: the second finds the snapshot there.
	snd model "$m/fs1@m1" && { fresh tw; rcv "$P/$T/tw"; }
	snd model -i @m1 "$m/fs1@m2" && { rcv "$P/$T/tw"; }
	derive twice same && rcv "$P/$T/tw"
	# The target changed after its snapshot: refused without -F.
	snd model -i @m2 "$m/fs1@m3" && {
		zfs set mountpoint=/corpus/tw "$P/$T/tw"; touch /corpus/tw/changed; zfs snapshot "$P/$T/tw@local"
		FAULT=diverged; rcv "$P/$T/tw"
	}
	# A volume, full and incremental.
	snd model "$m/vol@m1" && { fresh v; rcv "$P/$T/v"; }
	snd model -i @m1 "$m/vol@m4" && rcv "$P/$T/v"
	# Bookmarks as the incremental source.
	zfs bookmark "$m/fs1@m2" "$m/fs1#b2"
	snd model -i "$m/fs1#b2" "$m/fs1@m4" && { fresh bk; FAULT=nobase; rcv "$P/$T/bk"; }
	snd model "$m/fs1@m2" && { fresh bk2; rcv "$P/$T/bk2"; }
	snd model -i "$m/fs1#b2" "$m/fs1@m4" && rcv "$P/$T/bk2"
	# Received with properties overridden and excluded (zfs_receive -o / -x).
	snd model -p "$m/fs1@m3" && { fresh po; rcv -o user:tag=over -x compression "$P/$T/po"; }
	# A clone sent as an incremental from its origin.
	snd model -i "$m/fs1@m1" "$m/clone1@m3" && { fresh cl; FAULT=nobase; rcv "$P/$T/cl"; }
}

# --- churn_files / rand_set_prop: changes across several snapshots ---
churn() {
	local c=$P/churn i
	zfs create -o recordsize=16k "$c"
	for i in $(seq 1 12); do fill "/corpus/churn/f$i" $((i * 3000)) "$i"; done
	zfs snapshot "$c@c0"
	for round in 1 2 3 4; do
		for i in $(seq $round 3 12); do
			case $(((i + round) % 4)) in
			0) rm -f "/corpus/churn/f$i" ;;
			1) fill "/corpus/churn/f$i" $((i * 2500 + round)) "r$round" ;;
			2) truncate -s $((i * 1000)) "/corpus/churn/f$i" 2>/dev/null ;;
			3) mkdir -p "/corpus/churn/d$round"; fill "/corpus/churn/d$round/g$i" 5000 "g$i" ;;
			esac
		done
		case $round in
		1) zfs set compression=lz4 "$c" ;; 2) zfs set recordsize=64k "$c" ;;
		3) zfs set checksum=sha256 "$c" ;; 4) zfs set compression=gzip-3 "$c" ;;
		esac
		zfs snapshot "$c@c$round"
	done
	snd churn "$c@c0" && { fresh ch; rcv "$P/$T/ch"; }
	damage_set chd
	for round in 1 2 3 4; do
		snd churn -i "@c$((round - 1))" "$c@c$round" && rcv "$P/$T/ch"
		[ $round = 2 ] && derive trunc trunc-half && { fresh chx; rcv "$P/$T/ch"; }
	done
	snd churn -c -I @c0 "$c@c4" && { fresh ch2; snd churn -c "$c@c0" && rcv "$P/$T/ch2"; }
	snd churn -c -I @c0 "$c@c4" && rcv "$P/$T/ch2"
	derive flip flip-50 && { fresh ch3; rcv -F "$P/$T/ch2"; }
	snd churn -e -I @c1 "$c@c3" && { FAULT=nobase; fresh ch4; rcv "$P/$T/ch4"; }
}

# --- send_realloc_files / send_realloc_dnode_size: object numbers reused ---
realloc() {
	local r=$P/realloc i
	zfs create -o dnodesize=legacy -o recordsize=8k "$r"
	for i in $(seq 1 30); do fill "/corpus/realloc/o$i" $((i * 700)) "o$i"; done
	zfs snapshot "$r@r0"
	snd realloc "$r@r0" && { fresh ra; rcv "$P/$T/ra"; }
	for k in 1 2 3; do
		rm -f /corpus/realloc/o*
		case $k in
		1) zfs set recordsize=32k "$r" ;;
		2) zfs set dnodesize=auto "$r" ;;
		3) zfs set dnodesize=4k "$r"; zfs set xattr=sa "$r" ;;
		esac
		for i in $(seq 1 30); do
			fill "/corpus/realloc/o$i" $(((31 - i) * 900 + k)) "k$k$i"
			[ $k = 3 ] && setfattr -n user.x -v "$(printf 'v%.0s' $(seq 1 $i))" "/corpus/realloc/o$i"
		done
		zfs snapshot "$r@r$k"
		snd realloc -i "@r$((k - 1))" "$r@r$k" && rcv "$P/$T/ra"
		snd realloc -L -e -i "@r$((k - 1))" "$r@r$k" && { FAULT=nobase; fresh rb; rcv "$P/$T/rb"; }
	done
	snd realloc -I @r0 "$r@r3" && { fresh rc; snd realloc "$r@r0" && rcv "$P/$T/rc"; }
	snd realloc -I @r0 "$r@r3" && rcv "$P/$T/rc"
	damage_set rd
}

# --- send_hole_birth: holes punched, files extended and shrunk ---
holes() {
	local h=$P/holes
	zfs create -o recordsize=4k -o compression=lz4 "$h"
	truncate -s 256k /corpus/holes/sparse
	printf 'head' | dd of=/corpus/holes/sparse bs=1 conv=notrunc status=none
	printf 'tail' | dd of=/corpus/holes/sparse bs=1 seek=200000 conv=notrunc status=none
	fill /corpus/holes/dense 100000 dense
	zfs snapshot "$h@h0"
	dd if=/dev/zero of=/corpus/holes/dense bs=4k seek=5 count=8 conv=notrunc status=none
	truncate -s 20000 /corpus/holes/sparse
	truncate -s 1M /corpus/holes/sparse
	zfs snapshot "$h@h1"
	fallocate -p -o 8192 -l 40960 /corpus/holes/dense 2>/dev/null
	fill /corpus/holes/late 9000 late
	zfs snapshot "$h@h2"
	local f
	for f in "" -c -e -Lc; do
		send_chain holes ho "$f" "$h" h0 h1 h2
	done
	damage_set hd
}

# --- send_spill_block: xattr=sa whose attributes spill out of the dnode ---
spill() {
	local s=$P/spill i
	zfs create -o xattr=sa -o dnodesize=legacy "$s"
	for i in $(seq 1 12); do
		fill "/corpus/spill/f$i" 1000 "sp$i"
		setfattr -n user.big -v "$(head -c $((i * 60)) /dev/zero | tr '\000' s)" "/corpus/spill/f$i"
	done
	zfs snapshot "$s@p0"
	for i in $(seq 1 12 | sed -n '1~2p'); do
		setfattr -x user.big "/corpus/spill/f$i"
	done
	for i in $(seq 2 2 12); do
		setfattr -n user.more -v "$(head -c 400 /dev/zero | tr '\000' m)" "/corpus/spill/f$i"
	done
	zfs snapshot "$s@p1"
	zfs set dnodesize=2k "$s"
	for i in $(seq 13 20); do
		fill "/corpus/spill/f$i" 500 "sq$i"
		setfattr -n user.big -v "$(head -c 1500 /dev/zero | tr '\000' q)" "/corpus/spill/f$i"
	done
	zfs snapshot "$s@p2"
	local f
	for f in "" -c -L; do
		send_chain spill sp "$f" "$s" p0 p1 p2
	done
	damage_set sd
}

# --- send-c_*: compression algorithms and sizes, -c with and without -L/-e ---
compress() {
	local a
	for a in lz4 gzip gzip-9 zle zstd lzjb; do
		zfs create -o compression=$a -o recordsize=128k "$P/cz-$a" 2>/dev/null || continue
		fill "/corpus/cz-$a/text" 300000 "$a"
		head -c 2000 /dev/zero | tr '\000' e >"/corpus/cz-$a/tiny"
		zfs snapshot "$P/cz-$a@z0"
		fill "/corpus/cz-$a/more" 40000 "m$a"
		zfs snapshot "$P/cz-$a@z1"
		local f
		for f in "" -c -Lc -ec -Lce; do
			send_chain compress "c$a" "$f" "$P/cz-$a" z0 z1
		done
		# receive -o compression=off of a -c stream (send-c_recv_lz4_disabled shape).
		snd compress -c "$P/cz-$a@z0" && { fresh "d$a"; rcv -o compression=off "$P/$T/d$a"; }
	done
}

# --- send-L_toggle and large blocks ---
large() {
	local l=$P/large
	zfs create -o recordsize=1M -o compression=lz4 "$l"
	fill /corpus/large/big 1500000 big
	zfs snapshot "$l@l0"
	fill /corpus/large/big2 300000 big2
	zfs snapshot "$l@l1"
	snd large -L "$l@l0" && { fresh lg; rcv "$P/$T/lg"; }
	snd large -i @l0 "$l@l1" && { FAULT=toggle; rcv "$P/$T/lg"; }
	snd large -L -i @l0 "$l@l1" && rcv "$P/$T/lg"
	snd large "$l@l0" && { fresh lh; rcv "$P/$T/lh"; }
	snd large -L -i @l0 "$l@l1" && { FAULT=toggle; rcv "$P/$T/lh"; }
	snd large -Lc "$l@l0" && damage_set lx
	zfs set recordsize=8k "$l"; fill /corpus/large/small 30000 sm; zfs snapshot "$l@l2"
	snd large -L -i @l1 "$l@l2" && rcv "$P/$T/lg"
}

# --- send_encrypted_*: raw sends, key handling ---
encrypted() {
	local e=$P/enc
	printf '%s' 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef >/root/corpus.key
	zfs create -o encryption=aes-256-gcm -o keyformat=hex -o keylocation=file:///root/corpus.key "$e"
	zfs create "$e/child"
	fill /corpus/enc/f 60000 enc; fill /corpus/enc/child/g 30000 encc
	zfs snapshot -r "$e@e0"
	fill /corpus/enc/f2 20000 enc2
	zfs snapshot -r "$e@e1"
	zfs create -o encryption=aes-128-ccm -o keyformat=hex -o keylocation=file:///root/corpus.key "$P/enc2"
	fill /corpus/enc2/x 10000 x; zfs snapshot "$P/enc2@e0"
	snd encrypted -w "$e@e0" && { fresh en; rcv "$P/$T/en"; }
	damage_set end
	snd encrypted -w -i @e0 "$e@e1" && rcv "$P/$T/en"
	snd encrypted -w -R "$e@e1" && { fresh enr; rcv "$P/$T/enr"; }
	snd encrypted -w -c "$P/enc2@e0" && { fresh en2; rcv "$P/$T/en2"; }
	# A non-raw send of an encrypted dataset received into a plain one.
	snd encrypted "$e@e0" && { fresh ep; rcv "$P/$T/ep"; }
	snd encrypted -i @e0 "$e@e1" && rcv "$P/$T/ep"
	# A raw incremental onto a non-raw-received base: refused.
	snd encrypted -w -i @e0 "$e@e1" && { FAULT=wrongbase; rcv "$P/$T/ep"; }
	# A raw stream received below an encrypted parent / with an override refused.
	snd encrypted -w "$e/child@e0" && { fresh ec; rcv "$P/$T/ec"; }
	snd encrypted -w "$e@e0" && { fresh eo; FAULT=badprop; rcv -o encryption=on "$P/$T/eo"; }
	snd encrypted -w -p "$e@e1" && { fresh epp; rcv "$P/$T/epp"; }
}

# --- send_freeobjects and many small objects removed ---
freeobj() {
	local o=$P/freeobj i
	zfs create "$o"
	mkdir /corpus/freeobj/d
	for i in $(seq 1 200); do printf 'o%s\n' $i >/corpus/freeobj/d/$i; done
	zfs snapshot "$o@o0"
	rm -f /corpus/freeobj/d/1[0-9]*
	zfs snapshot "$o@o1"
	for i in $(seq 300 340); do printf 'n%s\n' $i >/corpus/freeobj/d/$i; done
	zfs snapshot "$o@o2"
	snd freeobj "$o@o0" && { fresh fo; rcv "$P/$T/fo"; }
	snd freeobj -i @o0 "$o@o1" && rcv "$P/$T/fo"
	snd freeobj -i @o1 "$o@o2" && rcv "$P/$T/fo"
	derive flip flip-90 && { FROM=$FROM; rcv -F "$P/$T/fo"; }
	snd freeobj -I @o0 "$o@o2" && damage_set fd
}

# --- send_holds (-h) and zfs_send-b (received properties only) ---
holds_backup() {
	local d=$P/hold
	zfs create -o user:a=1 "$d"
	fill /corpus/hold/f 8000 hold
	zfs snapshot "$d@h0"; zfs hold keep "$d@h0"
	zfs snapshot "$d@h1"; zfs hold keep2 "$d@h1"
	snd holds -h "$d@h0" && { fresh hh; rcv "$P/$T/hh"; }
	snd holds -h -i @h0 "$d@h1" && rcv "$P/$T/hh"
	snd holds -h -R "$d@h1" && { fresh hr; rcv "$P/$T/hr"; }
	# zfs_send-b: receive with a property, then send only received properties.
	snd backup -p "$d@h0" && { fresh rb; rcv -o user:b=2 "$P/$T/rb"; }
	zfs set user:c=3 "$P/$T/rb"
	snd backup -b "$P/$T/rb@h0" && { fresh rb2; rcv "$P/$T/rb2"; }
	snd backup -b -p "$P/$T/rb@h0" && { fresh rb3; rcv "$P/$T/rb3"; }
}

# --- rsend_019..024 and send_partial_dataset: interrupted receives, resume tokens ---
resume() {
	local s=$P/churn base tok
	for cut in 30 60 90; do
		snd resume "$s@c2" || continue
		base=$ID
		local size; size=$(stat -c %s "$OUT/$base.zs")
		fresh rs$cut
		derive trunc "trunc-half" || continue
		head -c $((size * cut / 100)) "$OUT/$base.zs" >"$OUT/$ID.zs"
		rcv -s "$P/$T/rs$cut"
		tok=$(zfs get -H -o value receive_resume_token "$P/$T/rs$cut")
		[ "$tok" = "-" ] && continue
		# send_partial_dataset: the partial state sent with --saved.
		snd resume --saved "$P/$T/rs$cut" && { fresh sv$cut; rcv -s "$P/$T/sv$cut"; }
		snd resume -t "$tok" || continue
		local resumed=$ID
		# The resume stream with no partial state to complete.
		derive nopartial same && { fresh rn$cut; rcv -s "$P/$T/rn$cut"; }
		ID=$resumed; SCEN=resume; SARGV="zfs send -t $tok"; FAULT=none; FROM=-
		[ $cut = 60 ] && { derive trunc trunc-end && rcv -s "$P/$T/rs$cut"; ID=$resumed; FAULT=none; FROM=-; }
		rcv -s "$P/$T/rs$cut"
	done
	# An incremental interrupted and resumed.
	snd resume "$s@c0" && { fresh ri; rcv "$P/$T/ri"; }
	snd resume -i @c0 "$s@c2" || return
	derive trunc trunc-half && rcv -s "$P/$T/ri"
	tok=$(zfs get -H -o value receive_resume_token "$P/$T/ri")
	[ "$tok" != "-" ] && snd resume -t "$tok" && rcv -s "$P/$T/ri"
	# A resumed raw send.
	snd resume -w "$P/enc@e1" && {
		derive trunc trunc-half && { fresh rw; rcv -s "$P/$T/rw"; }
		tok=$(zfs get -H -o value receive_resume_token "$P/$T/rw")
		[ "$tok" != "-" ] && snd resume -t "$tok" && rcv -s "$P/$T/rw"
	}
}

# --- redacted_send basics ---
redacted() {
	local r=$P/red
	zfs create "$r"
	fill /corpus/red/keep 20000 keep; fill /corpus/red/secret 20000 secret
	zfs snapshot "$r@base"
	zfs clone "$r@base" "$P/redclone"
	rm /corpus/redclone/secret
	fill /corpus/redclone/keep 5000 changed
	zfs snapshot "$P/redclone@snap"
	zfs redact "$r@base" book1 "$P/redclone@snap" || return
	snd redacted --redact book1 "$r@base" && { fresh rd; rcv "$P/$T/rd"; }
	damage_set rdd
	fill /corpus/red/later 7000 later
	zfs snapshot "$r@later"
	snd redacted --redact book1 -i "$r@base" "$r@later" && { FAULT=nobase; fresh rd2; rcv "$P/$T/rd2"; }
	snd redacted -i "$r#book1" "$r@later" && { FAULT=redacted-base; rcv "$P/$T/rd"; }
	snd redacted "$r@base" && { fresh rd3; rcv "$P/$T/rd3"; }
	snd redacted -i "$r#book1" "$r@later" && rcv "$P/$T/rd3"
}

# --- receive of an empty or foreign stream (zfs_receive shapes) ---
oddities() {
	snd oddity "$P/churn@c4" || return
	derive empty same && { : >"$OUT/$ID.zs"; fresh oe; rcv "$P/$T/oe"; }
	derive garbage same && { head -c 4096 /dev/zero | tr '\000' G >"$OUT/$ID.zs"; fresh og; rcv "$P/$T/og"; }
	# -n (dry run) and -u / -d / -e receive forms.
	snd oddity "$P/churn@c4" && { fresh od; zfs create "$P/$T/od"; rcv -d "$P/$T/od"; }
	snd oddity "$P/churn@c4" && { fresh oe2; zfs create "$P/$T/oe2"; rcv -e -u "$P/$T/oe2"; }
	snd oddity "$P/churn@c4" && { fresh on; rcv -n -v "$P/$T/on"; }
	# A snapshot name on the receive side.
	snd oddity "$P/churn@c4" && { fresh os; rcv "$P/$T/os@renamed"; }
}

# Cheap and varied steps first: under TCG a run may be cut short (corpus.py packs what a
# partial run recorded). STEPS in the environment picks a subset.
for step in ${STEPS:-large holes spill realloc churn encrypted resume freeobj holds_backup redacted oddities compress model}; do
	SECONDS=0
	$step
	printf '%s\t%s\n' "$step" "$SECONDS" >>"$OUT/timing.tsv"
done
zfs version | head -n 1 >"$OUT/version"
zpool destroy "$P"
