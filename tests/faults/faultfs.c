/*
 * faultfs: a FUSE filesystem (libfuse3, high-level API) that mirrors a backing directory
 * and fails chosen operations the way a failing device does, for the device-fault tests
 * (tests/faults/test_device_faults.py, built and mounted by tests/faults/faultfs.py).
 *
 *   faultfs [--log FILE] [--fault 'OP GLOB [N] ERRNO']... BACKING MOUNTPOINT
 *
 * Runs in the foreground until unmounted.  GLOB is an fnmatch(3) pattern (`*` crosses `/`)
 * matched against the path inside the mount, which starts with `/`.  ERRNO is a name (EIO,
 * ENOSPC, ...) or a number.  Faults are fixed for the life of the mount and sticky: every
 * request they match fails, as a bad sector keeps failing.
 *
 *   read GLOB OFFSET ERRNO    a read of a file whose range holds byte OFFSET: a read that
 *                             starts before it returns the bytes up to OFFSET (a short
 *                             read, as the page cache gives over a bad block), one that
 *                             starts at or in it fails; reads after OFFSET succeed.
 *   write GLOB OFFSET ERRNO   a write reaching byte OFFSET or past it (a full or failing
 *                             device from there on): short up to OFFSET, then the error.
 *   readdir GLOB AFTER ERRNO  a directory listing fails once AFTER entries were returned
 *                             (0: at its start; "." and ".." are never listed).
 *   getxattr|listxattr GLOB ERRNO       reading an xattr value or the list of names.
 *   open|flush|fsync|fsyncdir GLOB ERRNO  flush is what close(2) returns (the kernel
 *                             ignores what release returns: no fault there can be seen).
 *
 * Files are opened direct_io: every read and write reaches this process (no page cache in
 * between that could serve or hide a byte), and a short reply reaches the caller as-is.
 * Each injected fault appends "fired OP PATH OFFSET ERRNO\n" to the log file: a test tells
 * from it that its fault fired (a fault that never fires would make a test pass vacuously).
 * A fault that cannot be parsed exits 2 before mounting.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

enum op {
    OP_READ,
    OP_WRITE,
    OP_READDIR,
    OP_GETXATTR,
    OP_LISTXATTR,
    OP_OPEN,
    OP_FLUSH,
    OP_FSYNC,
    OP_FSYNCDIR,
    OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
    "read", "write", "readdir", "getxattr", "listxattr", "open", "flush", "fsync", "fsyncdir",
};
static const int op_takes_number[OP_COUNT] = {1, 1, 1, 0, 0, 0, 0, 0, 0};

struct fault {
    enum op op;
    char glob[PATH_MAX];
    long long n; /* byte offset (read, write), entries before the failure (readdir) */
    int err;
};

#define MAX_FAULTS 32
static struct fault faults[MAX_FAULTS];
static int n_faults;
static const char *backing;
static int log_fd = -1;

static const struct {
    const char *name;
    int value;
} errnos[] = {
    {"EIO", EIO},       {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS},
    {"EACCES", EACCES}, {"EPERM", EPERM},   {"ENODATA", ENODATA}, {"ENOMEM", ENOMEM},
    {"EBADMSG", EBADMSG}, {"EUCLEAN", EUCLEAN}, {"ESTALE", ESTALE}, {"ENXIO", ENXIO},
};

