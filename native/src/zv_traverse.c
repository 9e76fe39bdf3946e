/*
 * zv_traverse.c — canonical-order traversal: pre-order, siblings sorted
 * bytewise, symlinks never followed, with an explicit stack so depth is
 * limited by memory, not by the C stack.  Records go to a sink (see
 * zv_traverse.h); a failure that stops the traversal is returned as a
 * status, never as a silent early end.
 *
 * Directory fds: only the deepest keep_open levels keep theirs open (deep
 * trees would exhaust RLIMIT_NOFILE).  When the walk climbs back to a level
 * whose fd was closed, it reopens it as ".." of the child it just left and
 * checks dev/ino, falling back to opening the chain from the nearest open
 * ancestor.  Paths are never passed whole to the kernel, so PATH_MAX does
 * not limit depth.
 *
 * Long because: the descent, the climb with its fd reopening and dev/ino checks, the
 * sorted (and key-range bounded) listing of a directory and each entry's record (stat,
 * link, xattrs) all work on one walk_state in one explicit-stack loop; apart, that state
 * would be passed around instead.
 */
#define _GNU_SOURCE
#include "zv_traverse.h"
#include "zv_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * Files are opened here, up to max_open_files ahead of the hashing workers; asking the
 * kernel for the first READAHEAD_BYTES of each at open time keeps that many reads in
 * flight on a cold cache, where the workers alone would wait for one file at a time.  On a
 * hot cache the request is a wasted system call per file, so the sink decides (prefetch).
 */
#define READAHEAD_BYTES (256 << 10)

typedef struct frame {
    char *name;       /* component name (NULL for the root) */
    size_t path_len;  /* length of this directory's relative path */
    int fd;
    uint64_t dev, ino;
    char **children;  /* sorted names */
    size_t nchildren, next;
} frame;

typedef struct walk_state {
    const zv_traverse_opts *opt;
    const zv_sink *sink;
    frame *stack;
    size_t depth, cap;
    char *path;       /* relative path of the current directory + child */
    size_t path_cap;
    int have_proc;    /* /proc/self/fd works (see xattrs_by_name) */
} walk_state;

static int kind_of(mode_t m)
{
    if (S_ISREG(m)) return ZV_KIND_FILE;
    if (S_ISDIR(m)) return ZV_KIND_DIR;
    if (S_ISLNK(m)) return ZV_KIND_SYMLINK;
    if (S_ISFIFO(m)) return ZV_KIND_FIFO;
    if (S_ISSOCK(m)) return ZV_KIND_SOCKET;
    if (S_ISCHR(m)) return ZV_KIND_CHAR;
    if (S_ISBLK(m)) return ZV_KIND_BLOCK;
    return ZV_KIND_UNKNOWN;
}

static void set_stat(zv_record *r, const struct stat *st)
{
    r->kind = kind_of(st->st_mode);
    r->mode = (uint32_t)st->st_mode;
    r->uid = st->st_uid;
    r->gid = st->st_gid;
    r->nlink = st->st_nlink;
    r->dev = st->st_dev;
    r->ino = st->st_ino;
    r->rdev = st->st_rdev;
    r->size = (uint64_t)st->st_size;
    r->alloc = (uint64_t)st->st_blocks * 512;
    r->mtime = (zv_time){st->st_mtim.tv_sec, st->st_mtim.tv_nsec};
    r->ctime = (zv_time){st->st_ctim.tv_sec, st->st_ctim.tv_nsec};
    r->data_bytes = r->kind == ZV_KIND_FILE ? r->size : 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/*
 * Which names of one directory a walk over a key range needs: those from the component of
 * range_lo below it (if range_lo lies below it) up to and including the component of
 * range_hi below it (if range_hi does).  Any other name's whole subtree is outside the
 * range, so a directory of millions of entries split across many ranges is sorted and
 * held by each only for its share (getdents still reads it all).
 */
typedef struct name_bounds {
    const char *lo, *hi; /* NULL: unbounded */
    size_t lo_len, hi_len;
} name_bounds;

/* The component of bound (a path) right below directory dir, or NULL if it is not below. */
static const char *component_below(const char *dir, size_t dlen, const char *bound, size_t blen,
                                   size_t *clen)
{
    size_t start = dlen ? dlen + 1 : 0;
    if (!bound || !zv_path_is_under(bound, blen, dir, dlen))
        return NULL;
    const char *slash = memchr(bound + start, '/', blen - start);
    *clen = (slash ? (size_t)(slash - bound) : blen) - start;
    return bound + start;
}

static name_bounds bounds_below(const zv_traverse_opts *o, const char *dir, size_t dlen)
{
    name_bounds b = {NULL, NULL, 0, 0};
    b.lo = component_below(dir, dlen, o->range_lo, o->range_lo_len, &b.lo_len);
    b.hi = component_below(dir, dlen, o->range_hi, o->range_hi_len, &b.hi_len);
    return b;
}

/* strcmp of a name and a component that is not NUL-terminated. */
static int cmp_component(const char *name, const char *comp, size_t clen)
{
    size_t nlen = strlen(name), n = nlen < clen ? nlen : clen;
    int c = memcmp(name, comp, n);
    return c ? c : (nlen > clen) - (nlen < clen);
}

static int within(const name_bounds *b, const char *name)
{
    return (!b->lo || cmp_component(name, b->lo, b->lo_len) >= 0) &&
           (!b->hi || cmp_component(name, b->hi, b->hi_len) <= 0);
}

/* Read and sort the names of directory fd within bounds (fd stays open). */
static int list_dir(int fd, const name_bounds *bounds, char ***out, size_t *count)
{
    int dfd = dup(fd);
    if (dfd < 0)
        return -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int err = 0;
    struct dirent *e;
    for (errno = 0; (e = readdir(d)) != NULL; errno = 0) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !within(bounds, e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) { err = ENOMEM; break; }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) { err = ENOMEM; break; }
        n++;
    }
    if (!err && errno)
        err = errno;
    closedir(d);
    if (err) {
        free_names(names, n);
        errno = err;
        return -1;
    }
    if (n > 1) /* qsort(NULL, 0, ...) is undefined behaviour */
        qsort(names, n, sizeof *names, cmp_names);
    *out = names;
    *count = n;
    return 0;
}

