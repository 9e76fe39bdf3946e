/*
 * zv_drr.h — the layout of a send-stream record (dmu_replay_record_t,
 * docs/design/sendstream-format.md): fields in the sender's byte order, the stored
 * checksums, where drr_toguid lies, how long a record is.  The scanner (zv_stream.c), the
 * sampling walk (zv_sample.c) and the record rules (zv_records.c) read records through
 * these; the sizes and record types are in zvstream.h.
 */
#ifndef ZV_DRR_H
#define ZV_DRR_H

#include <stdint.h>
#include <string.h>

#include "zvstream.h"

/* A field in the sender's byte order (swap: it is not this machine's); the scanner, the
 * sampling walk and the record rules read headers with these. */
static inline uint32_t zv_ld32(const unsigned char *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t zv_ld64(const unsigned char *p, int swap)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return swap ? __builtin_bswap64(v) : v;
}

static inline void get_cksum(const unsigned char *p, int swap, uint64_t out[4])
{
    for (int i = 0; i < 4; i++)
        out[i] = zv_ld64(p + 8 * i, swap);
}

static inline int cksum_zero(const uint64_t c[4])
{
    return (c[0] | c[1] | c[2] | c[3]) == 0;
}

static inline int cksum_eq(const uint64_t x[4], const uint64_t y[4])
{
    return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* The offset of drr_toguid per record type, 0 if the type has none. */
static inline size_t toguid_off(uint32_t type)
{
    static const size_t off[ZV_DRR_NTYPES] = {0, 40, 24, 40, 32, 40, 32, 24, 32, 24, 32};
    return type < ZV_DRR_NTYPES ? off[type] : 0;
}

static inline uint64_t round8(uint64_t v)
{
    return (v + 7) & ~(uint64_t)7;
}

/*
 * Payload length of a non-BEGIN record, from that type's own fields
 * (docs/design/sendstream-format.md §3.12); *bound gets the limit it must respect.
 */
static inline uint64_t payload_len(const unsigned char *h, uint32_t type, int swap, uint64_t *bound)
{
    switch (type) {
    case ZV_DRR_OBJECT: {
        uint64_t raw = zv_ld32(h + 36, swap), bonus = zv_ld32(h + 28, swap);
        *bound = ZV_MAX_BONUS;
        return raw ? raw : round8(bonus);
    }
    case ZV_DRR_WRITE: {
        *bound = ZV_MAX_BLOCK;
        return h[50] ? zv_ld64(h + 96, swap) : zv_ld64(h + 32, swap);
    }
    case ZV_DRR_SPILL: {
        uint64_t comp = zv_ld64(h + 40, swap);
        *bound = ZV_MAX_BLOCK;
        return comp ? comp : zv_ld64(h + 16, swap);
    }
    case ZV_DRR_WRITE_EMBEDDED:
        *bound = ZV_MAX_EMBEDDED;
        return zv_ld32(h + 52, swap); /* psize; rounded up by the caller */
    default:
        *bound = 0;
        return 0;
    }
}

static inline uint64_t logical_len(const unsigned char *h, uint32_t type, int swap)
{
    switch (type) {
    case ZV_DRR_WRITE:
        return zv_ld64(h + 32, swap);
    case ZV_DRR_WRITE_EMBEDDED:
        return zv_ld64(h + 24, swap);
    case ZV_DRR_SPILL:
        return zv_ld64(h + 16, swap);
    default:
        return 0;
    }
}

/* A short first record is a truncated stream only if what is there starts like one. */
static inline int has_magic(const unsigned char *hdr, size_t have)
{
    if (have < 16 || zv_ld32(hdr, 0) != ZV_DRR_BEGIN)
        return 0;
    uint64_t magic = zv_ld64(hdr + 8, 0);
    return magic == ZV_DRR_MAGIC || magic == __builtin_bswap64(ZV_DRR_MAGIC);
}

/* Header + payload bytes of the record at h, or 0 when its type or length is
 * not one a stream can hold (the framing is lost). */
static inline uint64_t record_len(const unsigned char *h, int swap, uint32_t *type)
{
    uint64_t bound, len;
    *type = zv_ld32(h, swap);
    if (*type >= ZV_DRR_NTYPES)
        return 0;
    if (*type == ZV_DRR_BEGIN) {
        len = zv_ld32(h + 4, swap);
        bound = ZV_MAX_BEGIN_PAYLOAD;
    } else {
        len = payload_len(h, *type, swap, &bound);
    }
    if (len > bound)
        return 0;
    if (*type == ZV_DRR_WRITE_EMBEDDED)
        len = round8(len);
    return ZV_DRR_SIZE + len;
}

#endif
