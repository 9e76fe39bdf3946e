/*
 * zv_file.c — everything done with one open regular file: map its data
 * extents (SEEK_DATA/SEEK_HOLE), hash its bytes (zv_hash.h), read its
 * xattrs, and notice if it changed underneath us.
 *
 * Holes are hashed as zeros without being read: the digest is that of the
 * file's apparent content, so a sparse file and its filled copy hash equal
 * (their difference is reported as allocation, not content).
 *
 * Long because: reading bytes (pread with its probe and cache test) shares the extent walk
 * and the record; the xattr half at the end could move to a file of its own.
 */
#define _GNU_SOURCE
#include "zv_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

static const unsigned char zero_block[65536];

static void set_error(zv_record *r, int op, int err, int64_t offset)
{
    if (r->err_op != ZV_OP_NONE)
        return; /* keep the first error: it is the cause */
    r->err_op = op;
    r->err_errno = err;
    r->err_offset = offset;
}

static void clear_error(zv_record *r)
{
    r->err_op = ZV_OP_NONE;
    r->err_errno = 0;
    r->err_offset = -1;
}

static int stopping(const zv_scanner *sc)
{
    return sc->stop && __atomic_load_n(sc->stop, __ATOMIC_RELAXED);
}

/* Hash a hole as zeros without reading it; -1 when the walk is stopping (a hole of
 * terabytes takes minutes to hash). */
static int hash_zeros(const zv_scanner *sc, uint64_t off, uint64_t len, zv_record *r)
{
    while (len > 0) {
        if (stopping(sc)) {
            set_error(r, ZV_OP_READ, EINTR, (int64_t)off);
            return -1;
        }
        size_t n = len < sizeof zero_block ? (size_t)len : sizeof zero_block;
        zv_hasher_update(sc->hasher, zero_block, n);
        len -= n;
        off += n;
    }
    return 0;
}

/*
 * The first read of a file, when the walk watches the page cache: RWF_NOWAIT fails
 * (EAGAIN) instead of waiting for the disk, which tells a miss from a hit at no extra cost
 * when the data is cached.  A miss is counted (the walker then asks for read-ahead at
 * open) and the read is made again, blocking; so is any other failure (EOPNOTSUPP: the
 * filesystem cannot tell; a seccomp filter's EPERM), whose true error, if any, the
 * blocking read then gives.  *nowait says whether the bytes came from the RWF_NOWAIT read.
 */
static ssize_t first_read(const zv_scanner *sc, int fd, size_t ask, uint64_t off, int *nowait)
{
    struct iovec v = {sc->buf, ask};
    ssize_t got = preadv2(fd, &v, 1, (off_t)off, RWF_NOWAIT);
    *nowait = got >= 0;
    if (got >= 0 || errno == EINTR)
        return got;
    __atomic_add_fetch(sc->cache_misses, 1, __ATOMIC_RELAXED);
    return pread(fd, sc->buf, ask, (off_t)off);
}

/*
 * Every block is read with pread into the worker's buffer, cached or not, and hashed there.
 * Hashing a cached file through mapped windows instead (no copy) was measured slower on a
 * 2-core EPYC guest with Linux 6.18: 3 x 1.5 GiB a side took 0.72 s mapped and 0.50 s read,
 * because the hash then runs from memory through 4 KiB page-table entries, each mapped and
 * unmapped, while a 128 KiB block is hashed from the cache it was just copied into.
 */

/*
 * Whether a read that came back short of the probe byte proves the file ends there.  A
 * blocking read does.  An RWF_NOWAIT read stops short at a page that is not cached, and
 * the probe byte is on a page of its own when the read ends on a page boundary: then only
 * probe_end can tell.
 */
static int short_read_proves_end(int nowait, uint64_t end)
{
    return !nowait || end % (uint64_t)getpagesize() != 0; /* glibc: no system call */
}

/*
 * Read [off, end) into the hash; returns 0 or -1 with the error or change recorded.  The
 * read that reaches the file's size asks for one byte more (*probed then says so): a file
 * whose content goes on past st_size (procfs, sysfs, some FUSE) must not be judged by its
 * first st_size bytes.  Costs nothing when the last read was short anyway.
 */
