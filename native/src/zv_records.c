/*
 * zv_records.c — the record rules of a send stream (zv_records.h): each check below
 * cites the OpenZFS 2.1 code (zfs-2.1.11) whose refusal it follows, or, where it says
 * "master", the checks OpenZFS master added in commit 9b7642df (recv_check_drr_*, not in a
 * release up to 2.4.4).  Where that answer depends on the pool (spa_maxblocksize,
 * spa_maxdnodesize), the limit of a pool with every feature enabled is taken, the one a
 * restore into a new pool meets.
 *
 * Long because: one rule per refusal of the receiver, each a few lines with its source, for
 * every record type (OBJECT, WRITE, WRITE_EMBEDDED, FREE, FREEOBJECTS, SPILL, REDACT,
 * OBJECT_RANGE); split by record type they would share the constants and the stream state.
 */
#include <string.h>

#include "zv_records.h"

/* Constants of OpenZFS 2.1 (the headers named). */
#define DMU_OST_ZFS 2            /* sys/fs/zfs.h dmu_objset_type_t */
#define DMU_OST_ZVOL 3
#define DMU_OT_NUMTYPES 54       /* sys/dmu.h dmu_object_type_t */
#define DMU_OT_NEWTYPE 0x80
#define DMU_OT_BYTESWAP_MASK 0x1f
#define DMU_BSWAP_ZAP 4
#define DMU_BSWAP_NUMFUNCS 10
#define DMU_OT_MASTER_NODE 21
#define DMU_OT_ZVOL 23
#define DMU_OT_ZVOL_PROP 24
/* the legacy types whose byteswap is DMU_BSWAP_ZAP (dmu_ot[] in dmu.c; "ZAP" in dmu.h) */
#define ZAP_TYPES 0x15efe19970e002ULL
#define ZIO_CHECKSUM_FUNCTIONS 14 /* sys/zio.h (Linux: with EDONR) */
#define ZIO_COMPRESS_FUNCTIONS 17 /* sys/zio_compress.h */
#define NUM_BP_EMBEDDED_TYPES 3   /* sys/spa.h */
#define SPA_MINBLOCKSIZE 512
#define SPA_MAXBLOCKSIZE (16u << 20)
#define SPA_MAXBLOCKSHIFT 24
#define DNODE_MAX_SLOTS 32        /* sys/dnode.h: DNODE_MAX_SIZE >> DNODE_SHIFT */
#define DN_SLOTS_TO_BONUSLEN(s) (((uint64_t)(s) << 9) - 64 - 128)
#define DN_MAX_BONUS DN_SLOTS_TO_BONUSLEN(DNODE_MAX_SLOTS) /* DN_BONUS_SIZE(16K) = 16192 */
#define DN_MAX_LEVELS 12          /* sys/dnode.h: (64 - 9) / (12 - 7) rounded up, + 1 */
#define DN_MAX_NBLKPTR 3
#define DN_MAX_OBJECT (1ULL << 48)
#define DNODES_PER_BLOCK 32
#define DRR_FLAG_SPILL_BLOCK (1u << 3)
#define DRR_OBJECT_SPILL (1u << 2)
#define FEATURE_RESUMING (1u << 20)
#define FEATURE_RAW (1u << 24)
#define FEATURE_EMBED_DATA (1u << 16) /* include/sys/zfs_ioctl.h DMU_BACKUP_FEATURE_* */
#define FEATURE_LZ4 (1u << 17)
#define FEATURE_LARGE_BLOCKS (1u << 19)
#define FEATURE_COMPRESSED (1u << 22)
#define FEATURE_LARGE_DNODE (1u << 23)
#define FEATURE_ZSTD (1u << 25)
#define DRR_RAW_BYTESWAP (1u << 1)
#define SPA_OLD_MAXBLOCKSIZE (128u << 10)
#define ZIO_COMPRESS_OFF 2        /* sys/zio_compress.h */
#define ZIO_COMPRESS_LZ4 15       /* ZIO_COMPRESS_LEGACY_FUNCTIONS: older ones need no flag */
#define ZIO_COMPRESS_ZSTD 16
#define BPE_PAYLOAD_SIZE 112      /* sys/spa.h: the data an embedded block pointer holds */
#define DN_MIN_INDBLKSHIFT 12     /* sys/dnode.h */
#define DN_MAX_INDBLKSHIFT 17
#define SPA_BLKPTRSHIFT 7
#define DMU_OT_NONE 0
#define DMU_OT_SA 44
#define DMU_OTN_UINT64_METADATA (DMU_OT_NEWTYPE | 0x40 | 3) /* metadata, DMU_BSWAP_UINT64 */
/* A fat ZAP's blocks are handed out in order (zap.c zap_allocate_blocks) and only its old
 * pointer tables are ever freed, each smaller than the one that replaced it: its highest
 * block is below twice the blocks it holds.  The slack covers the header and the first
 * tables. */
