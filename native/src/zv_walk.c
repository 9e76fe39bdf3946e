/*
 * zv_walk.c — the public zv_walk_* API and the threads behind one walk.
 *
 * The walker thread appends records to a ring in canonical order.  Records
 * of regular files arrive with an open fd and are PENDING; hashing workers
 * claim them in ring order and mark them READY; everything else is READY at
 * once.  The consumer takes records from the head only when READY, so the
 * output order is the walker's order whatever the number of workers.
 *
 * Memory is bounded: the ring has a fixed number of slots and at most
 * max_open_files files are held open at once (the walker waits for both).
 * Records cross between the threads in batches (see PUBLISH_BATCH).
 *
 * Long because: the ring, the walker's staging, the workers' claims and the consumer's
 * gathering all keep the invariants of one struct under one lock (which thread may wake
 * which, and when); apart, each file would hold half of every invariant.
 */
#define _GNU_SOURCE
#include "zv_file.h"
#include "zv_traverse.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RING_SLOTS 4096
/* The consumer gathers records for up to this long before returning a
 * partial batch; producers wake it early only when the ring is half full. */
#define GATHER_MS 10
/*
 * Records cross threads in batches, so that the lock is taken (and a sleeper woken)
 * once per batch rather than once per file: a hand-off per record cost ~3 futex calls
 * per file on trees of small files.  The walker stages up to PUBLISH_BATCH records and
 * publishes them together, sooner when it stages a record PUBLISH_AFTER_MS (coarse clock)
 * after the oldest, and always before it waits; a slow step between two records (the
 * listing of a huge directory, a stalled network filesystem) still holds what is staged
 * until it ends.  A worker claims up to CLAIM_BATCH files, but
 * no more than its share of those waiting and no more than CLAIM_BYTES of them, so a
 * few large files still spread over all workers.
 */
#define PUBLISH_BATCH 64
#define PUBLISH_AFTER_MS 2
#define CLAIM_BATCH 16
#define CLAIM_BYTES (1u << 20)
/*
 * Read-ahead at open (zv_traverse.c) pays on a cold cache and is a wasted system call per
 * file on a hot one.  Workers count first reads that missed the cache (zv_file.c); after
 * MISSES_TO_PREFETCH misses within MISS_WINDOW files opened, the walker asks for
 * read-ahead for the next PREFETCH_RUN files it opens.  A cold tree keeps missing and so
 * keeps it on (each run ends with up to max_open_files opened before the workers' misses
 * reach the walker: ~1/8 of the files); a hot one never turns it on, and a lone miss on a
 * hot cache (a page locked for a moment answers RWF_NOWAIT with EAGAIN) does not either.
 */
#define MISSES_TO_PREFETCH 2
#define MISS_WINDOW 256
#define PREFETCH_RUN(w) (8 * (w)->max_open_files)

/*
 * One record in flight.  The walker fills it; if it is a regular file the walker also
 * opens it (fd >= 0) and a worker finishes it; then the consumer takes it.  Slots form a
 * ring so records leave in the order they entered.
 */
typedef struct zv_slot {
    zv_record rec;
    int fd;     /* open regular file still to be scanned, or -1 */
    int state;  /* SLOT_EMPTY, SLOT_PENDING, SLOT_CLAIMED, SLOT_READY */
} zv_slot;

enum { SLOT_EMPTY = 0, SLOT_PENDING, SLOT_CLAIMED, SLOT_READY };

/* A record the walker has made but not yet published (walker-only). */
typedef struct zv_staged {
    zv_record rec;
    int fd;
} zv_staged;

struct zv_walk {
    zv_options opt;
    int root_fd;
    uint64_t root_dev;
    char *root_path; /* as given: xattrs of symlinks and devices where /proc is missing */

    /*
     * One lock, three conditions, each with its own sleeper(s), and a flag or count
     * telling whether anyone sleeps there, so that nobody is signalled when nobody
     * waits.
     */
    pthread_mutex_t lock;
    pthread_cond_t work_cv;  /* workers: a PENDING slot, or the end */
    pthread_cond_t space_cv; /* walker: a free slot or a free fd */
    pthread_cond_t ready_cv; /* consumer: the ring is filling up, or the end */
    int idle_workers;
    int walker_waiting;
    size_t walker_fd_target; /* it waits for fewer files held than this; 0: for ring space */
    int consumer_waiting;
    zv_slot *ring;
    size_t ring_size;
    uint64_t head;          /* next slot the consumer takes */
    uint64_t claim;         /* workers look for work from here */
    uint64_t tail;          /* next slot the walker fills */
    size_t pending;         /* PENDING slots not yet claimed */
    size_t max_open_files;
    int walker_done;
    int walk_status;        /* zv_traverse's result, set with walker_done */
    int walk_errno;
    int stop;

