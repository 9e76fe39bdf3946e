/*
 * zv_mapped.h — reading a file through a mapping instead of read(), for the
 * stream scanner (zv_stream.c).
 *
 * With the file in the page cache, read()'s copy into a buffer costs as much
 * CPU as a fast hash of the same bytes; a mapped window is read where it lies.
 * What read() would report as an error, a mapping reports as SIGBUS: a page
 * that cannot be read (EIO), or one past the end of a file cut short while it
 * is read.  One process-wide handler turns such a fault, inside the window the
 * faulting thread declared, into a jump back to that thread's guard; every
 * other SIGBUS goes to the action that was in place before.
 *
 *     zv_guard g = {0};
 *     if (sigsetjmp(g.env, 1) != 0) { ...g.fault: unmap, report, return... }
 *     zv_guard_enter(&g);
 *     ...p = zv_map(...); zv_guard_window(&g, p, len); read p...; zv_guard_window(&g, 0, 0)...
 *     zv_guard_leave();
 *
 * Internal to the core; never prints.
 */
#ifndef ZV_MAPPED_H
#define ZV_MAPPED_H

#include <setjmp.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct zv_guard {
    sigjmp_buf env;
    /* the window being read (len 0: none); volatile: read by the handler, and after the jump */
    const unsigned char *volatile lo;
    volatile size_t len;
    const unsigned char *volatile fault; /* set by the handler: the address that failed */
} zv_guard;

/*
 * Install the handler (once) and say whether it is SIGBUS's action now.  0: a handler
 * set after ours (Python's faulthandler, say) would see our faults first, so read()
 * instead, which reports what a mapping could not.
 */
int zv_guard_ready(void);

/* This thread's faults inside g's window jump to g->env from now until zv_guard_leave. */
void zv_guard_enter(zv_guard *g);
void zv_guard_leave(void);

/* Declare the window about to be read (NULL, 0: none); stored before any byte is touched. */
void zv_guard_window(zv_guard *g, const void *lo, size_t len);

/*
 * After a fault at byte `off` of fd's file: whether the file now ends at or before it, so
 * it was cut shorter while mapped (a change, as an early EOF of read() is); else the page
 * could not be read (EIO).  0 when fstat fails.
 */
int zv_cut_before(int fd, off_t off);

/*
 * Map len bytes of fd from base (a multiple of the page size) for reading: NULL when the
 * file cannot be mapped.  Pages are read as they are touched; one that cannot be read
 * faults, in the guarded window.
 */
void *zv_map(int fd, off_t base, size_t len);

#endif
