/*
 * base/threadpool.c - fixed pool of worker threads running task groups.
 *
 * State (all guarded by pool->mu):
 *
 *   pool->queue            FIFO of every queued task (intrusive doubly linked)
 *   group->queue           FIFO of that group's queued tasks (second set of links)
 *   group->pending         tasks submitted and not yet finished (queued + running)
 *   group->status / err    the first failure; once set, later tasks are skipped
 *
 * A task is in both lists while queued and in neither once taken, so a worker
 * (taking pool->queue's head) and a waiter (taking its group's head) unlink in
 * O(1).  Workers sleep on pool->work_cv; a group's waiters on group->done_cv,
 * signalled when pending reaches 0.
 *
 * Deadlock freedom with nested groups: hs_group_wait runs its own group's
 * queued tasks itself before sleeping, so it only ever sleeps on tasks that
 * are running on some thread; by induction on nesting depth those finish.
 * Waiters help only their own group, which bounds stack depth by the nesting.
 *
 * Fork: a pool (or group) used in a forked child has no workers there, and
 * its mutex and condition variables may have been copied mid-use.  The first
 * call that touches it in the child "adopts" it: fresh mutex and condition
 * variables, no workers (so destroy joins nothing).  Tasks queued before the
 * fork then run on the waiting thread; a group waiting on tasks that were
 * running on the parent's workers fails with HS_INTERNAL instead of
 * hanging.  The pool records the fork generation (base/fork.h) it belongs to.
 *
 * Shutdown: hs_pool_destroy sets `stopping`; workers drain the queue, then
 * exit, and are joined.  Tasks are heap nodes (hs_malloc): submit is for
 * coarse work (a column chunk, a file), not per row.
 */
#include "base/threadpool.h"
#include "base/fork.h"
#include "base/mem.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

typedef struct pool_task {
    hs_task_fn fn;
    void *arg;
    hs_group *group;
    struct pool_task *prev, *next;         /* pool->queue */
    struct pool_task *gprev, *gnext;       /* group->queue */
} pool_task;

struct hs_pool {
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pool_task *head, *tail;
    bool stopping;
    int n_threads;
    int n_workers;          /* threads to join: n_threads, 0 once adopted by a child */
    pthread_t *threads;
    uint64_t generation;    /* hs_fork_generation() of the process that owns it */
};

struct hs_group {
    hs_pool *pool;
    pthread_cond_t done_cv;
    pool_task *ghead, *gtail;
    size_t pending;
    uint64_t generation;
    hs_status status;
    hs_error err;
};

/* ---- queue (pool->mu held) --------------------------------------------- */

static void queue_push(hs_pool *p, pool_task *t)
{
    hs_group *g = t->group;
    t->next = NULL;
    t->prev = p->tail;
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    t->gnext = NULL;
    t->gprev = g->gtail;
    if (g->gtail)
        g->gtail->gnext = t;
    else
        g->ghead = t;
    g->gtail = t;
}

static void queue_unlink(hs_pool *p, pool_task *t)
{
    hs_group *g = t->group;
    if (t->prev)
        t->prev->next = t->next;
    else
        p->head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        p->tail = t->prev;
    if (t->gprev)
        t->gprev->gnext = t->gnext;
    else
        g->ghead = t->gnext;
    if (t->gnext)
        t->gnext->gprev = t->gprev;
    else
        g->gtail = t->gprev;
}

/* Runs t with the lock released; records the outcome; frees t.  Called and
 * returns with pool->mu held. */
static void run_task(hs_pool *p, pool_task *t)
{
    hs_group *g = t->group;
    if (g->status == HS_OK) {
        hs_error terr;
        hs_err_clear(&terr);
        pthread_mutex_unlock(&p->mu);
        hs_status st = t->fn(t->arg, &terr);
        pthread_mutex_lock(&p->mu);
        if (st != HS_OK && g->status == HS_OK) {
            g->status = st;
            g->err = terr;
            if (g->err.code == HS_OK) {
                g->err.code = st;
                snprintf(g->err.msg, sizeof g->err.msg, "task failed with %s", hs_status_name(st));
            }
        }
    }
    hs_free(t);
    if (--g->pending == 0)
        pthread_cond_broadcast(&g->done_cv);
}

static void *worker_main(void *arg)
{
    hs_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->work_cv, &p->mu);
        if (!p->head)
            break;   /* stopping and drained */
        pool_task *t = p->head;
        queue_unlink(p, t);
        run_task(p, t);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- fork --------------------------------------------------------------- */

static pthread_mutex_t g_adopt_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_adopt_mu, HS_FORK_RANK_LEAF)

