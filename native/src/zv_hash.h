/*
 * zv_hash.h — one content hasher, whichever algorithm the walk was asked for: XXH3-128
 * (Debian's libxxhash, or its AVX2 build in zv_xxh_avx2.c) or BLAKE3 (the official C
 * implementation as Debian's librust-blake3-dev ships it, with its own SIMD dispatch).
 * Internal to the core; each worker thread owns one.
 */
#ifndef ZV_HASH_H
#define ZV_HASH_H

#include <stddef.h>

#include "zvcore.h"

typedef struct zv_hasher zv_hasher;

/* A hasher for algo (not ZV_HASH_NONE); NULL when out of memory. */
zv_hasher *zv_hasher_new(int algo);
void zv_hasher_free(zv_hasher *h);
/* Start a new digest: 1, or 0 when the library could not (libcrypto's digests only). */
int zv_hasher_reset(zv_hasher *h);
void zv_hasher_update(zv_hasher *h, const void *data, size_t len);
/* Write the digest (big-endian canonical form for XXH3) and return its length; 0 when the
 * library failed to finish it (libcrypto's digests only). */
size_t zv_hasher_digest(zv_hasher *h, unsigned char out[ZV_DIGEST_MAX]);

/* XXH3-128 built for AVX2; usable() says if this CPU can run it. */
int zv_xxh_avx2_usable(void);
int zv_xxh_avx2_reset(void *state);
void zv_xxh_avx2_update(void *state, const void *data, size_t len);
void zv_xxh_avx2_digest(const void *state, unsigned char out[16]);

#endif
