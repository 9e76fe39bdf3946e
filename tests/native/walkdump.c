/*
 * walkdump.c — a test driver for the C walker that uses only the public API
 * (zvcore.h), so the walker's threads can be built and run under a
 * sanitizer (ThreadSanitizer above all) without an uninstrumented Python
 * around them.  tests/native/test_walkdump.py compares its output with
 * zverify._zvcore.Walker; scripts/tsan.sh runs that test with a TSan build.
 *
 * Usage: walkdump [-t threads] [-n batch] [-b block_size] [-a algo] [-x]
 *                 [-d usec] [-s k | -c k] [-e pattern]... root
 *   -t  hashing workers (default 2, as Walker)
 *   -n  records per zv_walk_next call (default 64; 1 maximises hand-offs)
 *   -b  read block size (default 128 KiB, as Walker)
 *   -a  hash algorithm (enum zv_hash_algo; default XXH3-128)
 *   -x  do not read xattrs
 *   -d  sleep this long after each batch (a slow consumer fills the ring)
 *   -s  after k records another thread calls zv_walk_stop; keep consuming
 *   -c  after k records stop consuming and zv_walk_close at once
 *   -e  leave out what the rsync-style pattern matches (repeatable; zv_filter.c)
 *
 * Output: one line per record, tab-separated:
 *   path kind size data_bytes digest link error changed
 * path and link hex-escaped (see put_escaped), digest in hex, error as
 * "op:errno:offset", "-" for absent values; then a last line
 *   end STATUS records=N
 * where STATUS names the status zv_walk_next ended with ("closed" for -c).
 *
 * Exit status: 0 if the walk ended with ZV_EDONE (or, with -s, ZV_ESTOPPED;
 * with -c, after k records); 1 for any other status, including ones this
 * driver does not know (a fatal walk error must fail the test); 2 for usage
 * or setup errors.
 */
#define _GNU_SOURCE
#include "zvcore.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum early { RUN_ALL, STOP_AFTER, CLOSE_AFTER };

typedef struct config {
    zv_options opt;
    size_t batch;
    long delay_us;
    enum early early;
    unsigned long long k;
    const char *root;
    zv_filter *filter; /* NULL without -e */
} config;

/* The thread that calls zv_walk_stop, woken by the consumer after k records. */
typedef struct stopper {
    pthread_t thread;
    sem_t go;
    zv_walk *w;
} stopper;

static const char *status_name(int rc)
{
    switch (rc) {
    case ZV_OK: return "OK";
    case ZV_EDONE: return "EDONE";
    case ZV_EAGAIN: return "EAGAIN";
    case ZV_EINVAL: return "EINVAL";
    case ZV_ENOMEM: return "ENOMEM";
    case ZV_EROOT: return "EROOT";
    case ZV_ENOTDIR: return "ENOTDIR";
    case ZV_ETHREAD: return "ETHREAD";
    case ZV_ESTOPPED: return "ESTOPPED";
    default: return NULL; /* a status newer than this driver: printed as a number */
    }
}

static void put_status(int rc)
{
    const char *name = status_name(rc);
    if (name)
        fputs(name, stdout);
    else
        printf("status%d", rc);
}

/* Bytes outside printable ASCII, space and backslash become \xNN: one line per record. */
static void put_escaped(const char *p, size_t len)
{
    if (len == 0) {
        fputs("\"\"", stdout); /* the root's empty path, still a visible field */
        return;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c >= 0x7f || c == '\\')
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

static void put_record(const zv_record *r)
{
    put_escaped(r->path, r->path_len);
    printf("\t%d\t%llu\t%llu\t", r->kind, (unsigned long long)r->size,
           (unsigned long long)r->data_bytes);
    if (r->has_digest)
        for (size_t i = 0; i < r->digest_len; i++)
            printf("%02x", r->digest[i]);
    else
        putchar('-');
    putchar('\t');
    if (r->link)
        put_escaped(r->link, r->link_len);
    else
        putchar('-');
    if (r->err_op != ZV_OP_NONE)
        printf("\t%s:%d:%lld", zv_op_name(r->err_op), r->err_errno, (long long)r->err_offset);
    else
        fputs("\t-", stdout);
    static const char *const changed[] = {"-", "replaced", "modified"};
    if (r->changed >= 0 && r->changed <= ZV_CHANGE_MODIFIED)
        printf("\t%s\n", changed[r->changed]);
    else
        printf("\tchanged%d\n", r->changed);
}

static void *stopper_main(void *arg)
{
    stopper *s = arg;
    while (sem_wait(&s->go) < 0 && errno == EINTR)
        continue;
    zv_walk_stop(s->w);
    return NULL;
}

static int parse_count(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno || end == s || *end || s[0] == '-' ? -1 : 0;
}

static int parse_args(int argc, char **argv, config *c)
{
    unsigned long long v;
    int o;
    while ((o = getopt(argc, argv, "t:n:b:a:xd:s:c:e:")) != -1) {
        if (o == 'x') {
            c->opt.read_xattrs = 0;
            continue;
        }
        if (o == 'e') {
            if ((!c->filter && zv_filter_new(&c->filter) != ZV_OK) ||
                zv_filter_add_rule(c->filter, 0, optarg, strlen(optarg)) != ZV_OK)
                return -1;
            continue;
        }
        if (o == '?' || parse_count(optarg, &v) < 0 || v > 1ULL << 40)
            return -1;
        if (o == 't')
            c->opt.threads = (int)v;
        else if (o == 'n')
            c->batch = (size_t)v;
        else if (o == 'b')
            c->opt.block_size = (size_t)v;
        else if (o == 'a')
            c->opt.algo = (int)v;
        else if (o == 'd')
            c->delay_us = (long)v;
        else {
            c->early = o == 's' ? STOP_AFTER : CLOSE_AFTER;
            c->k = v;
        }
    }
    if (optind != argc - 1 || c->batch < 1 || c->opt.threads < 1)
        return -1;
    c->root = argv[optind];
    if (c->filter) {
        zv_filter_seal(c->filter);
        c->opt.filter = c->filter;
    }
    return 0;
}

static void pause_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&t, &t) < 0 && errno == EINTR)
        continue;
}

