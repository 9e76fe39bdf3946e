/*
 * shim.c — LD_PRELOAD fault injection into the zverify C core (_zvcore*.so), and only
 * into it: Python, libc and every other object keep working, so what a test sees is how
 * the core and its callers handle the failure, not a crash of the interpreter.
 *
 * A call is the core's when its return address lies inside the loaded object whose path
 * contains "_zvcore".  That range is found with dl_iterate_phdr and cached once found;
 * until then it is looked for again only when the loader's count of added objects
 * changes, so the many allocations before the import cost one cheap loader query each.
 *
 *   ZV_FAULT=malloc:N            the N-th allocation by the core (malloc, calloc, realloc
 *                                and strdup counted together) returns NULL, errno ENOMEM
 *   ZV_FAULT=KIND:N[:ERRNO]      KIND one of flistxattr, llistxattr, fgetxattr, lgetxattr:
 *                                the N-th such call by the core that passes a buffer (the
 *                                read of the size-then-read pair) fails; ERRNO a name such
 *                                as EIO or a number, default EIO
 *   ZV_FAULT=KIND:N+[:ERRNO]     the N-th call and every later one fail (memory that stays
 *                                exhausted, a filesystem that keeps refusing)
 *   ZV_SWAP_ON_OPEN=NAME         a race, not a failure: just before the core opens a file
 *                                named NAME (not a directory), NAME.swap in the same
 *                                directory is renamed over it, so the fd is another file
 *                                than the one the walker stat'ed (logged "fired swap 1")
 *   ZV_CUT_ON_READ=NAME          a race: before the core reads a file named NAME at an
 *                                offset past its first block, the file is cut to end there,
 *                                as though another process truncated it while it was read
 *                                (logged "fired cut 1")
 *   ZV_FAULT_LOG=FILE            appended to: "fired KIND N 0xSITE" when a fault is injected
 *                                (SITE: the return address in the core, for addr2line), and
 *                                at exit "count KIND K" for every kind (calls seen from the
 *                                core), only in a process that loaded the core
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

enum kind { K_ALLOC, K_FLIST, K_LLIST, K_FGET, K_LGET, K_COUNT };
static const char *const kind_names[K_COUNT] = {
    "malloc", "flistxattr", "llistxattr", "fgetxattr", "lgetxattr",
};

/* The configured fault; -1: none (the run only counts). */
static int fault_kind = -1;
static long fault_n;
static int fault_persists; /* N+: every call from the N-th on */
static int fault_errno;
static atomic_long calls[K_COUNT];

/* ---- the real functions, and the allocations made before they are known ---- */

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static ssize_t (*real_flistxattr)(int, char *, size_t);
static ssize_t (*real_llistxattr)(const char *, char *, size_t);
static ssize_t (*real_fgetxattr)(int, const char *, void *, size_t);
static ssize_t (*real_lgetxattr)(const char *, const char *, void *, size_t);
static int (*real_openat)(int, const char *, int, ...);

/*
 * dlsym may itself allocate (through our own calloc), before real_calloc exists: those
 * few blocks come from this arena.  Each block starts with its size (realloc needs it);
 * arena blocks are never given to the real free.
 */
#define ARENA_SIZE (64 * 1024)
#define ARENA_ALIGN 16
static _Alignas(ARENA_ALIGN) unsigned char arena[ARENA_SIZE];
static atomic_size_t arena_used;

static int in_arena(const void *p)
{
    return (const unsigned char *)p >= arena && (const unsigned char *)p < arena + ARENA_SIZE;
}

static void *arena_alloc(size_t n)
{
    if (n > ARENA_SIZE) { /* checked first: the rounding below must not wrap */
        errno = ENOMEM;
        return NULL;
    }
    size_t need = ARENA_ALIGN + ((n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1));
    size_t at = atomic_fetch_add(&arena_used, need);
    if (at + need > ARENA_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(arena + at, &n, sizeof n);
    return arena + at + ARENA_ALIGN; /* static memory: already zeroed, as calloc needs */
}

static size_t arena_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - ARENA_ALIGN, sizeof n);
    return n;
}

/* 0: not resolved, 1: resolving (allocations go to the arena), 2: resolved */
static atomic_int resolve_state;

static int resolved(void)
{
    int expected = 0;
    if (atomic_load_explicit(&resolve_state, memory_order_acquire) == 2)
        return 1;
    if (!atomic_compare_exchange_strong(&resolve_state, &expected, 1))
        return 0; /* dlsym is running (maybe below us on this very stack): use the arena */
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_flistxattr = (ssize_t (*)(int, char *, size_t))dlsym(RTLD_NEXT, "flistxattr");
    real_llistxattr = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "llistxattr");
    real_fgetxattr =
        (ssize_t (*)(int, const char *, void *, size_t))dlsym(RTLD_NEXT, "fgetxattr");
    real_lgetxattr =
        (ssize_t (*)(const char *, const char *, void *, size_t))dlsym(RTLD_NEXT, "lgetxattr");
    real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    if (!real_openat || !real_malloc || !real_calloc || !real_realloc || !real_free || !real_flistxattr ||
        !real_llistxattr || !real_fgetxattr || !real_lgetxattr) {
        static const char msg[] = "zv fault shim: dlsym(RTLD_NEXT) failed\n";
        ssize_t ignored = write(2, msg, sizeof msg - 1);
        (void)ignored;
        _exit(125); /* without the real functions nothing below can work */
    }
    atomic_store_explicit(&resolve_state, 2, memory_order_release);
    return 1;
}

