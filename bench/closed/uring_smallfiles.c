/*
 * uring_smallfiles.c — does io_uring make zverify's small-file path faster?
 *
 * A standalone experiment (issue 34 item 3), not part of the C core.  A tree is
 * listed once, untimed (sorted names, every directory fd kept open); then one timed
 * pass reads every regular file of it the way the core does, either
 *
 *   sync   the core's syscalls and thread layout: one walker thread does
 *          fstatat(AT_SYMLINK_NOFOLLOW) + openat(O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|
 *          O_NOATIME) + posix_fadvise(WILLNEED) and hands the fd to N workers
 *          (at most 64 x N open), which pread up to 128 KiB + 1 probe byte,
 *          flistxattr(NULL, 0), fstat (the "unchanged" check) and close;
 *   uring  N threads, each with its own ring, take batches of B files in order:
 *          one submission of STATX + OPENAT per file, then one of READ (+ the
 *          post-read STATX(AT_EMPTY_PATH) on the fd, linked after it); flistxattr
 *          stays a syscall (there is no IORING_OP_FLISTXATTR); the CLOSEs ride
 *          along with the next batch's first submission;
 *   uringfs the same with the post-read stat as a plain statx(2) on the fd: io_uring's
 *          STATX always runs on an io-wq worker thread, a hop per file;
 *   direct the best case io_uring allows: STATX, then OPENAT into a direct
 *          descriptor -> READ -> CLOSE linked in one submission per batch.  It
 *          cannot do the core's checks (xattrs and fstat need a real fd), so it
 *          only bounds what io_uring could win; the post-read stat is by path.
 *   syncpar the control for uring: its layout (N threads, batches of B, each thread
 *          does every step of its files) with sync's syscalls; uring - syncpar is
 *          what io_uring itself buys, syncpar - sync what the layout buys;
 *   uwalk  what fits the core's layout: the walker submits STATX + OPENAT for B
 *          files at a time through io_uring and hands the fds to sync's workers;
 *
 * and hashes the bytes with XXH3-128 (streaming, as the core does).  Variants:
 * full (xattr listing), content (no xattr listing: --profile content), quick
 * (stat only, nothing opened: --quick).  Digests can be written out so that the
 * driver (uring_smallfiles.py) checks every mode against every other.
 *
 * Output: one JSON line with wall and CPU seconds of the timed pass (the CPU time
 * of io_uring's io-wq workers is included: they are threads of this process).
 *
 * Long because: one file holds every mode so that they share the listing, the hashing,
 * the checks and the timing exactly; split, a difference in those would be measured too.
 */
#define _GNU_SOURCE
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (128 << 10)

enum { MODE_SYNC, MODE_URING, MODE_DIRECT, MODE_LIST, MODE_SYNCPAR, MODE_UWALK, MODE_URINGFS };
enum { VAR_FULL, VAR_CONTENT, VAR_QUICK };

typedef struct result {
    unsigned char digest[16];
    uint64_t size;
    int err;     /* errno of the first failure, 0 if none */
    int changed; /* post-read stat differs from the first */
} result;

typedef struct tree {
    const char *root;
    int *dirfds;
    size_t ndirs, dcap;
    int *fdir;       /* per file: index into dirfds */
    char **fname;    /* per file: name in its directory */
    char **fpath;    /* per file: relative path (for the digest list) */
    size_t nfiles, fcap;
    result *res;
} tree;

static int g_mode = MODE_SYNC, g_var = VAR_FULL, g_threads = 1, g_batch = 64, g_fadvise = 1;

static void die(const char *what, const char *path)
{
    fprintf(stderr, "uring_smallfiles: %s: %s: %s\n", what, path, strerror(errno));
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "uring_smallfiles: out of memory\n");
        exit(2);
    }
    return p;
}