static int hash_range(const zv_scanner *sc, int fd, uint64_t off, uint64_t end, zv_record *r,
                      int *probed, int *first)
{
    size_t block = sc->opt->block_size;
    while (off < end) {
        if (stopping(sc)) { /* Ctrl-C must not wait for the rest of a large file */
            set_error(r, ZV_OP_READ, EINTR, (int64_t)off);
            return -1;
        }
        uint64_t want = end - off;
        size_t n = want < block ? (size_t)want : block;
        size_t ask = n < block && end == r->size ? n + 1 : n;
        int nowait = 0;
        ssize_t got = *first && sc->cache_misses ? first_read(sc, fd, ask, off, &nowait)
                                                 : pread(fd, sc->buf, ask, (off_t)off);
        *first = 0;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            set_error(r, ZV_OP_READ, errno, (int64_t)off);
            return -1;
        }
        if (got == 0) { /* shorter than its size: check_unchanged tells shrunk from pseudo */
            r->changed = ZV_CHANGE_SIZE_MISMATCH;
            return -1;
        }
        if ((size_t)got > n) { /* the probe byte: content beyond st_size */
            r->changed = ZV_CHANGE_SIZE_MISMATCH;
            return -1;
        }
        if (ask > n && short_read_proves_end(nowait, off + (uint64_t)got))
            *probed = 1;
        if (sc->hasher)
            zv_hasher_update(sc->hasher, sc->buf, (size_t)got);
        off += (uint64_t)got;
        __atomic_add_fetch(sc->bytes_counter, (uint64_t)got, __ATOMIC_RELAXED);
    }
    return 0;
}

/* One byte at st_size, when no read of hash_range asked for it (a size of 0 or a multiple
 * of the block size, or a file ending in a hole). */
static void probe_end(const zv_scanner *sc, int fd, zv_record *r)
{
    ssize_t got;
    do
        got = pread(fd, sc->buf, 1, (off_t)r->size);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        set_error(r, ZV_OP_READ, errno, (int64_t)r->size);
    else if (got > 0)
        r->changed = ZV_CHANGE_SIZE_MISMATCH;
}

/*
 * Remember one data extent of a file with holes.  More than ZV_MAX_EXTENTS: the map is
 * dropped (only data_bytes stays), so a pathological file cannot exhaust memory; no memory
 * for it: the entry is an error, like any other allocation failure.
 */
static void note_extent(zv_record *r, uint64_t start, uint64_t end, int *overflow)
{
    if (*overflow || end <= start)
        return;
    if (r->n_extents >= ZV_MAX_EXTENTS) {
        free(r->extents);
        r->extents = NULL;
        r->n_extents = 0;
        *overflow = 1;
        return;
    }
    if ((r->n_extents & (r->n_extents - 1)) == 0) { /* 0, 1, 2, 4, ...: grow to twice */
        size_t cap = r->n_extents ? r->n_extents * 2 : 1;
        uint64_t *p = realloc(r->extents, cap * 2 * sizeof *p);
        if (!p) {
            set_error(r, ZV_OP_SEEK, ENOMEM, (int64_t)start);
            return;
        }
        r->extents = p;
    }
    r->extents[2 * r->n_extents] = start;
    r->extents[2 * r->n_extents + 1] = end;
    r->n_extents++;
}

/*
 * Walk the data extents of the file, hashing them (and the holes as zeros) when content
 * is read.  Where the filesystem cannot tell (EINVAL), the whole file counts as data.
 */
