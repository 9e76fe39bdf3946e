/*
 * zv_hash.c — the content hasher of the walk's workers (zv_hash.h).
 *
 * BLAKE3 runs here, in the C workers, rather than through the Python binding: the
 * binding cost a Python thread hop and a GIL round-trip per file, ~3x slower than b3sum
 * on trees of small files.  The sources are not in this repository: setup.py compiles the
 * ones Debian packages (native/blake3_sources.py says where they are).
 *
 * XXH3 is compiled in from Debian's header-only xxhash.h (libxxhash-dev) rather than
 * linked to libxxhash.so.0: a wheel then needs no xxHash library on the machine that
 * installs it, and the compiler may inline the hot loop.  With no -m flags it is the
 * build's baseline (SSE2 on x86-64, NEON on aarch64); zv_xxh_avx2.c adds the AVX2 one.
 *
 * SHA-256 and SHA-512 come from OpenSSL's libcrypto, the implementation hashlib uses too,
 * so that `--hash sha256` hashes in these workers as well: the C join (and so compare
 * --mpi) needs every digest of a walk made here.  MD5 and SHA-1 (md5sum and sha1sum lists,
 * hashdeep, BagIt, mtree) come from there too: hashlib in Python threads was ~25% slower.
 */
#include "zv_hash.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL /* this file's own static copy: no libxxhash.so at run time */
#include <xxhash.h>

#include <openssl/evp.h>

#include "blake3.h"

struct zv_hasher {
    int algo;
    XXH3_state_t *xxh; /* 64-byte aligned by the library */
    blake3_hasher b3;
    EVP_MD_CTX *sha;   /* SHA-256 / SHA-512 / MD5 / SHA-1 */
};

/* The libcrypto digest of algo, or NULL when another library hashes it. */
static const EVP_MD *evp_of(int algo)
{
    switch (algo) {
    case ZV_HASH_SHA256:
        return EVP_sha256();
    case ZV_HASH_SHA512:
        return EVP_sha512();
    case ZV_HASH_MD5:
        return EVP_md5();
    case ZV_HASH_SHA1:
        return EVP_sha1();
    default:
        return NULL;
    }
}

static int is_evp(int algo)
{
    return evp_of(algo) != NULL;
}

/*
 * The XXH3 build ZVERIFY_XXH demands: 1 "auto" (also unset or empty), 0 "baseline"
 * (tests compare both builds), -1 a value that names neither.  The only reader of
 * the variable, so the core and its caller's refusal (zv_xxh_setting_known) agree.
 */
static int xxh_asked(void)
{
    const char *v = getenv("ZVERIFY_XXH");
    if (!v || !*v || !strcmp(v, "auto"))
        return 1;
    return strcmp(v, "baseline") ? -1 : 0;
}

int zv_xxh_setting_known(void)
{
    return xxh_asked() >= 0;
}

/*
 * Which XXH3 build hashes: the AVX2 one when the CPU has it, else the baseline
 * one compiled here.  An unknown ZVERIFY_XXH gets the baseline, which runs on
 * any CPU and gives the same digests; the CLI refuses such a value before it
 * hashes anything.
 */
static int avx2_enabled(void)
{
    static int decided = -1;
    int v = __atomic_load_n(&decided, __ATOMIC_RELAXED);
    if (v < 0) {
        v = zv_xxh_avx2_usable() && xxh_asked() == 1;
        __atomic_store_n(&decided, v, __ATOMIC_RELAXED);
    }
    return v;
}

zv_hasher *zv_hasher_new(int algo)
{
    if (algo != ZV_HASH_XXH3_128 && algo != ZV_HASH_BLAKE3 && !is_evp(algo))
        return NULL;
    zv_hasher *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->algo = algo;
    if ((algo == ZV_HASH_XXH3_128 && !(h->xxh = XXH3_createState())) ||
        (is_evp(algo) && !(h->sha = EVP_MD_CTX_new()))) {
        free(h);
        return NULL;
    }
    /* the only step that can fail later: tried here, so a worker without it marks its
     * files ENOMEM as for any failed allocation, instead of hashing nothing */
    if (is_evp(algo) && !zv_hasher_reset(h)) {
        zv_hasher_free(h);
        return NULL;
    }
    if (!is_evp(algo))
        zv_hasher_reset(h);
    return h;
}

void zv_hasher_free(zv_hasher *h)
{
    if (!h)
        return;
    XXH3_freeState(h->xxh);
    EVP_MD_CTX_free(h->sha);
    free(h);
}

int zv_hasher_reset(zv_hasher *h)
{
    if (is_evp(h->algo))
        return EVP_DigestInit_ex(h->sha, evp_of(h->algo), NULL) == 1;
    if (h->algo == ZV_HASH_BLAKE3)
        blake3_hasher_init(&h->b3);
    else if (avx2_enabled())
        zv_xxh_avx2_reset(h->xxh);
    else
        XXH3_128bits_reset(h->xxh);
    return 1;
}

void zv_hasher_update(zv_hasher *h, const void *data, size_t len)
{
    if (is_evp(h->algo))
        EVP_DigestUpdate(h->sha, data, len); /* cannot fail for an initialised digest */
    else if (h->algo == ZV_HASH_BLAKE3)
        blake3_hasher_update(&h->b3, data, len);
    else if (avx2_enabled())
        zv_xxh_avx2_update(h->xxh, data, len);
    else
        XXH3_128bits_update(h->xxh, data, len);
}

size_t zv_hasher_digest(zv_hasher *h, unsigned char out[ZV_DIGEST_MAX])
{
    if (is_evp(h->algo)) {
        unsigned int len = 0;
        return EVP_DigestFinal_ex(h->sha, out, &len) == 1 ? len : 0;
    }
    if (h->algo == ZV_HASH_BLAKE3) {
        blake3_hasher_finalize(&h->b3, out, BLAKE3_OUT_LEN);
        return BLAKE3_OUT_LEN;
    }
    if (avx2_enabled()) {
        zv_xxh_avx2_digest(h->xxh, out);
        return 16;
    }
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(h->xxh));
    memcpy(out, canon.digest, 16);
    return 16;
}

/* ---- facts for `zverify --version` ---- */

unsigned zv_xxh_version(void)
{
    return XXH_versionNumber();
}

const char *zv_xxh_kernel(void)
{
    if (avx2_enabled())
        return "avx2";
#if XXH_VECTOR == XXH_SSE2
    return "sse2";
#elif XXH_VECTOR == XXH_NEON
    return "neon";
#elif XXH_VECTOR == XXH_SCALAR
    return "portable";
#else
    return "other";
#endif
}

const char *zv_blake3_version(void)
{
    return blake3_version();
}

/* The widest kernel BLAKE3's own dispatcher picks on this CPU (blake3_dispatch.c). */
const char *zv_blake3_kernel(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl"))
        return "avx512";
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
    if (__builtin_cpu_supports("sse4.1"))
        return "sse4.1";
    if (__builtin_cpu_supports("sse2"))
        return "sse2";
#elif defined(__aarch64__)
    return "neon"; /* every AArch64 CPU has it: blake3_dispatch.c calls it unconditionally */
#endif
    return "portable";
}
