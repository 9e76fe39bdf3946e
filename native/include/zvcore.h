/*
 * zvcore.h — the public header of the zverify C core's walk (zvjoin.h joins
 * two walks; zvstream.h scans send streams).
 *
 * The core walks a directory tree in canonical order (pre-order, siblings
 * sorted bytewise, symlinks never followed), stats every entry and hashes
 * regular files in worker threads.  It hands back plain records; it never
 * prints, never exits and never touches Python objects.  Python decides
 * what the records mean.
 *
 * Threading contract: one zv_walk owns one walker thread and N hashing
 * workers.  zv_walk_next() is called by a single consumer thread and may
 * block; records come out in canonical order whatever N is.
 */
#ifndef ZVCORE_H
#define ZVCORE_H

#include <stddef.h>
#include <stdint.h>

/* Fatal status codes (per-entry problems are carried inside records). */
enum zv_status {
    ZV_OK = 0,
    ZV_EDONE = 1,     /* zv_walk_next: no more records */
    ZV_EAGAIN = 2,    /* zv_walk_next: nothing ready within the timeout */
    ZV_EINVAL = -1,   /* bad argument */
    ZV_ENOMEM = -2,   /* out of memory */
    ZV_EROOT = -3,    /* root could not be opened; errno in zv_walk_errno */
    ZV_ENOTDIR = -4,  /* root is not a directory */
    ZV_ETHREAD = -5,  /* thread creation failed */
    ZV_ESTOPPED = -6, /* zv_walk_stop() was called */
    ZV_EWALK = -7,    /* zv_walk_next: the traversal could not finish (after the last
                         record it did emit); errno in zv_walk_error() */
    ZV_EORDER = -8,   /* zv_join_next: a walk emitted a path out of canonical order */
};

enum zv_kind {
    ZV_KIND_FILE = 1,
    ZV_KIND_DIR = 2,
    ZV_KIND_SYMLINK = 3,
    ZV_KIND_FIFO = 4,
    ZV_KIND_SOCKET = 5,
    ZV_KIND_CHAR = 6,
    ZV_KIND_BLOCK = 7,
    ZV_KIND_UNKNOWN = 8,
};

#define ZV_MAX_EXTENTS 65536 /* data extents kept per file; beyond, only data_bytes */

enum zv_hash_algo {
    ZV_HASH_NONE = 0,   /* stat and xattrs only: files are not opened (with /proc) and
                           their extents not mapped (data_bytes is the size) */
    ZV_HASH_XXH3_128 = 1,
    ZV_HASH_BLAKE3 = 2,
    ZV_HASH_SHA256 = 3, /* SHA-2 through OpenSSL's libcrypto (SHA-NI where the CPU has it) */
    ZV_HASH_SHA512 = 4,
    ZV_HASH_MD5 = 5,    /* MD5 and SHA-1 through libcrypto too: only to check other tools' lists */
    ZV_HASH_SHA1 = 6,
};
#define ZV_DIGEST_MAX 64 /* bytes of the longest digest (SHA-512) */

/* The operation that failed, so a message can say what was being done. */
enum zv_op {
    ZV_OP_NONE = 0,
    ZV_OP_LSTAT,
    ZV_OP_OPENDIR,
    ZV_OP_READDIR,
    ZV_OP_OPEN,
    ZV_OP_READ,
    ZV_OP_READLINK,
    ZV_OP_XATTR,
    ZV_OP_SEEK,
};

/* Why a file's bytes cannot be trusted even though every read succeeded. */
enum zv_change {
    ZV_CHANGE_NONE = 0,
    ZV_CHANGE_REPLACED,  /* the opened inode is not the one listed */
    ZV_CHANGE_MODIFIED,  /* size/mtime/ctime moved while hashing */
    ZV_CHANGE_SIZE_MISMATCH, /* more or fewer bytes than st_size, with an unchanged stat:
                                procfs, sysfs, some FUSE; the content cannot be pinned */
};

typedef struct zv_time {
    int64_t sec;
    int64_t nsec; /* 0 .. 999,999,999 */
} zv_time;