static int set_path(walk_state *s, size_t dir_len, const char *name)
{
    size_t nlen = strlen(name), need = dir_len + 1 + nlen + 1;
    if (need > s->path_cap) {
        char *p = realloc(s->path, need * 2);
        if (!p)
            return -1;
        s->path = p;
        s->path_cap = need * 2;
    }
    size_t at = dir_len;
    if (dir_len)
        s->path[at++] = '/';
    memcpy(s->path + at, name, nlen + 1);
    return (int)(at + nlen);
}

/* openat with O_NOATIME when we may (owner or CAP_FOWNER), else without. */
static int open_noatime(int dirfd, const char *name, int flags)
{
    int fd = openat(dirfd, name, flags | O_NOATIME);
    if (fd < 0 && errno == EPERM)
        fd = openat(dirfd, name, flags);
    return fd;
}

static int open_dir_at(int dirfd, const char *name)
{
    return open_noatime(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int is_same_dir(int fd, const frame *f)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == f->dev && (uint64_t)st.st_ino == f->ino;
}

/* Reopen frame i by walking down from the nearest ancestor with an fd. */
static int reopen_chain(walk_state *s, size_t i)
{
    size_t a = i;
    while (s->stack[a].fd < 0)
        a--; /* the root (index 0) is always open */
    int fd = s->stack[a].fd;
    for (size_t j = a + 1; j <= i; j++) {
        int next = open_dir_at(fd, s->stack[j].name);
        if (fd != s->stack[a].fd)
            close(fd);
        if (next < 0)
            return -1;
        fd = next;
    }
    if (!is_same_dir(fd, &s->stack[i])) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    return fd;
}

/* Before leaving frame i+1, make sure frame i has an fd again. */
static int restore_parent_fd(walk_state *s, size_t i)
{
    frame *parent = &s->stack[i];
    if (parent->fd >= 0)
        return 0;
    int fd = openat(s->stack[i + 1].fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && !is_same_dir(fd, parent)) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        fd = reopen_chain(s, i);
    parent->fd = fd;
    return fd < 0 ? -1 : 0;
}

static void pop_frame(walk_state *s)
{
    frame *f = &s->stack[s->depth - 1];
    if (s->depth >= 2)
        (void)restore_parent_fd(s, s->depth - 2);
    if (f->fd >= 0 && s->depth > 1)
        close(f->fd);
    free_names(f->children, f->nchildren);
    free(f->name);
    s->depth--;
}

static int push_frame(walk_state *s, const char *name, size_t path_len, int fd,
                      const struct stat *st, char **children, size_t n)
{
    if (s->depth == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        frame *grown = realloc(s->stack, cap * sizeof *grown);
        if (!grown)
            return -1;
        s->stack = grown;
        s->cap = cap;
    }
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy)
        return -1;
    frame *f = &s->stack[s->depth++];
    f->name = copy;
    f->path_len = path_len;
    f->fd = fd;
    f->dev = (uint64_t)st->st_dev;
    f->ino = (uint64_t)st->st_ino;
    f->children = children;
    f->nchildren = n;
    f->next = 0;
    size_t keep = (size_t)s->opt->keep_open;
    if (s->depth > keep + 1) {
        frame *old = &s->stack[s->depth - 1 - keep];
        if (old->fd >= 0 && old != s->stack) {
            close(old->fd);
            old->fd = -1;
        }
    }
    return 0;
}

