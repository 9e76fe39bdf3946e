/*
 * zv_join.c — the merge-join of two walks, with the common case settled here.
 *
 * Both walks emit canonical order (pre-order, siblings sorted bytewise), which is bytewise
 * order of the path with '/' read as NUL.  The join pairs equal paths and, for the pairs
 * that are identical in every attribute any policy compares (zverify.compare.diffs.same_entry),
 * adds their sizes to the totals the du reconciliation needs and drops them: in a good copy
 * that is nearly every pair, and Python never sees them.  Everything else is handed out as
 * a pair for the Python engine: differing pairs, one-sided entries, hard-linked entries
 * (their groups are compared in Python), and every entry below a directory whose subtree
 * the engine may fold into one difference (see in_fold_region below).  The Python engine
 * stays the reference; tests/compare/test_join.py holds this one to it.
 *
 * Walks over a key range (zverify --mpi: one range per work item) also emit the directories
 * leading to their range as context records: the join folds on them as the single walk
 * would have, and drops them.
 */
#include "zvjoin.h"

#include <stdlib.h>
#include <string.h>

#define SIDE_BATCH 256

typedef struct side {
    zv_walk *walk;
    zv_record recs[SIDE_BATCH];
    size_t pos, n;
    int done;
    char *last; /* path of the previous record, for the order check */
    size_t last_len, last_cap;
} side;

struct zv_join {
    side s[2];
    char *fold;       /* paths under this directory are handed out; NULL: none */
    size_t fold_len;
    int failed_side; /* 0 SRC, 1 DST, -1 none */
    int status;      /* the failure every later call returns; ZV_OK while none */
    int sizes_only;  /* a quick check: no digests, files compare by size (and metadata) */
    zv_join_totals totals;
};

int zv_join_open(zv_walk *src, zv_walk *dst, zv_join **out)
{
    if (!src || !dst || !out)
        return ZV_EINVAL;
    zv_join *j = calloc(1, sizeof *j);
    if (!j)
        return ZV_ENOMEM;
    j->s[0].walk = src;
    j->s[1].walk = dst;
    j->failed_side = -1;
    *out = j;
    return ZV_OK;
}

void zv_join_close(zv_join *j)
{
    if (!j)
        return;
    for (int i = 0; i < 2; i++) {
        for (size_t k = j->s[i].pos; k < j->s[i].n; k++)
            zv_record_free(&j->s[i].recs[k]);
        free(j->s[i].last);
    }
    free(j->fold);
    free(j);
}

int zv_join_failed_side(const zv_join *j) { return j->failed_side; }

void zv_join_sizes_only(zv_join *j)
{
    j->sizes_only = 1;
}

void zv_join_get_totals(const zv_join *j, zv_join_totals *t) { *t = j->totals; }

/* Check that r comes after side i's previous record, and remember its path. */
static int check_order(zv_join *j, int i, const zv_record *r)
{
    side *sd = &j->s[i];
    if (sd->last && zv_canonical_cmp(sd->last, sd->last_len, r->path, r->path_len) >= 0) {
        j->failed_side = i;
        return ZV_EORDER;
    }
    if (!sd->last || r->path_len > sd->last_cap) {
        size_t cap = r->path_len + 64;
        char *p = realloc(sd->last, cap);
        if (!p)
            return ZV_ENOMEM;
        sd->last = p, sd->last_cap = cap;
    }
    memcpy(sd->last, r->path, r->path_len);
    sd->last_len = r->path_len;
    return ZV_OK;
}

/*
 * Make sure side i has a record at pos, reading (and order-checking) its next batch when
 * needed; returns ZV_OK, ZV_EDONE, ZV_EAGAIN or a failure.
 */