/* ---- listing (untimed) ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_file(tree *t, int dir, const char *name, const char *rel)
{
    if (t->nfiles == t->fcap) {
        t->fcap = t->fcap ? 2 * t->fcap : 1024;
        t->fdir = xrealloc(t->fdir, t->fcap * sizeof *t->fdir);
        t->fname = xrealloc(t->fname, t->fcap * sizeof *t->fname);
        t->fpath = xrealloc(t->fpath, t->fcap * sizeof *t->fpath);
    }
    t->fdir[t->nfiles] = dir;
    t->fname[t->nfiles] = strdup(name);
    t->fpath[t->nfiles] = strdup(rel);
    t->nfiles++;
}

static void list_dir(tree *t, int fd, const char *rel)
{
    if (t->ndirs == t->dcap) {
        t->dcap = t->dcap ? 2 * t->dcap : 256;
        t->dirfds = xrealloc(t->dirfds, t->dcap * sizeof *t->dirfds);
    }
    int me = (int)t->ndirs++;
    t->dirfds[me] = fd;
    DIR *d = fdopendir(dup(fd));
    if (!d)
        die("opendir", rel);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap)
            names = xrealloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char *sub = xrealloc(NULL, strlen(rel) + strlen(names[i]) + 2);
        sprintf(sub, "%s%s%s", rel, *rel ? "/" : "", names[i]);
        struct stat st;
        if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
            die("lstat", sub);
        if (S_ISDIR(st.st_mode)) {
            int cfd = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0)
                die("open", sub);
            list_dir(t, cfd, sub);
        } else if (S_ISREG(st.st_mode)) {
            add_file(t, me, names[i], sub);
        }
        free(sub);
        free(names[i]);
    }
    free(names);
}

static void list_tree(tree *t, const char *root)
{
    memset(t, 0, sizeof *t);
    t->root = root;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        die("open", root);
    list_dir(t, fd, "");
    t->res = xrealloc(NULL, (t->nfiles ? t->nfiles : 1) * sizeof *t->res);
    memset(t->res, 0, (t->nfiles ? t->nfiles : 1) * sizeof *t->res);
}

/* ---- what every mode shares ---- */

static int same_stat(const result *r, uint64_t ino, uint64_t size, int64_t ms, int64_t mns,
                     int64_t cs, int64_t cns, const struct stat *first)
{
    return ino == (uint64_t)first->st_ino && size == r->size && ms == first->st_mtim.tv_sec &&
           mns == first->st_mtim.tv_nsec && cs == first->st_ctim.tv_sec &&
           cns == first->st_ctim.tv_nsec;
}

static void finish_digest(XXH3_state_t *h, result *r)
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    memcpy(r->digest, c.digest, 16);
}

/* Bytes [off, size) into the hash, synchronously, as the core's hash_range + probe_end:
 * the read that reaches the size asks for one byte more, so content past st_size shows. */
static void read_rest_sync(int fd, uint64_t off, unsigned char *buf, XXH3_state_t *h, result *r)
{
    int probed = 0;
    while (off < r->size) {
        size_t n = r->size - off < BLOCK ? (size_t)(r->size - off) : BLOCK;
        size_t ask = n < BLOCK ? n + 1 : n;
        ssize_t got = pread(fd, buf, ask, (off_t)off);
        if (got < 0) {
            r->err = errno;
            return;
        }
        if (got == 0 || (size_t)got > n) { /* shrunk, or content beyond st_size */
            r->changed = 1;
            return;
        }
        probed |= ask > n;
        XXH3_128bits_update(h, buf, (size_t)got);
        off += (uint64_t)got;
    }
    if (!probed) {
        ssize_t got = pread(fd, buf, 1, (off_t)r->size);
        if (got < 0)
            r->err = errno;
        else if (got > 0)
            r->changed = 1;
    }
}

static void list_xattrs(int fd, result *r)
{
    ssize_t len = flistxattr(fd, NULL, 0);
    if (len < 0 && errno != ENOTSUP)
        r->err = errno;
    else if (len > 0)
        r->err = EEXIST; /* the corpus has none; a real scan would read them */
}

/* ---- sync: one walker, N workers, a bounded hand-over (the core's layout) ---- */

typedef struct job {
    size_t idx;
    int fd;
    struct stat st;
} job;

typedef struct syncq {
    tree *t;
    pthread_mutex_t lock;
    pthread_cond_t work, space;
    job *q;
    size_t cap, head, tail;
    int idle, walker_waiting, done;
} syncq;

