/*
 * zvjoin.h — the join of two walks (zv_join.c), public like the walk itself.
 *
 * Two walks in canonical order are merged path by path.  Pairs that Python's
 * compare engine (zverify/compare/) would judge identical are settled here,
 * into totals, so that a tree of millions of unchanged files never crosses into
 * Python entry by entry; every other pair is handed out for the engine to judge.
 * To settle a pair the join applies rules that mirror the engine's; they are
 * listed with their Python twins in docs/design/compare.md, "What the C join
 * decides", and tests/compare/test_join.py holds the two together.  The du
 * tally below is one of those mirrors (zverify.compare.sizes).
 *
 * Threading contract: a zv_join is used by one consumer thread, like the walks
 * it borrows.
 */
#ifndef ZVJOIN_H
#define ZVJOIN_H

#include <stddef.h>
#include <stdint.h>

#include "zvcore.h" /* zv_walk, zv_record, enum zv_kind, the status codes */

/* Sizes of one side's entries, as zverify.compare.sizes.SideTally adds them up. */
typedef struct zv_tally {
    uint64_t by_kind[ZV_KIND_UNKNOWN + 1];
    int64_t du_bytes, du_apparent_bytes, naive_bytes, naive_apparent_bytes;
} zv_tally;

/* The components of the du explanation that identical pairs can add to. */
enum zv_component { ZV_COMP_DIRECTORIES, ZV_COMP_SPARSE, ZV_COMP_ALLOCATION, ZV_N_COMPONENTS };

/* What the join settled without handing out: identical pairs, and their sizes. */
typedef struct zv_join_totals {
    zv_tally src, dst;
    int64_t apparent[ZV_N_COMPONENTS], allocated[ZV_N_COMPONENTS]; /* DST - SRC */
    uint64_t identical_pairs;
} zv_join_totals;

/* A path on one side or both; the records' buffers pass to the caller (zv_record_free). */
typedef struct zv_pair {
    zv_record src, dst;
    int has_src, has_dst;
} zv_pair;

typedef struct zv_join zv_join;

/* Join two open walks (borrowed: close them after zv_join_close). */
int zv_join_open(zv_walk *src, zv_walk *dst, zv_join **out);
/*
 * Move up to max pairs that need the caller's judgement into out[], in canonical order;
 * identical pairs are settled into the totals instead.  Waits up to timeout_ms per walk,
 * and returns after ZV_JOIN_STEPS pairs even when none needed judgement (n == 0), so a
 * long run of identical pairs never keeps the caller from its progress line and signals.
 * @return ZV_OK (n >= 0), ZV_EAGAIN, ZV_EDONE (both walks complete), ZV_EORDER, or a walk's
 *         failure (ZV_EWALK, ZV_ESTOPPED, ZV_ENOMEM): zv_join_failed_side() says which walk.
 *         A failure is final: every later call returns it again.
 */
#define ZV_JOIN_STEPS 16384
int zv_join_next(zv_join *j, zv_pair *out, size_t max, size_t *n, int timeout_ms);
int zv_join_failed_side(const zv_join *j); /* 0 SRC, 1 DST, -1 none */
/* A quick check: the walks hash nothing, so files without digests that agree in size and
 * every other attribute are identical.  Call before the first zv_join_next. */
void zv_join_sizes_only(zv_join *j);
void zv_join_get_totals(const zv_join *j, zv_join_totals *t);
void zv_join_close(zv_join *j);

#endif