static int new_record(zv_record *r, const char *path, size_t len)
{
    memset(r, 0, sizeof *r);
    r->err_offset = -1;
    r->path = malloc(len + 1);
    if (!r->path)
        return -1;
    memcpy(r->path, path, len + 1);
    r->path_len = len;
    return 0;
}

static void record_error(zv_record *r, int op, int err)
{
    if (r->err_op == ZV_OP_NONE) {
        r->err_op = op;
        r->err_errno = err;
    }
}

static void read_link(int dirfd, const char *name, zv_record *r)
{
    size_t cap = r->size ? r->size + 1 : 256;
    for (;;) {
        char *buf = malloc(cap);
        if (!buf) {
            record_error(r, ZV_OP_READLINK, ENOMEM);
            return;
        }
        ssize_t n = readlinkat(dirfd, name, buf, cap);
        if (n < 0) {
            record_error(r, ZV_OP_READLINK, errno);
            free(buf);
            return;
        }
        if ((size_t)n < cap) {
            r->link = buf;
            r->link_len = (size_t)n;
            return;
        }
        free(buf);
        cap *= 2; /* target grew between lstat and readlink */
    }
}

/*
 * xattrs of something we do not open (symlinks, devices, FIFOs, sockets, mount points
 * under -x, and regular files when no content is read): l*xattr() by a path that names it
 * without following it.  /proc/self/fd/N/name resolves from the parent's fd, so it is as
 * safe as an *at() call; without /proc (chroot, initramfs, some containers) the path from
 * the root is the only way left, and may race with a rename of a directory above (the
 * entry's stat then moves, and is reported).  NULL, with the error recorded, if no path.
 */
static char *path_for_xattrs(walk_state *s, int dirfd, const char *name, zv_record *r)
{
    char *path = NULL;
    if (s->have_proc) {
        if (asprintf(&path, "/proc/self/fd/%d/%s", dirfd, name) < 0)
            path = NULL;
    } else if (!s->opt->root_path) {
        record_error(r, ZV_OP_XATTR, ENOENT);
        return NULL;
    } else if (asprintf(&path, "%s/%s", s->opt->root_path, r->path) < 0) {
        path = NULL;
    }
    if (!path)
        record_error(r, ZV_OP_XATTR, ENOMEM);
    return path;
}

static void xattrs_by_name(walk_state *s, int dirfd, const char *name, zv_record *r)
{
    char *path = path_for_xattrs(s, dirfd, name, r);
    if (path)
        zv_xattrs_read(-1, path, r);
    free(path);
}

/* A regular file of a walk that reads no content, where /proc names it through dirfd:
 * never opened (zv_file_check_path). */
static void check_unopened_file(walk_state *s, int dirfd, const char *name, zv_record *r)
{
    char *path = path_for_xattrs(s, dirfd, name, r);
    if (path)
        zv_file_check_path(dirfd, name, path, r);
    free(path);
}