/* Print (or, past k with -c, only free) one batch; returns the records printed. */
static size_t print_batch(zv_record *recs, size_t n, const config *c, unsigned long long count)
{
    size_t printed = 0;
    for (size_t i = 0; i < n; i++) {
        /* -c: records past k are freed unprinted, as by a consumer that gave up */
        if (c->early != CLOSE_AFTER || count + printed < c->k) {
            put_record(&recs[i]);
            printed++;
        }
        zv_record_free(&recs[i]);
    }
    return printed;
}

/*
 * Consume the walk; returns the status it ended with, or ZV_OK if -c made
 * us close it after k records.  *count gets the records printed.
 */
static int consume(zv_walk *w, const config *c, stopper *s, unsigned long long *count)
{
    int signalled = 0;
    if (c->early == STOP_AFTER && c->k == 0) {
        sem_post(&s->go); /* stop before the first record: teardown at its earliest */
        signalled = 1;
    }
    if (c->early == CLOSE_AFTER && c->k == 0)
        return ZV_OK; /* close while the threads are still starting */
    zv_record *recs = calloc(c->batch, sizeof *recs);
    if (!recs)
        return ZV_ENOMEM;
    int rc;
    for (;;) {
        size_t n = 0;
        rc = zv_walk_next(w, recs, c->batch, &n, 100);
        if (rc == ZV_EAGAIN)
            continue;
        if (rc != ZV_OK)
            break;
        *count += print_batch(recs, n, c, *count);
        if (c->early == STOP_AFTER && !signalled && *count >= c->k) {
            sem_post(&s->go); /* the stop races with our next zv_walk_next: on purpose */
            signalled = 1;
        }
        if (c->early == CLOSE_AFTER && *count >= c->k)
            break;
        if (c->delay_us)
            pause_us(c->delay_us);
    }
    free(recs);
    if (c->early == STOP_AFTER && !signalled)
        sem_post(&s->go); /* the walk ended first; let the stopper finish */
    return rc;
}

static int exit_code(const config *c, int rc)
{
    if (c->early == CLOSE_AFTER && rc == ZV_OK)
        return 0;
    if (rc == ZV_EDONE || (c->early == STOP_AFTER && rc == ZV_ESTOPPED))
        return 0;
    return 1;
}

static int run(const config *c)
{
    zv_walk *w = NULL;
    int err_no = 0;
    int rc = zv_walk_open(c->root, &c->opt, &w, &err_no);
    if (rc != ZV_OK) {
        fprintf(stderr, "walkdump: zv_walk_open: status %d: %s\n", rc, strerror(err_no));
        return 2;
    }
    stopper s = {.w = w};
    if (c->early == STOP_AFTER) {
        sem_init(&s.go, 0, 0);
        if (pthread_create(&s.thread, NULL, stopper_main, &s) != 0) {
            fputs("walkdump: pthread_create failed\n", stderr);
            zv_walk_close(w);
            return 2;
        }
    }
    unsigned long long count = 0;
    rc = consume(w, c, &s, &count);
    if (c->early == STOP_AFTER) {
        pthread_join(s.thread, NULL);
        sem_destroy(&s.go);
    }
    zv_walk_close(w);
    fputs("end ", stdout);
    if (c->early == CLOSE_AFTER && rc == ZV_OK)
        fputs("closed", stdout);
    else
        put_status(rc);
    printf(" records=%llu\n", count);
    return exit_code(c, rc);
}

int main(int argc, char **argv)
{
    config c = {
        .opt = {.algo = ZV_HASH_XXH3_128, .threads = 2, .block_size = 128 << 10,
                .one_file_system = 0, .read_xattrs = 1},
        .batch = 64,
        .early = RUN_ALL,
    };
    if (parse_args(argc, argv, &c) < 0) {
        fputs("usage: walkdump [-t threads] [-n batch] [-b block_size] [-a algo] [-x] "
              "[-d usec] [-s k | -c k] [-e pattern]... root\n", stderr);
        zv_filter_free(c.filter);
        return 2;
    }
    int code = run(&c);
    zv_filter_free(c.filter);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("walkdump: stdout");
        return 2;
    }
    return code;
}
