/*
 * zvstream.h — the C half of the ZFS send-stream validator.
 *
 * The scanner frames a send stream read from a file descriptor (file or
 * pipe) into 312-byte records and their payloads, replays the fletcher-4
 * running checksum exactly as a receiving kernel does, and hands back a few
 * *events*: every BEGIN (with its header and nvlist payload), every END
 * (with stored and recomputed checksums and the counters of the records
 * since the previous BEGIN/END), every problem (with the record index and
 * byte offset), periodic progress, and EOF.  Ordinary records never cross
 * into Python one by one; they only feed counters.
 *
 * What the scanner does NOT decide: whether BEGIN/END nest correctly,
 * whether GUIDs link up, what the feature flags mean.  That is Python's job
 * (zverify/sendstream/validate.py); the scanner only needs the framing rules, which
 * do not depend on the stream's structure.
 *
 * Memory is constant in the stream size: one read buffer (or one mapped
 * window of a regular file, see zv_stream.c) plus at most `nvlist_max` bytes
 * for a BEGIN payload.  Every length read from the stream
 * is bounded before it is used.  The scanner never prints and never exits.
 *
 * Threading contract: a zv_stream is used by one thread at a time.
 */
#ifndef ZVSTREAM_H
#define ZVSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "zvcore.h" /* ZV_OK, ZV_EDONE, ZV_EINVAL, ZV_ENOMEM */

#define ZV_DRR_SIZE 312          /* sizeof(dmu_replay_record_t), every release */
#define ZV_DRR_TRAILER_OFF 280   /* per-record checksum slot (all types but BEGIN) */
#define ZV_DRR_NTYPES 11         /* BEGIN..REDACT */
#define ZV_DRR_MAGIC 0x2F5BACBACULL

/* Record types (drr_type), values from include/sys/zfs_ioctl.h. */
enum zv_drr_type {
    ZV_DRR_BEGIN = 0,
    ZV_DRR_OBJECT = 1,
    ZV_DRR_FREEOBJECTS = 2,
    ZV_DRR_WRITE = 3,
    ZV_DRR_FREE = 4,
    ZV_DRR_END = 5,
    ZV_DRR_WRITE_BYREF = 6,
    ZV_DRR_SPILL = 7,
    ZV_DRR_WRITE_EMBEDDED = 8,
    ZV_DRR_OBJECT_RANGE = 9,
    ZV_DRR_REDACT = 10,
};

/* Hard bounds on lengths read from the stream (a bigger value is damage). */
#define ZV_MAX_BLOCK (16ULL << 20)        /* SPA_MAXBLOCKSIZE: WRITE / SPILL */
#define ZV_MAX_BONUS (64ULL << 10)        /* OBJECT bonus buffer, well above DN_MAX_BONUS_LEN */
#define ZV_MAX_EMBEDDED 112               /* BPE_PAYLOAD_SIZE */
#define ZV_MAX_BEGIN_PAYLOAD (256ULL << 20) /* the kernel's own cap on a BEGIN nvlist */

enum zv_sevent_kind {
    ZV_SEV_BEGIN = 1,    /* a BEGIN record, header + payload (if kept) */
    ZV_SEV_END = 2,      /* an END record, checksums + segment counters */
    ZV_SEV_PROBLEM = 3,  /* something wrong at (offset, record) */
    ZV_SEV_PROGRESS = 4, /* `bytes` consumed so far; nothing else */
    ZV_SEV_EOF = 5,      /* end of input (clean or not); last event */
};

