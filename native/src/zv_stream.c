/*
 * zv_stream.c — send-stream framing and fletcher-4 replay (see zvstream.h);
 * the checksum arithmetic itself is in zv_fletcher.c.
 *
 * One pass over a window of input at a time: headers are copied out of it
 * (they may straddle two windows), payloads are folded into the checksum
 * piece by piece as they pass, so a 16 MiB WRITE needs no 16 MiB
 * allocation.  The only other allocation is the BEGIN payload kept for
 * Python, bounded by nvlist_max.
 *
 * A regular file is mapped, 8 MiB at a time, instead of read(): with the
 * file in the page cache, read()'s copy into our buffer was more than half
 * of a scan's CPU time (the vectorised fletcher-4 runs at 3-4x the copy
 * speed), and a mapped window is checksummed where it lies.  Pipes, what
 * cannot be mapped and the last bytes of a file (< 64 KiB) are read() into
 * one buffer sized to stay in L2; the end of input is always read()'s
 * answer, so a file that grows is read as far as read() would.  A mapped
 * page that cannot be read (an I/O error, or the file cut shorter while we
 * read it) raises SIGBUS where read() would have returned an error: the
 * guard of zv_mapped.h turns a fault inside our window into the same ZV_SP_IO.
 * A reader thread overlapping read() with the checksum was tried and
 * measured slower on 2-vCPU machines.
 *
 * Checksum model (docs/design/sendstream-format.md §6): a running fletcher-4 state S
 * restarts at every BEGIN and after every END; each record folds its first
 * 280 bytes, is checked against its trailer when the trailer is non-zero,
 * folds the 32 trailer bytes, then folds its payload.  After a trailer
 * mismatch we continue from the *stored* trailer (the sender's truth), so
 * one damaged spot yields one report instead of a cascade over every later
 * record, and the reported span stays tight.
 *
 * Long because: framing and the relay of verified bytes share one struct and its window;
 * the record layout is zv_drr.h and the sampling of a window read by range is zv_sample.c.
 */
#define _GNU_SOURCE /* SEEK_DATA */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zv_drr.h"
#include "zv_fletcher.h"
#include "zv_mapped.h"
#include "zv_records.h"
#include "zvstream.h"


/* ------------------------------------------------------------------ */
/* the scanner                                                         */
/* ------------------------------------------------------------------ */

#define QUEUE 12 /* the most events one record can queue (a BEGIN: 7), and a margin */

struct zv_stream {
    int fd;
    unsigned char *buf;       /* the read buffer */
    size_t cap;
    const unsigned char *cur; /* == buf once something was read, else NULL */
    size_t cpos, clen;
    int eof;                  /* input ended (EOF or error already reported) */
    uint64_t off;             /* stream offset of cur[cpos] */
    int done, started;
    int skip;                 /* zv_stream_skip_rest(): only count the bytes left */
    int swap, big_endian;
    size_t nvlist_max;
    uint64_t progress_every, next_progress;

    uint64_t st[4];          /* running fletcher-4 */
    uint64_t record;         /* index of the record being read */
    uint64_t rec_off;        /* its offset */
    int rtype;               /* its type, -1 until its header is read */
    uint64_t verified_to;    /* bytes before this are covered by a good check */
    uint64_t begin_toguid;   /* toguid of the open BEGIN, 0 outside */
    zv_sseg seg;

    unsigned char hdr[ZV_DRR_SIZE]; /* copy of the current header */
    unsigned char *nv;              /* kept BEGIN payload */
    size_t nv_cap;

    zv_sevent q[QUEUE];
    int qhead, qlen;

    zv_recs recs; /* the record rules of the open substream (zv_records.h) */

    /* mapped input (a regular file): cur points into map[0..map_len) */
    int can_map;             /* 0 once mapping failed or the fd is no regular file */
    unsigned char *map;
    size_t map_len;
    zv_guard *guard; /* inside zv_stream_next: where a fault in map jumps to */

