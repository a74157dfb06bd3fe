/*
 * base/fork.h - keeping process-wide mutexes usable in a forked child.
 *
 * A child of fork() has one thread, the one that forked, and a copy of
 * every mutex as it was: one held by another thread of the parent stays
 * held forever, and the child deadlocks at its next cache lookup (Python
 * multiprocessing with the fork start method does exactly this).  Every
 * process-wide mutex is registered here with a rank; pthread_atfork
 * handlers then lock all of them before fork (lowest rank first, so the
 * order agrees with the order the library nests them: a mutex that may be
 * taken while another is held gets the higher rank) and unlock them in
 * both parent and child afterwards.  The caches are therefore consistent
 * in the child, which keeps using them.
 *
 * hs_fork_generation() counts the forks this process came from (0 in the
 * original process, +1 in each child): objects that own threads (thread
 * pools) record it and do not wait for threads that do not exist in a
 * child.
 */
#ifndef HS_BASE_FORK_H
#define HS_BASE_FORK_H

#include <pthread.h>
#include <stdint.h>

/* Ranks of the library's mutexes (see top). */
enum {
    HS_FORK_RANK_FCACHE = 10,     /* table/fcache.c caches */
    HS_FORK_RANK_FOOTER = 20,     /* parquet footer cache */
    HS_FORK_RANK_S3 = 25,         /* io/s3: config, pool, cache (curl's share locks inside) */
    HS_FORK_RANK_LEAF = 30,       /* taken with nothing else acquired inside */
    HS_FORK_RANK_MEMPOOL = 80,    /* base/mem.c's buffer pool: under any other, nothing inside */
    HS_FORK_RANK_WARN = 90        /* the warning handler (may be reached under others) */
};

/* Registers a mutex that lives as long as the process (a static one).
 * Registering the same mutex again is a no-op.  Thread-safe. */
void hs_fork_guard(pthread_mutex_t *mu, int rank);

/* Registers `mu` when the library is loaded (a constructor), for static
 * mutexes defined in the file that uses it. */
#define HS_FORK_GUARD(mu, rank) HS_FORK_GUARD_(mu, rank, __LINE__)
#define HS_FORK_GUARD_(mu, rank, line) HS_FORK_GUARD__(mu, rank, line)
#define HS_FORK_GUARD__(mu, rank, line) \
    __attribute__((constructor)) static void hs_fork_guard_##line(void) { hs_fork_guard(&(mu), (rank)); }

uint64_t hs_fork_generation(void);
/* How many mutexes are registered (tests: a full table drops the rest). */
int hs_fork_guarded(void);

#endif
