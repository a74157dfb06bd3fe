/*
 * base/fork.c - pthread_atfork handlers over the registered process-wide
 * mutexes (see fork.h).
 *
 * The registry is a fixed array (no allocation: registration runs from
 * constructors, before any allocation hook is installed) kept sorted by
 * rank, guarded by its own mutex, which the prepare handler takes first
 * and the parent and child handlers release last, so a registration never
 * races a fork.
 */
#include "base/fork.h"

#include <stdatomic.h>

#define MAX_GUARDED 64

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct {
    pthread_mutex_t *mu;
    int rank;
} g_reg[MAX_GUARDED];
static int g_n;
static _Atomic uint64_t g_generation;

static void prepare(void)
{
    pthread_mutex_lock(&g_reg_mu);
    for (int i = 0; i < g_n; i++)
        pthread_mutex_lock(g_reg[i].mu);
}

static void unlock_all(void)
{
    for (int i = g_n - 1; i >= 0; i--)
        pthread_mutex_unlock(g_reg[i].mu);
    pthread_mutex_unlock(&g_reg_mu);
}

static void parent(void) { unlock_all(); }

/* The child's only thread is the one that forked, which holds every
 * registered mutex: unlocking them is valid. */
static void child(void)
{
    atomic_fetch_add(&g_generation, 1);
    unlock_all();
}

static void install(void) { pthread_atfork(prepare, parent, child); }

void hs_fork_guard(pthread_mutex_t *mu, int rank)
{
    pthread_once(&g_once, install);
    pthread_mutex_lock(&g_reg_mu);
    int i, dup = 0;
    for (i = 0; i < g_n; i++)
        dup |= g_reg[i].mu == mu;
    if (!dup && g_n < MAX_GUARDED) {
        for (i = g_n; i > 0 && g_reg[i - 1].rank > rank; i--)
            g_reg[i] = g_reg[i - 1];
        g_reg[i].mu = mu;
        g_reg[i].rank = rank;
        g_n++;
    }
    pthread_mutex_unlock(&g_reg_mu);
}

uint64_t hs_fork_generation(void) { return atomic_load_explicit(&g_generation, memory_order_relaxed); }

int hs_fork_guarded(void)
{
    pthread_mutex_lock(&g_reg_mu);
    int n = g_n;
    pthread_mutex_unlock(&g_reg_mu);
    return n;
}