static int parse_errno(const char *s)
{
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        if (strcmp(s, errnos[i].name) == 0)
            return errnos[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v > 0 && v < 4096 ? (int)v : -1;
}

static int parse_fault(const char *spec, struct fault *f)
{
    char op[32], glob[PATH_MAX], a[64], b[64], extra[8];
    int got = sscanf(spec, "%31s %4095s %63s %63s %7s", op, glob, a, b, extra);
    int i;
    for (i = 0; i < OP_COUNT && strcmp(op, op_names[i]) != 0; i++)
        ;
    if (got < 3 || i == OP_COUNT || glob[0] != '/')
        return -1;
    f->op = (enum op)i;
    snprintf(f->glob, sizeof f->glob, "%s", glob);
    f->n = 0;
    if (op_takes_number[i]) {
        char *end;
        if (got != 4)
            return -1;
        f->n = strtoll(a, &end, 10);
        if (!*a || *end || f->n < 0)
            return -1;
        f->err = parse_errno(b);
    } else {
        if (got != 3)
            return -1;
        f->err = parse_errno(a);
    }
    return f->err > 0 ? 0 : -1;
}

static const struct fault *find(enum op op, const char *path)
{
    if (!path) /* an open file unlinked meanwhile (hard_remove): no name to match */
        return NULL;
    for (int i = 0; i < n_faults; i++)
        if (faults[i].op == op && fnmatch(faults[i].glob, path, 0) == 0)
            return &faults[i];
    return NULL;
}

static int fire(const struct fault *f, const char *path, long long offset)
{
    if (log_fd >= 0) {
        char line[PATH_MAX + 128];
        int n = snprintf(line, sizeof line, "fired %s %s %lld %d\n", op_names[f->op], path,
                         offset, f->err);
        if (n > 0 && write(log_fd, line, (size_t)n) < 0) { /* nothing to do about it */
        }
    }
    return -f->err;
}

/* The backing path of a path inside the mount; "/" is the backing directory itself. */
static int real(char *out, const char *path)
{
    if (!path)
        return -ENOENT;
    int n = snprintf(out, PATH_MAX, "%s%s", backing, strcmp(path, "/") == 0 ? "" : path);
    return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

#define REAL(var, path)                                                                       \
    char var[PATH_MAX];                                                                       \
    do {                                                                                      \
        int real_rc_ = real(var, path);                                                       \
        if (real_rc_)                                                                         \
            return real_rc_;                                                                  \
    } while (0)

static int res(int rc) { return rc < 0 ? -errno : 0; }

/* The caller's identity on what it creates (the daemon runs as root). */
static void own(const char *p)
{
    struct fuse_context *ctx = fuse_get_context();
    if (geteuid() == 0 && lchown(p, ctx->uid, ctx->gid) < 0) { /* kept as root's */
    }
}

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 1;
    cfg->readdir_ino = 1;
    cfg->direct_io = 1;
    cfg->kernel_cache = 0;
    cfg->hard_remove = 1; /* no .fuse_hidden files for unlinked open files */
    cfg->entry_timeout = 0;
    cfg->attr_timeout = 0;
    cfg->negative_timeout = 0;
    return NULL;
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi)
        return res(fstat((int)fi->fh, st));
    REAL(p, path);
    return res(lstat(p, st));
}

static int ff_access(const char *path, int mask)
{
    REAL(p, path);
    return res(access(p, mask));
}

static int ff_readlink(const char *path, char *buf, size_t size)
{
    REAL(p, path);
    ssize_t n = readlink(p, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

struct dirlist {
    size_t n;
    char **names;
};

static int ff_opendir(const char *path, struct fuse_file_info *fi)
{
    REAL(p, path);
    DIR *d = opendir(p);
    if (!d)
        return -errno;
    struct dirlist *l = calloc(1, sizeof *l);
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    for (errno = 0; l && (e = readdir(d)) != NULL; errno = 0) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (l->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(l->names, cap * sizeof *grown);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            l->names = grown;
        }
        if (!(l->names[l->n] = strdup(e->d_name))) {
            rc = -ENOMEM;
            break;
        }
        l->n++;
    }
    if (!l)
        rc = -ENOMEM;
    else if (!rc && errno)
        rc = -errno;
    closedir(d);
    if (rc) {
        for (size_t i = 0; l && i < l->n; i++)
            free(l->names[i]);
        if (l)
            free(l->names);
        free(l);
        return rc;
    }
    fi->fh = (uint64_t)(uintptr_t)l;
    return 0;
}

/* Offsets are entry indexes + 1: the kernel comes back with the last one it took. */
static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)flags;
    struct dirlist *l = (struct dirlist *)(uintptr_t)fi->fh;
    const struct fault *f = find(OP_READDIR, path);
    size_t limit = l->n;
    if (f && (size_t)f->n < limit)
        limit = (size_t)f->n;
    if (f && (size_t)off >= limit)
        return fire(f, path, off);
    for (size_t i = (size_t)off; i < limit; i++)
        if (fill(buf, l->names[i], NULL, (off_t)(i + 1), 0))
            break;
    return 0;
}