/* Problem codes.  Fatal ones stop the framing (nothing after can be trusted). */
enum zv_sproblem {
    ZV_SP_EMPTY = 1,          /* fatal: no bytes at all */
    ZV_SP_NOT_STREAM = 2,     /* fatal: first record has no BEGIN magic in either byte order */
    ZV_SP_TRUNC_HEADER = 3,   /* fatal: EOF inside a 312-byte record; detail[0] = bytes present */
    ZV_SP_TRUNC_PAYLOAD = 4,  /* fatal: EOF inside a payload; detail[0] = expected, [1] = present */
    ZV_SP_BAD_TYPE = 5,       /* fatal: detail[0] = record type value */
    ZV_SP_BAD_LENGTH = 6,     /* fatal: detail[0] = payload length, detail[1] = bound */
    ZV_SP_CKSUM_RECORD = 7,   /* per-record trailer differs; span = bytes it covers since the last good check */
    ZV_SP_CKSUM_END = 8,      /* END's drr_checksum differs from the running checksum */
    ZV_SP_BEGIN_MAGIC = 9,    /* a later BEGIN without the magic in the stream's byte order */
    ZV_SP_TOGUID = 10,        /* a record's drr_toguid != its BEGIN's; detail[0] found, [1] expected */
    ZV_SP_IO = 11,            /* fatal: read() failed, or a page of a mapped file could not
                                 be read (err_no EIO; detail[0] = 1: the file was cut shorter
                                 than that page while it was scanned) */
    ZV_SP_NOMEM = 12,         /* a BEGIN payload could not be kept (out of memory): the scan
                                 goes on, but what the payload says cannot be checked */
    ZV_SP_RELAY = 13,         /* fatal: the relay could not hold (ENOMEM) or write (err_no)
                                 the verified bytes; detail[0] = bytes relayed until then */
    ZV_SP_ZEROS = 14,         /* fatal: a record header of zero bytes (no record is all zero):
                                 detail[0] = zero bytes from `offset` on (read in one go, not
                                 record by record), detail[1] = 1 if they run to the end */
    ZV_SP_RECORD = 15,        /* a record `zfs receive` refuses (or that cannot be proven
                                 receivable): detail[0] = enum zv_rule, detail[1] = the
                                 offending value, `object` = the object it names.  One per
                                 substream: the first such record (docs/design/sendstream.md) */
};

/*
 * The record rules (ZV_SP_RECORD): what OpenZFS 2.1's receive (module/zfs/dmu_recv.c)
 * refuses in one record, checked in O(1) per record.  Each value's comment names the
 * check it follows; zverify/sendstream/messages.py gives each its words.
 */
