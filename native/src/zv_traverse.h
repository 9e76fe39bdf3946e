/*
 * zv_traverse.h — the canonical-order traversal (zv_traverse.c), which knows nothing of
 * threads: it hands every record to a sink, and the pipeline (zv_walk.c) is one such
 * sink.  So the dependency goes one way: pipeline -> traverse.
 */
#ifndef ZV_TRAVERSE_H
#define ZV_TRAVERSE_H

#include "zvcore.h"

typedef struct zv_sink {
    void *ctx;
    /* Take rec (and fd >= 0: a regular file still to be scanned).  0, or -1 when the walk
     * is stopping; either way rec and fd now belong to the sink. */
    int (*emit)(void *ctx, zv_record *rec, int fd);
    /* Wait until one more file may be held open: 0, or -1 when stopping. */
    int (*reserve_fd)(void *ctx);
    /* An open failed with EMFILE/ENFILE: wait until a worker closes a file, 0; -1 when
     * no other file of this walk is open (waiting would not help) or when stopping. */
    int (*await_close)(void *ctx);
    void (*release_fd)(void *ctx);
    /* Whether to ask for read-ahead of the file just opened: 1 while its data is likely
     * not in the page cache. */
    int (*prefetch)(void *ctx);
    /* An entry the filter left out (never emitted, a directory never entered). */
    void (*excluded)(void *ctx);
} zv_sink;

typedef struct zv_traverse_opts {
    int root_fd;         /* an open directory; stays open, owned by the caller */
    uint64_t root_dev;
    int one_file_system;
    int read_xattrs;
    int read_content;    /* file data will be read: files are opened (else never) */
    const zv_filter *filter; /* NULL: keep everything */
    int keep_open;       /* directory levels whose fds stay open, >= 1 */
    const char *root_path; /* NULL: unknown */
    const char *range_lo, *range_hi; /* zv_options: NULL unbounded */
    size_t range_lo_len, range_hi_len;
} zv_traverse_opts;

/*
 * Emit every entry below and including the root, in canonical order.
 * @return ZV_OK (everything emitted), ZV_ESTOPPED (the sink said stop), or ZV_EWALK with
 *         *err_no set: the traversal could not go on (e.g. ENOMEM), so what was emitted
 *         is NOT the whole tree.  Per-entry problems are inside the records instead.
 */
int zv_traverse(const zv_traverse_opts *opt, const zv_sink *sink, int *err_no);

#endif
