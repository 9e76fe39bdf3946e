/*
 * zv_file.h — what is done with one open file or one path's xattrs (zv_file.c).  Internal
 * to the core.
 */
#ifndef ZV_FILE_H
#define ZV_FILE_H

#include "zv_hash.h"
#include "zvcore.h"

/*
 * Hash (or only map) the open regular file fd into r: digest, data/hole bytes, xattrs,
 * change detection, read errors.  buf must hold block_size bytes; hasher is NULL when the
 * walk does not hash (ZV_HASH_NONE).
 */
/* What one hashing worker brings to every file it scans. */
typedef struct zv_scanner {
    const zv_options *opt;
    unsigned char *buf;      /* opt->block_size bytes */
    zv_hasher *hasher;       /* NULL: map extents and read xattrs only */
    uint64_t *bytes_counter; /* progress, added to atomically */
    const int *stop;         /* read atomically: nonzero = abandon the file now */
} zv_scanner;

void zv_file_scan(const zv_scanner *sc, int fd, zv_record *r);

/*
 * Read all xattrs of fd (or of path if fd < 0) into r, sorted by name.  Any failure to
 * list or read them is recorded as an error of r (ZV_OP_XATTR), never as "no xattrs".
 */
void zv_xattrs_read(int fd, const char *path, zv_record *r);

#endif
