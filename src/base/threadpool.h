/*
 * base/threadpool.h - a fixed pool of worker threads and task groups.
 *
 * hs_pool_create(n) starts n workers (n = 0: the number of CPUs).  Work is
 * submitted into a task group; hs_group_wait blocks until every task of the
 * group has run, and the waiting thread helps by running queued tasks, so
 * nested groups cannot deadlock.  A task returns hs_status; the group keeps
 * the first failure (and its error message) and later tasks of a failed
 * group are skipped.
 */
#ifndef HS_BASE_THREADPOOL_H
#define HS_BASE_THREADPOOL_H

#include "base/error.h"

typedef struct hs_pool hs_pool;
typedef struct hs_group hs_group;
typedef hs_status (*hs_task_fn)(void *arg, hs_error *err);

HS_MUST_USE hs_status hs_pool_create(int n_threads, hs_pool **out, hs_error *err);
void hs_pool_destroy(hs_pool *p);   /* waits for running tasks; accepts NULL */
int hs_pool_size(const hs_pool *p);

HS_MUST_USE hs_status hs_group_create(hs_pool *p, hs_group **out, hs_error *err);
HS_MUST_USE hs_status hs_group_submit(hs_group *g, hs_task_fn fn, void *arg);
/* Waits for all tasks; returns the first failure, copied into err. */
HS_MUST_USE hs_status hs_group_wait(hs_group *g, hs_error *err);
void hs_group_destroy(hs_group *g); /* waits first if needed; accepts NULL */

#endif