    /* The walker's own: its staged records and the files it has opened.  Files held
     * open = opened - closed, where workers add to closed under the lock (the walker
     * reads it without, atomically, and takes the lock only to wait).  A worker reads
     * opened only when walker_waiting says the walker sleeps on space_cv under the same
     * lock, so it cannot be changing. */
    zv_staged staged[PUBLISH_BATCH];
    size_t nstaged;
    struct timespec staged_since;
    uint64_t opened;
    uint64_t closed;
    uint64_t misses_mark;   /* cache_misses when the window began */
    size_t window_opens;    /* files opened since */
    size_t prefetch_left;

    uint64_t cache_misses;  /* atomic: workers' first reads that missed the page cache */

    pthread_t walker;
    int walker_started;
    pthread_t *workers;
    int nworkers;

    uint64_t entries;       /* atomics: progress counters */
    uint64_t bytes;
    uint64_t excluded;
};

static zv_slot *slot_at(struct zv_walk *w, uint64_t i)
{
    return &w->ring[i % w->ring_size];
}

/* The walker sleeps for ring space (fd_target 0), woken by the consumer, or until fewer
 * than fd_target files are held, woken by a worker; each wakes it only for its own. */
static void walker_wait(struct zv_walk *w, size_t fd_target)
{
    w->walker_waiting = 1;
    w->walker_fd_target = fd_target;
    pthread_cond_wait(&w->space_cv, &w->lock);
    w->walker_waiting = 0;
}

static int stopping(struct zv_walk *w)
{
    return __atomic_load_n(&w->stop, __ATOMIC_RELAXED);
}

static size_t files_held(struct zv_walk *w)
{
    return (size_t)(w->opened - __atomic_load_n(&w->closed, __ATOMIC_RELAXED));
}

static double ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

/* Wake whoever waits for what was just published (called with the lock held). */
static void wake_for_published(struct zv_walk *w, size_t files)
{
    if (files > 0 && w->idle_workers > 0) {
        if (files > CLAIM_BATCH)
            pthread_cond_broadcast(&w->work_cv);
        else
            pthread_cond_signal(&w->work_cv);
    }
    if (w->consumer_waiting && w->tail - w->head >= w->ring_size / 2)
        pthread_cond_signal(&w->ready_cv);
}

/* Drop staged records from `from` on: the walk is stopping. */
static void discard_staged(struct zv_walk *w, size_t from)
{
    for (size_t i = from; i < w->nstaged; i++) {
        if (w->staged[i].fd >= 0)
            close(w->staged[i].fd);
        zv_record_free(&w->staged[i].rec);
    }
    w->nstaged = 0;
}

/*
 * Move the staged records into the ring, waiting for space as needed; 0, or -1 when the
 * walk is stopping (what was not published is dropped).  Whatever is published is
 * announced before any wait: the workers must see the files that free the ring.
 */
static int publish(struct zv_walk *w)
{
    size_t i = 0;
    pthread_mutex_lock(&w->lock);
    while (i < w->nstaged && !w->stop) {
        if (w->tail - w->head >= w->ring_size) {
            walker_wait(w, 0);
            continue;
        }
        size_t files = 0;
        for (; i < w->nstaged && w->tail - w->head < w->ring_size; i++) {
            zv_slot *s = slot_at(w, w->tail++);
            s->rec = w->staged[i].rec;
            s->fd = w->staged[i].fd;
            s->state = s->fd >= 0 ? SLOT_PENDING : SLOT_READY;
            files += s->fd >= 0;
        }
        w->pending += files;
        wake_for_published(w, files);
    }
    int stopped = w->stop;
    pthread_mutex_unlock(&w->lock);
    if (stopped) {
        discard_staged(w, i);
        return -1;
    }
    w->nstaged = 0;
    return 0;
}

/* Wait (lock held) until fewer than `target` files are open, or the walk stops. */
static void wait_for_close(struct zv_walk *w, size_t target)
{
    while (!w->stop && files_held(w) >= target)
        walker_wait(w, target);
}

/*
 * The sink's callbacks (zv_traverse.h) as the ring answers them.  They carry the ring_
 * prefix because the traversal calls sink->reserve_fd and the like through pointers: with
 * the fields' own names a reader (or cscope) would see a call from zv_traverse.c into this
 * file, which the traversal never makes.
 */
