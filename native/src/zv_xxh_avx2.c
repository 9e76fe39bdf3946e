/*
 * zv_xxh_avx2.c — XXH3-128 compiled for AVX2, from Debian's xxhash.h.
 *
 * Debian's libxxhash is built for the x86-64 baseline (SSE2).  Its header can
 * also be compiled inline, so this file builds the same algorithm a second
 * time with AVX2 enabled for these functions only; zv_file.c picks it at run
 * time when the CPU has AVX2.  The digest is the same either way (tested
 * against the xxhash Python package).  On a hot page cache this halves the
 * hashing CPU of large files.
 */
#include "zv_hash.h"

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

int zv_xxh_avx2_reset(void *state)
{
    return XXH3_128bits_reset((XXH3_state_t *)state) == XXH_OK ? 0 : -1;
}

void zv_xxh_avx2_update(void *state, const void *data, size_t len)
{
    (void)XXH3_128bits_update((XXH3_state_t *)state, data, len);
}

void zv_xxh_avx2_digest(const void *state, unsigned char out[16])
{
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest((const XXH3_state_t *)state));
    for (int i = 0; i < 16; i++)
        out[i] = canon.digest[i];
}

int zv_xxh_avx2_usable(void)
{
    return __builtin_cpu_supports("avx2");
}
#else
int zv_xxh_avx2_reset(void *state) { (void)state; return -1; }
void zv_xxh_avx2_update(void *state, const void *data, size_t len) { (void)state, (void)data, (void)len; }
void zv_xxh_avx2_digest(const void *state, unsigned char out[16]) { (void)state, (void)out; }
int zv_xxh_avx2_usable(void) { return 0; }
#endif
