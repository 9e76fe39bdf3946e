/*
 * shim.c — LD_PRELOAD fault injection into the zverify C core, and only into it.
 *
 * Allocation calls (malloc, calloc, realloc, strdup) and xattr listings (flistxattr,
 * llistxattr) are interposed; a call counts only when it comes from the loaded
 * _zvcore*.so (its return address lies in that object's code), so Python and libc run
 * untouched.  The object's address range is learnt when Python dlopen()s it.
 *
 *   ZV_FAULT_MALLOC=N     the N-th allocation made by the core fails with ENOMEM
 *   ZV_FAULT_LISTXATTR=N  the N-th xattr listing by the core that passes a buffer (the
 *                         second call of the size-then-read pair) fails with EIO
 *   ZV_FAULT_LOG=FILE     "fired KIND N" when a fault fires, and at exit
 *                         "count malloc K" / "count listxattr K" (calls seen)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* glibc's own entry points: no dlsym (which itself allocates) needed for these. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static _Atomic uintptr_t core_lo, core_hi;
static atomic_long allocs, listings;

static long env_number(const char *name)
{
    const char *v = getenv(name);
    return v ? atol(v) : 0;
}

static void log_line(const char *kind, const char *what, long n)
{
    const char *path = getenv("ZV_FAULT_LOG");
    if (!path)
        return;
    char line[96];
    int len = snprintf(line, sizeof line, "%s %s %ld\n", kind, what, n);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t ignored = write(fd, line, (size_t)len);
        (void)ignored;
        close(fd);
    }
}

static int from_core(const void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    return a >= atomic_load(&core_lo) && a < atomic_load(&core_hi);
}

/* Should this call, made from ret, fail?  counter counts the core's calls. */
static int inject(const void *ret, atomic_long *counter, const char *env, const char *kind)
{
    if (!from_core(ret))
        return 0;
    long n = atomic_fetch_add(counter, 1) + 1;
    if (n != env_number(env))
        return 0;
    log_line("fired", kind, n);
    return 1;
}

static int find_core(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "/_zvcore"))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            atomic_store(&core_lo, info->dlpi_addr + ph->p_vaddr);
            atomic_store(&core_hi, info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
            return 1;
        }
    }
    return 0;
}

void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    void *handle = real(file, mode);
    if (handle && file && strstr(file, "_zvcore"))
        dl_iterate_phdr(find_core, NULL);
    return handle;
}

void *malloc(size_t n)
{
    if (inject(__builtin_return_address(0), &allocs, "ZV_FAULT_MALLOC", "malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (inject(__builtin_return_address(0), &allocs, "ZV_FAULT_MALLOC", "malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (inject(__builtin_return_address(0), &allocs, "ZV_FAULT_MALLOC", "malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

char *strdup(const char *s)
{
    if (inject(__builtin_return_address(0), &allocs, "ZV_FAULT_MALLOC", "malloc")) {
        errno = ENOMEM;
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *copy = __libc_malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

static ssize_t listing(const void *ret, int fd, const char *path, char *buf, size_t size)
{
    static ssize_t (*real_f)(int, char *, size_t);
    static ssize_t (*real_l)(const char *, char *, size_t);
    if (!real_f) {
        real_f = (ssize_t (*)(int, char *, size_t))dlsym(RTLD_NEXT, "flistxattr");
        real_l = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "llistxattr");
    }
    if (buf && size && inject(ret, &listings, "ZV_FAULT_LISTXATTR", "listxattr")) {
        errno = EIO;
        return -1;
    }
    return path ? real_l(path, buf, size) : real_f(fd, buf, size);
}

ssize_t flistxattr(int fd, char *buf, size_t size)
{
    return listing(__builtin_return_address(0), fd, NULL, buf, size);
}

ssize_t llistxattr(const char *path, char *buf, size_t size)
{
    return listing(__builtin_return_address(0), -1, path, buf, size);
}

__attribute__((destructor)) static void report_counts(void)
{
    if (!atomic_load(&core_hi))
        return; /* a process that never loaded the core (a wrapper script, a child) */
    log_line("count", "malloc", atomic_load(&allocs));
    log_line("count", "listxattr", atomic_load(&listings));
}