/* For the xattr calls, which dlsym never makes: another thread may be resolving, wait. */
static void wait_resolved(void)
{
    while (!resolved())
        sched_yield();
}

/* ---- is the caller the core? ---- */

static atomic_uintptr_t core_lo, core_hi; /* core_hi != 0 once found */
static atomic_uintptr_t core_base;        /* load bias: addr2line takes ret - base */
static atomic_ullong adds_seen;           /* dlpi_adds when we last looked, +1 (0: never) */

static int core_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "_zvcore"))
        return 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (!hi)
        return 0;
    atomic_store(&core_base, info->dlpi_addr);
    atomic_store(&core_lo, lo); /* before hi: whoever sees hi sees lo */
    atomic_store(&core_hi, hi);
    return 1;
}

/* The first object's callback: only to read the loader's count of added objects. */
static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
    *(unsigned long long *)data = size >= offsetof(struct dl_phdr_info, dlpi_adds) +
                                               sizeof info->dlpi_adds
                                      ? info->dlpi_adds + 1
                                      : 0; /* 0: unknown, always look */
    return 1;
}

/*
 * Look for the core unless no object was added since the last look.  Threads may look at
 * once: the result is the same for all, and nothing here allocates or locks (but the
 * loader's own lock, inside dl_iterate_phdr).
 */
static void find_core(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(read_adds, &adds);
    if (adds && adds == atomic_load(&adds_seen))
        return;
    if (!dl_iterate_phdr(core_range, NULL))
        atomic_store(&adds_seen, adds);
}

static int from_core(const void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    if (!atomic_load(&core_hi))
        find_core();
    uintptr_t hi = atomic_load(&core_hi);
    return hi && a >= atomic_load(&core_lo) && a < hi;
}

/* ---- the log, and the decision ---- */

/* "WHAT KIND N", and for a fault the call site in the core (for addr2line -e _zvcore*.so). */
static void log_line(const char *what, const char *kind, long n, const void *ret)
{
    const char *path = getenv("ZV_FAULT_LOG");
    if (!path)
        return;
    char line[128];
    int len = ret ? snprintf(line, sizeof line, "%s %s %ld 0x%lx\n", what, kind, n,
                             (unsigned long)((uintptr_t)ret - atomic_load(&core_base)))
                  : snprintf(line, sizeof line, "%s %s %ld\n", what, kind, n);
    if (len <= 0)
        return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t ignored = write(fd, line, (size_t)len); /* O_APPEND: one line, not interleaved */
    (void)ignored;
    close(fd);
}

/* Count a call of kind made from ret; 1 if it is the one to fail (errno is then set). */
static int inject(enum kind kind, const void *ret)
{
    if (!from_core(ret))
        return 0;
    long n = atomic_fetch_add(&calls[kind], 1) + 1;
    if ((int)kind != fault_kind || n < fault_n || (n > fault_n && !fault_persists))
        return 0;
    log_line("fired", kind_names[kind], n, ret);
    errno = fault_errno;
    return 1;
}

/* ---- the interposers: __builtin_return_address(0) is the caller of each ---- */

void *malloc(size_t n)
{
    if (!resolved())
        return arena_alloc(n);
    if (inject(K_ALLOC, __builtin_return_address(0)))
        return NULL;
    return real_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (!resolved()) {
        if (size && n > SIZE_MAX / size) {
            errno = ENOMEM;
            return NULL;
        }
        return arena_alloc(n * size);
    }
    if (inject(K_ALLOC, __builtin_return_address(0)))
        return NULL;
    return real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (!resolved() || (p && in_arena(p))) {
        /* an arena block cannot grow in place, and the real realloc must not see it */
        void *copy = resolved() ? real_malloc(n) : arena_alloc(n);
        if (copy && p) {
            size_t old = arena_size(p);
            memcpy(copy, p, old < n ? old : n);
        }
        return copy;
    }
    if (inject(K_ALLOC, __builtin_return_address(0)))
        return NULL;
    return real_realloc(p, n);
}

void free(void *p)
{
    if (!p || in_arena(p))
        return;
    if (resolved())
        real_free(p);
    /* else: a block no allocator of ours made, freed while dlsym runs: leak it */
}