static void scan_extents(const zv_scanner *sc, int fd, zv_record *r)
{
    uint64_t size = r->size, off = 0, data = 0;
    int reads = sc->opt->algo != ZV_HASH_NONE, probed = 0, first = 1;
    /*
     * A file with at least as many allocated bytes as its size has no holes
     * worth asking about (two lseeks per file are a measurable cost on trees
     * of small files).  Compressed filesystems allocate less than the size,
     * so their files are still mapped.
     */
    int can_seek = r->alloc < size, overflow = 0;
    while (off < size) {
        uint64_t dstart = off, dend = size;
        if (can_seek) {
            off_t d = lseek(fd, (off_t)off, SEEK_DATA);
            if (d < 0 && errno == ENXIO) {
                dstart = dend = size; /* only a hole remains */
            } else if (d < 0) {
                can_seek = 0; /* EINVAL etc.: treat the rest as data */
            } else {
                dstart = (uint64_t)d > size ? size : (uint64_t)d;
                off_t h = lseek(fd, (off_t)dstart, SEEK_HOLE);
                dend = (h < 0 || (uint64_t)h > size) ? size : (uint64_t)h;
            }
        }
        if (can_seek)
            note_extent(r, dstart, dend, &overflow);
        if (sc->hasher && dstart > off && hash_zeros(sc, off, dstart - off, r) < 0)
            return;
        if (reads && hash_range(sc, fd, dstart, dend, r, &probed, &first) < 0)
            return;
        data += dend - dstart;
        off = dend;
    }
    if (reads && !probed)
        probe_end(sc, fd, r);
    r->data_bytes = data;
    r->hole_bytes = size - data;
    if (r->hole_bytes == 0 || !can_seek) { /* no holes after all: no map to keep */
        free(r->extents);
        r->extents = NULL;
        r->n_extents = 0;
    }
}

static int same_content_stat(const zv_record *r, const struct stat *st)
{
    return (uint64_t)st->st_size == r->size && st->st_mtim.tv_sec == r->mtime.sec &&
           st->st_mtim.tv_nsec == r->mtime.nsec && st->st_ctim.tv_sec == r->ctime.sec &&
           st->st_ctim.tv_nsec == r->ctime.nsec;
}

/* Judge a stat taken after the work against the record's own (taken before it). */
static void judge_later_stat(zv_record *r, const struct stat *after)
{
    if (after->st_ino != r->ino || after->st_dev != r->dev)
        r->changed = ZV_CHANGE_REPLACED;
    else if (!same_content_stat(r, after))
        r->changed = ZV_CHANGE_MODIFIED;
    if (r->changed == ZV_CHANGE_REPLACED)
        clear_error(r); /* any read error was about another file */
}

/*
 * The record's stat came from the walker before the open; one fstat after reading
 * proves both that the fd is that file (not a replacement opened in between) and that
 * nothing changed while we read (a write moves ctime).  A second fstat before reading
 * would only skip reading a file that is reported as changed anyway, and cost a
 * syscall per file on trees of small files.  A stat that moved explains a size
 * mismatch as a modification.
 */
static void check_unchanged(int fd, zv_record *r)
{
    struct stat after;
    if (fstat(fd, &after) < 0)
        set_error(r, ZV_OP_LSTAT, errno, -1);
    else
        judge_later_stat(r, &after);
}

void zv_file_check_path(int dirfd, const char *name, const char *xattr_path, zv_record *r)
{
    zv_xattrs_read(-1, xattr_path, r);
    struct stat after;
    if (fstatat(dirfd, name, &after, AT_SYMLINK_NOFOLLOW) < 0)
        set_error(r, ZV_OP_LSTAT, errno, -1);
    else
        judge_later_stat(r, &after);
}

void zv_file_scan(const zv_scanner *sc, int fd, zv_record *r)
{
    if (sc->hasher && !zv_hasher_reset(sc->hasher))
        set_error(r, ZV_OP_READ, ENOMEM, 0); /* no digest could start: never a digest */
    if (r->size > sc->opt->block_size)
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    scan_extents(sc, fd, r);
    if (sc->opt->read_xattrs)
        zv_xattrs_read(fd, NULL, r);
    check_unchanged(fd, r);
    if (r->err_op != ZV_OP_NONE || r->changed)
        return;
    if (sc->hasher) {
        r->digest_len = zv_hasher_digest(sc->hasher, r->digest);
        if (r->digest_len == 0)
            set_error(r, ZV_OP_READ, ENOMEM, (int64_t)r->size);
        else
            r->has_digest = 1;
    }
}

/* ---- xattrs ---- */