/* The walker's part of one file: lstat, open, read-ahead hint; 0 when there is an fd. */
static int stat_and_open(tree *t, job *j)
{
    size_t i = j->idx;
    int dfd = t->dirfds[t->fdir[i]];
    j->fd = -1;
    if (fstatat(dfd, t->fname[i], &j->st, AT_SYMLINK_NOFOLLOW) < 0) {
        t->res[i].err = errno;
        return -1;
    }
    t->res[i].size = (uint64_t)j->st.st_size;
    if (g_var == VAR_QUICK)
        return -1;
    j->fd = openat(dfd, t->fname[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
    if (j->fd < 0) {
        t->res[i].err = errno;
        return -1;
    }
    if (g_fadvise && j->st.st_size > 0)
        (void)posix_fadvise(j->fd, 0, j->st.st_size < (256 << 10) ? j->st.st_size : (256 << 10),
                            POSIX_FADV_WILLNEED);
    return 0;
}

static void enqueue(syncq *s, const job *j)
{
    pthread_mutex_lock(&s->lock);
    while (s->tail - s->head == s->cap) { /* the fd budget: 64 per worker */
        s->walker_waiting = 1;
        pthread_cond_wait(&s->space, &s->lock);
        s->walker_waiting = 0;
    }
    s->q[s->tail++ % s->cap] = *j;
    if (s->idle) /* signal only a sleeper, as the core does */
        pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->lock);
}

static void walker_done(syncq *s)
{
    pthread_mutex_lock(&s->lock);
    s->done = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
}

static void *sync_walker(void *arg)
{
    syncq *s = arg;
    for (size_t i = 0; i < s->t->nfiles; i++) {
        job j = {i, -1, {0}};
        if (stat_and_open(s->t, &j) == 0)
            enqueue(s, &j);
    }
    walker_done(s);
    return NULL;
}

static void sync_scan(tree *t, const job *j, unsigned char *buf, XXH3_state_t *h)
{
    result *r = &t->res[j->idx];
    XXH3_128bits_reset(h);
    read_rest_sync(j->fd, 0, buf, h, r);
    if (g_var == VAR_FULL && !r->err)
        list_xattrs(j->fd, r);
    struct stat after;
    if (fstat(j->fd, &after) < 0)
        r->err = errno;
    else if (!same_stat(r, (uint64_t)after.st_ino, (uint64_t)after.st_size, after.st_mtim.tv_sec,
                        after.st_mtim.tv_nsec, after.st_ctim.tv_sec, after.st_ctim.tv_nsec, &j->st))
        r->changed = 1;
    finish_digest(h, r);
    close(j->fd);
}

static void *sync_worker(void *arg)
{
    syncq *s = arg;
    unsigned char *buf = xrealloc(NULL, BLOCK + 1);
    XXH3_state_t *h = XXH3_createState();
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == s->tail && !s->done) {
            s->idle++;
            pthread_cond_wait(&s->work, &s->lock);
            s->idle--;
        }
        if (s->head == s->tail)
            break;
        job j = s->q[s->head++ % s->cap];
        if (s->walker_waiting)
            pthread_cond_signal(&s->space);
        pthread_mutex_unlock(&s->lock);
        sync_scan(s->t, &j, buf, h);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    XXH3_freeState(h);
    free(buf);
    return NULL;
}

/* ---- io_uring: N threads, each its own ring, batches of B files ---- */

typedef struct ushared {
    tree *t;
    size_t next_batch; /* atomic */
} ushared;

enum { OP_STATX, OP_OPEN, OP_READ, OP_STAT2, OP_CLOSE };
#define UD(op, k) (((uint64_t)(op) << 32) | (uint32_t)(k))

typedef struct uslot {
    struct statx first, after;
    int fd, open_err, stat_err, stat2_err;
    int read_res;
} uslot;

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) { /* ring full: flush what is queued */
        io_uring_submit(ring);
        sqe = io_uring_get_sqe(ring);
    }
    return sqe;
}

/* Submit what is queued and reap exactly `want` completions into the slots. */
static void reap(struct io_uring *ring, uslot *sl, unsigned want, int flush)
{
    unsigned seen = 0;
    if (flush)
        io_uring_submit_and_wait(ring, want);
    while (seen < want) {
        struct io_uring_cqe *cqe;
        int rc = io_uring_wait_cqe(ring, &cqe);
        if (rc < 0) {
            errno = -rc;
            die("io_uring_wait_cqe", "ring");
        }
        unsigned head, n = 0;
        io_uring_for_each_cqe(ring, head, cqe)
        {
            uint32_t k = (uint32_t)cqe->user_data;
            int op = (int)(cqe->user_data >> 32), res = cqe->res;
            switch (op) {
            case OP_STATX: sl[k].stat_err = res < 0 ? -res : 0; break;
            case OP_OPEN: sl[k].fd = res; sl[k].open_err = res < 0 ? -res : 0; break;
            case OP_READ: sl[k].read_res = res; break;
            case OP_STAT2: sl[k].stat2_err = res < 0 ? -res : 0; break;
            default: break; /* CLOSE: nothing to record */
            }
            n++;
        }
        io_uring_cq_advance(ring, n);
        seen += n;
    }
}