static int proc_works(int root_fd)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", root_fd);
    return faccessat(AT_FDCWD, proc, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/*
 * A subdirectory: open and list it now so that a failure is attached to
 * its own record; on success it becomes the new top frame.
 */
static void enter_dir(walk_state *s, int dirfd, const char *name, zv_record *r, size_t plen,
                      const struct stat *st)
{
    if (s->opt->one_file_system && (uint64_t)st->st_dev != s->opt->root_dev) {
        if (s->opt->read_xattrs) /* a mount point: listed, compared, not entered */
            xattrs_by_name(s, dirfd, name, r);
        return;
    }
    int fd = open_dir_at(dirfd, name);
    if (fd < 0) {
        record_error(r, ZV_OP_OPENDIR, errno);
        return;
    }
    if (!is_same_dir(fd, &(frame){.dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino})) {
        r->changed = ZV_CHANGE_REPLACED;
        close(fd);
        return;
    }
    if (s->opt->read_xattrs)
        zv_xattrs_read(fd, NULL, r);
    char **children = NULL;
    size_t n = 0;
    name_bounds bounds = bounds_below(s->opt, s->path, plen);
    if (list_dir(fd, &bounds, &children, &n) < 0) {
        record_error(r, ZV_OP_READDIR, errno);
        close(fd);
        return;
    }
    if (push_frame(s, name, plen, fd, st, children, n) < 0) {
        record_error(r, ZV_OP_READDIR, ENOMEM);
        free_names(children, n);
        close(fd);
    }
}

static int open_file(const zv_sink *sink, int dirfd, const char *name, zv_record *r)
{
    if (sink->reserve_fd(sink->ctx) < 0)
        return -2;
    /* O_NONBLOCK: if it became a FIFO since lstat, open must not hang. */
    int fd;
    while ((fd = open_noatime(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0 &&
           (errno == EMFILE || errno == ENFILE) && sink->await_close(sink->ctx) == 0)
        ; /* the budget was too generous for what else holds fds: wait for a worker */
    if (fd < 0) {
        record_error(r, ZV_OP_OPEN, errno);
        sink->release_fd(sink->ctx);
    } else if (r->size > 0 && sink->prefetch(sink->ctx)) {
        off_t len = r->size < READAHEAD_BYTES ? (off_t)r->size : READAHEAD_BYTES;
        (void)posix_fadvise(fd, 0, len, POSIX_FADV_WILLNEED); /* a hint: failure is harmless */
    }
    return fd;
}

/* Where a path lies relative to the walk's key range (zv_options.range_lo/hi). */
enum range_place { IN_RANGE, BEFORE_RANGE, LEADS_TO_RANGE, AFTER_RANGE };

static enum range_place range_place(const zv_traverse_opts *o, const char *path, size_t len)
{
    if (o->range_hi && zv_canonical_cmp(path, len, o->range_hi, o->range_hi_len) >= 0)
        return AFTER_RANGE; /* and so is everything after it: its subtree, its later siblings */
    if (!o->range_lo || zv_canonical_cmp(path, len, o->range_lo, o->range_lo_len) >= 0)
        return IN_RANGE;
    /* Before range_lo: only a directory holding range_lo has anything in the range. */
    return zv_path_is_under(o->range_lo, o->range_lo_len, path, len) ? LEADS_TO_RANGE
                                                                      : BEFORE_RANGE;
}

/* Nothing after the current entry is in the range: let every level run out. */
static void finish_walk(walk_state *s)
{
    for (size_t i = 0; i < s->depth; i++)
        s->stack[i].next = s->stack[i].nchildren;
}

/* Whether the filter leaves r out: 1 yes, 0 no, -1 it ran out of memory. */
static int excludes(const walk_state *s, const zv_record *r, int is_dir)
{
    return s->opt->filter ? zv_filter_excludes(s->opt->filter, r->path, r->path_len, is_dir) : 0;
}

/* An entry whose type is unknown (its lstat failed) is left out only when the filter
 * excludes it both as a directory and as anything else. */
static int excludes_unknown_type(const walk_state *s, const zv_record *r)
{
    int as_file = excludes(s, r, 0), as_dir = excludes(s, r, 1);
    if (as_file < 0 || as_dir < 0)
        return -1;
    return as_file && as_dir;
}

/*
 * Called before anything is opened, so an excluded directory is never entered.  A filter
 * out of memory ends the walk (ZV_EWALK): keeping or dropping the entry would be a guess.
 */
static int drop(walk_state *s, zv_record *r, int verdict)
{
    zv_record_free(r);
    if (verdict < 0)
        return ZV_EWALK;
    s->sink->excluded(s->sink->ctx);
    return ZV_OK;
}

static int emit(walk_state *s, zv_record *r, int fd)
{
    return s->sink->emit(s->sink->ctx, r, fd) < 0 ? ZV_ESTOPPED : ZV_OK;
}

/*
 * A directory on the way to the range: entered and emitted as context (for the join),
 * never as a result; anything else there, or one the filter leaves out (and counts in the
 * rank that owns it), is skipped.
 */
static int visit_leading(walk_state *s, int dirfd, const char *name, size_t plen)
{
    struct stat st;
    if (dirfd < 0 || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
        return ZV_OK;
    zv_record r;
    if (new_record(&r, s->path, plen) < 0)
        return ZV_EWALK;
    set_stat(&r, &st);
    int verdict = excludes(s, &r, 1);
    if (verdict != 0) {
        zv_record_free(&r);
        return verdict < 0 ? ZV_EWALK : ZV_OK;
    }
    r.context = 1;
    enter_dir(s, dirfd, name, &r, plen, &st);
    return emit(s, &r, -1);
}

/*
 * Build and emit the record of one child of the top frame.
 * @return ZV_OK, ZV_ESTOPPED, or ZV_EWALK (no memory for the record itself: the
 *         traversal cannot go on without losing this entry).
 */
static int visit(walk_state *s, const char *name)
{
    frame *top = &s->stack[s->depth - 1];
    int dirfd = top->fd;
    int plen = set_path(s, top->path_len, name);
    if (plen < 0)
        return ZV_EWALK;
    switch (range_place(s->opt, s->path, (size_t)plen)) {
    case BEFORE_RANGE:
        return ZV_OK;
    case AFTER_RANGE:
        finish_walk(s);
        return ZV_OK;
    case LEADS_TO_RANGE:
        return visit_leading(s, dirfd, name, (size_t)plen);
    case IN_RANGE:
        break;
    }
    zv_record r;
    if (new_record(&r, s->path, (size_t)plen) < 0)
        return ZV_EWALK;
    struct stat st;
    int fd = -1;
    if (dirfd < 0 || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        /* dirfd < 0: the walk could not climb back into this directory */
        record_error(&r, ZV_OP_LSTAT, dirfd < 0 ? ESTALE : errno);
        r.kind = ZV_KIND_UNKNOWN;
        int verdict = excludes_unknown_type(s, &r);
        return verdict != 0 ? drop(s, &r, verdict) : emit(s, &r, -1);
    }
    set_stat(&r, &st);
    int verdict = excludes(s, &r, r.kind == ZV_KIND_DIR);
    if (verdict != 0)
        return drop(s, &r, verdict);
    /* Without /proc the xattrs would be read by a path from the root, which a rename of
     * a directory above could point at another file while the second stat, by dirfd,
     * still sees this one: such walks open the file, as content walks do. */
    int open_it = s->opt->read_content || (s->opt->read_xattrs && !s->have_proc);
    if (r.kind == ZV_KIND_FILE && open_it) {
        fd = open_file(s->sink, dirfd, name, &r);
        if (fd == -2) {
            zv_record_free(&r);
            return ZV_ESTOPPED;
        }
    } else if (r.kind == ZV_KIND_FILE) {
        if (s->opt->read_xattrs)
            check_unopened_file(s, dirfd, name, &r);
    } else if (r.kind == ZV_KIND_SYMLINK) {
        read_link(dirfd, name, &r);
    }
    if (r.kind != ZV_KIND_FILE && r.kind != ZV_KIND_DIR && s->opt->read_xattrs)
        xattrs_by_name(s, dirfd, name, &r);
    if (r.kind == ZV_KIND_DIR)
        enter_dir(s, dirfd, name, &r, (size_t)plen, &st);
    return emit(s, &r, fd);
}

static int push_root(walk_state *s)
{
    int root_fd = s->opt->root_fd;
    struct stat st;
    zv_record r;
    if (new_record(&r, "", 0) < 0)
        return ZV_EWALK;
    if (fstat(root_fd, &st) < 0) {
        record_error(&r, ZV_OP_LSTAT, errno);
        return emit(s, &r, -1);
    }
    set_stat(&r, &st);
    r.context = range_place(s->opt, "", 0) != IN_RANGE;
    if (s->opt->read_xattrs && !r.context)
        zv_xattrs_read(root_fd, NULL, &r);
    char **children = NULL;
    size_t n = 0;
    name_bounds bounds = bounds_below(s->opt, "", 0);
    if (list_dir(root_fd, &bounds, &children, &n) < 0) {
        record_error(&r, ZV_OP_READDIR, errno);
    } else if (push_frame(s, NULL, 0, root_fd, &st, children, n) < 0) {
        free_names(children, n);
        record_error(&r, ZV_OP_READDIR, ENOMEM); /* its children are unknown: say so */
    }
    return emit(s, &r, -1);
}

int zv_traverse(const zv_traverse_opts *opt, const zv_sink *sink, int *err_no)
{
    walk_state s = {.opt = opt, .sink = sink, .have_proc = proc_works(opt->root_fd)};
    int rc = push_root(&s);
    while (rc == ZV_OK && s.depth > 0) {
        frame *top = &s.stack[s.depth - 1];
        if (top->next == top->nchildren)
            pop_frame(&s);
        else
            rc = visit(&s, top->children[top->next++]);
    }
    *err_no = rc == ZV_EWALK ? ENOMEM : 0;
    while (s.depth > 0)
        pop_frame(&s);
    free(s.stack);
    free(s.path);
    return rc;
}