static int ff_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct dirlist *l = (struct dirlist *)(uintptr_t)fi->fh;
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l);
    return 0;
}

static int ff_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync;
    (void)fi;
    const struct fault *f = find(OP_FSYNCDIR, path);
    if (f)
        return fire(f, path, -1);
    REAL(p, path);
    int fd = open(p, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -errno;
    int rc = res(fsync(fd));
    close(fd);
    return rc;
}

static int ff_mknod(const char *path, mode_t mode, dev_t rdev)
{
    REAL(p, path);
    int rc = S_ISFIFO(mode) ? res(mkfifo(p, mode)) : res(mknod(p, mode, rdev));
    if (!rc)
        own(p);
    return rc;
}

static int ff_mkdir(const char *path, mode_t mode)
{
    REAL(p, path);
    int rc = res(mkdir(p, mode));
    if (!rc)
        own(p);
    return rc;
}

static int ff_unlink(const char *path)
{
    REAL(p, path);
    return res(unlink(p));
}

static int ff_rmdir(const char *path)
{
    REAL(p, path);
    return res(rmdir(p));
}

static int ff_symlink(const char *target, const char *path)
{
    REAL(p, path);
    int rc = res(symlink(target, p));
    if (!rc)
        own(p);
    return rc;
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
    REAL(a, from);
    REAL(b, to);
    return res(renameat2(AT_FDCWD, a, AT_FDCWD, b, flags));
}

static int ff_link(const char *from, const char *to)
{
    REAL(a, from);
    REAL(b, to);
    return res(link(a, b));
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi)
        return res(fchmod((int)fi->fh, mode));
    REAL(p, path);
    return res(chmod(p, mode));
}

static int ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi)
        return res(fchown((int)fi->fh, uid, gid));
    REAL(p, path);
    return res(lchown(p, uid, gid));
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return res(ftruncate((int)fi->fh, size));
    REAL(p, path);
    return res(truncate(p, size));
}

static int ff_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (fi)
        return res(futimens((int)fi->fh, tv));
    REAL(p, path);
    return res(utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW));
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_OPEN, path);
    if (f)
        return fire(f, path, -1);
    REAL(p, path);
    int fd = open(p, fi->flags & ~O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t)fd;
    fi->direct_io = 1;
    return 0;
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_OPEN, path);
    if (f)
        return fire(f, path, -1);
    REAL(p, path);
    int fd = open(p, fi->flags, mode);
    if (fd < 0)
        return -errno;
    own(p);
    fi->fh = (uint64_t)fd;
    fi->direct_io = 1;
    return 0;
}

static int ff_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_READ, path);
    if (f && off <= f->n && f->n < off + (off_t)size) {
        if (off == f->n)
            return fire(f, path, off);
        size = (size_t)(f->n - off); /* the bytes before the bad one, then it fails */
    }
    ssize_t n = pread((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_WRITE, path);
    if (f && off + (off_t)size > f->n) {
        if (off >= f->n)
            return fire(f, path, off);
        size = (size_t)(f->n - off);
    }
    ssize_t n = pwrite((int)fi->fh, buf, size, off);
    return n < 0 ? -errno : (int)n;
}

static int ff_statfs(const char *path, struct statvfs *st)
{
    REAL(p, path);
    return res(statvfs(p, st));
}