static void check_after(result *r, const uslot *s)
{
    const struct statx *a = &s->after, *f = &s->first;
    if (s->stat2_err)
        r->err = s->stat2_err;
    else if (a->stx_ino != f->stx_ino || a->stx_size != f->stx_size ||
             a->stx_mtime.tv_sec != f->stx_mtime.tv_sec ||
             a->stx_mtime.tv_nsec != f->stx_mtime.tv_nsec ||
             a->stx_ctime.tv_sec != f->stx_ctime.tv_sec ||
             a->stx_ctime.tv_nsec != f->stx_ctime.tv_nsec)
        r->changed = 1;
}

/* A file's first read came back: hash it (and the rest, if any), or note why not. */
static void hash_slot(tree *t, size_t i, uslot *s, unsigned char *buf, XXH3_state_t *h, int fd)
{
    result *r = &t->res[i];
    XXH3_128bits_reset(h);
    if (s->read_res < 0) {
        r->err = -s->read_res;
        return;
    }
    if (r->size >= BLOCK && fd < 0) {
        r->err = EFBIG; /* direct descriptors: no fd to go on with (the corpus has none) */
        return;
    }
    size_t n = r->size < BLOCK ? (size_t)r->size : BLOCK;
    if ((size_t)s->read_res != n) { /* shrunk, or content beyond st_size (the probe byte) */
        r->changed = 1;
        return;
    }
    XXH3_128bits_update(h, buf, (size_t)s->read_res);
    if (r->size >= BLOCK)
        read_rest_sync(fd, BLOCK, buf, h, r);
    finish_digest(h, r);
}

static unsigned stat_mask(void)
{
    return STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_UID | STATX_GID | STATX_MTIME |
           STATX_CTIME | STATX_INO | STATX_SIZE | STATX_BLOCKS;
}

/* One batch with regular fds: [STATX+OPENAT] then [READ->STATX(fd)], xattrs by syscall. */
static unsigned uring_batch(struct io_uring *ring, tree *t, size_t i0, size_t n, uslot *sl,
                            unsigned char *bufs, XXH3_state_t *h, unsigned pending_closes)
{
    for (size_t k = 0; k < n; k++) {
        int dfd = t->dirfds[t->fdir[i0 + k]];
        memset(&sl[k], 0, sizeof sl[k]);
        sl[k].fd = -1;
        struct io_uring_sqe *sqe = get_sqe(ring);
        io_uring_prep_statx(sqe, dfd, t->fname[i0 + k], AT_SYMLINK_NOFOLLOW, stat_mask(),
                            &sl[k].first);
        sqe->user_data = UD(OP_STATX, k);
        if (g_var == VAR_QUICK)
            continue;
        sqe = get_sqe(ring);
        io_uring_prep_openat(sqe, dfd, t->fname[i0 + k],
                             O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME, 0);
        sqe->user_data = UD(OP_OPEN, k);
    }
    reap(ring, sl, (unsigned)(g_var == VAR_QUICK ? n : 2 * n) + pending_closes, 1);
    for (size_t k = 0; k < n; k++) {
        result *r = &t->res[i0 + k];
        r->size = sl[k].first.stx_size;
        r->err = sl[k].stat_err ? sl[k].stat_err : sl[k].open_err;
    }
    if (g_var == VAR_QUICK)
        return 0;
    unsigned want = 0;
    for (size_t k = 0; k < n; k++) {
        if (sl[k].fd < 0)
            continue;
        unsigned char *buf = bufs + k * (BLOCK + 1);
        size_t len = t->res[i0 + k].size < BLOCK ? (size_t)t->res[i0 + k].size + 1 : BLOCK;
        struct io_uring_sqe *sqe = get_sqe(ring);
        io_uring_prep_read(sqe, sl[k].fd, buf, (unsigned)len, 0);
        sqe->user_data = UD(OP_READ, k);
        want++;
        if (g_mode == MODE_URINGFS)
            continue; /* the post-read stat is a plain syscall below */
        /* the stat must come after the read; HARDLINK: a short read (every small file's,
         * since it asks for one byte more) would cancel the rest of a soft link chain */
        sqe->flags |= IOSQE_IO_HARDLINK;
        sqe = get_sqe(ring);
        io_uring_prep_statx(sqe, sl[k].fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, stat_mask(),
                            &sl[k].after);
        sqe->user_data = UD(OP_STAT2, k);
        want++;
    }
    reap(ring, sl, want, 1);
    unsigned closes = 0;
    for (size_t k = 0; k < n; k++) {
        if (sl[k].fd < 0)
            continue;
        result *r = &t->res[i0 + k];
        hash_slot(t, i0 + k, &sl[k], bufs + k * (BLOCK + 1), h, sl[k].fd);
        if (g_var == VAR_FULL && !r->err)
            list_xattrs(sl[k].fd, r);
        if (g_mode == MODE_URINGFS && statx(sl[k].fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                                            stat_mask(), &sl[k].after) < 0)
            sl[k].stat2_err = errno;
        check_after(r, &sl[k]);
        struct io_uring_sqe *sqe = get_sqe(ring); /* submitted with the next batch */
        io_uring_prep_close(sqe, sl[k].fd);
        sqe->user_data = UD(OP_CLOSE, k);
        closes++;
    }
    return closes;
}