    /* the relay (zvstream.h): held[hstart..hlen) are the stream bytes [relayed, off) */
    int relay, relay_fd, relay_failed;
    unsigned char *held;
    size_t hstart, hlen, hcap;
    uint64_t relayed;        /* bytes written to relay_fd */
    uint64_t relay_to;       /* bytes before this are verified: written at the next record */
};

static void relay_stop(zv_stream *s)
{
    s->relay = 0;
    free(s->held);
    s->held = NULL;
    s->hstart = s->hlen = s->hcap = 0;
}

static zv_sevent *push(zv_stream *s, int kind)
{
    /* The queue holds what one record can produce; it is drained before the next record. */
    zv_sevent *ev = &s->q[(s->qhead + s->qlen++) % QUEUE];
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->offset = s->rec_off;
    ev->record = s->record;
    ev->rtype = s->rtype;
    ev->big_endian = s->big_endian;
    ev->bytes = s->off;
    return ev;
}

static zv_sevent *problem(zv_stream *s, int code, int fatal)
{
    relay_stop(s); /* nothing after a problem is ever relayed, whatever it was */
    zv_sevent *ev = push(s, ZV_SEV_PROBLEM);
    ev->code = code;
    ev->fatal = fatal;
    return ev;
}

static void take_seg(zv_stream *s, zv_sevent *ev)
{
    ev->seg = s->seg;
    memset(&s->seg, 0, sizeof s->seg);
}

/* Stop framing: queue EOF (after any problem already queued). */
static void finish(zv_stream *s)
{
    zv_sevent *ev = push(s, ZV_SEV_EOF);
    ev->offset = s->off;
    take_seg(s, ev);
    s->done = 1;
}

static void relay_fail(zv_stream *s, int err)
{
    zv_sevent *ev = problem(s, ZV_SP_RELAY, 1);
    ev->err_no = err;
    ev->detail[0] = s->relayed;
    ev->offset = s->relayed;
    s->relay_failed = 1;
}

/* Keep n consumed bytes until they are verified. */
static void hold(zv_stream *s, const unsigned char *p, size_t n)
{
    if (!s->relay || n == 0)
        return;
    if (s->hlen + n > s->hcap && s->hstart > 0) {
        memmove(s->held, s->held + s->hstart, s->hlen - s->hstart);
        s->hlen -= s->hstart;
        s->hstart = 0;
    }
    if (s->hlen + n > s->hcap) {
        size_t cap = s->hcap ? 2 * s->hcap : (1u << 20);
        while (cap < s->hlen + n)
            cap *= 2;
        unsigned char *held = realloc(s->held, cap);
        if (!held)
            return relay_fail(s, ENOMEM);
        s->held = held;
        s->hcap = cap;
    }
    memcpy(s->held + s->hlen, p, n);
    s->hlen += n;
}

/* Verified bytes are written in batches of at least this much (or all at the end). */
#define RELAY_BATCH ((uint64_t)1 << 20)

/* Write the verified held bytes.  @return 0, or -1 after queueing SP_RELAY. */
static int relay_flush(zv_stream *s, int all)
{
    if (!s->relay || s->relay_to <= s->relayed)
        return 0;
    if (!all && s->relay_to - s->relayed < RELAY_BATCH)
        return 0; /* a write per record would cost a syscall per 312-byte OBJECT */
    size_t n = (size_t)(s->relay_to - s->relayed);
    while (n > 0) {
        ssize_t w = write(s->relay_fd, s->held + s->hstart, n);
        if (w < 0) {
            relay_fail(s, errno); /* EINTR too: a signal the caller must act on */
            return -1;
        }
        s->hstart += (size_t)w;
        s->relayed += (uint64_t)w;
        n -= (size_t)w;
    }
    if (s->hstart == s->hlen)
        s->hstart = s->hlen = 0;
    return 0;
}

/* ---- mapped windows (zv_mapped.h) ---- */

#define MAP_WINDOW ((size_t)8 << 20) /* 4-64 MiB measured alike; RSS grows by one window */
#define MAP_MIN ((off_t)64 << 10)    /* less than this left: read() (and EOF) instead */

