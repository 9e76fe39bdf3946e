/*
 * zv_mapped.c — mapped windows, and the SIGBUS a page that cannot be read
 * raises (see zv_mapped.h).
 */
#define _GNU_SOURCE
#include "zv_mapped.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

/*
 * The guard of the thread that faults.  initial-exec: the handler must not be the first
 * to touch the variable (a dynamic TLS access may allocate).
 */
static __thread zv_guard *guarding __attribute__((tls_model("initial-exec")));

static struct sigaction chained; /* SIGBUS's action before ours, for every other fault */
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    zv_guard *g = guarding;
    /* si_code > 0: raised by the kernel for a fault, so si_addr is where */
    if (g && si->si_code > 0 && g->len &&
        (uintptr_t)si->si_addr - (uintptr_t)g->lo < g->len) {
        g->fault = si->si_addr;
        siglongjmp(g->env, 1);
    }
    if (chained.sa_flags & SA_SIGINFO)
        return chained.sa_sigaction(sig, si, uc);
    if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN)
        return chained.sa_handler(sig);
    /* Ignored as before, when sent; a fault cannot be ignored (returning would fault again) */
    if (chained.sa_handler == SIG_IGN && si->si_code <= 0)
        return;
    /* The default action, as if we had never been installed: the process ends. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);
}

static void install_sigbus(void)
{
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_sigbus;
    /* NODEFER: SIGBUS is not blocked while the handler runs (the guards' sigsetjmp save
     * the mask too, for a handler run by someone who blocks more: ThreadSanitizer) */
    ours.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&ours.sa_mask);
    if (sigaction(SIGBUS, NULL, &chained) == 0)
        sigaction(SIGBUS, &ours, NULL);
}

int zv_guard_ready(void)
{
    struct sigaction now;
    pthread_once(&bus_once, install_sigbus);
    return sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
           now.sa_sigaction == on_sigbus;
}

void zv_guard_enter(zv_guard *g)
{
    g->lo = NULL;
    g->len = 0;
    g->fault = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    guarding = g;
}

void zv_guard_leave(void)
{
    guarding = NULL;
}

void zv_guard_window(zv_guard *g, const void *lo, size_t len)
{
    /* len first when closing and last when opening: the handler never sees a stale pair */
    g->len = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    g->lo = lo;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    g->len = len;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void *zv_map(int fd, off_t base, size_t len)
{
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, base);
    if (p == MAP_FAILED)
        return NULL;
    madvise(p, len, MADV_SEQUENTIAL); /* a hint for cold files: read ahead, drop behind */
    /* Not MADV_POPULATE_READ, though it mapped a window in one call (-10% of a hot scan):
     * before Linux 6.9 it retries a page that cannot be read forever (the walk of a disk
     * with a bad block hung in the VM's 6.1), where a fault raises SIGBUS. */
    return p;
}

int zv_cut_before(int fd, off_t off)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_size <= off;
}