static int ff_flush(const char *path, struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_FLUSH, path);
    if (f)
        return fire(f, path, -1);
    /* close a dup: what close(2) on the backing file would report */
    int fd = dup((int)fi->fh);
    if (fd < 0)
        return -errno;
    return res(close(fd));
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    close((int)fi->fh);
    return 0;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    const struct fault *f = find(OP_FSYNC, path);
    if (f)
        return fire(f, path, -1);
    return res(datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh));
}

static off_t ff_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    (void)path;
    off_t r = lseek((int)fi->fh, off, whence);
    return r < 0 ? -errno : r;
}

static int ff_setxattr(const char *path, const char *name, const char *value, size_t size,
                       int flags)
{
    REAL(p, path);
    return res(lsetxattr(p, name, value, size, flags));
}

static int ff_getxattr(const char *path, const char *name, char *value, size_t size)
{
    const struct fault *f = find(OP_GETXATTR, path);
    if (f)
        return fire(f, path, -1);
    REAL(p, path);
    ssize_t n = lgetxattr(p, name, value, size);
    return n < 0 ? -errno : (int)n;
}

static int ff_listxattr(const char *path, char *list, size_t size)
{
    const struct fault *f = find(OP_LISTXATTR, path);
    if (f)
        return fire(f, path, -1);
    REAL(p, path);
    ssize_t n = llistxattr(p, list, size);
    return n < 0 ? -errno : (int)n;
}

static int ff_removexattr(const char *path, const char *name)
{
    REAL(p, path);
    return res(lremovexattr(p, name));
}

static const struct fuse_operations ops = {
    .init = ff_init,
    .getattr = ff_getattr,
    .access = ff_access,
    .readlink = ff_readlink,
    .opendir = ff_opendir,
    .readdir = ff_readdir,
    .releasedir = ff_releasedir,
    .fsyncdir = ff_fsyncdir,
    .mknod = ff_mknod,
    .mkdir = ff_mkdir,
    .symlink = ff_symlink,
    .unlink = ff_unlink,
    .rmdir = ff_rmdir,
    .rename = ff_rename,
    .link = ff_link,
    .chmod = ff_chmod,
    .chown = ff_chown,
    .truncate = ff_truncate,
    .utimens = ff_utimens,
    .open = ff_open,
    .create = ff_create,
    .read = ff_read,
    .write = ff_write,
    .statfs = ff_statfs,
    .flush = ff_flush,
    .release = ff_release,
    .fsync = ff_fsync,
    .lseek = ff_lseek,
    .setxattr = ff_setxattr,
    .getxattr = ff_getxattr,
    .listxattr = ff_listxattr,
    .removexattr = ff_removexattr,
};

static int usage(const char *why)
{
    fprintf(stderr,
            "faultfs: %s\nusage: faultfs [--log FILE] [--fault 'OP GLOB [N] ERRNO']... "
            "BACKING MOUNTPOINT\n",
            why);
    return 2;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--log") == 0) {
            log_fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (log_fd < 0) {
                perror(argv[i + 1]);
                return 2;
            }
        } else if (strcmp(argv[i], "--fault") == 0) {
            if (n_faults == MAX_FAULTS)
                return usage("too many faults");
            if (parse_fault(argv[i + 1], &faults[n_faults]) != 0) {
                fprintf(stderr, "faultfs: bad fault %s\n", argv[i + 1]);
                return usage("a fault is 'OP GLOB [N] ERRNO'");
            }
            n_faults++;
        } else {
            return usage("unknown option");
        }
    }
    if (argc - i != 2)
        return usage("need BACKING and MOUNTPOINT");
    static char root[PATH_MAX];
    if (!realpath(argv[i], root))
        return usage("BACKING does not exist");
    backing = root;
    char *fuse_argv[] = {argv[0], "-f", "-o", "fsname=faultfs,subtype=faultfs", argv[i + 1],
                         NULL};
    umask(0);
    return fuse_main(5, fuse_argv, &ops, NULL);
}