enum zv_rule {
    ZV_R_OBJECT_NUMBER = 1,  /* object 0 or >= DN_MAX_OBJECT (dnode_hold_impl: EINVAL) */
    ZV_R_UNDECLARED = 2,     /* full substream: a data record for an object no OBJECT
                                record declared before it (receive_write/free/spill:
                                dmu_object_info fails) */
    ZV_R_FORGOTTEN = 3,      /* as UNDECLARED, for an object older than the declared
                                objects kept (ZV_DECLARED_MAX): not proven, refused */
    ZV_R_WRITE_ORDER = 4,    /* WRITE before the previous WRITE's (object, offset)
                                (receive_process_write_record) */
    ZV_R_OBJ_TYPE = 5,       /* OBJECT drr_type NONE or not DMU_OT_IS_VALID (receive_object) */
    ZV_R_OBJ_BONUSTYPE = 6,  /* drr_bonustype not DMU_OT_IS_VALID */
    ZV_R_OBJ_BLKSZ = 7,      /* not a multiple of 512, < 512 or > 16 MiB */
    ZV_R_OBJ_DNSLOTS = 8,    /* > 32 (DNODE_MAX_SLOTS); 0 means 1 */
    ZV_R_OBJ_CHECKSUM = 9,   /* >= ZIO_CHECKSUM_FUNCTIONS */
    ZV_R_OBJ_COMPRESS = 10,  /* >= ZIO_COMPRESS_FUNCTIONS */
    ZV_R_OBJ_BONUSLEN = 11,  /* > DN_BONUS_SIZE(DNODE_MAX_SIZE) */
    ZV_R_OBJ_RAW_FIELDS = 12, /* non-raw: raw_bonuslen/nblkptr/indblkshift/nlevels set;
                                 raw: nlevels, indblkshift or nblkptr past their maximum */
    ZV_R_OBJ_FLAGS = 13,     /* non-raw: flags other than DRR_OBJECT_SPILL, or it without
                                the BEGIN's DRR_FLAG_SPILL_BLOCK */
    ZV_R_OVERFLOW = 14,      /* offset + length (FREEOBJECTS: firstobj + numobjs) wraps */
    ZV_R_WRITE_TYPE = 15,    /* WRITE drr_type not DMU_OT_IS_VALID */
    ZV_R_EMBEDDED = 16,      /* WRITE_EMBEDDED: etype or compression out of range, or raw */
    ZV_R_SPILL_LENGTH = 17,  /* SPILL length < 512 or > 16 MiB */
    ZV_R_OBJSET_OBJECT = 18, /* an object type the BEGIN's objset type cannot hold */
    ZV_R_ZAP_OFFSET = 19,    /* full: a WRITE into a ZAP past where its blocks can be */
    ZV_R_NO_ROOT = 20,       /* full: object 1 (master node / zvol data) never declared */
    ZV_R_OBJECT_RANGE = 21,  /* OBJECT_RANGE misaligned or not raw; raw OBJECT outside it
                                (receive_object_range, receive_object) */
    ZV_R_OBJSET_TYPE = 22,   /* BEGIN objset type neither filesystem nor volume
                                (libzfs zfs_receive_one, dmu_recv_begin_check) */
    /* The rules below follow the record checks of OpenZFS master, commit 9b7642df
     * ("Harden recv record validation", after 2.4.4: module/zfs/dmu_recv.c
     * recv_check_drr_*), run by receive_read_record before a payload is read.  Releases
     * up to 2.4.4 make none of them in this form (messages.py says so). */
    ZV_R_WRITE_LSIZE = 23,     /* WRITE logical size < 512 or > 16 MiB */
    ZV_R_LARGE_BLOCKS = 24,    /* a block over 128 KiB without feature LARGE_BLOCKS */
    ZV_R_COMPRESSED_SIZE = 25, /* WRITE/SPILL compressed size 0 where needed, set where not,
                                  or over the logical size */
    ZV_R_COMPRESS_FEATURE = 26, /* a compressed payload or compression whose feature
                                   (COMPRESSED, LZ4, ZSTD) the BEGIN does not announce */
    ZV_R_COMPRESS_TYPE = 27,   /* WRITE/SPILL compression >= ZIO_COMPRESS_FUNCTIONS */
    ZV_R_WRITE_CHECKSUM = 28,  /* WRITE checksum >= ZIO_CHECKSUM_FUNCTIONS */
    ZV_R_OBJ_BONUS_PAIR = 29,  /* OBJECT bonus type and length that dnode_allocate refuses */
    ZV_R_OBJ_LARGE_DNODE = 30, /* OBJECT dn_slots > 1 without feature LARGE_DNODE */
    ZV_R_OBJ_BONUS_FIT = 31,   /* OBJECT bonus (raw: raw bonus) larger than its dnode holds */
    ZV_R_OBJ_PAST_MAX = 32,    /* OBJECT object + dn_slots past DN_MAX_OBJECT */
    ZV_R_SPILL_FIELDS = 33,    /* SPILL type not DMU_OT_IS_VALID */
    ZV_R_EMBED_SIZES = 34,     /* WRITE_EMBEDDED length/lsize/psize out of their bounds */
    ZV_R_EMBED_FEATURE = 35,   /* WRITE_EMBEDDED without feature EMBED_DATA */
};

#define ZV_DECLARED_MAX 4096 /* declared-object ranges kept per substream (zv_stream.c) */

/* Counters of the records since the previous BEGIN or END event. */
typedef struct zv_sseg {
    uint64_t count[ZV_DRR_NTYPES]; /* records by type */
    uint64_t records;              /* all records */
    uint64_t payload_bytes;        /* payload bytes (what follows the 312-byte headers) */
    uint64_t logical_bytes;        /* logical data: WRITE/WRITE_EMBEDDED/SPILL lengths */
    uint64_t stream_bytes;         /* header + payload bytes */
    uint64_t toguid_mismatches;    /* records whose drr_toguid is not their BEGIN's */
} zv_sseg;