static int fill(zv_join *j, int i, int timeout_ms)
{
    side *sd = &j->s[i];
    if (sd->pos < sd->n)
        return ZV_OK;
    if (sd->done)
        return ZV_EDONE;
    sd->pos = sd->n = 0;
    int rc = zv_walk_next(sd->walk, sd->recs, SIDE_BATCH, &sd->n, timeout_ms);
    if (rc == ZV_EDONE)
        sd->done = 1;
    if (rc != ZV_OK) {
        if (rc != ZV_EDONE && rc != ZV_EAGAIN)
            j->failed_side = i;
        return rc;
    }
    for (size_t k = 0; k < sd->n; k++) {
        rc = check_order(j, i, &sd->recs[k]);
        if (rc != ZV_OK)
            return rc; /* the batch stays in recs[pos..n): zv_join_close frees it */
    }
    return ZV_OK;
}

static int same_bytes(const void *a, size_t alen, const void *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* zverify.compare.diffs.same_entry: equal in everything any policy compares, both readable;
 * sizes_only: files read by neither walk (a quick check) count by their size. */
static int same_entry(const zv_record *s, const zv_record *d, int sizes_only)
{
    return s->kind == d->kind && s->size == d->size && s->has_digest == d->has_digest &&
           (!s->has_digest || same_bytes(s->digest, s->digest_len, d->digest, d->digest_len)) &&
           s->mtime.sec == d->mtime.sec &&
           s->mtime.nsec == d->mtime.nsec && s->mode == d->mode && s->uid == d->uid &&
           s->gid == d->gid && (s->link == NULL) == (d->link == NULL) &&
           (!s->link || same_bytes(s->link, s->link_len, d->link, d->link_len)) &&
           s->rdev == d->rdev && s->has_xattrs == d->has_xattrs &&
           (!s->has_xattrs || same_bytes(s->xattrs, s->xattrs_len, d->xattrs, d->xattrs_len)) &&
           s->err_op == ZV_OP_NONE && d->err_op == ZV_OP_NONE && !s->changed && !d->changed &&
           (s->has_digest || s->kind != ZV_KIND_FILE || sizes_only);
}

/* zverify.compare.sizes.SideTally.add, for an entry that is not hard-linked. */
static void tally(zv_tally *t, const zv_record *r)
{
    t->by_kind[r->kind]++;
    t->naive_bytes += (int64_t)r->alloc;
    t->naive_apparent_bytes += (int64_t)r->size;
    t->du_bytes += (int64_t)r->alloc;
    t->du_apparent_bytes += (int64_t)r->size;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* zverify.compare.sizes._sparse_share: the allocation change explained by data extents. */
static int64_t sparse_share(const zv_record *s, const zv_record *d, int64_t d_alloc)
{
    if (s->kind != ZV_KIND_FILE)
        return 0;
    int64_t d_data = (int64_t)d->data_bytes - (int64_t)s->data_bytes;
    if (d_data == 0 || (d_data > 0) != (d_alloc > 0) || d_alloc == 0)
        return 0;
    return abs64(d_data) < abs64(d_alloc) ? d_data : d_alloc;
}

/* The engine's _identical() for a pair it never sees: tallies and the du explanation. */
static void settle_identical(zv_join_totals *t, const zv_record *s, const zv_record *d)
{
    tally(&t->src, s);
    tally(&t->dst, d);
    t->identical_pairs++;
    if (s->alloc == d->alloc && s->data_bytes == d->data_bytes && s->size == d->size)
        return;
    int64_t d_apparent = (int64_t)d->size - (int64_t)s->size;
    int64_t d_alloc = (int64_t)d->alloc - (int64_t)s->alloc;
    if (s->kind == ZV_KIND_DIR) {
        t->apparent[ZV_COMP_DIRECTORIES] += d_apparent;
        t->allocated[ZV_COMP_DIRECTORIES] += d_alloc;
        return;
    }
    int64_t sparse = sparse_share(s, d, d_alloc);
    t->allocated[ZV_COMP_SPARSE] += sparse;
    t->apparent[ZV_COMP_ALLOCATION] += d_apparent;
    t->allocated[ZV_COMP_ALLOCATION] += d_alloc - sparse;
}

/*
 * A superset of the engine's folds (engine._subtree_incomparable and one-sided
 * directories): a directory on one side only, or a pair involving a directory that differs
 * in type, could not be read or changed.  Below it every entry is handed out, so the
 * engine's fold sees exactly what it would see without this join.
 */
static int may_fold(const zv_record *s, const zv_record *d)
{
    if (!s || !d)
        return (s ? s : d)->kind == ZV_KIND_DIR;
    if (s->kind != ZV_KIND_DIR && d->kind != ZV_KIND_DIR)
        return 0;
    return s->kind != d->kind || s->err_op != ZV_OP_NONE || d->err_op != ZV_OP_NONE ||
           s->changed || d->changed;
}

static int start_fold(zv_join *j, const zv_record *r)
{
    char *p = malloc(r->path_len + 1);
    if (!p)
        return ZV_ENOMEM;
    memcpy(p, r->path, r->path_len);
    free(j->fold);
    j->fold = p;
    j->fold_len = r->path_len;
    return ZV_OK;
}

/* Settle or hand out one step of the merge; *out gets a pair when one is handed out. */
static int step(zv_join *j, zv_pair *out, int *handed)
{
    side *a = &j->s[0], *b = &j->s[1];
    zv_record *s = a->pos < a->n ? &a->recs[a->pos] : NULL;
    zv_record *d = b->pos < b->n ? &b->recs[b->pos] : NULL;
    if (s && d) {
        int c = zv_canonical_cmp(s->path, s->path_len, d->path, d->path_len);
        if (c < 0)
            d = NULL;
        else if (c > 0)
            s = NULL;
    }
    const zv_record *any = s ? s : d;
    int folded = j->fold && zv_path_is_under(any->path, any->path_len, j->fold, j->fold_len);
    if (j->fold && !folded) {
        free(j->fold);
        j->fold = NULL;
    }
    *handed = 0;
    if ((s && s->context) || (d && d->context)) {
        /* a directory leading to a ranged walk's range: its own rank reports it; here it
         * only says whether what follows lies below a directory the engine may fold */
        if (!folded && may_fold(s, d) && start_fold(j, any) != ZV_OK)
            return ZV_ENOMEM;
        if (s)
            zv_record_free(s);
        if (d)
            zv_record_free(d);
    } else if (!folded && s && d && same_entry(s, d, j->sizes_only) &&
        ((s->nlink <= 1 && d->nlink <= 1) || s->kind == ZV_KIND_DIR)) {
        settle_identical(&j->totals, s, d);
        zv_record_free(s);
        zv_record_free(d);
    } else {
        if (!folded && may_fold(s, d) && start_fold(j, any) != ZV_OK)
            return ZV_ENOMEM;
        memset(out, 0, sizeof *out);
        if (s)
            out->src = *s, out->has_src = 1;
        if (d)
            out->dst = *d, out->has_dst = 1;
        *handed = 1;
    }
    if (s)
        a->pos++;
    if (d)
        b->pos++;
    return ZV_OK;
}

int zv_join_next(zv_join *j, zv_pair *out, size_t max, size_t *n, int timeout_ms)
{
    *n = 0;
    if (j->status != ZV_OK)
        return j->status; /* a failure is final: never a later ZV_EDONE */
    for (size_t steps = 0; *n < max && steps < ZV_JOIN_STEPS; steps++) {
        int rc[2] = {fill(j, 0, timeout_ms), fill(j, 1, timeout_ms)};
        for (int i = 0; i < 2; i++) {
            if (rc[i] == ZV_OK || rc[i] == ZV_EDONE)
                continue;
            if (rc[i] != ZV_EAGAIN)
                j->status = rc[i];
            return *n ? ZV_OK : rc[i]; /* hand out what is ready first */
        }
        if (rc[0] == ZV_EDONE && rc[1] == ZV_EDONE)
            return *n ? ZV_OK : ZV_EDONE;
        int handed;
        if (step(j, &out[*n], &handed) != ZV_OK) {
            j->status = ZV_ENOMEM;
            return *n ? ZV_OK : ZV_ENOMEM;
        }
        *n += (size_t)handed;
    }
    return ZV_OK;
}
