/*
 * zv_record.c — what every stage of a walk knows about a record: how its buffers are freed,
 * the canonical order of paths, whether a path lies under a directory, and the names of
 * the operations a record's error names.  Declared in zvcore.h.  The traversal, the walk
 * and the join all stand on this file and it stands on none of them, so the core's calls
 * go one way: join -> walk -> traverse -> file -> hash.
 */
#include "zvcore.h"

#include <stdlib.h>
#include <string.h>

void zv_record_free(zv_record *r)
{
    free(r->path);
    free(r->link);
    free(r->xattrs);
    free(r->extents);
    r->path = r->link = r->xattrs = NULL;
    r->extents = NULL;
    r->n_extents = 0;
}

int zv_canonical_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x == y)
            continue;
        x = x == '/' ? 0 : x;
        y = y == '/' ? 0 : y;
        return x < y ? -1 : 1;
    }
    return alen < blen ? -1 : alen > blen;
}

int zv_path_is_under(const char *path, size_t len, const char *dir, size_t dlen)
{
    if (dlen == 0)
        return len != 0;
    return len > dlen && memcmp(path, dir, dlen) == 0 && path[dlen] == '/';
}

const char *zv_op_name(int op)
{
    static const char *const names[] = {
        [ZV_OP_NONE] = "none",       [ZV_OP_LSTAT] = "lstat", [ZV_OP_OPENDIR] = "opendir",
        [ZV_OP_READDIR] = "readdir", [ZV_OP_OPEN] = "open",   [ZV_OP_READ] = "read",
        [ZV_OP_READLINK] = "readlink", [ZV_OP_XATTR] = "xattr", [ZV_OP_SEEK] = "seek",
    };
    if (op < 0 || op >= (int)(sizeof names / sizeof *names) || !names[op])
        return "unknown";
    return names[op];
}