typedef struct zv_sevent {
    int kind;                 /* enum zv_sevent_kind */
    int code;                 /* enum zv_sproblem, for PROBLEM */
    int fatal;                /* PROBLEM: framing stopped here */
    int err_no;               /* ZV_SP_IO */
    uint64_t offset;          /* byte offset of the record concerned (or of EOF) */
    uint64_t record;          /* index of that record, 0 = first */
    int rtype;                /* its drr_type, -1 if its header was not read */
    uint64_t span_start;      /* CKSUM_*: first byte the failed checksum covers since the last good check */
    uint64_t span_end;        /* CKSUM_*: one past the last such byte */
    uint64_t detail[2];       /* see enum zv_sproblem */
    uint64_t object;          /* ZV_SP_RECORD: the object the record names */
    uint64_t stored[4];       /* CKSUM_* and END: checksum found in the stream */
    uint64_t computed[4];     /* CKSUM_* and END: checksum recomputed */
    int end_ok;               /* END: drr_checksum == recomputed */
    int big_endian;           /* byte order of the stream (after the first BEGIN) */
    const unsigned char *header; /* BEGIN/END: the 312 raw bytes; valid until the next call */
    const unsigned char *payload; /* BEGIN: payload bytes if kept, else NULL */
    uint64_t payload_len;     /* BEGIN: drr_payloadlen */
    zv_sseg seg;              /* BEGIN/END/EOF: records since the previous BEGIN/END */
    uint64_t bytes;           /* bytes consumed so far */
} zv_sevent;

typedef struct zv_sopts {
    size_t buffer_size;       /* read buffer, bytes (>= 4096; 0 = 256 KiB) */
    size_t nvlist_max;        /* keep BEGIN payloads up to this size (0 = default 64 MiB) */
    uint64_t progress_every;  /* emit PROGRESS every this many bytes (0 = never) */
    int relay;                /* 1: write the verified bytes to relay_fd (see below) */
    int relay_fd;
    const unsigned char *prefix; /* bytes already read from fd (a peek at a pipe, which */
    size_t prefix_len;           /* cannot be read again): scanned first, copied at open */
} zv_sopts;

typedef struct zv_stream zv_stream;

/*
 * Start scanning fd (not closed by the scanner; read from its current
 * position).  opts may be NULL for defaults.
 * @return ZV_OK and *out, ZV_EINVAL (fd < 0, buffer too small), ZV_ENOMEM.
 */
int zv_stream_open(int fd, const zv_sopts *opts, zv_stream **out);

/*
 * Scan until the next event and fill *ev (pointers inside stay valid until
 * the next call).  Blocks on read(); a read interrupted by a signal (EINTR)
 * ends the scan with ZV_SP_IO so that the caller can handle the signal.
 * A regular file is mapped: the first call installs a SIGBUS handler (it
 * passes every fault outside the scanner's window on to the handler it
 * replaced), and a file is read() instead whenever another one has taken
 * SIGBUS since.
 * @return ZV_OK with an event, or ZV_EDONE after the EOF event was returned.
 */
int zv_stream_next(zv_stream *s, zv_sevent *ev);

/*
 * Stop framing: the rest of the input is only read (to count its bytes and to
 * report a read error), one buffer per call, with no event but PROGRESS and
 * EOF.  For a caller that knows nothing after this point can change its
 * verdict (data after the end of the stream).  Stops the relay.
 */
void zv_stream_skip_rest(zv_stream *s);

/* Bytes consumed so far (for progress bars between events). */
uint64_t zv_stream_bytes(const zv_stream *s);

void zv_stream_close(zv_stream *s);