static int ring_reserve_fd(void *ctx)
{
    struct zv_walk *w = ctx;
    if (files_held(w) >= w->max_open_files) {
        if (publish(w) < 0) /* our staged files must reach the workers to be closed */
            return -1;
        /* Down to half the budget, not one below it: a wake-up per file freed would
         * cost two futex calls per file. */
        pthread_mutex_lock(&w->lock);
        wait_for_close(w, w->max_open_files - w->max_open_files / 2);
        pthread_mutex_unlock(&w->lock);
    }
    if (stopping(w))
        return -1;
    w->opened++;
    return 0;
}

static int ring_await_close(void *ctx)
{
    struct zv_walk *w = ctx;
    size_t held = files_held(w); /* the caller's own reservation included */
    if (held <= 1 || publish(w) < 0)
        return -1; /* no other file of ours is open: waiting would not help */
    pthread_mutex_lock(&w->lock);
    wait_for_close(w, held);
    int stopped = w->stop;
    pthread_mutex_unlock(&w->lock);
    return stopped ? -1 : 0;
}

static void ring_release_fd(void *ctx)
{
    struct zv_walk *w = ctx;
    w->opened--; /* the open failed: only the walker counts its opens */
}

static int ring_prefetch(void *ctx)
{
    struct zv_walk *w = ctx;
    uint64_t misses = __atomic_load_n(&w->cache_misses, __ATOMIC_RELAXED);
    int missing = misses - w->misses_mark >= MISSES_TO_PREFETCH;
    if (missing)
        w->prefetch_left = PREFETCH_RUN(w);
    if (missing || ++w->window_opens >= MISS_WINDOW) {
        w->misses_mark = misses;
        w->window_opens = 0;
    }
    if (w->prefetch_left == 0)
        return 0;
    w->prefetch_left--;
    return 1;
}

/* The sink's emit: stages the record; fd >= 0 means "scan this file". */
static int push(void *ctx, zv_record *rec, int fd)
{
    struct zv_walk *w = ctx;
    if (w->nstaged == 0)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &w->staged_since);
    w->staged[w->nstaged++] = (zv_staged){*rec, fd};
    if (stopping(w)) {
        discard_staged(w, 0);
        return -1;
    }
    if (w->nstaged == PUBLISH_BATCH || ms_since(&w->staged_since) >= PUBLISH_AFTER_MS)
        return publish(w);
    return 0;
}

static void count_excluded(void *ctx)
{
    struct zv_walk *w = ctx;
    __atomic_fetch_add(&w->excluded, 1, __ATOMIC_RELAXED);
}

