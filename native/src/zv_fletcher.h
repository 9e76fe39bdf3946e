/*
 * zv_fletcher.h — OpenZFS's incremental fletcher-4, as a send stream's record
 * trailers carry it.  Internal to the core: the stream scanner (zv_stream.c)
 * folds every record into it, and the Python module exposes it as
 * zverify._zvcore.fletcher4 for tests and tools.  Thread-safe: the only shared
 * state is the CPU backend, chosen once (zv_fletcher.c).
 */
#ifndef ZV_FLETCHER_H
#define ZV_FLETCHER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Fold len bytes into the fletcher-4 state st[4] (a, b, c, d), reading
 * 32-bit words in little-endian order (big_endian = 0) or big-endian order.
 * Only floor(len / 4) words are used, like OpenZFS's incremental fletcher-4:
 * 1-3 trailing bytes are ignored.
 */
void zv_fletcher4(uint64_t st[4], const void *buf, size_t len, int big_endian);

#endif
