/*
 * coldshim.c - a tiny LD_PRELOAD shim for the `zverify cold` tests (tests/cold/): I/O errors
 * and slowness at the calls that publish or delete an archive file.  (tests/faults/shim.c
 * injects into the C core only; this one acts on any caller, by the file's name.)
 *
 *   ZVCOLD_FAIL=OP:TEXT[:ERRNO]  OP one of write, fsync, close, rename, unlink: such a call on
 *                                a file whose path contains TEXT (ends with it: TEXT$)
 *                                fails with ERRNO (EIO, ENOSPC or a number; default EIO).
 *                                close fails after closing (as a failing NFS close does),
 *                                the others without doing anything.  The path of an fd is
 *                                read from /proc/self/fd; rename matches its source path.
 *   ZVCOLD_SLOW_FSYNC_MS=N       every fsync() first sleeps N ms (a slow disk: kill tests
 *                                can then land between a file's fsync and its rename)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int matches(const char *op, const char *path)
{
    const char *spec = getenv("ZVCOLD_FAIL");
    size_t n = strlen(op);
    if (!spec || !path || strncmp(spec, op, n) != 0 || spec[n] != ':')
        return 0;
    char text[512];
    snprintf(text, sizeof text, "%s", spec + n + 1);
    char *colon = strrchr(text, ':');
    if (colon && (colon[1] == 'E' || (colon[1] >= '0' && colon[1] <= '9')))
        *colon = '\0';
    size_t len = strlen(text), plen = strlen(path);
    if (len && text[len - 1] == '$') /* TEXT$: the path ends with TEXT */
        return len - 1 <= plen && strncmp(path + plen - (len - 1), text, len - 1) == 0;
    return strstr(path, text) != NULL;
}

static int failure(void)
{
    const char *spec = getenv("ZVCOLD_FAIL");
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (!colon || colon == strchr(spec, ':'))
        return EIO;
    if (strcmp(colon + 1, "ENOSPC") == 0)
        return ENOSPC;
    if (strcmp(colon + 1, "EIO") == 0)
        return EIO;
    int n = atoi(colon + 1);
    return n > 0 ? n : EIO;
}

static int fd_matches(const char *op, int fd)
{
    if (!getenv("ZVCOLD_FAIL"))
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0)
        return 0;
    path[n] = '\0';
    return matches(op, path);
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

ssize_t write(int fd, const void *buf, size_t count)
{
    if (fd > 2 && fd_matches("write", fd)) {
        errno = failure();
        return -1;
    }
    return REAL("write", ssize_t (*)(int, const void *, size_t))(fd, buf, count);
}

int fsync(int fd)
{
    const char *slow = getenv("ZVCOLD_SLOW_FSYNC_MS");
    if (slow) {
        long ms = atol(slow);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (fd_matches("fsync", fd)) {
        errno = failure();
        return -1;
    }
    return REAL("fsync", int (*)(int))(fd);
}

int close(int fd)
{
    int fail = fd > 2 && fd_matches("close", fd);
    int rc = REAL("close", int (*)(int))(fd);
    if (rc == 0 && fail) {
        errno = failure();
        return -1;
    }
    return rc;
}

int rename(const char *from, const char *to)
{
    if (matches("rename", from)) {
        errno = failure();
        return -1;
    }
    return REAL("rename", int (*)(const char *, const char *))(from, to);
}

int unlink(const char *path)
{
    if (matches("unlink", path)) {
        errno = failure();
        return -1;
    }
    return REAL("unlink", int (*)(const char *))(path);
}