#define ZAP_SLACK 8

static int ot_valid(uint64_t t) /* DMU_OT_IS_VALID (sys/dmu.h); a dnode stores one byte */
{
    if (t > 0xff)
        return 0;
    if (t & DMU_OT_NEWTYPE)
        return (t & DMU_OT_BYTESWAP_MASK) < DMU_BSWAP_NUMFUNCS;
    return t < DMU_OT_NUMTYPES;
}

static int ot_zap(uint64_t t)
{
    if (t & DMU_OT_NEWTYPE)
        return (t & DMU_OT_BYTESWAP_MASK) == DMU_BSWAP_ZAP;
    return t < 64 && ((ZAP_TYPES >> t) & 1);
}

static int refuse(zv_recs *c, zv_rproblem *out, int rule, uint64_t value, uint64_t object)
{
    if (c->reported)
        return 0;
    c->reported = 1;
    out->rule = rule;
    out->value = value;
    out->object = object;
    return 1;
}

/* ---- the checks of OpenZFS master 9b7642df (dmu_recv.c recv_check_drr_*) ---- */

/* recv_check_compress_feature: ZSTD needs feature ZSTD, LZ4 (and any newer legacy-range
 * value) needs LZ4; the older algorithms need no flag. */
static int compress_feature_ok(const zv_recs *c, unsigned comp)
{
    if (comp == ZIO_COMPRESS_ZSTD)
        return (c->features & FEATURE_ZSTD) != 0;
    return comp < ZIO_COMPRESS_LZ4 || (c->features & FEATURE_LZ4) != 0;
}

/* A block of size over 128 KiB (SPA_OLD_MAXBLOCKSIZE) in a stream without LARGE_BLOCKS:
 * recv_check_drr_object, recv_check_drr_write, recv_check_drr_write_embedded. */
static int large_block_refused(const zv_recs *c, uint64_t size)
{
    return size > SPA_OLD_MAXBLOCKSIZE && !(c->features & FEATURE_LARGE_BLOCKS);
}

/* deduce_nblkptr (dmu_recv.c): the block pointers a dnode of these slots and bonus gets. */
static uint64_t deduced_nblkptr(uint32_t bonustype, uint64_t bonuslen, uint64_t slots)
{
    if (bonustype == DMU_OT_SA)
        return 1;
    uint64_t room = DN_SLOTS_TO_BONUSLEN(slots), used = bonuslen < room ? bonuslen : room;
    uint64_t n = 1 + ((room - used) >> SPA_BLKPTRSHIFT);
    return n < DN_MAX_NBLKPTR ? n : DN_MAX_NBLKPTR;
}

/* recv_check_drr_object (master): the bonus type and length pairs dnode_allocate takes. */
static int bonus_pair_ok(uint32_t bonustype, uint32_t bonuslen)
{
    if (bonuslen != 0)
        return bonustype != DMU_OT_NONE;
    return bonustype == DMU_OT_NONE || bonustype == DMU_OT_SA ||
           bonustype == DMU_OTN_UINT64_METADATA;
}