/* One batch with direct descriptors: STATX, OPENAT(direct)->READ(fixed)->CLOSE, STATX. */
static void direct_batch(struct io_uring *ring, tree *t, size_t i0, size_t n, uslot *sl,
                         unsigned char *bufs, XXH3_state_t *h)
{
    for (size_t k = 0; k < n; k++) {
        int dfd = t->dirfds[t->fdir[i0 + k]];
        const char *name = t->fname[i0 + k];
        memset(&sl[k], 0, sizeof sl[k]);
        struct io_uring_sqe *sqe = get_sqe(ring);
        io_uring_prep_statx(sqe, dfd, name, AT_SYMLINK_NOFOLLOW, stat_mask(), &sl[k].first);
        sqe->user_data = UD(OP_STATX, k);
        sqe = get_sqe(ring);
        /* no O_CLOEXEC: a direct descriptor is in no fd table (the kernel says EINVAL) */
        io_uring_prep_openat_direct(sqe, dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOATIME,
                                    0, (unsigned)k);
        sqe->user_data = UD(OP_OPEN, k);
        sqe->flags |= IOSQE_IO_LINK; /* a failed open cancels its read and close */
        sqe = get_sqe(ring);
        io_uring_prep_read(sqe, (int)k, bufs + k * (BLOCK + 1), BLOCK + 1, 0);
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK; /* short reads are the rule */
        sqe->user_data = UD(OP_READ, k);
        sqe = get_sqe(ring);
        io_uring_prep_close_direct(sqe, (unsigned)k);
        sqe->user_data = UD(OP_CLOSE, k);
        sqe->flags |= IOSQE_IO_HARDLINK;
        sqe = get_sqe(ring); /* by path: a direct descriptor has no fstat */
        io_uring_prep_statx(sqe, dfd, name, AT_SYMLINK_NOFOLLOW, stat_mask(), &sl[k].after);
        sqe->user_data = UD(OP_STAT2, k);
    }
    reap(ring, sl, (unsigned)(5 * n), 1);
    for (size_t k = 0; k < n; k++) {
        result *r = &t->res[i0 + k];
        r->size = sl[k].first.stx_size;
        r->err = sl[k].stat_err ? sl[k].stat_err : sl[k].open_err;
        if (r->err)
            continue;
        hash_slot(t, i0 + k, &sl[k], bufs + k * (BLOCK + 1), h, -1);
        check_after(r, &sl[k]);
    }
}

static void ring_init(struct io_uring *ring)
{
    struct io_uring_params p = {0};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
    unsigned entries = 8;
    while (entries < (unsigned)(5 * g_batch))
        entries <<= 1;
    int rc = io_uring_queue_init_params(entries, ring, &p);
    if (rc < 0) {
        errno = -rc;
        die("io_uring_queue_init", "ring"); /* the integration would fall back here */
    }
    if (g_mode == MODE_DIRECT)
        rc = io_uring_register_files_sparse(ring, (unsigned)g_batch);
    if (rc < 0) {
        errno = -rc;
        die("io_uring_register_files_sparse", "ring");
    }
}

