/*
 * zv_sample.c — sampling (zvstream.h): prove a run of records in a window of a stream read
 * by range, from the checksums the records carry, with nothing known of the bytes before
 * it.  Pure: reads only the window.  The record layout is zv_drr.h, the checksum
 * zv_fletcher.c; the scanner that reads a whole stream is zv_stream.c.
 */
#include <stdint.h>
#include <string.h>

#include "zv_drr.h"
#include "zv_fletcher.h"
#include "zvstream.h"

typedef struct walk {
    const unsigned char *buf;
    size_t len;
    int swap;       /* loads need a byte swap */
    int big_endian; /* fletcher-4 word order */
    zv_swalk *w;
} walk;

static int order_of(int swap)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return swap;
#else
    return !swap;
#endif
}

/* -1 if a stored checksum differs from the one computed, 1 if one matched,
 * 0 if none was stored (zero). */
static int verdict(const uint64_t stored[4], const uint64_t computed[4])
{
    if (cksum_zero(stored))
        return 0;
    return cksum_eq(stored, computed) ? 1 : -1;
}

/*
 * Fold the record at off (rlen bytes) into st, as the scanner does; returns
 * what its trailer (and an END's checksum) said, see verdict().  On a
 * mismatch st goes on from the stored trailer, as a receiver would.
 */
static int fold_record(const walk *k, size_t off, uint32_t type, uint64_t rlen, uint64_t st[4])
{
    const unsigned char *h = k->buf + off;
    if (type == ZV_DRR_BEGIN) {
        st[0] = st[1] = st[2] = st[3] = 0;
        zv_fletcher4(st, h, (size_t)rlen, k->big_endian);
        return 0; /* no trailer: the next record's proves it */
    }
    uint64_t before[4], stored[4], end[4];
    memcpy(before, st, sizeof before);
    zv_fletcher4(st, h, ZV_DRR_TRAILER_OFF, k->big_endian);
    get_cksum(h + ZV_DRR_TRAILER_OFF, k->swap, stored);
    int r = verdict(stored, st);
    if (r < 0)
        memcpy(st, stored, sizeof stored);
    zv_fletcher4(st, h + ZV_DRR_TRAILER_OFF, (size_t)rlen - ZV_DRR_TRAILER_OFF, k->big_endian);
    if (type == ZV_DRR_END) {
        get_cksum(h + 8, k->swap, end);
        int e = verdict(end, before);
        r = (r < 0 || e < 0) ? -1 : (r > 0 || e > 0);
        st[0] = st[1] = st[2] = st[3] = 0; /* a new substream starts from zero */
    }
    return r;
}

/* Can the record at h come next?  Only a BEGIN (with the magic) between
 * substreams, only records of the substream's drr_toguid within one, and
 * no zero trailer once the stream showed it has per-record checksums: a walk
 * that began on records kept inside a file's data stops where they end
 * instead of passing unchecked into the stream around them. */
static int fits(const walk *k, const unsigned char *h, uint32_t type)
{
    zv_swalk *w = k->w;
    if (type == ZV_DRR_BEGIN) {
        if (w->toguid != 0 || zv_ld64(h + 8, k->swap) != ZV_DRR_MAGIC)
            return 0;
        w->toguid = zv_ld64(h + 40, k->swap);
        return 1;
    }
    uint64_t g = zv_ld64(h + toguid_off(type), k->swap), stored[4];
    get_cksum(h + ZV_DRR_TRAILER_OFF, k->swap, stored);
    if (type == ZV_DRR_END && g == 0) /* libzfs writes the package ENDs with toguid 0 */
        return 1;
    if (w->trailers && cksum_zero(stored))
        return 0;
    return w->toguid != 0 && g == w->toguid;
}

/* Walk from off with w->st until a record runs past the window, a checksum
 * differs, or the framing is lost. */
static void walk_from(const walk *k, size_t off)
{
    zv_swalk *w = k->w;
    for (;;) {
        uint32_t type;
        uint64_t rlen;
        if (k->len - off < ZV_DRR_SIZE) {
            w->stop = ZV_WALK_WINDOW;
            break;
        }
        rlen = record_len(k->buf + off, k->swap, &type);
        if (rlen == 0 || !fits(k, k->buf + off, type)) {
            w->stop = ZV_WALK_LOST;
            break;
        }
        if (rlen > k->len - off) {
            w->stop = ZV_WALK_WINDOW;
            break;
        }
        int r = fold_record(k, off, type, rlen, w->st);
        if (type == ZV_DRR_END)
            w->toguid = 0; /* the next substream names its own */
        if (r < 0) {
            w->stop = ZV_WALK_MISMATCH;
            w->bad_at = w->base + off;
            w->bad_from = w->proven_to;
            off += (size_t)rlen;
            break;
        }
        if (r > 0) {
            w->trailers = 1;
            w->records++;
            w->proven_to = w->base + off + ZV_DRR_SIZE;
        } else if (type != ZV_DRR_BEGIN) {
            w->unchecked++;
        }
        off += (size_t)rlen;
    }
    w->next = w->base + off;
}