/* recv_check_drr_object (master), raw streams: flags, tree shape and the raw bonus
 * against what the dnode can hold.  @return the rule broken, or 0. */
static int raw_object_rule(const zv_recs *c, const unsigned char *h, int swap, uint64_t slots,
                           uint64_t *value)
{
    uint32_t bonustype = zv_ld32(h + 20, swap), bonuslen = zv_ld32(h + 28, swap);
    uint32_t raw_bonuslen = zv_ld32(h + 36, swap);
    unsigned flags = h[35], indblkshift = h[48], nlevels = h[49], nblkptr = h[50];
    *value = flags;
    if ((flags & ~(DRR_OBJECT_SPILL | DRR_RAW_BYTESWAP)) ||
        (!c->spill_block && (flags & DRR_OBJECT_SPILL)))
        return ZV_R_OBJ_FLAGS;
    *value = nlevels;
    if (raw_bonuslen < bonuslen ||
        (indblkshift && (indblkshift < DN_MIN_INDBLKSHIFT || indblkshift > DN_MAX_INDBLKSHIFT)) ||
        nlevels < 1 || nlevels > DN_MAX_LEVELS || nblkptr < 1 ||
        nblkptr != deduced_nblkptr(bonustype, bonuslen, slots))
        return ZV_R_OBJ_RAW_FIELDS;
    uint64_t room = DN_SLOTS_TO_BONUSLEN(slots) - (uint64_t)(nblkptr - 1) * 128;
    if (flags & DRR_OBJECT_SPILL)
        room = room < 128 ? 0 : room - 128; /* the spill block pointer takes the tail */
    *value = raw_bonuslen;
    return raw_bonuslen > room ? ZV_R_OBJ_BONUS_FIT : 0;
}

/* ---- the objects declared in a full substream ---- */