static ssize_t list_names(int fd, const char *path, char *buf, size_t len)
{
    return fd >= 0 ? flistxattr(fd, buf, len) : llistxattr(path, buf, len);
}

static ssize_t get_value(int fd, const char *path, const char *name, void *buf, size_t len)
{
    return fd >= 0 ? fgetxattr(fd, name, buf, len) : lgetxattr(path, name, buf, len);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append name '\0' u32be(len) value to the record's blob. */
static int append_xattr(zv_record *r, const char *name, const unsigned char *val, size_t vlen)
{
    size_t nlen = strlen(name) + 1, need = r->xattrs_len + nlen + 4 + vlen;
    char *p = realloc(r->xattrs, need ? need : 1);
    if (!p)
        return -1;
    r->xattrs = p;
    p += r->xattrs_len;
    memcpy(p, name, nlen);
    p += nlen;
    p[0] = (char)(vlen >> 24);
    p[1] = (char)(vlen >> 16);
    p[2] = (char)(vlen >> 8);
    p[3] = (char)vlen;
    memcpy(p + 4, val, vlen);
    r->xattrs_len = need;
    return 0;
}

static int read_one(int fd, const char *path, const char *name, zv_record *r)
{
    for (;;) {
        ssize_t len = get_value(fd, path, name, NULL, 0);
        if (len < 0)
            return errno == ENODATA ? 0 : -1; /* removed meanwhile: not ours */
        unsigned char *val = malloc((size_t)len + 1);
        if (!val)
            return -1;
        ssize_t got = get_value(fd, path, name, val, (size_t)len);
        if (got < 0 && errno == ERANGE) { /* grew meanwhile: ask again */
            free(val);
            continue;
        }
        int rc = got < 0 ? -1 : append_xattr(r, name, val, (size_t)got);
        free(val);
        return rc;
    }
}

/*
 * All names, NUL-separated, in a new buffer (*out_len bytes).  Returns 0 with *names NULL
 * when there are none, or -1 with errno set: a failure is never "no xattrs".
 */
static int list_all(int fd, const char *path, char **names, ssize_t *out_len)
{
    *names = NULL;
    *out_len = 0;
    for (;;) {
        ssize_t len = list_names(fd, path, NULL, 0);
        if (len < 0 && errno == ENOTSUP)
            return 0; /* the filesystem has no xattrs at all: none, truly */
        if (len <= 0)
            return len < 0 ? -1 : 0;
        char *buf = malloc((size_t)len);
        if (!buf)
            return -1; /* errno is ENOMEM */
        ssize_t got = list_names(fd, path, buf, (size_t)len);
        if (got > 0) {
            *names = buf;
            *out_len = got;
            return 0;
        }
        int err = errno;
        free(buf);
        if (got == 0)
            return 0; /* all removed meanwhile */
        if (err != ERANGE) { /* ERANGE: grew meanwhile, ask again */
            errno = err;
            return -1;
        }
    }
}

void zv_xattrs_read(int fd, const char *path, zv_record *r)
{
    ssize_t len = 0;
    char *names = NULL;
    if (list_all(fd, path, &names, &len) < 0) {
        /* only the size query's ENOTSUP means "none": once names were announced, any
         * failure to read them (ENOTSUP included) is an error, never "no xattrs" */
        set_error(r, ZV_OP_XATTR, errno, -1);
        return;
    }
    if (!names) {
        r->has_xattrs = 1;
        return;
    }
    size_t count = 0;
    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1)
        count++;
    const char **sorted = malloc(count * sizeof *sorted);
    if (!sorted) {
        free(names);
        set_error(r, ZV_OP_XATTR, ENOMEM, -1);
        return;
    }
    size_t k = 0;
    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(names + i) + 1)
        sorted[k++] = names + i;
    if (count > 1)
        qsort(sorted, count, sizeof *sorted, cmp_names);
    int ok = 1;
    for (size_t i = 0; i < count && ok; i++)
        ok = read_one(fd, path, sorted[i], r) == 0;
    if (ok)
        r->has_xattrs = 1;
    else
        set_error(r, ZV_OP_XATTR, errno, -1);
    free(sorted);
    free(names);
}