/* The next batch of files in listing order: 0 and its first index and size, or -1. */
static int claim_batch(ushared *u, size_t *i0, size_t *n)
{
    size_t b = __atomic_fetch_add(&u->next_batch, 1, __ATOMIC_RELAXED);
    size_t nf = u->t->nfiles;
    *i0 = b * (size_t)g_batch;
    if (*i0 >= nf)
        return -1;
    *n = nf - *i0 < (size_t)g_batch ? nf - *i0 : (size_t)g_batch;
    return 0;
}

static void *uring_thread(void *arg)
{
    ushared *u = arg;
    struct io_uring ring;
    ring_init(&ring);
    uslot *sl = xrealloc(NULL, (size_t)g_batch * sizeof *sl);
    unsigned char *bufs = xrealloc(NULL, (size_t)g_batch * (BLOCK + 1));
    XXH3_state_t *h = XXH3_createState();
    unsigned closes = 0;
    for (size_t i0, n; claim_batch(u, &i0, &n) == 0;) {
        if (g_mode == MODE_DIRECT)
            direct_batch(&ring, u->t, i0, n, sl, bufs, h);
        else
            closes = uring_batch(&ring, u->t, i0, n, sl, bufs, h, closes);
    }
    if (closes)
        reap(&ring, sl, closes, 1);
    XXH3_freeState(h);
    free(bufs);
    free(sl);
    io_uring_queue_exit(&ring);
    return NULL;
}

/* syncpar: uring's layout, sync's syscalls. */
static void *syncpar_thread(void *arg)
{
    ushared *u = arg;
    unsigned char *buf = xrealloc(NULL, BLOCK + 1);
    XXH3_state_t *h = XXH3_createState();
    for (size_t i0, n; claim_batch(u, &i0, &n) == 0;)
        for (size_t i = i0; i < i0 + n; i++) {
            job j = {i, -1, {0}};
            if (stat_and_open(u->t, &j) == 0)
                sync_scan(u->t, &j, buf, h);
        }
    XXH3_freeState(h);
    free(buf);
    return NULL;
}

/* uwalk: the walker's fstatat + openat as one io_uring submission per B files. */
static void *uwalk_walker(void *arg)
{
    syncq *s = arg;
    tree *t = s->t;
    struct io_uring ring;
    ring_init(&ring);
    uslot *sl = xrealloc(NULL, (size_t)g_batch * sizeof *sl);
    for (size_t i0 = 0; i0 < t->nfiles; i0 += (size_t)g_batch) {
        size_t n = t->nfiles - i0 < (size_t)g_batch ? t->nfiles - i0 : (size_t)g_batch;
        for (size_t k = 0; k < n; k++) {
            int dfd = t->dirfds[t->fdir[i0 + k]];
            memset(&sl[k], 0, sizeof sl[k]);
            sl[k].fd = -1;
            struct io_uring_sqe *sqe = get_sqe(&ring);
            io_uring_prep_statx(sqe, dfd, t->fname[i0 + k], AT_SYMLINK_NOFOLLOW, stat_mask(),
                                &sl[k].first);
            sqe->user_data = UD(OP_STATX, k);
            if (g_var == VAR_QUICK)
                continue;
            sqe = get_sqe(&ring);
            io_uring_prep_openat(sqe, dfd, t->fname[i0 + k],
                                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME, 0);
            sqe->user_data = UD(OP_OPEN, k);
        }
        reap(&ring, sl, (unsigned)(g_var == VAR_QUICK ? n : 2 * n), 1);
        for (size_t k = 0; k < n; k++) {
            result *r = &t->res[i0 + k];
            const struct statx *x = &sl[k].first;
            r->size = x->stx_size;
            r->err = sl[k].stat_err ? sl[k].stat_err : sl[k].open_err;
            if (sl[k].fd < 0)
                continue;
            job j = {i0 + k, sl[k].fd, {0}};
            j.st.st_ino = x->stx_ino;
            j.st.st_size = (off_t)x->stx_size;
            j.st.st_mtim = (struct timespec){x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec};
            j.st.st_ctim = (struct timespec){x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec};
            enqueue(s, &j);
        }
    }
    free(sl);
    io_uring_queue_exit(&ring);
    walker_done(s);
    return NULL;
}

/* ---- driver ---- */

typedef struct run {
    tree *t;
    syncq sq;
    ushared us;
    pthread_t *th;
    int nth;
} run;