static void unmap_window(zv_stream *s)
{
    if (!s->map)
        return;
    if (s->guard)
        zv_guard_window(s->guard, NULL, 0);
    munmap(s->map, s->map_len);
    s->map = NULL;
    s->map_len = 0;
    s->cur = NULL;
    s->cpos = s->clen = 0;
}

/*
 * Map the next window of a regular file at the fd's position, which moves
 * past it as a read() would.  @return 1 when cur holds new bytes, 0 when
 * read() is to be used: near the end of the file, or when it cannot be
 * mapped (then never again).
 */
static int map_window(zv_stream *s)
{
    struct stat st;
    off_t pos = lseek(s->fd, 0, SEEK_CUR);
    if (pos < 0 || fstat(s->fd, &st) < 0 || st.st_size - pos < MAP_MIN || !zv_guard_ready())
        return 0;
    off_t base = pos & ~(off_t)(sysconf(_SC_PAGESIZE) - 1);
    size_t len = st.st_size - base < (off_t)MAP_WINDOW ? (size_t)(st.st_size - base) : MAP_WINDOW;
    unsigned char *p = zv_map(s->fd, base, len);
    if (!p) {
        s->can_map = 0;
        return 0;
    }
    if (lseek(s->fd, base + (off_t)len, SEEK_SET) < 0) {
        munmap(p, len);
        s->can_map = 0;
        return 0;
    }
    s->map = p;
    s->map_len = len;
    zv_guard_window(s->guard, p, len);
    s->cur = s->map + (pos - base);
    s->cpos = 0;
    s->clen = len - (size_t)(pos - base);
    return 1;
}

/*
 * After the jump from the SIGBUS handler: a page of the window could not be read.
 * The scan ends there with ZV_SP_IO at the stream offset of the fault;
 * detail[0] = 1 when the file is now shorter than that (it was cut while
 * we read it), else err_no = EIO, what read() would have said.
 */
static void window_fault(zv_stream *s, const unsigned char *addr)
{
    const unsigned char *at = s->cur + s->cpos; /* stream offset s->off */
    uint64_t where = s->off + (addr > at ? (uint64_t)(addr - at) : 0);
    off_t file_off = lseek(s->fd, 0, SEEK_CUR) - (off_t)(s->map + s->map_len - addr);
    int cut = zv_cut_before(s->fd, file_off);
    unmap_window(s);
    s->can_map = 0;
    s->eof = 1;
    zv_sevent *ev = problem(s, ZV_SP_IO, 1);
    ev->err_no = EIO;
    ev->offset = where;
    ev->detail[0] = (uint64_t)cut;
    finish(s);
}

/*
 * Make cur[cpos] valid.  @return 1, 0 at EOF, -1 on a read error (problem
 * queued).  EINTR ends the scan too: it means a signal the caller must act
 * on (Ctrl-C), and we cannot check for it without the GIL.
 */
static int have_bytes(zv_stream *s)
{
    if (s->cur && s->cpos < s->clen)
        return 1;
    if (s->eof)
        return 0;
    unmap_window(s);
    if (s->can_map && map_window(s))
        return 1;
    ssize_t n = read(s->fd, s->buf, s->cap);
    s->cpos = 0;
    if (n > 0) {
        s->cur = s->buf;
        s->clen = (size_t)n;
        return 1;
    }
    s->cur = NULL;
    s->clen = 0;
    s->eof = 1;
    if (n < 0) {
        zv_sevent *ev = problem(s, ZV_SP_IO, 1);
        ev->err_no = errno;
        ev->offset = s->off;
        return -1;
    }
    return 0;
}

/* Copy the next n bytes out of the buffer; @return the count copied (< n at EOF or error). */
static size_t take(zv_stream *s, unsigned char *dst, size_t n)
{
    size_t got = 0;
    while (got < n && have_bytes(s) > 0) {
        size_t k = s->clen - s->cpos < n - got ? s->clen - s->cpos : n - got;
        memcpy(dst + got, s->cur + s->cpos, k);
        hold(s, s->cur + s->cpos, k);
        s->cpos += k;
        s->off += k;
        got += k;
    }
    return got;
}