/*
 * The relay: with opts->relay, every byte is written to relay_fd only after
 * it was verified, so that a consumer (`zfs receive`) never sees a byte of a
 * damaged record.  A record's bytes are held until the checksum that covers
 * them matched: the next record's trailer (a record with a zero trailer, as
 * in streams older than per-record checksums, is released on framing alone,
 * which is all the kernel checks either), an END's checksum, or a following
 * BEGIN.  Held bytes are written at the start of a later record (in
 * batches of 1 MiB, and all of them at a clean end of input), that is only
 * after the caller has seen every event of the record that verified them: a
 * caller that judges an event bad calls zv_stream_stop_relay() and nothing
 * more is ever written.  Any problem event stops the relay too.
 * Memory: the held bytes are at most 1 MiB and one record (a BEGIN payload
 * included).
 */
void zv_stream_stop_relay(zv_stream *s);

/* Bytes written to relay_fd so far. */
uint64_t zv_stream_relayed(const zv_stream *s);

/*
 * Sampling (zv_sample.c): prove a run of records in a window of a stream read
 * by range, with nothing known of the bytes before it.  Every record but a BEGIN
 * carries in its trailer the fletcher-4 state of its substream up to that
 * trailer; that state is all a walk needs to go on, and each following
 * trailer proves the bytes in between.  A boundary is found by trying every
 * offset: one counts only when the record after it matches the state its
 * trailer gave (256 bits: chance is no match), so a walk never starts on
 * bytes that merely look like a header.  It may start on the records of a
 * stream kept inside a file's data, though; those carry that stream's
 * drr_toguid, so a walk stops where the GUID changes outside a BEGIN
 * instead of going on as if one stream held both.
 */
enum zv_walk_start {
    ZV_WALK_SEARCH = 0, /* find the first record boundary in the window (either byte order) */
    ZV_WALK_BEGIN = 1,  /* the window starts with the stream's first BEGIN */
    ZV_WALK_AT = 2,     /* the window starts at a record boundary; st = state of the bytes before */
};

enum zv_walk_stop {
    ZV_WALK_WINDOW = 0,    /* the record at `next` runs past the window: go on from there with st */
    ZV_WALK_NO_ANCHOR = 1, /* SEARCH: no boundary could be proven in the window */
    ZV_WALK_MISMATCH = 2,  /* the checksum of the record at bad_at differs; next/st go on as if
                              its stored trailer were right (a walk from there that proves a
                              record shows the framing held: the bytes before were damaged) */
    ZV_WALK_LOST = 3,      /* the record at `next` has no valid type or length, or belongs to
                              another stream (its drr_toguid): framing lost */
};

typedef struct zv_swalk {
    /* in (st also out) */
    int start;             /* enum zv_walk_start */
    int big_endian;        /* AT: the stream's byte order; out: the one found */
    uint64_t base;         /* offset of the window's first byte in the stream */
    uint64_t st[4];        /* AT: state at the window's start; out: state at `next` */
    uint64_t toguid;       /* AT: the substream's drr_toguid (0: between substreams, where only
                              a BEGIN may come); out: at `next` */
    int trailers;          /* AT: a trailer matched before (the stream has per-record checksums,
                              so a zero one is no record of it); out: the same at `next` */
    /* out: offsets in the stream (base added) */
    int stop;              /* enum zv_walk_stop */
    uint64_t anchor;       /* the first record walked (SEARCH: the boundary found) */
    uint64_t proven_from;  /* first byte a matching checksum covers */
    uint64_t proven_to;    /* one past the last (== proven_from: nothing proven) */
    uint64_t records;      /* records whose checksum matched */
    uint64_t unchecked;    /* records with a zero trailer (streams older than per-record checksums) */
    uint64_t next;         /* the first record not walked */
    uint64_t bad_at;       /* MISMATCH: the record whose checksum differs */
    uint64_t bad_from;     /* MISMATCH: the first byte that checksum covers */
} zv_swalk;

/*
 * Walk the records of buf[0..len) as w->start says, until one runs past the
 * window, a checksum differs, or the framing is lost.  Pure: reads only buf.
 * @return ZV_OK, or ZV_EINVAL (bad start, AT/BEGIN window too short).
 */
int zv_stream_walk(const unsigned char *buf, size_t len, zv_swalk *w);

#endif
