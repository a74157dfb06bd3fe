/*
 * io/mapguard.c - file mappings that never crash the process when the file
 * shrinks under them.
 *
 * A page of a MAP_SHARED mapping that lies past the end of its file (another
 * process truncated it) raises SIGBUS when touched.  Readers check the file's
 * identity before and after every batch that reads a mapping (hs_file_check),
 * but a truncation that lands while the batch runs would still fault, and the
 * host would die.  So every mapping hs_file_map makes is registered here, and
 * a SIGBUS handler, installed with the first mapping, turns a fault inside a
 * registered mapping into damage the reader reports:
 *
 *   fault at address a inside mapping [base, base + len)
 *     -> the pages [page(a), base + len) are replaced by zero pages
 *        (mmap MAP_FIXED | MAP_ANONYMOUS | MAP_PRIVATE, read-only)
 *     -> the mapping is marked damaged, the global fault count goes up
 *     -> the handler returns; the faulting load is retried and reads zeros
 *
 * Why zeros and not siglongjmp: the faulting code may hold locks and
 * allocations (a page cache insert, a growing output column), and the
 * library never longjmps across its own frames (STYLE.md).  Zeros are just
 * more untrusted bytes, which every decoder already checks; the reader then
 * asks hs_map_damaged after the batch and fails it with HS_IO whatever the
 * decoders made of the zeros.  A damaged mapping stays damaged (its bytes are
 * gone); the file's new identity keeps new readers away from it.
 *
 * The host's handler: ours is installed with sigaction once, remembering the
 * previous action, and chains to it for every SIGBUS that is not a fault in
 * a registered mapping (another mapping of the host, a kill -BUS): a
 * previous SIG_DFL or SIG_IGN gets the default action (the process dies as
 * it would have), a previous handler is called with the same arguments.  A
 * host that installs its own handler later (Python's faulthandler does at
 * enable()) replaces ours; hs_map_guard_check, which readers call before
 * every batch that reads a mapping, puts ours back in front of the new one,
 * again chaining to it.  Nothing is installed while no file is mapped
 * (HS_MMAP=0 / the mmap setting 0 read every page through pread instead).
 *
 * The registry is read by the handler without locks: fixed chunks of slots,
 * published once with release stores and never freed; a slot's base is
 * written last when it is filled and cleared first when it is emptied.
 * Registration and removal take a mutex.  With every slot taken (65,536
 * live mappings) hs_map_register fails and the caller reads through pread.
 */
#include "io/io.h"
#include "base/fork.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MG_CHUNK_SLOTS 1024
#define MG_CHUNKS 64

typedef struct mg_slot {
    uintptr_t base;    /* 0 = free; written last on fill, first on clear */
    size_t len;
    int damaged;
} mg_slot;

static mg_slot *g_chunks[MG_CHUNKS];          /* published with release, never freed */
static int g_n_chunks;                        /* read with acquire */
static uint64_t g_faults;                     /* faults turned into damage */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction g_prev;               /* the action ours chains to */
static int g_installed;                       /* under g_mu; read with acquire */
static pthread_mutex_t g_sig_mu = PTHREAD_MUTEX_INITIALIZER;
/* never nested in each other or around anything (fork.h: leaves) */
HS_FORK_GUARD(g_mu, HS_FORK_RANK_LEAF)
HS_FORK_GUARD(g_sig_mu, HS_FORK_RANK_LEAF)
static uintptr_t g_page;                      /* page size, set before the first install */

/* The slot holding address a, or NULL (async-signal-safe). */
static mg_slot *mg_find(uintptr_t a, bool exact)
{
    int n = __atomic_load_n(&g_n_chunks, __ATOMIC_ACQUIRE);
    for (int c = 0; c < n; c++) {
        mg_slot *ch = __atomic_load_n(&g_chunks[c], __ATOMIC_ACQUIRE);
        for (int i = 0; i < MG_CHUNK_SLOTS; i++) {
            uintptr_t b = __atomic_load_n(&ch[i].base, __ATOMIC_ACQUIRE);
            if (!b)
                continue;
            size_t len = __atomic_load_n(&ch[i].len, __ATOMIC_RELAXED);
            if (exact ? a == b : (a >= b && a - b < len))
                return &ch[i];
        }
    }
    return NULL;
}