static void *walker_main(void *arg)
{
    struct zv_walk *w = arg;
    zv_traverse_opts opt = {w->root_fd,          w->root_dev,
                            w->opt.one_file_system, w->opt.read_xattrs,
                            w->opt.algo != ZV_HASH_NONE, w->opt.filter,
                            w->opt.max_dir_fds, w->root_path,
                            w->opt.range_lo,     w->opt.range_hi,
                            w->opt.range_lo_len, w->opt.range_hi_len};
    zv_sink sink = {w, push, ring_reserve_fd, ring_await_close, ring_release_fd, ring_prefetch,
                    count_excluded};
    int err_no = 0;
    int status = zv_traverse(&opt, &sink, &err_no);
    if (publish(w) < 0 && status == ZV_OK) /* the last records, before "done" */
        status = ZV_ESTOPPED;
    pthread_mutex_lock(&w->lock);
    w->walk_status = status;
    __atomic_store_n(&w->walk_errno, err_no, __ATOMIC_RELAXED);
    w->walker_done = 1;
    pthread_cond_broadcast(&w->work_cv);
    pthread_cond_signal(&w->ready_cv);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/*
 * Claim the oldest PENDING slots: up to CLAIM_BATCH and CLAIM_BYTES, and no more than a
 * fair share of those waiting.  0 when the walk is over.
 */
static size_t claim_batch(struct zv_walk *w, zv_slot **out)
{
    for (;;) {
        if (w->stop)
            return 0;
        if (w->pending > 0) {
            size_t share = w->pending / (size_t)w->nworkers, n = 0;
            uint64_t bytes = 0;
            share = share < 1 ? 1 : share > CLAIM_BATCH ? CLAIM_BATCH : share;
            do {
                zv_slot *s = slot_at(w, w->claim++);
                if (s->state != SLOT_PENDING)
                    continue;
                s->state = SLOT_CLAIMED;
                out[n++] = s;
                bytes += s->rec.size;
            } while (n < share && bytes < CLAIM_BYTES && w->claim < w->tail);
            w->pending -= n;
            /* A publish of a few files wakes one worker, which takes only its share: pass
             * the wake-up on, or the rest would wait for the next publish. */
            if (w->pending > 0 && w->idle_workers > 0)
                pthread_cond_signal(&w->work_cv);
            return n;
        }
        if (w->walker_done)
            return 0;
        w->idle_workers++;
        pthread_cond_wait(&w->work_cv, &w->lock);
        w->idle_workers--;
    }
}

static void *worker_main(void *arg)
{
    struct zv_walk *w = arg;
    unsigned char *buf = malloc(w->opt.block_size);
    zv_hasher *st = w->opt.algo == ZV_HASH_NONE ? NULL : zv_hasher_new(w->opt.algo);
    int ready = w->opt.algo == ZV_HASH_NONE || st != NULL;
    zv_scanner sc = {&w->opt, buf, st, &w->bytes, &w->stop, &w->cache_misses};
    zv_slot *batch[CLAIM_BATCH];
    pthread_mutex_lock(&w->lock);
    for (size_t n; (n = claim_batch(w, batch)) > 0;) {
        pthread_mutex_unlock(&w->lock);
        for (size_t i = 0; i < n; i++) {
            zv_slot *s = batch[i];
            if (buf && ready)
                zv_file_scan(&sc, s->fd, &s->rec);
            else
                s->rec.err_op = ZV_OP_READ, s->rec.err_errno = ENOMEM;
            close(s->fd);
            s->fd = -1;
        }
        pthread_mutex_lock(&w->lock);
        for (size_t i = 0; i < n; i++)
            batch[i]->state = SLOT_READY;
        __atomic_add_fetch(&w->closed, n, __ATOMIC_RELAXED);
        if (w->walker_waiting && files_held(w) < w->walker_fd_target)
            pthread_cond_signal(&w->space_cv);
    }
    pthread_mutex_unlock(&w->lock);
    zv_hasher_free(st);
    free(buf);
    return NULL;
}

static struct timespec deadline_after(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void take_ready(zv_walk *w, zv_record *out, size_t max, size_t *n)
{
    size_t before = *n;
    while (*n < max && w->head < w->tail && slot_at(w, w->head)->state == SLOT_READY) {
        zv_slot *s = slot_at(w, w->head++);
        out[(*n)++] = s->rec;
        s->state = SLOT_EMPTY;
    }
    if (*n > before && w->walker_waiting && w->walker_fd_target == 0)
        pthread_cond_signal(&w->space_cv);
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * Gather as many ready records as fit, waiting in GATHER_MS slices: a full
 * batch, the end of the walk, or a slice that added nothing after some
 * records arrived ends the call.
 */
int zv_walk_next(zv_walk *w, zv_record *out, size_t max, size_t *n, int timeout_ms)
{
    *n = 0;
    struct timespec deadline = deadline_after(timeout_ms);
    pthread_mutex_lock(&w->lock);
    for (;;) {
        size_t had = *n;
        take_ready(w, out, max, n);
        int done = w->walker_done && w->head == w->tail;
        if (*n == max || w->stop || done || (had > 0 && *n == had))
            break; /* full, finished, or a whole slice brought nothing new */
        struct timespec now = deadline_after(0), slice = deadline_after(GATHER_MS);
        if (*n == 0 && !before(&now, &deadline))
            break; /* the caller's timeout: let it check for signals */
        if (*n == 0 && before(&deadline, &slice))
            slice = deadline;
        w->consumer_waiting = 1;
        pthread_cond_timedwait(&w->ready_cv, &w->lock, &slice);
        w->consumer_waiting = 0;
    }
    int stopped = w->stop, done = w->walker_done && w->head == w->tail;
    int failed = done && w->walk_status == ZV_EWALK;
    pthread_mutex_unlock(&w->lock);
    __atomic_add_fetch(&w->entries, *n, __ATOMIC_RELAXED);
    if (*n > 0)
        return ZV_OK;
    if (stopped)
        return ZV_ESTOPPED;
    if (failed)
        return ZV_EWALK; /* after the last record: the consumer saw all there is */
    return done ? ZV_EDONE : ZV_EAGAIN;
}

static int init_walk(zv_walk *w, const char *root, const zv_options *opt, int *err_no)
{
    w->opt = *opt;
    if (w->opt.threads < 1)
        w->opt.threads = 1;
    if (w->opt.block_size < 4096)
        w->opt.block_size = 128 << 10;
    w->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOATIME);
    if (w->root_fd < 0 && errno == EPERM)
        w->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->root_fd < 0) {
        *err_no = errno;
        return errno == ENOTDIR ? ZV_ENOTDIR : ZV_EROOT;
    }
    struct stat st;
    if (fstat(w->root_fd, &st) < 0) {
        *err_no = errno;
        return ZV_EROOT;
    }
    w->root_dev = (uint64_t)st.st_dev;
    if (!(w->root_path = strdup(root)))
        return ZV_ENOMEM;
    w->ring_size = RING_SLOTS;
    if (w->opt.max_open_files == 0)
        w->opt.max_open_files = 64 * (size_t)w->opt.threads;
    if (w->opt.max_dir_fds < 1)
        w->opt.max_dir_fds = 64;
    w->max_open_files = w->opt.max_open_files;
    w->ring = calloc(w->ring_size, sizeof *w->ring);
    w->workers = calloc((size_t)w->opt.threads, sizeof *w->workers);
    if (!w->ring || !w->workers)
        return ZV_ENOMEM;
    /* Adaptive: a thread that finds the lock taken spins briefly before it sleeps.  Every
     * hold is a few slot updates, so contention is short, and a futex call per clash
     * would cost more than the wait. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&w->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_cond_init(&w->work_cv, NULL);
    pthread_cond_init(&w->space_cv, NULL);
    pthread_cond_init(&w->ready_cv, NULL);
    return ZV_OK;
}

static int start_threads(zv_walk *w)
{
    for (int i = 0; i < w->opt.threads; i++) {
        if (pthread_create(&w->workers[i], NULL, worker_main, w) != 0)
            return ZV_ETHREAD;
        w->nworkers++;
    }
    if (pthread_create(&w->walker, NULL, walker_main, w) != 0)
        return ZV_ETHREAD;
    w->walker_started = 1;
    return ZV_OK;
}

int zv_walk_open(const char *root, const zv_options *opt, zv_walk **out, int *err_no)
{
    *out = NULL;
    *err_no = 0;
    if (!root || !opt || opt->algo < ZV_HASH_NONE || opt->algo > ZV_HASH_SHA1)
        return ZV_EINVAL;
    zv_walk *w = calloc(1, sizeof *w);
    if (!w)
        return ZV_ENOMEM;
    w->root_fd = -1;
    int rc = init_walk(w, root, opt, err_no);
    if (rc != ZV_OK) {
        if (w->root_fd >= 0)
            close(w->root_fd);
        free(w->root_path);
        free(w->ring);
        free(w->workers);
        free(w);
        return rc;
    }
    rc = start_threads(w);
    if (rc != ZV_OK) {
        zv_walk_close(w);
        return rc;
    }
    *out = w;
    return ZV_OK;
}

void zv_walk_stop(zv_walk *w)
{
    pthread_mutex_lock(&w->lock);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED); /* workers poll it mid-file, unlocked */
    pthread_cond_broadcast(&w->work_cv);
    pthread_cond_broadcast(&w->space_cv);
    pthread_cond_broadcast(&w->ready_cv);
    pthread_mutex_unlock(&w->lock);
}

void zv_walk_close(zv_walk *w)
{
    if (!w)
        return;
    zv_walk_stop(w);
    if (w->walker_started)
        pthread_join(w->walker, NULL);
    for (int i = 0; i < w->nworkers; i++)
        pthread_join(w->workers[i], NULL);
    for (uint64_t i = w->head; i < w->tail; i++) {
        zv_slot *s = slot_at(w, i);
        if (s->fd >= 0)
            close(s->fd);
        zv_record_free(&s->rec);
    }
    close(w->root_fd);
    free(w->root_path);
    pthread_cond_destroy(&w->work_cv);
    pthread_cond_destroy(&w->space_cv);
    pthread_cond_destroy(&w->ready_cv);
    pthread_mutex_destroy(&w->lock);
    free(w->ring);
    free(w->workers);
    free(w);
}

int zv_walk_error(const zv_walk *w)
{
    return __atomic_load_n(&w->walk_errno, __ATOMIC_RELAXED);
}

void zv_walk_counters(const zv_walk *w, zv_counters *c)
{
    c->entries = __atomic_load_n(&w->entries, __ATOMIC_RELAXED);
    c->bytes = __atomic_load_n(&w->bytes, __ATOMIC_RELAXED);
    c->excluded = __atomic_load_n(&w->excluded, __ATOMIC_RELAXED);
}
