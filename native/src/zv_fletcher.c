/*
 * zv_fletcher.c — OpenZFS's fletcher-4, the checksum a send stream carries in
 * every record's trailer (see zv_fletcher.h).
 *
 * Apart from the scanner (zv_stream.c) because it is arithmetic with its own
 * CPU dispatch and nothing of the stream format: the scanner only says which
 * bytes to fold.  Long runs are summed in 8 or 16 independent lanes (AVX2,
 * AVX-512 or plain vector code), then folded into the running state with
 * precomputed coefficients; short runs and byte-swapped (big-endian) words
 * take the scalar loop.
 *
 * The backend is chosen once per process, at the first call, under
 * pthread_once: every later call reads the same choice without a lock, and
 * no caller has to remember to initialise anything.
 */
#include <pthread.h>
#include <string.h>

#include "zv_fletcher.h"

#define LANES 8
#define LANES_MAX 16

typedef uint64_t v4u64 __attribute__((vector_size(32)));
typedef uint64_t v8u64 __attribute__((vector_size(64)));

/*
 * coef[t][j][k]: the contribution of lane j's sum k (k = a, b, c, d of the
 * lane's own words) to the block's sum t (t = b, c, d), for LANES lanes that
 * take words j, j+LANES, j+2*LANES, ...  Word weights in the block are
 * binomials of the distance to the block end; per lane they are cubic
 * polynomials in the lane-local distance r, re-expressed in the lane's
 * basis {1, r, C(r+1,2), C(r+2,3)} by evaluating at r = 0, -1, -2, 1.
 */
static uint64_t coef8[3][LANES_MAX][4], coef16[3][LANES_MAX][4];

typedef void lanes_fn(const unsigned char *p, size_t iters, uint64_t out[4][LANES_MAX]);

/* The lane backend this CPU runs, set once by choose() and only read after. */
static struct {
    lanes_fn *sum;                  /* per-lane sums over iters steps of `lanes` words */
    int lanes;                      /* 8 or 16 */
    uint64_t (*coef)[LANES_MAX][4]; /* coef8 or coef16 */
} backend;
static pthread_once_t chosen = PTHREAD_ONCE_INIT;

static int64_t rising(int64_t x, int t)
{
    /* C(x+t-1, t): product of t consecutive integers over t!, exact for any sign */
    int64_t p = 1;
    for (int i = 0; i < t; i++)
        p *= x + i;
    return t == 3 ? p / 6 : t == 2 ? p / 2 : p;
}

static void coef_fill(uint64_t coef[3][LANES_MAX][4], int lanes)
{
    for (int t = 1; t <= 3; t++) {
        for (int j = 0; j < lanes; j++) {
            int64_t p0 = rising(0 * lanes - j, t), pm1 = rising(-1 * lanes - j, t);
            int64_t pm2 = rising(-2 * lanes - j, t), p1 = rising(1 * lanes - j, t);
            int64_t c0 = p0, c1 = c0 - pm1, c2 = pm2 + 2 * c1 - c0, c3 = p1 - c2 - c1 - c0;
            coef[t - 1][j][0] = (uint64_t)c0;
            coef[t - 1][j][1] = (uint64_t)c1;
            coef[t - 1][j][2] = (uint64_t)c2;
            coef[t - 1][j][3] = (uint64_t)c3;
        }
    }
}