/*
 * Fold the next len payload bytes into the checksum (keeping them in s->nv
 * when keep).  Words are counted from the payload start, as in one kernel
 * call: a word split between two buffers is reassembled in carry[], and
 * 1-3 bytes left at the very end are not folded.
 * @return 0, or -1 after queueing a fatal problem.
 */
static int eat_payload(zv_stream *s, uint64_t len, int keep)
{
    unsigned char carry[4];
    size_t nc = 0;
    uint64_t done = 0;
    while (done < len) {
        int r = have_bytes(s);
        if (r <= 0) {
            if (r == 0) {
                zv_sevent *ev = problem(s, ZV_SP_TRUNC_PAYLOAD, 1);
                ev->detail[0] = len;
                ev->detail[1] = done;
            }
            return -1;
        }
        const unsigned char *p = s->cur + s->cpos;
        size_t n = s->clen - s->cpos < len - done ? s->clen - s->cpos : (size_t)(len - done);
        size_t i = 0;
        if (keep)
            memcpy(s->nv + done, p, n);
        hold(s, p, n);
        while (nc > 0 && nc < 4 && i < n)
            carry[nc++] = p[i++];
        if (nc == 4) {
            zv_fletcher4(s->st, carry, 4, s->big_endian);
            nc = 0;
        }
        size_t whole = (n - i) & ~(size_t)3;
        zv_fletcher4(s->st, p + i, whole, s->big_endian);
        for (i += whole; i < n; i++)
            carry[nc++] = p[i];
        s->cpos += n;
        s->off += n;
        done += n;
    }
    return 0;
}

/* The number of zero bytes p[0..n) starts with. */
static size_t zero_prefix(const unsigned char *p, size_t n)
{
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8];
        memcpy(w, p + i, sizeof w);
        if ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0)
            break;
    }
    while (i < n && p[i] == 0)
        i++;
    return i;
}

/*
 * The buffer is used up inside a run of zeros: if fd is a file positioned in a
 * hole, go to where its data resumes (or its end) without reading the hole,
 * which reads as zeros.  Pipes and anything lseek() cannot tell are read.
 */
static void skip_hole(zv_stream *s)
{
    off_t here = lseek(s->fd, 0, SEEK_CUR);
    if (here < 0)
        return;
    off_t data = lseek(s->fd, here, SEEK_DATA);
    if (data < 0) {
        struct stat st;
        /* ENXIO: no data from here on; the rest, up to the size, is hole */
        if (errno != ENXIO || fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < here)
            data = here;
        else
            data = st.st_size;
    }
    if (data <= here || lseek(s->fd, data, SEEK_SET) != data) {
        lseek(s->fd, here, SEEK_SET); /* read on from where we were */
        return;
    }
    s->off += (uint64_t)(data - here);
}

/*
 * A record header of zeros (the current one): no record is all zero (a BEGIN
 * has its magic, every other type a non-zero drr_type), so framing is lost.
 * Such runs are what a pre-allocated or sparse file holds past the stream's
 * end: read over all of them at once, report one problem naming where they
 * start and how many bytes they are, and stop.
 */
static void zero_run(zv_stream *s)
{
    int r;
    relay_stop(s);
    while ((r = have_bytes(s)) > 0) {
        size_t n = s->clen - s->cpos;
        size_t z = zero_prefix(s->cur + s->cpos, n);
        s->cpos += z;
        s->off += z;
        if (z < n)
            break;
        skip_hole(s);
    }
    zv_sevent *ev = problem(s, ZV_SP_ZEROS, 1);
    ev->detail[0] = s->off - s->rec_off;
    ev->detail[1] = r == 0;
    finish(s);
}

/* zv_stream_skip_rest(): consume what is buffered or one read, no framing; EOF at the end. */
static void skip_step(zv_stream *s)
{
    if (have_bytes(s) <= 0)
        return finish(s); /* a read error is already queued */
    s->off += s->clen - s->cpos;
    s->cpos = s->clen;
}