typedef struct zv_record {
    char *path;          /* relative to the root, no leading '/'; "" = root */
    size_t path_len;
    int kind;            /* enum zv_kind */
    uint32_t mode, uid, gid;
    uint64_t nlink, dev, ino, rdev;
    uint64_t size;       /* st_size */
    uint64_t alloc;      /* st_blocks * 512 */
    zv_time mtime, ctime; /* seconds and nanoseconds apart: int64 nanoseconds would wrap
                             after 2262, and ext4, btrfs, tmpfs and ZFS store later dates */
    uint64_t data_bytes; /* bytes in data extents (SEEK_DATA), files only; a file
                            whose allocation covers its size counts as all data */
    uint64_t hole_bytes; /* size - data_bytes */
    uint64_t *extents;   /* data extents of a file with holes, as start,end pairs (end
                            exclusive); NULL when the file has no holes, or more than
                            ZV_MAX_EXTENTS of them (data_bytes is exact either way, but for
                            a walk that does not open files: then it is the size) */
    size_t n_extents;
    char *link;          /* symlink target, not NUL-terminated in meaning */
    size_t link_len;
    char *xattrs;        /* sequence of: name '\0' u32be(len) value */
    size_t xattrs_len;
    int has_xattrs;      /* 0: not read (error or kind without xattrs) */
    unsigned char digest[ZV_DIGEST_MAX]; /* XXH3-128 canonical or MD5 (16), SHA-1 (20),
                                          * BLAKE3 or SHA-256 (32), SHA-512 (64) */
    size_t digest_len;
    int has_digest;
    int err_op;          /* enum zv_op; ZV_OP_NONE = no error */
    int err_errno;
    int64_t err_offset;  /* byte offset for read errors, else -1 */
    int changed;         /* enum zv_change */
    int context;         /* a walk over a key range (zv_options.range_lo): a directory that
                            leads to the range, emitted only so that a join knows whether
                            the range lies below a directory it may fold; never a result */
} zv_record;

/* Canonical order of two relative paths: bytewise, with '/' read as NUL (so a directory's
 * subtree comes right after it, before its next sibling).  <0, 0, >0 like memcmp. */
int zv_canonical_cmp(const char *a, size_t alen, const char *b, size_t blen);
/* Whether path lies strictly below directory dir (dlen 0: the root, below which lies every
 * path but the root itself). */
int zv_path_is_under(const char *path, size_t len, const char *dir, size_t dlen);

/* ---- filters (zv_filter.c): which paths a walk leaves out ---- */

typedef struct zv_filter zv_filter;

int zv_filter_new(zv_filter **out);
/* An rsync pattern (see zv_filter.c), after those added before: the first that matches
 * decides.  @return ZV_OK, ZV_EINVAL (empty, "/", a trailing '\\', an unterminated '[' or
 * an unknown [:class:]), ZV_ENOMEM. */
int zv_filter_add_rule(zv_filter *f, int include, const char *pattern, size_t len);
/* A --files-from path, relative to the root without "." or ".." components: only listed
 * paths, what lies below them and the directories leading to them are kept. */
int zv_filter_add_listed(zv_filter *f, const char *path, size_t len);
/* Keep only listed paths (and what leads to and lies below them), even when the list is
 * empty: an empty --files-from selects nothing, as in rsync.  Without this call the
 * listed paths are not consulted. */
void zv_filter_keep_listed_only(zv_filter *f);
/* Call once after the last add, before any lookup; the filter is read-only afterwards
 * (but for the atomic "seen" flags of its listed paths).  ZV_OK or ZV_ENOMEM. */
int zv_filter_seal(zv_filter *f);
/* The listed paths a lookup (zv_filter_excludes or zv_filter_note_seen) met: a listed path
 * no walk of either tree met is in neither tree. */
void zv_filter_note_seen(const zv_filter *f, const char *path, size_t len);
size_t zv_filter_nlisted(const zv_filter *f);
/* The i-th listed path (sorted, unique) and whether it was seen. */
const char *zv_filter_listed(const zv_filter *f, size_t i, int *seen);
/* 1: leave path out (a directory is then not entered); 0: keep; -1: out of memory.  A
 * listed path it is asked about is noted as seen. */
