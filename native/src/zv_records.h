/*
 * zv_records.h — the record rules of a send stream: what OpenZFS 2.1's receive
 * (module/zfs/dmu_recv.c) refuses in one record, and the order it needs (an OBJECT before
 * the records of its object).  Used by the scanner (zv_stream.c), one call per record;
 * the rules and their sources are enum zv_rule (zvstream.h) and docs/design/sendstream.md.
 *
 * O(1) per record and no allocation: the objects declared in a full substream are kept as
 * ranges of object numbers, at most ZV_DECLARED_MAX of them (OBJECT records come in
 * increasing object order, so a real stream needs one range per run of objects); past the
 * bound the lower half is forgotten, and a record for a forgotten object is refused as
 * not proven (ZV_R_FORGOTTEN): a sender writes an object's records right after the OBJECT
 * records of its dnode block (module/zfs/dmu_send.c, do_dump: 32 dnodes), never 2,048
 * ranges later.
 */
#ifndef ZV_RECORDS_H
#define ZV_RECORDS_H

#include <stdint.h>
#include <string.h>

#include "zv_drr.h"
#include "zvstream.h"

typedef struct zv_objrange {
    uint64_t lo, hi; /* objects [lo, hi) declared (a multi-slot dnode covers its slots) */
    int zap;         /* the OBJECT records of the range declared ZAP objects */
} zv_objrange;

typedef struct zv_rproblem {
    int rule;        /* enum zv_rule */
    uint64_t value;  /* the offending value */
    uint64_t object; /* the object the record names (0 if none) */
} zv_rproblem;

typedef struct zv_recs {
    int active;          /* inside a substream (a compound header's records are not checked) */
    int full;            /* fromguid 0 and not a resume: every object is declared in it */
    int raw;             /* feature RAW */
    uint64_t features;   /* the BEGIN's DMU_BACKUP_FEATURE_* bits */
    int spill_block;     /* BEGIN flag DRR_FLAG_SPILL_BLOCK */
    uint32_t objset;     /* BEGIN drr_type (dmu_objset_type_t) */
    int reported;        /* a problem was returned in this substream (one per substream) */
    int root;            /* object 1 was declared with the type its objset needs */
    int objects;         /* an OBJECT record was met */
    uint64_t w_obj, w_off;      /* the last WRITE's (object, offset) */
    uint64_t z_obj, z_blocks;   /* data blocks of z_obj met so far (the ZAP rule) */
    uint64_t or_first, or_num;  /* the last OBJECT_RANGE (raw) */
    uint64_t forgotten_below;   /* objects below this may have been forgotten */
    uint64_t nr, hit;           /* ranges in use; the last one found */
    zv_objrange r[ZV_DECLARED_MAX];
} zv_recs;

/* A BEGIN (its 312-byte header): a substream's checks start over.  @return 1 with *out
 * when its header is refused already (its objset type). */
int zv_recs_begin(zv_recs *c, const unsigned char *h, int swap, zv_rproblem *out);

/* One record of type (not BEGIN/END).  @return 1 with *out filled for the first record
 * the rules refuse in this substream, else 0. */
int zv_recs_record(zv_recs *c, const unsigned char *h, uint32_t type, int swap, zv_rproblem *out);

/* The END of a substream.  @return 1 with *out when the substream as a whole is refused. */
int zv_recs_end(zv_recs *c, zv_rproblem *out);

#endif