static int first_record(zv_stream *s)
{
    /* Byte order comes from the BEGIN magic; anything else is not a send stream. */
    uint64_t magic = zv_ld64(s->hdr + 8, 0);
    uint32_t type = zv_ld32(s->hdr, 0);
    if (magic == ZV_DRR_MAGIC && type == ZV_DRR_BEGIN) {
        s->swap = 0;
    } else if (magic == __builtin_bswap64(ZV_DRR_MAGIC) && type == ZV_DRR_BEGIN) {
        s->swap = 1;
    } else {
        problem(s, ZV_SP_NOT_STREAM, 1);
        return -1;
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    s->big_endian = s->swap;
#else
    s->big_endian = !s->swap;
#endif
    s->started = 1;
    return 0;
}

/* A record the receiver refuses (zv_records.h): not fatal, the framing holds. */
static void record_problem(zv_stream *s, const zv_rproblem *rp)
{
    zv_sevent *ev = problem(s, ZV_SP_RECORD, 0);
    ev->detail[0] = (uint64_t)rp->rule;
    ev->detail[1] = rp->value;
    ev->object = rp->object;
}

/* @return 0, or -1 when the payload could not be read (fatal problem queued). */
static int do_begin(zv_stream *s)
{
    uint64_t len = zv_ld32(s->hdr + 4, s->swap);
    zv_sevent *ev;
    if (zv_ld64(s->hdr + 8, s->swap) != ZV_DRR_MAGIC)
        problem(s, ZV_SP_BEGIN_MAGIC, 0);
    s->st[0] = s->st[1] = s->st[2] = s->st[3] = 0;
    zv_fletcher4(s->st, s->hdr, ZV_DRR_SIZE, s->big_endian);
    int keep = len <= s->nvlist_max, nomem = 0;
    if (keep && len > s->nv_cap) {
        unsigned char *nv = realloc(s->nv, (size_t)len);
        keep = nv != NULL;
        nomem = nv == NULL; /* scan on, but say so: what it held cannot be checked */
        if (nv) {
            s->nv = nv;
            s->nv_cap = (size_t)len;
        }
    }
    /* The BEGIN event goes first so that Python knows the substream a truncation belongs to. */
    ev = push(s, ZV_SEV_BEGIN);
    ev->header = s->hdr;
    ev->payload_len = len;
    take_seg(s, ev);
    if (nomem)
        problem(s, ZV_SP_NOMEM, 0)->err_no = ENOMEM;
    zv_rproblem rp;
    if (zv_recs_begin(&s->recs, s->hdr, s->swap, &rp))
        record_problem(s, &rp);
    if (len > ZV_MAX_BEGIN_PAYLOAD) {
        zv_sevent *pv = problem(s, ZV_SP_BAD_LENGTH, 1);
        pv->detail[0] = len;
        pv->detail[1] = ZV_MAX_BEGIN_PAYLOAD;
        return -1;
    }
    s->seg.records = 1;
    s->seg.count[ZV_DRR_BEGIN] = 1;
    s->seg.payload_bytes = len;
    s->seg.stream_bytes = ZV_DRR_SIZE + len;
    s->begin_toguid = zv_ld64(s->hdr + 40, s->swap);
    s->verified_to = s->rec_off;
    s->relay_to = s->rec_off;
    if (eat_payload(s, len, keep) < 0)
        return -1;
    ev->payload = keep ? s->nv : NULL;
    return 0;
}

/* Per-record trailer check; keeps going from the stored value on a mismatch. */
static void check_trailer(zv_stream *s)
{
    uint64_t stored[4];
    get_cksum(s->hdr + ZV_DRR_TRAILER_OFF, s->swap, stored);
    s->relay_to = s->rec_off + ZV_DRR_SIZE; /* a mismatch below stops the relay */
    if (cksum_zero(stored))
        return;
    if (!cksum_eq(stored, s->st)) {
        zv_sevent *ev = problem(s, ZV_SP_CKSUM_RECORD, 0);
        ev->span_start = s->verified_to;
        ev->span_end = s->rec_off + ZV_DRR_SIZE;
        memcpy(ev->stored, stored, sizeof stored);
        memcpy(ev->computed, s->st, sizeof s->st);
        memcpy(s->st, stored, sizeof stored);
    }
    s->verified_to = s->rec_off + ZV_DRR_SIZE;
}

static void do_end(zv_stream *s, const uint64_t before[4], uint64_t span_start)
{
    uint64_t stored[4];
    get_cksum(s->hdr + 8, s->swap, stored);
    int ok = cksum_eq(stored, before);
    if (!ok) {
        zv_sevent *ev = problem(s, ZV_SP_CKSUM_END, 0);
        ev->span_start = span_start;
        ev->span_end = s->rec_off + ZV_DRR_SIZE;
        memcpy(ev->stored, stored, sizeof stored);
        memcpy(ev->computed, before, sizeof stored);
    }
    zv_sevent *ev = push(s, ZV_SEV_END);
    ev->header = s->hdr;
    ev->end_ok = ok;
    memcpy(ev->stored, stored, sizeof stored);
    memcpy(ev->computed, before, sizeof stored);
    take_seg(s, ev);
    s->st[0] = s->st[1] = s->st[2] = s->st[3] = 0;
    s->begin_toguid = 0;
    s->verified_to = s->rec_off + ZV_DRR_SIZE;
}

static void check_toguid(zv_stream *s, uint32_t type)
{
    size_t off = toguid_off(type);
    uint64_t g = zv_ld64(s->hdr + off, s->swap);
    /* libzfs writes the package ENDs with toguid 0 */
    if (g == s->begin_toguid || (type == ZV_DRR_END && g == 0))
        return;
    if (s->seg.toguid_mismatches++ == 0) {
        zv_sevent *ev = problem(s, ZV_SP_TOGUID, 0);
        ev->detail[0] = g;
        ev->detail[1] = s->begin_toguid;
    }
}

static void do_record(zv_stream *s, uint32_t type)
{
    uint64_t before[4], bound, len, span_start = s->verified_to;
    memcpy(before, s->st, sizeof before);
    zv_fletcher4(s->st, s->hdr, ZV_DRR_TRAILER_OFF, s->big_endian);
    check_trailer(s);
    zv_fletcher4(s->st, s->hdr + ZV_DRR_TRAILER_OFF, ZV_DRR_SIZE - ZV_DRR_TRAILER_OFF, s->big_endian);
    check_toguid(s, type);
    len = payload_len(s->hdr, type, s->swap, &bound);
    if (len > bound) {
        /* Framing is lost: the header is damaged or the stream is not what it claims. */
        zv_sevent *ev = problem(s, ZV_SP_BAD_LENGTH, 1);
        ev->detail[0] = len;
        ev->detail[1] = bound;
        return finish(s);
    }
    zv_rproblem rp;
    if (type == ZV_DRR_END ? zv_recs_end(&s->recs, &rp) : zv_recs_record(&s->recs, s->hdr, type, s->swap, &rp))
        record_problem(s, &rp);
    if (type == ZV_DRR_WRITE_EMBEDDED)
        len = round8(len);
    s->seg.records++;
    s->seg.count[type]++;
    s->seg.payload_bytes += len;
    s->seg.logical_bytes += logical_len(s->hdr, type, s->swap);
    s->seg.stream_bytes += ZV_DRR_SIZE + len;
    if (type == ZV_DRR_END)
        do_end(s, before, span_start);
    if (eat_payload(s, len, 0) < 0)
        finish(s);
}

/* Read and handle one record; queues its events. */
static void step(zv_stream *s)
{
    if (s->skip)
        return skip_step(s);
    /* The caller has seen every event of the previous record: release what it verified. */
    if (relay_flush(s, 0) < 0)
        return finish(s);
    s->rec_off = s->off;
    s->rtype = -1;
    size_t have = take(s, s->hdr, ZV_DRR_SIZE);
    if (have < ZV_DRR_SIZE) {
        if (s->qlen > 0)
            ; /* a read error is already queued */
        else if (!s->started && have == 0)
            problem(s, ZV_SP_EMPTY, 1);
        else if (!s->started && !has_magic(s->hdr, have))
            problem(s, ZV_SP_NOT_STREAM, 1);
        else if (have > 0)
            problem(s, ZV_SP_TRUNC_HEADER, 1)->detail[0] = have;
        else
            relay_flush(s, 1); /* a clean end: everything verified goes on */
        return finish(s);
    }
    if (!s->started && first_record(s) < 0)
        return finish(s);
    if (zero_prefix(s->hdr, ZV_DRR_SIZE) == ZV_DRR_SIZE)
        return zero_run(s);
    uint32_t type = zv_ld32(s->hdr, s->swap);
    s->rtype = type < ZV_DRR_NTYPES ? (int)type : -1;
    if (type == ZV_DRR_BEGIN) {
        if (do_begin(s) < 0)
            return finish(s);
    } else if (type >= ZV_DRR_NTYPES) {
        problem(s, ZV_SP_BAD_TYPE, 1)->detail[0] = type;
        return finish(s);
    } else {
        do_record(s, type);
    }
    s->record++;
    if (s->relay_failed && !s->done)
        finish(s);
}

int zv_stream_open(int fd, const zv_sopts *opts, zv_stream **out)
{
    zv_sopts o = {0, 0, 0, 0, -1, NULL, 0};
    if (opts)
        o = *opts;
    if (fd < 0 || (o.buffer_size && o.buffer_size < 4096) || (o.relay && o.relay_fd < 0))
        return ZV_EINVAL;
    zv_stream *s = calloc(1, sizeof *s);
    if (!s)
        return ZV_ENOMEM;
    s->nvlist_max = o.nvlist_max ? o.nvlist_max : (64u << 20);
    s->progress_every = o.progress_every;
    s->next_progress = o.progress_every;
    s->fd = fd;
    s->relay = o.relay;
    s->relay_fd = o.relay_fd;
    s->cap = o.buffer_size ? o.buffer_size : (256u << 10);
    if (o.prefix_len > s->cap || (o.prefix_len && !o.prefix)) {
        free(s);
        return ZV_EINVAL;
    }
    s->buf = malloc(s->cap);
    if (!s->buf) {
        free(s);
        return ZV_ENOMEM;
    }
    struct stat st;
    s->can_map = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (o.prefix_len) { /* as though the first read() had returned it */
        memcpy(s->buf, o.prefix, o.prefix_len);
        s->cur = s->buf;
        s->clen = o.prefix_len;
    }
    *out = s;
    return ZV_OK;
}

int zv_stream_next(zv_stream *s, zv_sevent *ev)
{
    zv_guard g;
    /* savemask 1: the jump restores this thread's signal mask (a handler may be run with
     * every signal blocked: ThreadSanitizer runs ours so); one system call per event */
    if (sigsetjmp(g.env, 1) != 0)
        window_fault(s, g.fault);
    zv_guard_enter(&g);
    if (s->map) /* a window mapped by an earlier call */
        zv_guard_window(&g, s->map, s->map_len);
    s->guard = &g;
    while (s->qlen == 0) {
        if (s->done)
            break;
        step(s);
        if (s->qlen == 0 && s->progress_every && s->off >= s->next_progress) {
            s->next_progress = s->off + s->progress_every;
            push(s, ZV_SEV_PROGRESS)->offset = s->off;
        }
    }
    s->guard = NULL;
    zv_guard_leave();
    if (s->qlen == 0)
        return ZV_EDONE;
    *ev = s->q[s->qhead];
    s->qhead = (s->qhead + 1) % QUEUE;
    s->qlen--;
    return ZV_OK;
}

uint64_t zv_stream_bytes(const zv_stream *s)
{
    return s->off;
}

void zv_stream_stop_relay(zv_stream *s)
{
    relay_stop(s);
}

void zv_stream_skip_rest(zv_stream *s)
{
    relay_stop(s);
    s->skip = 1;
}

uint64_t zv_stream_relayed(const zv_stream *s)
{
    return s->relayed;
}

void zv_stream_close(zv_stream *s)
{
    if (!s)
        return;
    unmap_window(s);
    free(s->held);
    free(s->buf);
    free(s->nv);
    free(s);
}