static inline uint32_t load32(const unsigned char *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

static void fl4_scalar(uint64_t st[4], const unsigned char *p, size_t nwords, int swap)
{
    uint64_t a = st[0], b = st[1], c = st[2], d = st[3];
    for (size_t i = 0; i < nwords; i++) {
        a += load32(p + 4 * i, swap);
        b += a;
        c += b;
        d += c;
    }
    st[0] = a, st[1] = b, st[2] = c, st[3] = d;
}

/*
 * Per-lane sums over iters*32 bytes of little-endian words; lane j gets the
 * words j mod 8.  Each 64-bit load holds two neighbouring words: masking
 * and shifting split them into even and odd lanes without shuffles.
 */
static inline __attribute__((always_inline)) void lanes_body(const unsigned char *p, size_t iters,
                                                             uint64_t out[4][LANES_MAX])
{
    const v4u64 low = {0xffffffffULL, 0xffffffffULL, 0xffffffffULL, 0xffffffffULL};
    v4u64 a0 = {0}, b0 = {0}, c0 = {0}, d0 = {0};
    v4u64 a1 = {0}, b1 = {0}, c1 = {0}, d1 = {0};
    for (size_t i = 0; i < iters; i++, p += 32) {
        v4u64 w;
        memcpy(&w, p, 32);
        v4u64 even = w & low, odd = w >> 32;
        a0 += even, b0 += a0, c0 += b0, d0 += c0;
        a1 += odd, b1 += a1, c1 += b1, d1 += c1;
    }
    for (int j = 0; j < 4; j++) {
        out[0][2 * j] = a0[j], out[1][2 * j] = b0[j], out[2][2 * j] = c0[j], out[3][2 * j] = d0[j];
        out[0][2 * j + 1] = a1[j], out[1][2 * j + 1] = b1[j];
        out[2][2 * j + 1] = c1[j], out[3][2 * j + 1] = d1[j];
    }
}

static void lanes_generic(const unsigned char *p, size_t iters, uint64_t out[4][LANES_MAX])
{
    lanes_body(p, iters, out);
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static void lanes_avx2(const unsigned char *p, size_t iters,
                                                       uint64_t out[4][LANES_MAX])
{
    lanes_body(p, iters, out);
}

/* The same split with 16 lanes: words j mod 16, 64 bytes per step. */
__attribute__((target("avx512f"))) static void lanes_avx512(const unsigned char *p, size_t iters,
                                                            uint64_t out[4][LANES_MAX])
{
    const v8u64 low = {0xffffffffULL, 0xffffffffULL, 0xffffffffULL, 0xffffffffULL,
                       0xffffffffULL, 0xffffffffULL, 0xffffffffULL, 0xffffffffULL};
    v8u64 a0 = {0}, b0 = {0}, c0 = {0}, d0 = {0};
    v8u64 a1 = {0}, b1 = {0}, c1 = {0}, d1 = {0};
    for (size_t i = 0; i < iters; i++, p += 64) {
        v8u64 w;
        memcpy(&w, p, 64);
        v8u64 even = w & low, odd = w >> 32;
        a0 += even, b0 += a0, c0 += b0, d0 += c0;
        a1 += odd, b1 += a1, c1 += b1, d1 += c1;
    }
    for (int j = 0; j < 8; j++) {
        out[0][2 * j] = a0[j], out[1][2 * j] = b0[j], out[2][2 * j] = c0[j], out[3][2 * j] = d0[j];
        out[0][2 * j + 1] = a1[j], out[1][2 * j + 1] = b1[j];
        out[2][2 * j + 1] = c1[j], out[3][2 * j + 1] = d1[j];
    }
}
#endif

/* The once routine: the coefficient tables, then the widest lanes this CPU runs. */
static void choose(void)
{
    coef_fill(coef8, 8);
    coef_fill(coef16, 16);
    backend.sum = lanes_generic, backend.lanes = 8, backend.coef = coef8;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        backend.sum = lanes_avx512, backend.lanes = 16, backend.coef = coef16;
    else if (__builtin_cpu_supports("avx2"))
        backend.sum = lanes_avx2;
#endif
}

/* Fold a block of n words whose from-zero sums are blk[] into st[] (zfs_fletcher.c's combine). */
static void fl4_combine(uint64_t st[4], const uint64_t blk[4], uint64_t n)
{
    unsigned __int128 w = n;
    uint64_t t2 = (uint64_t)(w * (w + 1) / 2);
    uint64_t t3 = (uint64_t)(w * (w + 1) * (w + 2) / 6);
    uint64_t a = st[0], b = st[1], c = st[2];
    st[3] += n * c + t2 * b + t3 * a + blk[3];
    st[2] += n * b + t2 * a + blk[2];
    st[1] += n * a + blk[1];
    st[0] += blk[0];
}

/* Fold whole lane steps from p; @return the bytes consumed. */
static size_t fl4_lanes(uint64_t st[4], const unsigned char *p, size_t nwords)
{
    uint64_t lane[4][LANES_MAX], blk[4] = {0, 0, 0, 0};
    uint64_t (*coef)[LANES_MAX][4] = backend.coef;
    int lanes = backend.lanes;
    backend.sum(p, nwords / (size_t)lanes, lane);
    for (int j = 0; j < lanes; j++) {
        blk[0] += lane[0][j];
        for (int t = 0; t < 3; t++)
            blk[t + 1] += coef[t][j][0] * lane[0][j] + coef[t][j][1] * lane[1][j] +
                          coef[t][j][2] * lane[2][j] + coef[t][j][3] * lane[3][j];
    }
    size_t used = nwords / (size_t)lanes * (size_t)lanes;
    fl4_combine(st, blk, used);
    return used * 4;
}

void zv_fletcher4(uint64_t st[4], const void *buf, size_t len, int big_endian)
{
    const unsigned char *p = buf;
    size_t nwords = len / 4;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    int swap = big_endian != 0;
#else
    int swap = big_endian == 0;
#endif
    pthread_once(&chosen, choose);
    /* Lanes pay a fixed combine cost: worth it from a few hundred bytes on. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!swap && nwords >= 128) {
        size_t used = fl4_lanes(st, p, nwords);
        p += used;
        nwords -= used / 4;
    }
#endif
    fl4_scalar(st, p, nwords, swap);
}