/* Does a record start at p in byte order swap?  Only if the record after it
 * is in the window and its trailer matches the state p's trailer gives.
 * On success st holds the state at the record after p. */
static int anchors(const walk *k, size_t p, uint64_t st[4])
{
    const unsigned char *h = k->buf + p;
    uint32_t type, next_type;
    uint64_t rlen = record_len(h, k->swap, &type), stored[4];
    /* BEGIN has no trailer, END's successor starts from zero: neither can anchor */
    if (rlen == 0 || type == ZV_DRR_BEGIN || type == ZV_DRR_END)
        return 0;
    if (rlen + ZV_DRR_SIZE > k->len - p)
        return 0;
    const unsigned char *n = h + rlen;
    if (record_len(n, k->swap, &next_type) == 0 || next_type == ZV_DRR_BEGIN)
        return 0;
    uint64_t guid = zv_ld64(h + toguid_off(type), k->swap);
    if (guid == 0 || zv_ld64(n + toguid_off(next_type), k->swap) != guid)
        return 0;
    get_cksum(h + ZV_DRR_TRAILER_OFF, k->swap, st);
    get_cksum(n + ZV_DRR_TRAILER_OFF, k->swap, stored);
    if (cksum_zero(st) || cksum_zero(stored))
        return 0;
    uint64_t probe[4];
    memcpy(probe, st, sizeof probe);
    zv_fletcher4(probe, h + ZV_DRR_TRAILER_OFF, (size_t)rlen - ZV_DRR_TRAILER_OFF, k->big_endian);
    zv_fletcher4(probe, n, ZV_DRR_TRAILER_OFF, k->big_endian);
    if (!cksum_eq(probe, stored))
        return 0;
    zv_fletcher4(st, h + ZV_DRR_TRAILER_OFF, (size_t)rlen - ZV_DRR_TRAILER_OFF, k->big_endian);
    return 1;
}

/* The offset of the record after the first anchor (SIZE_MAX: none). */
static size_t search(walk *k)
{
    zv_swalk *w = k->w;
    for (size_t p = 0; k->len >= 2 * ZV_DRR_SIZE && p <= k->len - 2 * ZV_DRR_SIZE; p++) {
        for (int swap = 0; swap < 2; swap++) {
            uint32_t type = zv_ld32(k->buf + p, swap);
            if (type == ZV_DRR_BEGIN || type >= ZV_DRR_NTYPES) /* the cheap filter */
                continue;
            k->swap = swap;
            k->big_endian = order_of(swap);
            if (!anchors(k, p, w->st))
                continue;
            uint32_t t;
            w->anchor = w->base + p;
            w->toguid = zv_ld64(k->buf + p + toguid_off(type), swap);
            w->trailers = 1;
            w->proven_from = w->proven_to = w->base + p + ZV_DRR_TRAILER_OFF;
            w->big_endian = k->big_endian;
            return p + (size_t)record_len(k->buf + p, swap, &t);
        }
    }
    w->stop = ZV_WALK_NO_ANCHOR;
    w->next = w->base;
    return SIZE_MAX;
}

int zv_stream_walk(const unsigned char *buf, size_t len, zv_swalk *w)
{
    walk k = {buf, len, 0, 0, w};
    w->records = w->unchecked = 0;
    w->bad_at = w->bad_from = 0;
    w->anchor = w->proven_from = w->proven_to = w->base;
    if (w->start == ZV_WALK_SEARCH) {
        size_t at = search(&k);
        if (at != SIZE_MAX)
            walk_from(&k, at);
        return ZV_OK;
    }
    if (w->start == ZV_WALK_BEGIN) {
        if (len < ZV_DRR_SIZE || !has_magic(buf, len))
            return ZV_EINVAL;
        k.swap = zv_ld64(buf + 8, 0) != ZV_DRR_MAGIC;
        w->big_endian = order_of(k.swap);
        w->st[0] = w->st[1] = w->st[2] = w->st[3] = 0;
        w->toguid = 0;
        w->trailers = 0;
    } else if (w->start == ZV_WALK_AT) {
        k.swap = order_of(w->big_endian); /* order_of is its own inverse */
    } else {
        return ZV_EINVAL;
    }
    k.big_endian = w->big_endian;
    walk_from(&k, 0);
    return ZV_OK;
}
