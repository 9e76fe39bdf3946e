/*
 * zv_file.h — what is done with one open file or one path's xattrs (zv_file.c), and the
 * AVX2 build of XXH3 it may use (zv_xxh_avx2.c).  Internal to the core.
 */
#ifndef ZV_FILE_H
#define ZV_FILE_H

#include "zvcore.h"

/*
 * Hash (or only map) the open regular file fd into r: digest, data/hole bytes, xattrs,
 * change detection, read errors.  buf must hold block_size bytes; xxh_state is an XXH3
 * state or NULL.
 */
void zv_file_scan(int fd, zv_record *r, const zv_options *opt, unsigned char *buf,
                  void *xxh_state, uint64_t *bytes_counter);

/*
 * Read all xattrs of fd (or of path if fd < 0) into r, sorted by name.  Any failure to
 * list or read them is recorded as an error of r (ZV_OP_XATTR), never as "no xattrs".
 */
void zv_xattrs_read(int fd, const char *path, zv_record *r);

/* XXH3-128 built for AVX2; usable() says if this CPU can run it. */
int zv_xxh_avx2_usable(void);
int zv_xxh_avx2_reset(void *state);
void zv_xxh_avx2_update(void *state, const void *data, size_t len);
void zv_xxh_avx2_digest(const void *state, unsigned char out[16]);

#endif