static void mg_chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction prev = g_prev;
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction) {
            prev.sa_sigaction(sig, si, uc);
            return;
        }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
        prev.sa_handler(sig);
        return;
    }
    /* the default action: a synchronous SIGBUS cannot be ignored usefully */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);   /* pending until we return; a fault also recurs on return */
}

static void mg_on_sigbus(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    uintptr_t a = si ? (uintptr_t)si->si_addr : 0;
    mg_slot *s = a && si->si_code > 0 ? mg_find(a, false) : NULL;   /* si_code > 0: a fault */
    if (s) {
        uintptr_t base = __atomic_load_n(&s->base, __ATOMIC_ACQUIRE);
        size_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
        uintptr_t from = a & ~(g_page - 1);
        if (base && from >= base && from < base + len) {
            void *p = mmap((void *)from, base + len - from, PROT_READ,
                           MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p != MAP_FAILED) {
                __atomic_store_n(&s->damaged, 1, __ATOMIC_RELEASE);
                __atomic_add_fetch(&g_faults, 1, __ATOMIC_RELEASE);
                errno = saved;
                return;
            }
        }
    }
    errno = saved;
    mg_chain(sig, si, uc);
}

/* Puts our handler in front of whatever is installed now (g_sig_mu held). */
static int mg_install_locked(void)
{
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) != 0)
        return -1;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == mg_on_sigbus)
        return 0;
    if (!g_page)
        g_page = (uintptr_t)sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = mg_on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    /* g_prev is read by the handler: set it before the handler can run with
     * it, i.e. before the sigaction that installs ours */
    g_prev = cur;
    if (sigaction(SIGBUS, &sa, NULL) != 0)
        return -1;
    __atomic_store_n(&g_installed, 1, __ATOMIC_RELEASE);
    return 0;
}

void hs_map_guard_check(void)
{
    if (!__atomic_load_n(&g_installed, __ATOMIC_ACQUIRE))
        return;
    struct sigaction cur;
    if (sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == mg_on_sigbus)
        return;
    pthread_mutex_lock(&g_sig_mu);
    (void)mg_install_locked();
    pthread_mutex_unlock(&g_sig_mu);
}

bool hs_map_register(const uint8_t *addr, uint64_t len)
{
    if (!addr || !len)
        return false;
    pthread_mutex_lock(&g_sig_mu);
    int ok = mg_install_locked() == 0;
    pthread_mutex_unlock(&g_sig_mu);
    if (!ok)
        return false;
    pthread_mutex_lock(&g_mu);
    for (int c = 0; c < MG_CHUNKS; c++) {
        if (c == g_n_chunks) {
            /* never freed (see above), so not through the counted allocation hook */
            mg_slot *ch = calloc(MG_CHUNK_SLOTS, sizeof *ch);
            if (!ch)
                break;
            __atomic_store_n(&g_chunks[c], ch, __ATOMIC_RELEASE);
            __atomic_store_n(&g_n_chunks, c + 1, __ATOMIC_RELEASE);
        }
        mg_slot *ch = g_chunks[c];
        for (int i = 0; i < MG_CHUNK_SLOTS; i++) {
            if (ch[i].base)
                continue;
            __atomic_store_n(&ch[i].damaged, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&ch[i].len, (size_t)len, __ATOMIC_RELAXED);
            __atomic_store_n(&ch[i].base, (uintptr_t)addr, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&g_mu);
            return true;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return false;
}

void hs_map_unregister(const uint8_t *addr)
{
    if (!addr)
        return;
    pthread_mutex_lock(&g_mu);
    mg_slot *s = mg_find((uintptr_t)addr, true);
    if (s)
        __atomic_store_n(&s->base, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_mu);
}

uint64_t hs_map_fault_count(void)
{
    return __atomic_load_n(&g_faults, __ATOMIC_ACQUIRE);
}

bool hs_map_damaged(const uint8_t *addr)
{
    mg_slot *s = addr ? mg_find((uintptr_t)addr, true) : NULL;
    return s && __atomic_load_n(&s->damaged, __ATOMIC_ACQUIRE);
}