/* Makes p (and g, may be NULL) usable in this process (see top). */
static void adopt(hs_pool *p, hs_group *g)
{
    uint64_t gen = hs_fork_generation();
    if (__atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == gen &&
        (!g || __atomic_load_n(&g->generation, __ATOMIC_ACQUIRE) == gen))
        return;
    pthread_mutex_lock(&g_adopt_mu);
    if (p->generation != gen) {
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->work_cv, NULL);
        p->n_workers = 0;
        __atomic_store_n(&p->generation, gen, __ATOMIC_RELEASE);
    }
    if (g && g->generation != gen) {
        pthread_cond_init(&g->done_cv, NULL);
        __atomic_store_n(&g->generation, gen, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_adopt_mu);
}

/* ---- pool --------------------------------------------------------------- */

hs_status hs_pool_create(int n_threads, hs_pool **out, hs_error *err)
{
    *out = NULL;
    if (n_threads < 0)
        return hs_err_set(err, HS_INVALID, "thread pool: %d threads requested", n_threads);
    if (n_threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = n > 0 ? (n > 1024 ? 1024 : (int)n) : 1;
    }
    hs_pool *p = hs_calloc(1, sizeof *p);
    if (!p)
        return hs_err_nomem(err, sizeof *p);
    p->threads = hs_calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) {
        hs_free(p);
        return hs_err_nomem(err, (size_t)n_threads * sizeof(pthread_t));
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    p->generation = hs_fork_generation();
    for (int i = 0; i < n_threads; i++) {
        int rc = pthread_create(&p->threads[i], NULL, worker_main, p);
        if (rc != 0) {
            p->n_threads = p->n_workers = i;
            hs_pool_destroy(p);
            return hs_err_set(err, rc == EAGAIN ? HS_NOMEM : HS_INTERNAL,
                              "thread pool: cannot start thread %d of %d: %s", i + 1, n_threads,
                              strerror(rc));
        }
    }
    p->n_threads = p->n_workers = n_threads;
    *out = p;
    return HS_OK;
}

void hs_pool_destroy(hs_pool *p)
{
    if (!p)
        return;
    adopt(p, NULL);
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->mu);
    hs_free(p->threads);
    hs_free(p);
}

int hs_pool_size(const hs_pool *p)
{
    return p ? p->n_threads : 0;
}

/* ---- groups ------------------------------------------------------------- */

hs_status hs_group_create(hs_pool *p, hs_group **out, hs_error *err)
{
    *out = NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "thread pool: group created without a pool");
    hs_group *g = hs_calloc(1, sizeof *g);
    if (!g)
        return hs_err_nomem(err, sizeof *g);
    adopt(p, NULL);
    g->pool = p;
    g->generation = p->generation;
    pthread_cond_init(&g->done_cv, NULL);
    *out = g;
    return HS_OK;
}

hs_status hs_group_submit(hs_group *g, hs_task_fn fn, void *arg)
{
    pool_task *t = hs_malloc(sizeof *t);
    if (!t)
        return HS_NOMEM;
    t->fn = fn;
    t->arg = arg;
    t->group = g;
    hs_pool *p = g->pool;
    adopt(p, g);
    pthread_mutex_lock(&p->mu);
    g->pending++;
    queue_push(p, t);
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    return HS_OK;
}

hs_status hs_group_wait(hs_group *g, hs_error *err)
{
    hs_pool *p = g->pool;
    adopt(p, g);
    pthread_mutex_lock(&p->mu);
    while (g->pending > 0) {
        if (g->ghead) {
            pool_task *t = g->ghead;
            queue_unlink(p, t);
            run_task(p, t);
        } else if (p->n_workers == 0) {
            /* a forked child: the tasks still pending ran on the parent's
             * workers, which do not exist here */
            if (g->status == HS_OK) {
                g->status = HS_INTERNAL;
                hs_err_clear(&g->err);
                g->err.code = HS_INTERNAL;
                snprintf(g->err.msg, sizeof g->err.msg,
                         "thread pool: %zu tasks were running in the parent when it forked",
                         g->pending);
            }
            g->pending = 0;
        } else {
            pthread_cond_wait(&g->done_cv, &p->mu);
        }
    }
    hs_status st = g->status;
    if (st != HS_OK && err && err->code == HS_OK)
        *err = g->err;
    pthread_mutex_unlock(&p->mu);
    return st;
}

void hs_group_destroy(hs_group *g)
{
    if (!g)
        return;
    if (hs_group_wait(g, NULL) != HS_OK) {
        /* the failure was the owner's to collect; nothing more to do */
    }
    pthread_cond_destroy(&g->done_cv);
    hs_free(g);
}