static void start(run *r, tree *t)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->th = xrealloc(NULL, (size_t)(g_threads + 1) * sizeof *r->th);
    if (g_mode == MODE_SYNC || g_mode == MODE_UWALK) {
        syncq *s = &r->sq;
        s->t = t;
        s->cap = 64 * (size_t)g_threads; /* the core's max_open_files */
        s->q = xrealloc(NULL, s->cap * sizeof *s->q);
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->work, NULL);
        pthread_cond_init(&s->space, NULL);
        pthread_create(&r->th[r->nth++], NULL, g_mode == MODE_SYNC ? sync_walker : uwalk_walker, s);
        if (g_var != VAR_QUICK)
            for (int i = 0; i < g_threads; i++)
                pthread_create(&r->th[r->nth++], NULL, sync_worker, s);
    } else if (g_mode != MODE_LIST) { /* uring, uringfs, direct, syncpar */
        r->us.t = t;
        for (int i = 0; i < g_threads; i++)
            pthread_create(&r->th[r->nth++], NULL,
                           g_mode == MODE_SYNCPAR ? syncpar_thread : uring_thread, &r->us);
    }
}

static void join(run *r)
{
    for (int i = 0; i < r->nth; i++)
        pthread_join(r->th[i], NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* path \t size \t digest-hex (or ERR errno / CHANGED), one line per file, listing order */
static void write_digests(const tree *t, FILE *out)
{
    for (size_t i = 0; i < t->nfiles; i++) {
        const result *r = &t->res[i];
        fprintf(out, "%s\t%llu\t", t->fpath[i], (unsigned long long)r->size);
        if (r->err)
            fprintf(out, "ERR %d\n", r->err);
        else if (r->changed)
            fprintf(out, "CHANGED\n");
        else if (g_var == VAR_QUICK)
            fprintf(out, "-\n");
        else {
            for (int b = 0; b < 16; b++)
                fprintf(out, "%02x", r->digest[b]);
            fputc('\n', out);
        }
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: uring_smallfiles sync|syncpar|uwalk|uring|uringfs|direct|list "
                    "full|content|quick THREADS BATCH FADVISE(0|1) DIGESTS(-|path) TREE [TREE2]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 8 || argc > 9)
        usage();
    const char *modes[] = {"sync", "uring", "direct", "list", "syncpar", "uwalk", "uringfs"};
    const char *vars[] = {"full", "content", "quick"};
    g_mode = g_var = -1;
    for (int i = 0; i < 7; i++)
        if (!strcmp(argv[1], modes[i]))
            g_mode = i;
    for (int i = 0; i < 3; i++)
        if (!strcmp(argv[2], vars[i]))
            g_var = i;
    g_threads = atoi(argv[3]);
    g_batch = atoi(argv[4]);
    g_fadvise = atoi(argv[5]);
    if (g_mode < 0 || g_var < 0 || g_threads < 1 || g_batch < 1 || g_batch > 1024)
        usage();
    if (g_mode == MODE_DIRECT && g_var == VAR_FULL) {
        fprintf(stderr, "uring_smallfiles: direct descriptors cannot list xattrs: use content\n");
        return 2;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int ntrees = argc - 7;
    tree trees[2];
    size_t files = 0;
    for (int i = 0; i < ntrees; i++) {
        list_tree(&trees[i], argv[7 + i]);
        files += trees[i].nfiles;
    }
    run runs[2];
    double c0 = cpu_s(), t0 = now_s();
    for (int i = 0; i < ntrees; i++) /* both trees at once, as compare does */
        start(&runs[i], &trees[i]);
    for (int i = 0; i < ntrees; i++)
        join(&runs[i]);
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    size_t bad = 0;
    for (int i = 0; i < ntrees; i++)
        for (size_t k = 0; k < trees[i].nfiles; k++)
            bad += trees[i].res[k].err || trees[i].res[k].changed;
    if (strcmp(argv[6], "-") != 0) {
        FILE *out = fopen(argv[6], "w");
        if (!out)
            die("open", argv[6]);
        for (int i = 0; i < ntrees; i++)
            write_digests(&trees[i], out);
        fclose(out);
    }
    printf("{\"mode\": \"%s\", \"variant\": \"%s\", \"threads\": %d, \"batch\": %d, "
           "\"trees\": %d, \"files\": %zu, \"bad\": %zu, \"wall\": %.4f, \"cpu\": %.4f}\n",
           argv[1], argv[2], g_threads, g_batch, ntrees, files, bad, wall, cpu);
    return bad ? 1 : 0;
}