/* The index of the first range whose hi is above o (nr if none). */
static uint64_t first_above(const zv_recs *c, uint64_t o)
{
    uint64_t lo = 0, hi = c->nr;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (c->r[mid].hi <= o)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The range holding o, or -1. */
static int64_t find(zv_recs *c, uint64_t o)
{
    if (c->hit < c->nr && c->r[c->hit].lo <= o && o < c->r[c->hit].hi)
        return (int64_t)c->hit;
    uint64_t i = first_above(c, o);
    if (i < c->nr && c->r[i].lo <= o) {
        c->hit = i;
        return (int64_t)i;
    }
    return -1;
}

static void insert_at(zv_recs *c, uint64_t i, uint64_t lo, uint64_t hi, int zap)
{
    if (c->nr == ZV_DECLARED_MAX) { /* forget the lower half (zv_records.h) */
        uint64_t half = ZV_DECLARED_MAX / 2;
        c->forgotten_below = c->r[half].lo;
        memmove(c->r, c->r + half, (c->nr - half) * sizeof c->r[0]);
        c->nr -= half;
        i = i > half ? i - half : 0;
    }
    memmove(c->r + i + 1, c->r + i, (c->nr - i) * sizeof c->r[0]);
    c->r[i] = (zv_objrange){lo, hi, zap};
    c->nr++;
}

static void declare(zv_recs *c, uint64_t o, uint64_t slots, int zap)
{
    uint64_t hi = o + slots; /* o < DN_MAX_OBJECT and slots <= 32: no overflow */
    zv_objrange *last = c->nr ? &c->r[c->nr - 1] : NULL;
    if (last && o >= last->hi) { /* the usual case: objects come in increasing order */
        if (o == last->hi && zap == last->zap)
            last->hi = hi;
        else
            insert_at(c, c->nr, o, hi, zap);
        return;
    }
    if (find(c, o) >= 0)
        return; /* declared twice: receive reallocates it (receive_handle_existing_object) */
    insert_at(c, first_above(c, o), o, o + 1, zap);
}

/* FREEOBJECTS [lo, hi): receive_freeobjects frees them, so they are declared no more. */
static void undeclare(zv_recs *c, uint64_t lo, uint64_t hi)
{
    uint64_t i = first_above(c, lo);
    while (i < c->nr && c->r[i].lo < hi) {
        zv_objrange *r = &c->r[i];
        if (r->lo < lo && r->hi > hi) { /* split */
            zv_objrange tail = {hi, r->hi, r->zap};
            r->hi = lo;
            insert_at(c, i + 1, tail.lo, tail.hi, tail.zap);
            break;
        }
        if (r->lo < lo) {
            r->hi = lo;
            i++;
        } else if (r->hi > hi) {
            r->lo = hi;
            break;
        } else {
            memmove(c->r + i, c->r + i + 1, (c->nr - i - 1) * sizeof c->r[0]);
            c->nr--;
        }
    }
    c->hit = 0;
}

/* ---- the rules ---- */

int zv_recs_begin(zv_recs *c, const unsigned char *h, int swap, zv_rproblem *out)
{
    uint64_t vi = zv_ld64(h + 16, swap), features = (vi >> 2) & 0x3fffffff;
    c->active = (vi & 3) == 1; /* DMU_SUBSTREAM; a compound header holds no objects */
    c->objset = zv_ld32(h + 32, swap);
    c->full = zv_ld64(h + 48, swap) == 0 && !(features & FEATURE_RESUMING);
    c->raw = (features & FEATURE_RAW) != 0;
    c->features = features;
    c->spill_block = (zv_ld32(h + 36, swap) & DRR_FLAG_SPILL_BLOCK) != 0;
    c->reported = c->root = c->objects = 0;
    c->w_obj = c->w_off = c->z_obj = c->z_blocks = 0;
    c->or_first = c->or_num = 0;
    c->forgotten_below = 0;
    c->nr = c->hit = 0;
    /* libzfs_sendrecv.c zfs_receive_one: "invalid record type" unless ZVOL or ZFS (the
     * kernel's dmu_recv_begin_check refuses >= DMU_OST_NUMTYPES) */
    if (c->active && c->objset != DMU_OST_ZFS && c->objset != DMU_OST_ZVOL) {
        int r = refuse(c, out, ZV_R_OBJSET_TYPE, c->objset, 0);
        c->active = 0;
        return r;
    }
    return 0;
}

/* receive_object: the field checks at its top, in its order. */
static int object_fields(zv_recs *c, const unsigned char *h, int swap, zv_rproblem *out)
{
    uint64_t o = zv_ld64(h + 8, swap);
    uint32_t type = zv_ld32(h + 16, swap), bonustype = zv_ld32(h + 20, swap);
    uint32_t blksz = zv_ld32(h + 24, swap), bonuslen = zv_ld32(h + 28, swap);
    uint32_t raw_bonuslen = zv_ld32(h + 36, swap);
    unsigned cksum = h[32], compress = h[33], slots = h[34] ? h[34] : 1, flags = h[35];
    unsigned indblkshift = h[48], nlevels = h[49], nblkptr = h[50];
    if (type == 0 || !ot_valid(type))
        return refuse(c, out, ZV_R_OBJ_TYPE, type, o);
    if (!ot_valid(bonustype))
        return refuse(c, out, ZV_R_OBJ_BONUSTYPE, bonustype, o);
    if (cksum >= ZIO_CHECKSUM_FUNCTIONS)
        return refuse(c, out, ZV_R_OBJ_CHECKSUM, cksum, o);
    if (compress >= ZIO_COMPRESS_FUNCTIONS)
        return refuse(c, out, ZV_R_OBJ_COMPRESS, compress, o);
    if (blksz % SPA_MINBLOCKSIZE || blksz < SPA_MINBLOCKSIZE || blksz > SPA_MAXBLOCKSIZE)
        return refuse(c, out, ZV_R_OBJ_BLKSZ, blksz, o);
    if (bonuslen > DN_MAX_BONUS)
        return refuse(c, out, ZV_R_OBJ_BONUSLEN, bonuslen, o);
    if (slots > DNODE_MAX_SLOTS)
        return refuse(c, out, ZV_R_OBJ_DNSLOTS, slots, o);
    /* master (9b7642df) recv_check_drr_object: what follows, up to the raw branch */
    if (!bonus_pair_ok(bonustype, bonuslen))
        return refuse(c, out, ZV_R_OBJ_BONUS_PAIR, bonuslen, o);
    if (slots > 1 && !(c->features & FEATURE_LARGE_DNODE))
        return refuse(c, out, ZV_R_OBJ_LARGE_DNODE, slots, o);
    if (large_block_refused(c, blksz))
        return refuse(c, out, ZV_R_LARGE_BLOCKS, blksz, o);
    if (o + slots > DN_MAX_OBJECT) /* o < DN_MAX_OBJECT (checked before): no overflow */
        return refuse(c, out, ZV_R_OBJ_PAST_MAX, o, o);
    if (c->raw) {
        if (o < c->or_first || o - c->or_first >= c->or_num)
            return refuse(c, out, ZV_R_OBJECT_RANGE, o, o);
        uint64_t value;
        int rule = raw_object_rule(c, h, swap, slots, &value);
        return rule ? refuse(c, out, rule, value, o) : 0;
    }
    if ((flags & ~DRR_OBJECT_SPILL) || (!c->spill_block && (flags & DRR_OBJECT_SPILL)))
        return refuse(c, out, ZV_R_OBJ_FLAGS, flags, o);
    if (raw_bonuslen || nblkptr || indblkshift || nlevels)
        return refuse(c, out, ZV_R_OBJ_RAW_FIELDS, nlevels, o);
    if (bonuslen > DN_SLOTS_TO_BONUSLEN(slots)) /* master: the bonus fits its own dnode */
        return refuse(c, out, ZV_R_OBJ_BONUS_FIT, bonuslen, o);
    return 0;
}

/* What a filesystem or a volume holds (zfs_ioctl.c zfs_ioc_objset_stats_impl asserts a
 * volume's zvol_get_stats, which reads object 1 and the ZAP object 2; zvol.c: ZVOL_OBJ
 * 1, ZVOL_ZAP_OBJ 2): a volume holds only those two types, a filesystem neither. */
static int objset_holds(uint32_t objset, uint32_t type)
{
    int zvol_type = type == DMU_OT_ZVOL || type == DMU_OT_ZVOL_PROP;
    return objset == DMU_OST_ZVOL ? zvol_type : !zvol_type;
}

static int do_object(zv_recs *c, const unsigned char *h, int swap, zv_rproblem *out)
{
    uint64_t o = zv_ld64(h + 8, swap);
    uint32_t type = zv_ld32(h + 16, swap);
    if (object_fields(c, h, swap, out))
        return 1;
    if (!objset_holds(c->objset, type))
        return refuse(c, out, ZV_R_OBJSET_OBJECT, type, o);
    if (o == 1 && type == (c->objset == DMU_OST_ZVOL ? DMU_OT_ZVOL : DMU_OT_MASTER_NODE))
        c->root = 1;
    c->objects = 1;
    if (c->full)
        declare(c, o, h[34] ? h[34] : 1, ot_zap(type));
    return 0;
}

/* A data record of object o: in a full substream its OBJECT must have come first
 * (receive_write's dnode_hold, receive_free/receive_spill's dmu_object_info). */
static int declared(zv_recs *c, uint64_t o, int *zap, zv_rproblem *out)
{
    *zap = 0;
    if (!c->full)
        return 0; /* an incremental's object may be in its base: nothing to prove */
    int64_t i = find(c, o);
    if (i >= 0) {
        *zap = c->r[i].zap;
        return 0;
    }
    if (o < c->forgotten_below)
        return refuse(c, out, ZV_R_FORGOTTEN, o, o);
    return refuse(c, out, ZV_R_UNDECLARED, o, o);
}

/* The ZAP rule (ZAP_SLACK): a full substream holds every block of a ZAP, in order of
 * offset, so a block far past twice the ones before it is no block of a ZAP.  OpenZFS
 * receives it, and then zap_leaf_lookup_closest spins forever on mount. */
static int zap_block(zv_recs *c, uint64_t o, uint64_t off, uint64_t bs, zv_rproblem *out)
{
    if (o != c->z_obj) {
        c->z_obj = o;
        c->z_blocks = 0;
    }
    c->z_blocks++;
    if (bs && off / bs > 2 * c->z_blocks + ZAP_SLACK)
        return refuse(c, out, ZV_R_ZAP_OFFSET, off, o);
    return 0;
}

/* recv_check_drr_write (master 9b7642df): sizes, compression and checksum of a WRITE.
 * @return the rule broken (with *value), or 0. */
static int write_rule(const zv_recs *c, const unsigned char *h, int swap, uint64_t *value)
{
    uint64_t lsize = zv_ld64(h + 32, swap), csize = zv_ld64(h + 96, swap);
    unsigned cksum = h[48], comp = h[50];
    *value = lsize;
    if (lsize < SPA_MINBLOCKSIZE || lsize > SPA_MAXBLOCKSIZE)
        return ZV_R_WRITE_LSIZE;
    if (large_block_refused(c, lsize))
        return ZV_R_LARGE_BLOCKS;
    *value = csize;
    if (comp == 0 || c->raw) { /* DRR_WRITE_COMPRESSED is compressiontype != 0 */
        if (c->raw ? csize == 0 : csize != 0)
            return ZV_R_COMPRESSED_SIZE;
    }
    if (comp != 0 || c->raw) {
        *value = comp;
        if (!c->raw && !(c->features & FEATURE_COMPRESSED))
            return ZV_R_COMPRESS_FEATURE;
        if (comp >= ZIO_COMPRESS_FUNCTIONS)
            return ZV_R_COMPRESS_TYPE;
        if (!compress_feature_ok(c, comp))
            return ZV_R_COMPRESS_FEATURE;
        *value = csize;
        if (csize == 0 || lsize < csize)
            return ZV_R_COMPRESSED_SIZE;
    }
    *value = cksum; /* master's count: BLAKE3 (14) is a function there (2.2 and later) */
    return cksum >= ZIO_CHECKSUM_FUNCTIONS + 1 ? ZV_R_WRITE_CHECKSUM : 0;
}

/* recv_check_drr_write_embedded (master 9b7642df): after the older raw, etype and
 * compression range checks of data_fields. */
static int embedded_rule(const zv_recs *c, const unsigned char *h, int swap, uint64_t *value)
{
    uint64_t length = zv_ld64(h + 24, swap);
    uint32_t lsize = zv_ld32(h + 48, swap), psize = zv_ld32(h + 52, swap);
    unsigned comp = h[40];
    *value = 0;
    if (!(c->features & FEATURE_EMBED_DATA))
        return ZV_R_EMBED_FEATURE;
    *value = length;
    if (length > SPA_MAXBLOCKSIZE)
        return ZV_R_EMBED_SIZES;
    if (large_block_refused(c, length))
        return ZV_R_LARGE_BLOCKS;
    *value = lsize;
    if (lsize > SPA_MAXBLOCKSIZE || psize > BPE_PAYLOAD_SIZE || lsize > length ||
        (comp == ZIO_COMPRESS_OFF ? lsize != psize : lsize < psize)) {
        *value = psize > BPE_PAYLOAD_SIZE ? psize : lsize;
        return ZV_R_EMBED_SIZES;
    }
    *value = comp;
    return compress_feature_ok(c, comp) ? 0 : ZV_R_COMPRESS_FEATURE;
}

/* recv_check_drr_spill (master 9b7642df): type, and compressed size against the stream
 * kind (raw sends the on-disk size, others none) and the logical size. */
static int spill_rule(const zv_recs *c, const unsigned char *h, int swap, uint64_t *value)
{
    uint64_t length = zv_ld64(h + 16, swap), csize = zv_ld64(h + 40, swap);
    uint32_t type = zv_ld32(h + 84, swap);
    unsigned comp = h[33];
    *value = type;
    if (!ot_valid(type))
        return ZV_R_SPILL_FIELDS;
    *value = csize;
    if (c->raw ? csize == 0 : csize != 0)
        return ZV_R_COMPRESSED_SIZE;
    *value = comp;
    if (csize == 0)
        return comp != 0 ? ZV_R_COMPRESS_TYPE : 0;
    if (comp >= ZIO_COMPRESS_FUNCTIONS)
        return ZV_R_COMPRESS_TYPE;
    if (!compress_feature_ok(c, comp))
        return ZV_R_COMPRESS_FEATURE;
    *value = csize;
    return length < csize ? ZV_R_COMPRESSED_SIZE : 0;
}

/* The fields of a data record that do not need its object. */
static int data_fields(zv_recs *c, const unsigned char *h, uint32_t type, int swap,
                       zv_rproblem *out)
{
    uint64_t o = zv_ld64(h + 8, swap);
    switch (type) {
    case ZV_DRR_WRITE: { /* receive_process_write_record */
        uint64_t off = zv_ld64(h + 24, swap), len = zv_ld64(h + 32, swap);
        if (off + len < off)
            return refuse(c, out, ZV_R_OVERFLOW, off, o);
        if (!ot_valid(zv_ld32(h + 16, swap)))
            return refuse(c, out, ZV_R_WRITE_TYPE, zv_ld32(h + 16, swap), o);
        if (o < c->w_obj || (o == c->w_obj && off < c->w_off))
            return refuse(c, out, ZV_R_WRITE_ORDER, off, o);
        c->w_obj = o;
        c->w_off = off;
        uint64_t value;
        int rule = write_rule(c, h, swap, &value);
        return rule ? refuse(c, out, rule, value, o) : 0;
    }
    case ZV_DRR_FREE: { /* receive_free */
        uint64_t off = zv_ld64(h + 16, swap), len = zv_ld64(h + 24, swap);
        if (len != UINT64_MAX && off + len < off)
            return refuse(c, out, ZV_R_OVERFLOW, off, o);
        return 0;
    }
    case ZV_DRR_WRITE_EMBEDDED: { /* receive_write_embedded */
        uint64_t off = zv_ld64(h + 16, swap), len = zv_ld64(h + 24, swap);
        if (off + len < off)
            return refuse(c, out, ZV_R_OVERFLOW, off, o);
        if (h[41] >= NUM_BP_EMBEDDED_TYPES || h[40] >= ZIO_COMPRESS_FUNCTIONS || c->raw)
            return refuse(c, out, ZV_R_EMBEDDED, h[41] >= NUM_BP_EMBEDDED_TYPES ? h[41] : h[40],
                          o);
        uint64_t value;
        int rule = embedded_rule(c, h, swap, &value);
        return rule ? refuse(c, out, rule, value, o) : 0;
    }
    case ZV_DRR_SPILL: { /* receive_spill */
        uint64_t len = zv_ld64(h + 16, swap);
        if (len < SPA_MINBLOCKSIZE || len > SPA_MAXBLOCKSIZE)
            return refuse(c, out, ZV_R_SPILL_LENGTH, len, o);
        uint64_t value;
        int rule = spill_rule(c, h, swap, &value);
        return rule ? refuse(c, out, rule, value, o) : 0;
    }
    default:
        return 0;
    }
}

static int do_data(zv_recs *c, const unsigned char *h, uint32_t type, int swap, zv_rproblem *out)
{
    uint64_t o = zv_ld64(h + 8, swap);
    int zap;
    if (o == 0 || o >= DN_MAX_OBJECT) /* dnode.c dnode_hold_impl: EINVAL */
        return refuse(c, out, ZV_R_OBJECT_NUMBER, o, o);
    if (data_fields(c, h, type, swap, out) || declared(c, o, &zap, out))
        return 1;
    if (!zap)
        return 0;
    if (type == ZV_DRR_WRITE)
        return zap_block(c, o, zv_ld64(h + 24, swap), zv_ld64(h + 32, swap), out);
    if (type == ZV_DRR_WRITE_EMBEDDED)
        return zap_block(c, o, zv_ld64(h + 16, swap), zv_ld64(h + 24, swap), out);
    return 0;
}

int zv_recs_record(zv_recs *c, const unsigned char *h, uint32_t type, int swap, zv_rproblem *out)
{
    if (!c->active || c->reported)
        return 0;
    switch (type) {
    case ZV_DRR_OBJECT: {
        uint64_t o = zv_ld64(h + 8, swap);
        if (o == 0 || o >= DN_MAX_OBJECT)
            return refuse(c, out, ZV_R_OBJECT_NUMBER, o, o);
        return do_object(c, h, swap, out);
    }
    case ZV_DRR_FREEOBJECTS: { /* receive_freeobjects */
        uint64_t first = zv_ld64(h + 8, swap), n = zv_ld64(h + 16, swap);
        if (first + n < first)
            return refuse(c, out, ZV_R_OVERFLOW, first, first);
        if (c->full && c->nr)
            undeclare(c, first, first + n);
        return 0;
    }
    case ZV_DRR_OBJECT_RANGE: { /* receive_object_range */
        uint64_t first = zv_ld64(h + 8, swap), n = zv_ld64(h + 16, swap);
        /* master recv_check_drr_object_range: nor past DN_MAX_OBJECT (n is 32 then) */
        if (n != DNODES_PER_BLOCK || first % DNODES_PER_BLOCK || !c->raw ||
            first > DN_MAX_OBJECT - DNODES_PER_BLOCK)
            return refuse(c, out, ZV_R_OBJECT_RANGE, first, first);
        c->or_first = first;
        c->or_num = n;
        return 0;
    }
    case ZV_DRR_REDACT: { /* master recv_check_drr_free: DRR_REDACT shares its layout */
        uint64_t o = zv_ld64(h + 8, swap), off = zv_ld64(h + 16, swap);
        uint64_t len = zv_ld64(h + 24, swap);
        if (o == 0 || o >= DN_MAX_OBJECT)
            return refuse(c, out, ZV_R_OBJECT_NUMBER, o, o);
        if (len != UINT64_MAX && off + len < off)
            return refuse(c, out, ZV_R_OVERFLOW, off, o);
        return 0;
    }
    case ZV_DRR_WRITE:
    case ZV_DRR_FREE:
    case ZV_DRR_SPILL:
    case ZV_DRR_WRITE_EMBEDDED:
    case ZV_DRR_WRITE_BYREF:
        return do_data(c, h, type, swap, out);
    default:
        return 0;
    }
}

int zv_recs_end(zv_recs *c, zv_rproblem *out)
{
    int r = 0;
    /* A full filesystem without its master node (zfs_create_fs: MASTER_NODE_OBJ 1) is
     * received and cannot be mounted; a volume's data is object 1 (zvol.c ZVOL_OBJ).  A
     * substream of no record at all is left alone (no sender writes one; the tests build
     * them to check the framing): only one that declares objects must declare object 1. */
    if (c->active && c->full && c->objects && !c->root)
        r = refuse(c, out, ZV_R_NO_ROOT, c->objset, 1);
    c->active = 0;
    return r;
}