/* glibc's strdup calls its malloc directly, not through the PLT: it needs its own. */
char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    if (!resolved()) {
        char *copy = arena_alloc(n);
        return copy ? memcpy(copy, s, n) : NULL;
    }
    if (inject(K_ALLOC, __builtin_return_address(0)))
        return NULL;
    char *copy = real_malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

/* xattr calls count only with a buffer: the size query of the pair is left alone. */
ssize_t flistxattr(int fd, char *buf, size_t size)
{
    wait_resolved();
    if (buf && inject(K_FLIST, __builtin_return_address(0)))
        return -1;
    return real_flistxattr(fd, buf, size);
}

ssize_t llistxattr(const char *path, char *buf, size_t size)
{
    wait_resolved();
    if (buf && inject(K_LLIST, __builtin_return_address(0)))
        return -1;
    return real_llistxattr(path, buf, size);
}

ssize_t fgetxattr(int fd, const char *name, void *buf, size_t size)
{
    wait_resolved();
    if (buf && inject(K_FGET, __builtin_return_address(0)))
        return -1;
    return real_fgetxattr(fd, name, buf, size);
}

ssize_t lgetxattr(const char *path, const char *name, void *buf, size_t size)
{
    wait_resolved();
    if (buf && inject(K_LGET, __builtin_return_address(0)))
        return -1;
    return real_lgetxattr(path, name, buf, size);
}

int openat(int dirfd, const char *name, int flags, ...)
{
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    wait_resolved();
    const char *swap = getenv("ZV_SWAP_ON_OPEN");
    const void *ret = __builtin_return_address(0);
    if (swap && !(flags & O_DIRECTORY) && !strcmp(name, swap) && from_core(ret)) {
        char other[4096];
        snprintf(other, sizeof other, "%s.swap", name);
        if (renameat(dirfd, other, dirfd, name) == 0)
            log_line("fired", "swap", 1, ret);
    }
    return real_openat(dirfd, name, flags, mode);
}

/* The path fd was opened by, from /proc: 0 when it cannot be told. */
static int fd_path(int fd, char *path, size_t size)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, size - 1);
    if (n <= 0)
        return 0;
    path[n] = '\0';
    return 1;
}

/* Whether the last component of path is name (NULL: no name was asked for). */
static int named(const char *path, const char *name)
{
    const char *base = strrchr(path, '/');
    return name && !strcmp(base ? base + 1 : path, name);
}

/*
 * Forwarded by the system call itself, as the core's pread reaches the kernel: no dlsym'd
 * pointer to resolve first.  pread64 is the same function under its other name.
 */
ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
    const void *ret = __builtin_return_address(0);
    char path[4096];
    struct stat st;
    const char *cut = getenv("ZV_CUT_ON_READ");
    if (cut && off > 0 && from_core(ret) && fd_path(fd, path, sizeof path) && named(path, cut) &&
        fstat(fd, &st) == 0 && st.st_size > off && truncate(path, off) == 0)
        log_line("fired", "cut", 1, ret);
    return syscall(SYS_pread64, fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off) __attribute__((alias("pread")));

/* ---- configuration, and the counts at exit ---- */

static int errno_named(const char *s)
{
    static const struct { const char *name; int value; } names[] = {
        {"EIO", EIO},       {"ENOMEM", ENOMEM}, {"EACCES", EACCES}, {"EPERM", EPERM},
        {"ENOTSUP", ENOTSUP}, {"ERANGE", ERANGE}, {"E2BIG", E2BIG},  {"ENODATA", ENODATA},
        {"ESTALE", ESTALE}, {"EBADF", EBADF},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name))
            return names[i].value;
    char *end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v > 0 ? (int)v : -1;
}

static void bad_config(const char *spec)
{
    dprintf(2, "zv fault shim: bad ZV_FAULT %s (KIND:N[+][:ERRNO])\n", spec);
    _exit(125); /* a fault that silently never fires would make every test pass */
}

__attribute__((constructor)) static void configure(void)
{
    const char *spec = getenv("ZV_FAULT");
    if (!spec || !*spec)
        return;
    char kind[32];
    long n = 0;
    int end = 0;
    if (sscanf(spec, "%31[a-z]:%ld%n", kind, &n, &end) < 2 || n < 1)
        bad_config(spec);
    const char *rest = spec + end;
    fault_persists = *rest == '+';
    rest += fault_persists;
    if (*rest && *rest != ':')
        bad_config(spec);
    for (int k = 0; k < K_COUNT; k++)
        if (!strcmp(kind, kind_names[k]))
            fault_kind = k;
    fault_n = n;
    fault_errno = *rest ? errno_named(rest + 1) : fault_kind == K_ALLOC ? ENOMEM : EIO;
    if (fault_kind < 0 || fault_errno < 0)
        bad_config(spec);
}

__attribute__((destructor)) static void report_counts(void)
{
    if (!atomic_load(&core_hi))
        return; /* never loaded the core: a wrapper script, a child process */
    for (int k = 0; k < K_COUNT; k++)
        log_line("count", kind_names[k], atomic_load(&calls[k]), NULL);
}