int zv_filter_excludes(const zv_filter *f, const char *path, size_t len, int is_dir);
void zv_filter_free(zv_filter *f);

typedef struct zv_options {
    int algo;            /* enum zv_hash_algo */
    int threads;         /* hashing workers, >= 1 */
    size_t block_size;   /* read size, bytes */
    int one_file_system; /* do not descend into other devices */
    int read_xattrs;
    const zv_filter *filter; /* NULL: keep everything; borrowed, must outlive the walk */
    /* Descriptor budget of this walk (RLIMIT_NOFILE is the caller's to share out): files
     * held open ahead of the workers (0: 64 per thread) and directories kept open on the
     * way down (0: 64 levels; deeper ones are reopened when the walk climbs back). */
    size_t max_open_files;
    int max_dir_fds;
    /* Only the entries whose paths lie in [range_lo, range_hi) in canonical order (NULL:
     * unbounded), for a walk split into key ranges (zverify --mpi): the directories that
     * lead to range_lo are entered and emitted as context records, everything else outside
     * the range is skipped before it is stat'ed.  Borrowed: must outlive the walk. */
    const char *range_lo, *range_hi;
    size_t range_lo_len, range_hi_len;
} zv_options;

typedef struct zv_walk zv_walk;

/* Live counters, readable from any thread (relaxed atomics). */
typedef struct zv_counters {
    uint64_t entries;    /* records emitted */
    uint64_t bytes;      /* file bytes hashed so far */
    uint64_t excluded;   /* entries left out by the filter (an excluded directory counts
                            once: what lies below it is never listed) */
} zv_counters;

/*
 * Start walking root (a directory; followed if it is a symlink).
 * @return ZV_OK and *out, or ZV_EROOT/ZV_ENOTDIR (with *err_no), ZV_ENOMEM,
 *         ZV_ETHREAD.
 */
int zv_walk_open(const char *root, const zv_options *opt, zv_walk **out, int *err_no);

/*
 * Move up to max records into out[] (caller-owned array); *n gets the count.
 * Waits up to timeout_ms for at least one record (so a caller can check for
 * signals).  Ownership of each record's buffers passes to the caller
 * (zv_record_free).
 * @return ZV_OK (n >= 1), ZV_EAGAIN (timeout), ZV_EDONE (every entry was emitted),
 *         ZV_ESTOPPED, or ZV_EWALK: the traversal failed after its last emitted record,
 *         so the records seen are NOT the whole tree (never treat this as the end).
 */
int zv_walk_next(zv_walk *w, zv_record *out, size_t max, size_t *n, int timeout_ms);

/* After ZV_EWALK: the errno of the failure (e.g. ENOMEM), 0 otherwise. */
int zv_walk_error(const zv_walk *w);

/* Ask all threads to stop soon; safe from any thread. */
void zv_walk_stop(zv_walk *w);

/* Stop, join every thread and free everything.  w may be NULL. */
void zv_walk_close(zv_walk *w);

void zv_walk_counters(const zv_walk *w, zv_counters *c);

void zv_record_free(zv_record *r);

/* What hashes (for `zverify --version`): the version of the xxHash compiled in (e.g.
 * 801 = 0.8.1), the XXH3 kernel that runs ("avx2", "sse2", "neon", "portable"), BLAKE3's
 * version and the kernel its dispatcher picks on this CPU ("avx512", "avx2", "sse4.1",
 * "sse2", "neon", "portable"). */
unsigned zv_xxh_version(void);
const char *zv_xxh_kernel(void);
/* Whether the environment's ZVERIFY_XXH names an XXH3 build: unset, empty or "auto" (AVX2
 * when the CPU has it) or "baseline".  0: it names none (the core then runs the baseline,
 * and its caller should refuse the setting rather than let a demand pass unmet). */
int zv_xxh_setting_known(void);
const char *zv_blake3_version(void);
const char *zv_blake3_kernel(void);

/* Short name of an operation ("lstat", "open", ...). */
const char *zv_op_name(int op);

#endif
