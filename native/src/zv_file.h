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
    uint64_t *cache_misses;  /* NULL, or files whose first read missed the page cache */
} zv_scanner;

void zv_file_scan(const zv_scanner *sc, int fd, zv_record *r);

/*
 * A walk that reads no content does not open regular files (rsync's quick check opens
 * none either): their xattrs are read by xattr_path (l*xattr, no open), which must name
 * the file through dirfd (/proc/self/fd/N/name), then a second stat of name in dirfd
 * proves they belong to the file the record's stat describes.  Holes are not mapped
 * (that needs an fd): data_bytes stays the size.
 */
void zv_file_check_path(int dirfd, const char *name, const char *xattr_path, zv_record *r);

/*
 * Read all xattrs of fd (or of path if fd < 0) into r, sorted by name.  Any failure to
 * list or read them is recorded as an error of r (ZV_OP_XATTR), never as "no xattrs".
 */
void zv_xattrs_read(int fd, const char *path, zv_record *r);

#endif
